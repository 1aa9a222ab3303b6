// Validation of ring entries the peer wrote (internal to src/transport/shm/).
//
// The peer maps our segment read-write and may write anything into it at any time: these
// checks see only a header the consumer copied out of the ring (and, for the iovecs, a
// payload that stays inside the entry's slots once entry_fits() held). They depend on
// nothing but their arguments, so fuzz/shm_ring_fuzz.cpp runs the very functions the
// connection uses. What they accept still has to agree with the connection's state (the
// operation a response names, the chunk a bounce entry names): that is checked where the
// state lives (shm_initiator.cpp, shm_bounce.cpp).
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/shm/layout.hpp"

namespace softrnic::transport::shm::detail {

// An entry whose header `h` was copied from a slot with `room` slots before the ring's end:
// true when it covers at least one slot, does not run past the end (entries never wrap),
// and its payload fits in its slots.
inline bool entry_fits(const layout::EntryHdr &h, uint32_t room) {
    return h.nslots != 0 && h.nslots <= room &&
           layout::kHdrBytes + size_t{h.len} <= size_t{h.nslots} * layout::kSlot;
}

// The Iov[] payload of a SendRemote, WriteRemote or ReadReq: whole Iovs, at most kMaxIov,
// none empty or wrapping the address space, adding up to `total` bytes. `payload` holds
// h.len bytes.
inline bool parse_iovs(const layout::EntryHdr &h, const std::byte *payload, uint64_t total,
                       std::array<iovec, layout::kMaxIov> &out, uint32_t &n) {
    if (h.len % sizeof(layout::Iov) != 0 || h.len / sizeof(layout::Iov) > layout::kMaxIov)
        return false;
    n = h.len / sizeof(layout::Iov);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
        layout::Iov v;
        std::memcpy(&v, payload + i * sizeof v, sizeof v);
        if (v.len == 0 || v.addr + v.len < v.addr || sum + v.len < sum) return false;
        sum += v.len;
        out[i] = {reinterpret_cast<void *>(static_cast<uintptr_t>(v.addr)),
                  static_cast<size_t>(v.len)};
    }
    return sum == total;
}

// The shape of an entry on the req ring: a request type, an inline payload within
// kInlineMax, an atomic's two operands, the iovecs of a remote payload (into `iov`/`niov`).
inline bool check_req(const layout::EntryHdr &h, const std::byte *payload,
                      std::array<iovec, layout::kMaxIov> &iov, uint32_t &niov) {
    namespace L = layout;
    niov = 0;
    switch (h.type) {
        case L::Type::SendInline:
        case L::Type::WriteInline:
            return h.len <= L::kInlineMax;
        case L::Type::SendRemote:
        case L::Type::WriteRemote:
            return h.b != 0 && parse_iovs(h, payload, h.b, iov, niov);
        case L::Type::ReadReq:
            return parse_iovs(h, payload, h.b, iov, niov);
        case L::Type::Atomic:
            return h.len == 16;
        default:
            return false;
    }
}

// The shape of an entry on the resp ring: a response or control type; a bounce entry names
// one of the kBounceChunks chunks, and a Pull or ReadChunk moves 1..kBounceChunk bytes.
inline bool check_resp(const layout::EntryHdr &h) {
    namespace L = layout;
    switch (h.type) {
        case L::Type::Ack:
        case L::Type::AtomicResp:
        case L::Type::Terminate:
        case L::Type::Close:
            return true;
        case L::Type::ReadRespInline:
            return h.len <= L::kInlineMax;
        case L::Type::Pull:
        case L::Type::ReadChunk:
            return h.stag < L::kBounceChunks && h.b != 0 && h.b <= L::kBounceChunk;
        case L::Type::PullDone:
        case L::Type::ChunkFree:
            return h.stag < L::kBounceChunks;
        default:
            return false;
    }
}

}  // namespace softrnic::transport::shm::detail
