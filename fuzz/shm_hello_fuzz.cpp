// libFuzzer target: the shm transport's hello (src/transport/shm/hello.hpp), as the
// handshake receives it from whatever process connected to the rendezvous socket. Byte 0:
// bits 0-2 the number of descriptors that came with the message, bit 3 MSG_CTRUNC; the
// rest is what recvmsg returned. Whatever the bytes, the parser reads only them, and what
// it accepts is one whole hello of this layout with exactly one descriptor. Seeds:
// fuzz/corpus/shm_hello/, written by fuzz/shm_corpus_gen.cpp with the production encoder.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "transport/shm/hello.hpp"

namespace sh = softrnic::transport::shm;
namespace L = softrnic::transport::shm::layout;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const size_t nfds = data[0] & 7;
    const bool ctrunc = (data[0] & 8) != 0;
    // A copy exactly as long as the message, so ASan sees any read past it.
    const size_t n = size - 1;
    auto buf = std::make_unique<std::byte[]>(n ? n : 1);
    for (size_t i = 0; i < n; ++i)
        buf[i] = static_cast<std::byte>(data[1 + i]);
    sh::Hello h{};
    if (sh::parse_hello({buf.get(), n}, nfds, ctrunc, h)) {
        if (n != sizeof(sh::Hello) || nfds != 1 || ctrunc) std::abort();
        if (h.magic != L::kMagic || h.version != L::kVersion || h.seg_bytes != L::kSegmentBytes)
            std::abort();
    }
    return 0;
}
