// Process counters that another process can read while this one runs (`softrnic stats`),
// as `rdma statistic` reads a NIC's and UCX its stats: what the engine completed, what
// each transport moved, connections, errors, wake-ups.
//
// The counters live in a shared-memory file, /dev/shm/softrnic-stats.<pid>, made at the
// first count (SOFTRNIC_STATS=0: never), unlinked at exit; a process that could not unlink
// its own (killed) has it removed by the next one that makes a file. Each thread counts into a
// block of its own in that file, so a count is a load and a store to a line no other thread writes:
// no lock, no atomic read-modify-write, no contention. A reader adds the blocks up. A thread that
// exits folds its block into the file's retired block and frees it for the next thread;
// the header's fold sequence lets a reader retry a sum a fold ran through.
//
// Layout (version 1; a reader checks the magic and version, then takes the counter names
// from the file itself, so an older tool reads a newer library's counters):
//   StatsHeader, at offset 0, one page
//   kStatCount names of kStatNameBytes each, at names_offset
//   kStatBlocks blocks of kStatCount counters, at blocks_offset; block 0 is the retired one
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace softrnic::base {

enum class Stat : uint16_t {
    QpsCreated,
    QpsDestroyed,
    CqsCreated,
    CqsDestroyed,
    MrsRegistered,
    MrsDeregistered,
    SendsCompleted,
    SendBytes,
    WritesCompleted,
    WriteBytes,
    ReadsCompleted,
    ReadBytes,
    AtomicsCompleted,
    OtherWrsCompleted,  // memory window binds, fast registrations, invalidations
    RecvsCompleted,
    RecvBytes,
    CompletionsInError,  // every completion with a status other than success
    CompletionsFlushed,  // of which flushed (the QP was in Error)
    AsyncEvents,
    CmConnectsTcp,  // connections established, by transport
    CmConnectsShm,
    CmConnectFailures,  // refused, rejected, unreachable, timed out
    TcpBytesSent,
    TcpBytesReceived,
    ShmDoorbells,
    ShmStallDoorbells,
    ShmDirectWrites,
    ProgressWakeups,
    UdSent,           // InfiniBand UD datagrams handed to the fabric
    UdDelivered,      // UD datagrams placed in a receive buffer
    UdNoReceive,      // UD datagrams dropped at a QP with no receive posted (IBA: silent)
    UdKeyViolations,  // UD datagrams dropped for a Q_Key or P_Key mismatch
    UdUnreachable,    // UD datagrams to a LID or QP that does not receive them
    Count,
};

inline constexpr size_t kStatCount = static_cast<size_t>(Stat::Count);
inline constexpr size_t kStatNameBytes = 32;
inline constexpr uint32_t kStatBlocks = 512;
inline constexpr uint64_t kStatsMagic = 0x31305453434e5253ull;  // "SRNCST01"
inline constexpr uint32_t kStatsVersion = 1;

struct StatsHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t pid;
    uint64_t start_time;  // the process's start, in clock ticks after boot (/proc/PID/stat)
    uint32_t counter_count;
    uint32_t block_count;
    uint32_t block_stride;  // bytes from one block to the next
    uint32_t names_offset;
    uint32_t blocks_offset;
    uint32_t blocks_claimed;     // blocks ever handed to a thread (a reader sums these)
    uint64_t fold_seq;           // odd while an exiting thread folds its block
    uint64_t threads_uncounted;  // threads that found no free block
};

// The file's layout is read by other programs: it does not move.
static_assert(sizeof(StatsHeader) == 64 && offsetof(StatsHeader, counter_count) == 24 &&
              offsetof(StatsHeader, fold_seq) == 48);

// What a counter is called in the file and in `softrnic stats`.
std::string_view stat_name(Stat s);

struct alignas(64) StatBlock {
    uint64_t v[kStatCount];
};

namespace detail {
[[gnu::tls_model("initial-exec")]] extern constinit thread_local StatBlock *tls_stat_block;
StatBlock *stat_block_slow();
}  // namespace detail

// Adds n to counter s for this thread. Only this thread writes its block; the reader of
// another process loads it, hence the relaxed atomic accesses.
inline void stat_add(Stat s, uint64_t n = 1) {
    StatBlock *b = detail::tls_stat_block;
    if (!b) [[unlikely]]
        b = detail::stat_block_slow();
    std::atomic_ref<uint64_t> v(b->v[static_cast<size_t>(s)]);
    v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// The file's path for a process (inline: the reader, `softrnic stats`, is another program).
inline void stats_path(uint32_t pid, char *out, size_t size) {
    std::snprintf(out, size, "/dev/shm/softrnic-stats.%u", pid);
}

// This process's own sums (for tests and `softrnic stats --self`); false when disabled.
bool stats_read_self(uint64_t (&out)[kStatCount]);

}  // namespace softrnic::base
