// The counters file (stats.hpp): made at the first count, blocks handed to threads and
// folded back when they exit, the file unlinked when the process exits.
#include "base/stats.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"

namespace softrnic::base {

namespace {

constexpr std::string_view kNames[kStatCount] = {
    "qps_created",       "qps_destroyed",       "cqs_created",       "cqs_destroyed",
    "mrs_registered",    "mrs_deregistered",    "sends_completed",   "send_bytes",
    "writes_completed",  "write_bytes",         "reads_completed",   "read_bytes",
    "atomics_completed", "other_wrs_completed", "recvs_completed",   "recv_bytes",
    "completions_error", "completions_flushed", "async_events",      "cm_connects_tcp",
    "cm_connects_shm",   "cm_connect_failures", "tcp_bytes_sent",    "tcp_bytes_received",
    "shm_doorbells",     "shm_stall_doorbells", "shm_direct_writes", "progress_wakeups",
    "ud_sent",           "ud_delivered",        "ud_no_receive",     "ud_key_violations",
    "ud_unreachable",
};
static_assert(sizeof kNames / sizeof kNames[0] == kStatCount);

constexpr size_t kHeaderBytes = 4096;
constexpr size_t kNamesBytes = (kStatCount * kStatNameBytes + 63) / 64 * 64;
constexpr size_t kFileBytes = kHeaderBytes + kNamesBytes + size_t{kStatBlocks} * sizeof(StatBlock);

struct File {
    std::mutex mu;
    std::byte *base = nullptr;  // nullptr: not made yet, or disabled
    bool disabled = false;
    bool atfork = false;
    uint32_t fresh = 1;  // next never-used block (0 is the retired one)
    std::vector<uint32_t> free_blocks;
    char path[64] = {};

