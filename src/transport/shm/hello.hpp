// The post-MPA hello of the shm transport (internal to src/transport/shm/): what each end
// sends with its segment's memfd (shm_setup.cpp), and the check of the one it receives.
// Pure functions of their arguments, so fuzz/shm_hello_fuzz.cpp runs the very parser the
// handshake uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "transport/shm/layout.hpp"

namespace softrnic::transport::shm {

struct Hello {  // 40 bytes, one sendmsg (with the segment fd)
    uint64_t magic;
    uint32_t version;
    uint32_t seg_bytes;
    uint64_t probe_addr;   // where the sender's probe word lives in its address space
    uint64_t probe_value;  // what the word holds
    uint32_t cma_wanted;   // informative: the sender will use CMA if its probe works
    uint32_t reserved;
};
static_assert(sizeof(Hello) == 40);

inline Hello make_hello(uint64_t probe_addr, uint64_t probe_value, bool cma_wanted) {
    Hello h{};
    h.magic = layout::kMagic;
    h.version = layout::kVersion;
    h.seg_bytes = static_cast<uint32_t>(layout::kSegmentBytes);
    h.probe_addr = probe_addr;
    h.probe_value = probe_value;
    h.cma_wanted = cma_wanted;
    return h;
}

// What one recvmsg brought: `bytes` (as many as it returned), `nfds` descriptors, and
// whether the kernel truncated the control data. The hello is one 40-byte sendmsg carrying
// exactly one descriptor, on a stream that carries nothing else before it; anything else is
// not our peer. True (and `out` filled) when it is a hello of this layout version.
inline bool parse_hello(std::span<const std::byte> bytes, size_t nfds, bool ctrunc, Hello &out) {
    if (bytes.size() != sizeof(Hello) || nfds != 1 || ctrunc) return false;
    Hello h;
    std::memcpy(&h, bytes.data(), sizeof h);
    if (h.magic != layout::kMagic || h.version != layout::kVersion ||
        h.seg_bytes != layout::kSegmentBytes)
        return false;
    out = h;
    return true;
}

}  // namespace softrnic::transport::shm
