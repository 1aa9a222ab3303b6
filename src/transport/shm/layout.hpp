// Shared-memory segment layout of the shm transport (internal to src/transport/shm/).
//
// Each end of a connection creates one segment (a sealed memfd) and maps its peer's. A
// segment holds what flows INTO its owner:
//
//   [0, 4 KiB)        SegHeader: identity, the CMA probe word, and three control words on
//                     cache lines of their own (need_wake, req_cons, resp_cons)
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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softrnic::transport::shm::layout {

inline constexpr uint64_t kMagic = 0x314d48534e524f53ull;  // "SORNSHM1"
inline constexpr uint32_t kVersion = 1;

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

struct SegHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t size;
    uint64_t probe;  // random value; the peer reads it with process_vm_readv to probe CMA
    alignas(64) uint32_t need_wake;  // owner: "my progress thread sleeps, signal me"
    alignas(64) uint64_t req_cons;   // owner: slots of the req ring consumed so far
    alignas(64) uint64_t resp_cons;  // owner: slots of the resp ring consumed so far
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
