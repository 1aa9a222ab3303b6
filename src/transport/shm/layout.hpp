// Shared-memory segment layout of the shm transport (internal to src/transport/shm/).
//
// Each end of a connection creates one segment (a sealed memfd) and maps its peer's. A
// segment holds what flows INTO its owner:
//
//   [0, 4 KiB)        SegHeader: identity, the CMA probe word, three control words on
//                     cache lines of their own (need_wake, req_cons, resp_cons), and the
//                     owner's placement grants (see below)
//   req ring          kReqSlots x 64 B: requests (sends, writes, read requests, atomics),
//                     produced by the peer's posting thread
//   resp ring         kRespSlots x 64 B: responses and control (acks, read data, atomic
//                     results, chunk hand-offs, Terminate, Close), produced by the peer's
//                     progress context
//   bounce            kBounceChunks x kBounceChunk: the owner's staging buffers for the
//                     copy path without CMA (allocated by the owner only)
//
// Rings carry variable-size entries made of whole 64-byte slots. An entry starts with an
// EntryHdr whose `stamp` is written last (release) and equals the entry's slot position
// + 1, so the consumer detects a new entry by reading the slot it waits on (one cache
// line), with no shared producer index. An entry never wraps: the producer fills the
// tail with a Pad entry first. The consumer publishes how far it got in `*_cons`
// (release); the producer reads it only when its cached copy says the ring is full.
//
// Every shared word is accessed through std::atomic_ref with an explicit order; nothing
// read from the peer's memory is trusted (sizes and indices are validated before use).
//
// Placement grants. An application that polls memory instead of its CQ (dtest -W, MPI
// eager RDMA paths, perftest) runs no code of ours between its posts, so nothing would
// take a peer's RDMA Write out of its req ring until its progress thread woke. The owner
// therefore lets the peer place small writes itself (process_vm_writev) into ranges the
// owner's engine has validated for this connection: after placing a write from the ring
// it publishes the STag's whole range as a Grant (a seqlock: `seq` odd while rewritten),
// stamped with `grant_gen`. The owner bumps grant_gen whenever what its STags or its QP
// accept changes, then waits until `direct_inflight` (the peer's writes under way) is 0;
// the peer increments direct_inflight, re-reads grant_gen and writes only when the grant's
// generation still stands (both sides sequentially consistent: a Dekker pair). The owner
// sets `direct_hint` while its rings are served by its progress thread rather than by an
// application polling its CQ: the peer places directly only then.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softrnic::transport::shm::layout {

inline constexpr uint64_t kMagic = 0x314d48534e524f53ull;  // "SORNSHM1"
inline constexpr uint32_t kVersion = 2;

inline constexpr size_t kSlot = 64;
inline constexpr uint32_t kReqSlots = 256;
inline constexpr uint32_t kRespSlots = 128;
// Powers of two: ring positions wrap with a mask (a division per poll showed in profiles).
static_assert((kReqSlots & (kReqSlots - 1)) == 0 && (kRespSlots & (kRespSlots - 1)) == 0);
inline constexpr size_t kBounceChunk = 16 << 10;
inline constexpr uint32_t kBounceChunks = 4;

inline constexpr size_t kHeaderBytes = 4096;
inline constexpr size_t kReqOff = kHeaderBytes;
inline constexpr size_t kRespOff = kReqOff + size_t{kReqSlots} * kSlot;
inline constexpr size_t kBounceOff = kRespOff + size_t{kRespSlots} * kSlot;
inline constexpr size_t kSegmentBytes = kBounceOff + size_t{kBounceChunks} * kBounceChunk;

// Largest payload carried inline in a ring entry (sends, writes, read responses).
inline constexpr uint32_t kInlineMax = 1024;
// Local spans an operation may carry (engine: 8 SGEs, +1 for the atomic result).
inline constexpr uint32_t kMaxIov = 9;

inline constexpr uint32_t kGrantSlots = 4;

struct Grant {
    uint32_t seq;   // odd while the owner rewrites the slot
    uint32_t stag;  // the STag the range belongs to (index and key)
    uint64_t gen;   // grant_gen when the owner's engine validated it
    uint64_t to;    // first tagged offset
    uint64_t len;   // bytes from `to`
    uint64_t addr;  // the owner's address of the byte at `to`
};

struct SegHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    uint64_t probe;  // random value; the peer reads it with process_vm_readv to probe CMA
    alignas(64) uint32_t need_wake;        // owner: "my progress thread sleeps, signal me"
    alignas(64) uint64_t req_cons;         // owner: slots of the req ring consumed so far
    alignas(64) uint64_t resp_cons;        // owner: slots of the resp ring consumed so far
    alignas(64) uint32_t direct_hint;      // owner: "my application polls no CQ; place yourself"
    alignas(64) uint64_t grant_gen;        // owner: grants of another generation are void
    Grant grants[kGrantSlots];             // owner
    alignas(64) uint32_t direct_inflight;  // peer: its direct writes under way
};
static_assert(sizeof(SegHeader) <= kHeaderBytes);

enum class Type : uint8_t {
    Pad = 1,
    // req ring
    SendInline,   // stag = STag to invalidate, payload inline
    SendRemote,   // stag, b = length, payload = Iov[]: the target pulls the bytes
    WriteInline,  // stag, a = TO, payload inline
    WriteRemote,  // stag, a = TO, b = length, payload = Iov[] (source)
    ReadReq,      // stag, a = source TO, b = length, payload = Iov[] (initiator's sink)
    Atomic,       // stag, a = TO, payload = {op1, op2}; flags kFlagCmpSwap
    // resp ring
    Ack,             // seq done
    ReadRespInline,  // seq, payload = the read's data
    AtomicResp,      // seq, a = original value
    Pull,            // seq, a = offset, b = length, stag = bounce chunk (no CMA)
    PullDone,        // seq, a = offset, b = length, stag = chunk: the bytes are in the chunk
    ReadChunk,       // seq, a = offset, b = length, stag = chunk (no CMA)
    ChunkFree,       // stag = chunk the initiator copied out of
    Terminate,       // stag = layer << 16 | etype << 8 | ecode, payload = Terminate message
    Close,           // graceful close: no more entries follow
};

inline constexpr uint8_t kFlagSolicited = 1;
inline constexpr uint8_t kFlagInvalidate = 2;
inline constexpr uint8_t kFlagImmediate = 4;
inline constexpr uint8_t kFlagCmpSwap = 8;

struct EntryHdr {
    uint64_t stamp;  // position + 1; written last (release)
    Type type;
    uint8_t flags;
    uint16_t nslots;
    uint32_t stag;
    uint64_t a;
    uint64_t b;
    uint32_t seq;  // the initiator's operation number (responses name it)
    uint32_t imm;
    uint16_t len;  // payload bytes following the header
    uint16_t reserved[3];
};
inline constexpr size_t kHdrBytes = 48;
static_assert(sizeof(EntryHdr) == kHdrBytes);

struct Iov {
    uint64_t addr;
    uint64_t len;
};

inline constexpr uint32_t slots_for(size_t payload) {
    return static_cast<uint32_t>((kHdrBytes + payload + kSlot - 1) / kSlot);
}
static_assert(slots_for(kInlineMax) < kRespSlots / 2);

}  // namespace softrnic::transport::shm::layout