    StatsHeader *header() { return reinterpret_cast<StatsHeader *>(base); }
    StatBlock *block(uint32_t i) {
        return reinterpret_cast<StatBlock *>(base + kHeaderBytes + kNamesBytes) + i;
    }
};

// Never destroyed: threads may count during static destruction.
File &file() {
    static File *f = new File;
    return *f;
}

// Unlinks the file when the process exits, so `softrnic stats` lists live processes only
// (a crashed process's file is removed by the next reader that finds its pid gone).
struct Unlinker {
    ~Unlinker() {
        File &f = file();
        std::lock_guard lk(f.mu);
        if (f.base) ::unlink(f.path);
    }
};

uint64_t own_start_time() {
    FILE *in = std::fopen("/proc/self/stat", "r");
    if (!in) return 0;
    char buf[1024];
    size_t n = std::fread(buf, 1, sizeof buf - 1, in);
    std::fclose(in);
    buf[n] = '\0';
    // Field 22, counted after the command name's closing parenthesis (field 2 may hold
    // spaces and parentheses).
    const char *p = std::strrchr(buf, ')');
    if (!p) return 0;
    unsigned long long v = 0;
    int field = 2;
    for (++p; *p && field < 22; ++p)
        if (*p == ' ') ++field;
    std::sscanf(p, "%llu", &v);
    return v;
}

void after_fork_in_child();

// Removes the files of processes that died without removing theirs (SIGKILL, a crash), so
// they do not pile up in /dev/shm: each new file sweeps once. /dev/shm's sticky bit lets us
// remove only our user's.
void sweep_dead_files() {
    DIR *d = ::opendir("/dev/shm");
    if (!d) return;
    constexpr std::string_view kPrefix = "softrnic-stats.";
    while (dirent *e = ::readdir(d)) {
        std::string_view name = e->d_name;
        if (!name.starts_with(kPrefix)) continue;
        char *end = nullptr;
        const unsigned long pid = std::strtoul(e->d_name + kPrefix.size(), &end, 10);
        if (!end || *end != '\0' || pid == 0 || pid > 0x7fffffffu) continue;
        if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
        char path[64];
        stats_path(static_cast<uint32_t>(pid), path, sizeof path);
        ::unlink(path);
    }
    ::closedir(d);
}

bool make_file_locked(File &f) {
    if (f.base) return true;
    if (f.disabled) return false;
    if (const char *e = env_value(EnvVar::Stats); e && std::strcmp(e, "0") == 0) {
        f.disabled = true;
        return false;
    }
    if (!f.atfork) {
        ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
        f.atfork = true;
    }
    const uint32_t pid = static_cast<uint32_t>(::getpid());
    stats_path(pid, f.path, sizeof f.path);
    int fd = ::open(f.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST) {
        // A dead process with our pid left it: the pid is ours now.
        ::unlink(f.path);
        fd = ::open(f.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    }
    void *p = MAP_FAILED;
    if (fd >= 0 && ::ftruncate(fd, kFileBytes) == 0)
        p = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (p == MAP_FAILED) {
        if (fd >= 0) ::unlink(f.path);
        f.disabled = true;
        SOFTRNIC_LOG(Info, Base, "no counters file %s (%s): softrnic stats cannot see this process",
                     f.path, std::strerror(err));
        return false;
    }
    f.base = static_cast<std::byte *>(p);
    StatsHeader &h = *f.header();
    h.version = kStatsVersion;
    h.pid = pid;
    h.start_time = own_start_time();
    h.counter_count = kStatCount;
    h.block_count = kStatBlocks;
    h.block_stride = sizeof(StatBlock);
    h.names_offset = kHeaderBytes;
    h.blocks_offset = kHeaderBytes + kNamesBytes;
    for (size_t i = 0; i < kStatCount; ++i)
        std::memcpy(f.base + kHeaderBytes + i * kStatNameBytes, kNames[i].data(),
                    std::min(kNames[i].size(), kStatNameBytes - 1));
    // Last: a reader that sees the magic sees the rest of the header.
    std::atomic_ref<uint64_t>(h.magic).store(kStatsMagic, std::memory_order_release);
    static Unlinker unlinker;
    sweep_dead_files();
    return true;
}

// A thread's claim on a block, given back (its counts folded into block 0) when it exits.
struct Registration {
    uint32_t index = 0;  // 0: none
    ~Registration();
};
thread_local Registration tls_registration;
thread_local bool tls_exited = false;
thread_local StatBlock tls_sink;  // counts nobody reads: disabled, no block, or exiting

Registration::~Registration() {
    tls_exited = true;
    detail::tls_stat_block = &tls_sink;
    if (index == 0) return;
    File &f = file();
    std::lock_guard lk(f.mu);
    if (!f.base) return;
    StatsHeader &h = *f.header();
    // A seqlock's writer: odd while the block moves. The acquire half of the first increment
    // keeps the moves after it, the release of the second keeps them before it.
    std::atomic_ref<uint64_t> seq(h.fold_seq);
    seq.fetch_add(1, std::memory_order_acq_rel);
    StatBlock &mine = *f.block(index), &retired = *f.block(0);
    for (size_t i = 0; i < kStatCount; ++i) {
        std::atomic_ref<uint64_t> from(mine.v[i]), to(retired.v[i]);
        to.store(to.load(std::memory_order_relaxed) + from.load(std::memory_order_relaxed),
                 std::memory_order_relaxed);
        from.store(0, std::memory_order_relaxed);
    }
    seq.fetch_add(1, std::memory_order_release);
    f.free_blocks.push_back(index);
    index = 0;
}

// The forking thread is the child's only thread: its block and the file are the parent's.
// The child starts over with a file of its own at its next count.
void after_fork_in_child() {
    File &f = file();
    // Another parent thread may have held the mutex at the fork; nobody will release it
    // here, and nothing it guarded is used again.
    new (&f.mu) std::mutex;
    if (f.base) ::munmap(f.base, kFileBytes);
    f.base = nullptr;
    f.fresh = 1;
    f.free_blocks.clear();
    tls_registration.index = 0;
    detail::tls_stat_block = nullptr;
}

}  // namespace

std::string_view stat_name(Stat s) {
    return kNames[static_cast<size_t>(s)];
}

namespace detail {

constinit thread_local StatBlock *tls_stat_block = nullptr;

StatBlock *stat_block_slow() {
    if (tls_exited) return tls_stat_block = &tls_sink;
    File &f = file();
    std::lock_guard lk(f.mu);
    if (!make_file_locked(f)) return tls_stat_block = &tls_sink;
    uint32_t index = 0;
    if (!f.free_blocks.empty()) {
        index = f.free_blocks.back();
        f.free_blocks.pop_back();
    } else if (f.fresh < kStatBlocks) {
        index = f.fresh++;
        std::atomic_ref<uint32_t>(f.header()->blocks_claimed)
            .store(f.fresh, std::memory_order_release);
    } else {
        std::atomic_ref<uint64_t> n(f.header()->threads_uncounted);
        n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return tls_stat_block = &tls_sink;
    }
    tls_registration.index = index;
    return tls_stat_block = f.block(index);
}

}  // namespace detail

bool stats_read_self(uint64_t (&out)[kStatCount]) {
    File &f = file();
    std::lock_guard lk(f.mu);  // no fold runs meanwhile
    if (!make_file_locked(f)) return false;
    const uint32_t claimed =
        std::atomic_ref<uint32_t>(f.header()->blocks_claimed).load(std::memory_order_acquire);
    for (size_t i = 0; i < kStatCount; ++i)
        out[i] = 0;
    for (uint32_t b = 0; b < std::max<uint32_t>(claimed, 1); ++b)
        for (size_t i = 0; i < kStatCount; ++i)
            out[i] += std::atomic_ref<uint64_t>(f.block(b)->v[i]).load(std::memory_order_relaxed);
    return true;
}

}  // namespace softrnic::base
