// libFuzzer target: the reader of another process's counters file (`softrnic stats`,
// src/base/stats_reader.hpp). Whatever the bytes, it reads nothing outside them, and what
// it accepts is consistent with the header it checked.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/stats_reader.hpp"

namespace sb = softrnic::base;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // A mapping is page-aligned and the reader loads 8-byte words atomically: give it the
    // bytes at an aligned address, and exactly as many as there are.
    auto *mem = static_cast<std::byte *>(std::aligned_alloc(64, (size + 64) / 64 * 64));
    if (!mem) return 0;
    if (size) std::memcpy(mem, data, size);
    sb::StatsSnapshot snap;
    const sb::StatsParse r = sb::parse_stats({mem, size}, snap);
    if (r == sb::StatsParse::Ok) {
        const auto &h = *reinterpret_cast<const sb::StatsHeader *>(mem);
        if (snap.counters.size() != h.counter_count) std::abort();
        for (const auto &c : snap.counters)
            if (c.first.size() > sb::kStatNameBytes) std::abort();
    }
    std::free(mem);
    return 0;
}
