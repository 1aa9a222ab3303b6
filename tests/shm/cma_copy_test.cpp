// cma_copy: large CMA copies split between the caller and the copy helper thread.
// The peer is a forked child that only sleeps: its memory is the fork's copy of ours, so
// addresses we hold name its buffers too.
#include "transport/shm/cma_copy.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

namespace softrnic::transport::shm {
namespace {

// The helper on regardless of the CPU count and environment the tests run with (read
// once, at the first large copy; this binary's other shm tests then use it too).
const bool kForced = [] { return ::setenv("SOFTRNIC_SHM_COPY_THREADS", "2", 1) == 0; }();

uint8_t pattern(size_t i, uint8_t salt) {
    return static_cast<uint8_t>((i * 131) ^ (i >> 9) ^ salt);
}

class Child {
  public:
    Child() {
        pid_ = ::fork();
        if (pid_ == 0) {
            for (;;)
                ::pause();
        }
    }
    ~Child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    pid_t pid() const { return pid_; }

  private:
    pid_t pid_ = -1;
};

// One buffer's iovecs: `cuts` splits it at those offsets (so halves cross entries).
std::vector<iovec> cut(uint8_t *base, size_t len, std::vector<size_t> cuts) {
    std::vector<iovec> v;
    size_t prev = 0;
    cuts.push_back(len);
    for (size_t c : cuts) {
        v.push_back({base + prev, c - prev});
        prev = c;
    }
    return v;
}

TEST(ShmCmaCopy, SliceCutsTheByteRange) {
    uint8_t b[100];
    std::vector<iovec> in = {{b, 10}, {b + 20, 30}, {b + 60, 40}};  // 80 bytes
    iovec out[3];
    ASSERT_EQ(cma_slice(in, 0, 80, out), 3u);
    EXPECT_EQ(out[0].iov_base, b);
    EXPECT_EQ(out[2].iov_len, 40u);
    ASSERT_EQ(cma_slice(in, 5, 10, out), 2u);  // 5 of the first, 5 of the second
    EXPECT_EQ(out[0].iov_base, b + 5);
    EXPECT_EQ(out[0].iov_len, 5u);
    EXPECT_EQ(out[1].iov_base, b + 20);
    EXPECT_EQ(out[1].iov_len, 5u);
    ASSERT_EQ(cma_slice(in, 10, 30, out), 1u);  // exactly the second entry
    EXPECT_EQ(out[0].iov_base, b + 20);
    EXPECT_EQ(out[0].iov_len, 30u);
    ASSERT_EQ(cma_slice(in, 79, 1, out), 1u);  // the last byte
    EXPECT_EQ(out[0].iov_base, b + 99);
    EXPECT_EQ(out[0].iov_len, 1u);
    EXPECT_EQ(cma_slice(in, 80, 0, out), 0u);
}

// Reads and writes of sizes around the split threshold, with iovec lists whose halves
// cross entries on both sides, are byte-exact and touch nothing outside the lists.
TEST(ShmCmaCopy, SplitCopiesAreByteExact) {
    ASSERT_TRUE(kForced);
    const size_t sizes[] = {kCmaSplitMin - 1, kCmaSplitMin, kCmaSplitMin + 4097, size_t{1} << 20,
                            (size_t{3} << 20) + 7};
    const size_t kMax = (size_t{3} << 20) + 7, kGuard = 4096;
    std::vector<uint8_t> far(kMax + 2 * kGuard), near(kMax + 2 * kGuard);
    Child child;
    ASSERT_GT(child.pid(), 0);
    uint8_t salt = 1;
    for (size_t n : sizes) {
        for (CmaDir dir : {CmaDir::Read, CmaDir::Write}) {
            ++salt;
            // The child's copy of `far` is the peer's buffer; ours is the local one.
            uint8_t *peer = far.data() + kGuard, *mine = near.data() + kGuard;
            std::vector<iovec> remote = cut(peer, n, {n / 3, n / 3 + 1, (n * 2) / 3});
            std::vector<iovec> local = cut(mine, n, {4096, n / 2 + 17, n - 1});
            std::vector<uint8_t> expect(n);
            for (size_t i = 0; i < n; ++i)
                expect[i] = pattern(i, salt);
            if (dir == CmaDir::Read) {
                // Put the pattern in the child: write it there first (one plain call).
                iovec l{expect.data(), n}, r{peer, n};
                ASSERT_EQ(::process_vm_writev(child.pid(), &l, 1, &r, 1, 0), ssize_t(n));
                std::memset(near.data(), 0xEE, near.size());
                ASSERT_TRUE(cma_copy(child.pid(), dir, local, remote, n)) << n;
                EXPECT_EQ(std::memcmp(mine, expect.data(), n), 0) << "read of " << n;
                EXPECT_EQ(mine[-1], 0xEE);
                EXPECT_EQ(mine[n], 0xEE);
            } else {
                std::memcpy(mine, expect.data(), n);
                std::vector<uint8_t> zero(n + 2, 0xEE);
                iovec l{zero.data(), n + 2}, r{peer - 1, n + 2};
                ASSERT_EQ(::process_vm_writev(child.pid(), &l, 1, &r, 1, 0), ssize_t(n + 2));
                ASSERT_TRUE(cma_copy(child.pid(), dir, local, remote, n)) << n;
                std::vector<uint8_t> back(n + 2);
                iovec bl{back.data(), n + 2};
                ASSERT_EQ(::process_vm_readv(child.pid(), &bl, 1, &r, 1, 0), ssize_t(n + 2));
                EXPECT_EQ(std::memcmp(back.data() + 1, expect.data(), n), 0) << "write of " << n;
                EXPECT_EQ(back[0], 0xEE);
                EXPECT_EQ(back[n + 1], 0xEE);
            }
        }
    }
}

// The helper does take halves: a stream of large copies is split, and within a bounded
// number of them the helper has copied some (it may be asleep for the first).
TEST(ShmCmaCopy, TheHelperCopiesHalves) {
    ASSERT_TRUE(kForced);
    ASSERT_TRUE(cma_copy_helper_enabled());
    const size_t n = size_t{1} << 20;
    std::vector<uint8_t> peer_buf(n), mine(n, 7);
    Child child;
    ASSERT_GT(child.pid(), 0);
    iovec l{mine.data(), n}, r{peer_buf.data(), n};
    const CmaCopyStats before = cma_copy_stats();
    CmaCopyStats now = before;
    // Bounded in time, not in copies: on a busy machine a helper just started may wait a
    // while for a CPU.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (now.helper_halves == before.helper_halves &&
           std::chrono::steady_clock::now() < deadline) {
        ASSERT_TRUE(cma_copy(child.pid(), CmaDir::Write, {&l, 1}, {&r, 1}, n));
        now = cma_copy_stats();
    }
    EXPECT_GT(now.split, before.split);
    EXPECT_GT(now.helper_halves, before.helper_halves);
}

// A forked child has no helper thread of its parent's: its own large copies start one,
// which takes halves there too (the parent's helper has run before the fork).
TEST(ShmCmaCopy, AForkedChildStartsItsOwnHelper) {
    ASSERT_TRUE(kForced);
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer cannot start threads in a child of a threaded process";
#endif
    const size_t n = size_t{1} << 20;
    std::vector<uint8_t> peer_buf(n), mine(n);
    Child target;
    ASSERT_GT(target.pid(), 0);
    iovec l{mine.data(), n}, r{peer_buf.data(), n};
    ASSERT_TRUE(cma_copy(target.pid(), CmaDir::Write, {&l, 1}, {&r, 1}, n));  // parent's helper
    pid_t kid = ::fork();
    ASSERT_GE(kid, 0);
    if (kid == 0) {
        // 1: a copy failed or was not exact; 2: the helper never took a half.
        const CmaCopyStats before = cma_copy_stats();
        CmaCopyStats now = before;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (int i = 0; now.helper_halves == before.helper_halves &&
                        std::chrono::steady_clock::now() < deadline;
             ++i) {
            for (size_t k = 0; k < n; ++k)
                mine[k] = pattern(k, uint8_t(i));
            if (!cma_copy(target.pid(), CmaDir::Write, {&l, 1}, {&r, 1}, n)) ::_exit(1);
            std::vector<uint8_t> back(n);
            iovec bl{back.data(), n};
            if (!cma_copy(target.pid(), CmaDir::Read, {&bl, 1}, {&r, 1}, n) || back != mine)
                ::_exit(1);
            now = cma_copy_stats();
        }
        ::_exit(now.helper_halves > before.helper_halves ? 0 : 2);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(kid, &status, 0), kid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a copy failed or differed, 2: no half was helped";
}

// Stopping the helper (two stops at once) while copies keep starting it again: every stop
// returns, and every copy stays exact. A stop that reset its flag while another waited for
// the thread to end once left that one waiting for ever.
TEST(ShmCmaCopy, StopsRaceCopiesAndEachOther) {
    ASSERT_TRUE(kForced);
    const size_t n = kCmaSplitMin * 2;
    std::vector<uint8_t> src(n);
    for (size_t i = 0; i < n; ++i)
        src[i] = pattern(i, 9);
    iovec r{src.data(), n};
    std::atomic<bool> quit{false};
    std::atomic<uint32_t> bad{0};
    std::vector<std::thread> copiers;
    for (int t = 0; t < 2; ++t)
        copiers.emplace_back([&] {
            std::vector<uint8_t> dst(n);
            iovec l{dst.data(), n};
            while (!quit.load(std::memory_order_acquire)) {
                // Our own pid: process_vm_readv works on the calling process too.
                if (!cma_copy(::getpid(), CmaDir::Read, {&l, 1}, {&r, 1}, n) || dst != src)
                    bad.fetch_add(1, std::memory_order_relaxed);
            }
        });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool stuck = false;
    for (int round = 0; round < 200 && !stuck; ++round) {
        std::atomic<int> done{0};
        std::thread a([&] {
            cma_copy_helper_stop();
            done.fetch_add(1, std::memory_order_acq_rel);
        });
        std::thread b([&] {
            cma_copy_helper_stop();
            done.fetch_add(1, std::memory_order_acq_rel);
        });
        while (done.load(std::memory_order_acquire) < 2 && !stuck) {
            stuck = std::chrono::steady_clock::now() > deadline;
            std::this_thread::yield();
        }
        if (stuck) {
            a.detach();  // the process is failing anyway; do not hang the test
            b.detach();
        } else {
            a.join();
            b.join();
        }
    }
    quit.store(true, std::memory_order_release);
    for (std::thread &c : copiers)
        c.join();
    EXPECT_FALSE(stuck) << "a cma_copy_helper_stop() never returned";
    EXPECT_EQ(bad.load(), 0u);
}

// A fault in either half fails the whole copy, whoever copied that half.
TEST(ShmCmaCopy, AFaultInEitherHalfFailsTheCopy) {
    ASSERT_TRUE(kForced);
    const size_t half = kCmaSplitMin, page = 4096;
    // Two mapped halves with a hole (an inaccessible page) at the start of one or the
    // other. PROT_NONE, not munmap: an unmapped page could be taken by another mapping
    // (this process's allocator, ThreadSanitizer's) before the fork below, and the copy
    // then found memory there (1 ThreadSanitizer run in 300).
    auto *area = static_cast<uint8_t *>(::mmap(nullptr, 2 * half + page, PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(area, MAP_FAILED);
    std::memset(area, 1, 2 * half + page);
    std::vector<uint8_t> mine(2 * half, 3);
    for (size_t hole : {size_t{0}, half}) {
        ASSERT_EQ(::mprotect(area + hole, page, PROT_NONE), 0);
        Child child;  // forked after the hole was made: the hole is in its memory too
        ASSERT_GT(child.pid(), 0);
        const CmaCopyStats before = cma_copy_stats();
        // At least 50 rounds, and on until the helper has copied (failed) some halves
        // itself: a helper thread just started may not get a CPU at once on a busy machine.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        for (int round = 0; round < 50 || (cma_copy_stats().helper_halves == before.helper_halves &&
                                           std::chrono::steady_clock::now() < deadline);
             ++round) {
            iovec l{mine.data(), 2 * half}, r{area, 2 * half};
            ASSERT_FALSE(cma_copy(child.pid(), CmaDir::Write, {&l, 1}, {&r, 1}, 2 * half))
                << "hole at " << hole;
            ASSERT_FALSE(cma_copy(child.pid(), CmaDir::Read, {&l, 1}, {&r, 1}, 2 * half))
                << "hole at " << hole;
        }
        EXPECT_GT(cma_copy_stats().helper_halves, before.helper_halves) << "hole at " << hole;
        ASSERT_EQ(::mprotect(area + hole, page, PROT_READ | PROT_WRITE), 0);
    }
    ::munmap(area, 2 * half + page);
}

// The chooser, fed made-up copy times: `ns_per_mib(split)` is what a 1 MiB copy the
// chooser sent that way costs; `helper_copies` false models a helper that never gets to
// copy its half (a split then records nothing). Returns the decisions, true = split.
std::vector<bool> drive(CmaSplitChooser &c, size_t n, uint64_t whole_ns, uint64_t split_ns,
                        bool helper_copies = true) {
    std::vector<bool> out;
    for (size_t i = 0; i < n; ++i) {
        const bool split = c.split_next();
        out.push_back(split);
        if (split && !helper_copies) continue;
        c.record(split, size_t{1} << 20, static_cast<int64_t>(split ? split_ns : whole_ns));
    }
    return out;
}

size_t count_split(const std::vector<bool> &d, size_t from = 0) {
    return static_cast<size_t>(std::count(d.begin() + static_cast<ptrdiff_t>(from), d.end(), true));
}

TEST(ShmCmaCopy, ChooserWarmsUpBothWaysThenTakesTheCheaperOne) {
    using C = CmaSplitChooser;
    for (const bool split_cheaper : {true, false}) {
        SCOPED_TRACE(split_cheaper ? "split cheaper" : "one call cheaper");
        C c;
        const uint64_t fast = 45'000, slow = 70'000;  // ns per MiB: ~23 and ~15 GB/s
        std::vector<bool> d =
            drive(c, 2 * C::kWarmup, split_cheaper ? slow : fast, split_cheaper ? fast : slow);
        EXPECT_EQ(count_split(d), C::kWarmup) << "each way gets its warm-up samples";
        EXPECT_EQ(c.cost(true), split_cheaper ? fast : slow);
        EXPECT_EQ(c.cost(false), split_cheaper ? slow : fast);

        // Then the cheaper way, but for one burst of kProbe in every kPeriod copies.
        const size_t periods = 10;
        d = drive(c, periods * C::kPeriod, split_cheaper ? slow : fast,
                  split_cheaper ? fast : slow);
        const size_t probes = periods * C::kProbe;
        EXPECT_EQ(count_split(d), split_cheaper ? d.size() - probes : probes);
        // The probes come in bursts: never a lone one.
        size_t runs = 0;
        for (size_t i = 0; i < d.size(); ++i)
            if (d[i] != split_cheaper && (i == 0 || d[i - 1] == split_cheaper)) ++runs;
        EXPECT_LE(runs, periods + 1);
    }
}

TEST(ShmCmaCopy, ChooserFollowsAMachineWhoseSplitGetsSlower) {
    CmaSplitChooser c;
    drive(c, 4 * CmaSplitChooser::kPeriod, 70'000, 45'000);
    ASSERT_LT(c.cost(true), c.cost(false));
    // Splits now cost 3x: the probes and the splits still chosen pull its average up
    // until one call wins.
    std::vector<bool> d = drive(c, 8 * CmaSplitChooser::kPeriod, 70'000, 200'000);
    EXPECT_GT(c.cost(true), c.cost(false));
    const size_t last_period = d.size() - CmaSplitChooser::kPeriod;
    EXPECT_EQ(count_split(d, last_period), CmaSplitChooser::kProbe);
}

TEST(ShmCmaCopy, ChooserBoundsWhatOneSlowCopyWeighs) {
    CmaSplitChooser c;
    c.record(false, size_t{1} << 20, 50'000);
    EXPECT_EQ(c.cost(false), 50'000u);
    c.record(false, size_t{1} << 20, 50'000'000);  // preempted for 50 ms
    EXPECT_LE(c.cost(false), 50'000u + 3 * 50'000u / 8);
    c.record(false, 0, 1);  // ignored: nothing copied
    c.record(false, 1 << 20, 0);
    EXPECT_LE(c.cost(false), 50'000u + 3 * 50'000u / 8);
    // Per byte: a half-size copy of the same speed is the same cost.
    CmaSplitChooser h;
    h.record(true, size_t{512} << 10, 25'000);
    EXPECT_EQ(h.cost(true), 50'000u);
}

TEST(ShmCmaCopy, ChooserWithAHelperThatNeverCopiesSettlesOnOneCall) {
    CmaSplitChooser c;
    std::vector<bool> d = drive(c, 6 * CmaSplitChooser::kPeriod, 50'000, 1, false);
    EXPECT_EQ(c.cost(true), 0u);
    const size_t last_period = d.size() - CmaSplitChooser::kPeriod;
    EXPECT_EQ(count_split(d, last_period), CmaSplitChooser::kProbe);
}

TEST(ShmCmaCopy, SplitModeFollowsTheEnvironment) {
    // This binary sets SOFTRNIC_SHM_COPY_THREADS=2 before the first large copy.
    EXPECT_EQ(cma_copy_split_mode(), CmaSplitMode::Always);
    EXPECT_TRUE(cma_copy_helper_enabled());
}

}  // namespace
}  // namespace softrnic::transport::shm
