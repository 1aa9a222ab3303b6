// Reads another process's counters file (stats.hpp) for `softrnic stats`. The file crosses a
// process boundary, so every offset, count and name in it is checked against the bytes
// actually there before it is used (fuzz/stats_fuzz.cpp feeds it arbitrary files).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/stats.hpp"

namespace softrnic::base {

struct StatsSnapshot {
    uint32_t pid = 0;
    uint64_t start_time = 0;
    uint64_t threads_uncounted = 0;
    std::vector<std::pair<std::string, uint64_t>> counters;  // in the file's order
};

enum class StatsParse : uint8_t { Ok, NotStats, Truncated, BadLayout, Busy };

// Sums the counters of `file` (a mapping of a counters file, which its process may be
// writing). Busy: every try met a thread folding its block.
inline StatsParse parse_stats(std::span<const std::byte> file, StatsSnapshot &out) {
    if (file.size() < sizeof(StatsHeader)) return StatsParse::Truncated;
    // The header may be written while we read it: every word is loaded once, atomically.
    auto *h = reinterpret_cast<StatsHeader *>(const_cast<std::byte *>(file.data()));
    auto load64 = [](uint64_t &w) {
        return std::atomic_ref<uint64_t>(w).load(std::memory_order_acquire);
    };
    auto load32 = [](uint32_t &w) {
        return std::atomic_ref<uint32_t>(w).load(std::memory_order_acquire);
    };
    if (load64(h->magic) != kStatsMagic) return StatsParse::NotStats;
    if (load32(h->version) != kStatsVersion) return StatsParse::NotStats;
    const uint64_t counters = load32(h->counter_count), blocks = load32(h->block_count);
    const uint64_t stride = load32(h->block_stride), names = load32(h->names_offset);
    const uint64_t first_block = load32(h->blocks_offset);
    const uint64_t size = file.size();
    if (counters == 0 || counters > 4096 || blocks == 0 || blocks > (1u << 20) ||
        stride < counters * 8 || stride % 8 || first_block % 8)
        return StatsParse::BadLayout;
    if (names < sizeof(StatsHeader) || names > size || counters * kStatNameBytes > size - names)
        return StatsParse::BadLayout;
    if (first_block > size || blocks * stride > size - first_block) return StatsParse::Truncated;
    out.pid = load32(h->pid);
    out.start_time = load64(h->start_time);
    out.counters.clear();
    for (uint64_t i = 0; i < counters; ++i) {
        const char *n = reinterpret_cast<const char *>(file.data() + names + i * kStatNameBytes);
        out.counters.emplace_back(std::string(n, strnlen(n, kStatNameBytes)), 0);
    }
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const uint64_t seq = load64(h->fold_seq);
        if (seq & 1) continue;
        const uint64_t claimed =
            std::min<uint64_t>(std::max<uint32_t>(load32(h->blocks_claimed), 1), blocks);
        for (auto &c : out.counters)
            c.second = 0;
        for (uint64_t b = 0; b < claimed; ++b) {
            auto *v = reinterpret_cast<uint64_t *>(const_cast<std::byte *>(file.data()) +
                                                   first_block + b * stride);
            // Acquire: the fold sequence is loaded again only after these.
            for (uint64_t i = 0; i < counters; ++i)
                out.counters[i].second +=
                    std::atomic_ref<uint64_t>(v[i]).load(std::memory_order_acquire);
        }
        if (load64(h->fold_seq) == seq) {
            out.threads_uncounted = load64(h->threads_uncounted);
            return StatsParse::Ok;
        }
    }
    return StatsParse::Busy;
}

}  // namespace softrnic::base
