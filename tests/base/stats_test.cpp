// The counters file (src/base/stats.hpp) and its reader (stats_reader.hpp): counts land in
// the file another process reads, threads that exit keep their counts and free their
// blocks, a forked child counts into a file of its own, and the reader refuses files that
// are not what they claim.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/stats.hpp"
#include "base/stats_reader.hpp"

namespace {

using softrnic::base::kStatCount;
using softrnic::base::parse_stats;
using softrnic::base::Stat;
using softrnic::base::stat_add;
using softrnic::base::StatsParse;
using softrnic::base::StatsSnapshot;

// This process's file, read as `softrnic stats` reads it: mapped, then parsed.
bool read_file_of(pid_t pid, StatsSnapshot &snap) {
    char path[64];
    softrnic::base::stats_path(static_cast<uint32_t>(pid), path, sizeof path);
    FILE *f = std::fopen(path, "rb");
    if (!f) return false;
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    std::fclose(f);
    int fd = ::open(path, O_RDONLY);
    void *p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return false;
    const bool ok = parse_stats({static_cast<const std::byte *>(p), static_cast<size_t>(size)},
                                snap) == StatsParse::Ok;
    ::munmap(p, static_cast<size_t>(size));
    return ok;
}

uint64_t value_of(const StatsSnapshot &s, std::string_view name) {
    for (const auto &[n, v] : s.counters)
        if (n == name) return v;
    ADD_FAILURE() << "no counter " << name;
    return 0;
}

TEST(Stats, CountsReachTheFileAnotherProcessReads) {
    stat_add(Stat::AsyncEvents, 0);  // makes the file
    StatsSnapshot before, after;
    ASSERT_TRUE(read_file_of(::getpid(), before));
    EXPECT_EQ(before.pid, static_cast<uint32_t>(::getpid()));
    ASSERT_EQ(before.counters.size(), kStatCount);
    EXPECT_EQ(before.counters[0].first, "qps_created");
    stat_add(Stat::AsyncEvents, 3);
    stat_add(Stat::TcpBytesSent, 1000);
    ASSERT_TRUE(read_file_of(::getpid(), after));
    EXPECT_EQ(value_of(after, "async_events") - value_of(before, "async_events"), 3u);
    EXPECT_EQ(value_of(after, "tcp_bytes_sent") - value_of(before, "tcp_bytes_sent"), 1000u);
}

// More threads, one after another, than the file has blocks: each exiting thread folds its
// counts into the retired block and frees its own, so nothing is lost and every thread
// finds a block.
TEST(Stats, ExitedThreadsKeepTheirCountsAndFreeTheirBlocks) {
    StatsSnapshot before, after;
    stat_add(Stat::ProgressWakeups, 0);
    ASSERT_TRUE(read_file_of(::getpid(), before));
    constexpr int kThreads = softrnic::base::kStatBlocks + 100;
    for (int i = 0; i < kThreads; ++i)
        std::thread([] { stat_add(Stat::CmConnectFailures, 2); }).join();
    ASSERT_TRUE(read_file_of(::getpid(), after));
    EXPECT_EQ(value_of(after, "cm_connect_failures") - value_of(before, "cm_connect_failures"),
              2u * kThreads);
    EXPECT_EQ(after.threads_uncounted, before.threads_uncounted);
}

// Threads counting while others come and go: every count arrives (the reader may see a
// sum mid-way, never a lost one once they have all finished).
TEST(Stats, ConcurrentThreadsLoseNothing) {
    StatsSnapshot before, after;
    stat_add(Stat::SendsCompleted, 0);
    ASSERT_TRUE(read_file_of(::getpid(), before));
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; ++t)
        ts.emplace_back([] {
            for (int i = 0; i < 10000; ++i)
                stat_add(Stat::SendsCompleted);
        });
    StatsSnapshot mid;
    EXPECT_TRUE(read_file_of(::getpid(), mid));
    for (auto &t : ts)
        t.join();
    ASSERT_TRUE(read_file_of(::getpid(), after));
    EXPECT_EQ(value_of(after, "sends_completed") - value_of(before, "sends_completed"), 80000u);
}

// The child of a fork counts into a file of its own pid; the parent's counts do not move,
// and the child's file goes when it exits.
TEST(Stats, AForkedChildCountsIntoItsOwnFile) {
    stat_add(Stat::RecvsCompleted, 1);
    StatsSnapshot before;
    ASSERT_TRUE(read_file_of(::getpid(), before));
    pid_t child = ::fork();
    if (child == 0) {
        stat_add(Stat::RecvsCompleted, 7);
        StatsSnapshot mine;
        bool ok = read_file_of(::getpid(), mine) && value_of(mine, "recvs_completed") == 7 &&
                  mine.pid == static_cast<uint32_t>(::getpid());
        std::exit(ok ? 0 : 1);  // exit, not _exit: the file is removed at exit
    }
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    StatsSnapshot after;
    ASSERT_TRUE(read_file_of(::getpid(), after));
    EXPECT_EQ(value_of(after, "recvs_completed"), value_of(before, "recvs_completed"));
    char path[64];
    softrnic::base::stats_path(static_cast<uint32_t>(child), path, sizeof path);
    EXPECT_NE(::access(path, F_OK), 0) << path << " outlived its process";
}

// A file that is not a counters file, or whose header points outside it, is refused before
// anything it names is read.
TEST(Stats, TheReaderRefusesDamagedFiles) {
    struct alignas(64) Buf {
        std::byte b[16384];
    };
    auto buf = std::make_unique<Buf>();
    std::memset(buf->b, 0, sizeof buf->b);
    auto &h = *reinterpret_cast<softrnic::base::StatsHeader *>(buf->b);
    auto parse = [&](size_t size) {
        StatsSnapshot s;
        return parse_stats({buf->b, size}, s);
    };
    EXPECT_EQ(parse(sizeof h - 1), StatsParse::Truncated);
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::NotStats);  // no magic
    h.magic = softrnic::base::kStatsMagic;
    h.version = 2;
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::NotStats);
    h.version = softrnic::base::kStatsVersion;
    h.counter_count = 4;
    h.block_count = 4;
    h.block_stride = 64;
    h.names_offset = 4096;
    h.blocks_offset = 8192;
    h.blocks_claimed = 4;
    std::memcpy(buf->b + 4096, "a_counter", 9);
    reinterpret_cast<uint64_t *>(buf->b + 8192)[0] = 5;
    reinterpret_cast<uint64_t *>(buf->b + 8192 + 64)[0] = 6;
    StatsSnapshot ok;
    ASSERT_EQ(parse_stats({buf->b, sizeof buf->b}, ok), StatsParse::Ok);
    EXPECT_EQ(ok.counters[0].first, "a_counter");
    EXPECT_EQ(ok.counters[0].second, 11u);
    h.blocks_offset = 16384 - 64;  // the blocks run past the end
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::Truncated);
    h.blocks_offset = 8192;
    h.block_stride = 8;  // shorter than a block's counters
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::BadLayout);
    h.block_stride = 64;
    h.names_offset = 16384 - 8;  // names run past the end
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::BadLayout);
    h.names_offset = 4096;
    h.counter_count = 100000;
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::BadLayout);
    h.counter_count = 4;
    h.fold_seq = 1;  // a fold that never ends
    EXPECT_EQ(parse(sizeof buf->b), StatsParse::Busy);
}

}  // namespace
