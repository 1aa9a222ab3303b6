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

// A split with a stagger: the helper starts its half's call no earlier than the stagger
// (ns per page of the caller's half) after the offer, and the bytes are exact either way.
TEST(ShmCmaCopy, TheHelperWaitsOutTheStagger) {
    ASSERT_TRUE(kForced);
    using C = CmaSplitChooser;
    const size_t n = size_t{1} << 20;  // the caller's half: 128 pages (+1: unaligned start)
    std::vector<uint8_t> peer_buf(n), mine(n);
    for (size_t i = 0; i < n; ++i)
        peer_buf[i] = pattern(i, 0x3C);
    Child child;  // its peer_buf holds the pattern
    ASSERT_GT(child.pid(), 0);
    iovec l{mine.data(), n}, r{peer_buf.data(), n};
    const uint32_t way = C::kWays - 1;
    const int64_t stagger_ns = int64_t{C::kStaggerNsPerPage[way - 1]} * 129;
    size_t helper_copies = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (helper_copies < 3 && std::chrono::steady_clock::now() < deadline) {
        std::fill(mine.begin(), mine.end(), uint8_t{0});
        const uint64_t halves = cma_copy_stats().helper_halves;
        ASSERT_TRUE(cma_copy_way(child.pid(), CmaDir::Read, {&l, 1}, {&r, 1}, n, way));
        ASSERT_EQ(mine, peer_buf);
        const CmaCopyStats now = cma_copy_stats();
        if (now.helper_halves != halves) {
            ++helper_copies;
            EXPECT_GE(now.last_helper_delay_ns, stagger_ns);
        }
    }
    EXPECT_GT(helper_copies, 0u);
    EXPECT_FALSE(cma_copy_way(child.pid(), CmaDir::Read, {&l, 1}, {&r, 1}, n, C::kWays));
    // One call: no helper involved, same bytes.
    std::fill(mine.begin(), mine.end(), uint8_t{0});
    ASSERT_TRUE(cma_copy_way(child.pid(), CmaDir::Read, {&l, 1}, {&r, 1}, n, C::kWhole));
    EXPECT_EQ(mine, peer_buf);
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

// The chooser, fed made-up copy times: `ns_per_mib(way)` is what a 1 MiB copy the chooser
// sent that way costs; 0 models a split whose half the helper never got to copy (it then
// records nothing). Returns the ways taken.
using Ways = std::vector<uint32_t>;
template <class Cost>
Ways drive(CmaSplitChooser &c, size_t n, Cost ns_per_mib) {
    Ways out;
    for (size_t i = 0; i < n; ++i) {
        const uint32_t way = c.next();
        out.push_back(way);
        if (const uint64_t ns = ns_per_mib(way))
            c.record(way, size_t{1} << 20, static_cast<int64_t>(ns));
    }
    return out;
}

size_t count_way(const Ways &d, uint32_t way, size_t from = 0) {
    return static_cast<size_t>(std::count(d.begin() + static_cast<ptrdiff_t>(from), d.end(), way));
}

using C = CmaSplitChooser;

// The way whose stagger is `ns_per_page`.
uint32_t way_of(uint32_t ns_per_page) {
    for (uint32_t w = 1; w < C::kWays; ++w)
        if (C::kStaggerNsPerPage[w - 1] == ns_per_page) return w;
    ADD_FAILURE() << "no way with stagger " << ns_per_page;
    return C::kWhole;
}

// A machine like the 2-vCPU Xeon: a helper that starts before the caller's pages are
// pinned (stagger below `cliff` ns per page) fights it for the page-table lock; later, each
// ns per page of stagger is idle helper time.
auto cliff_machine(const uint32_t &cliff) {
    return [&cliff](uint32_t way) -> uint64_t {
        if (way == C::kWhole) return 45'000;
        const uint32_t s = C::kStaggerNsPerPage[way - 1];
        return s < cliff ? 90'000 : 20'000 + 200 * s;
    };
}

TEST(ShmCmaCopy, ChooserWarmsUpEveryWayThenTakesTheCheapest) {
    {
        SCOPED_TRACE("one call cheapest");
        C c;
        auto cost = [](uint32_t way) -> uint64_t { return way == C::kWhole ? 45'000 : 70'000; };
        Ways d = drive(c, C::kWays * C::kWarmup, cost);
        for (uint32_t w = 0; w < C::kWays; ++w) {
            EXPECT_EQ(count_way(d, w), C::kWarmup) << "way " << w;
            EXPECT_EQ(c.cost(w), cost(w)) << "way " << w;
        }
        // Then one call, but for one burst of kProbe splits in every kPeriod copies.
        const size_t periods = 12;
        d = drive(c, periods * C::kPeriod, cost);
        EXPECT_EQ(count_way(d, C::kWhole), d.size() - periods * C::kProbe);
        size_t runs = 0;  // the probes come in bursts: never a lone one
        for (size_t i = 0; i < d.size(); ++i)
            if (d[i] != C::kWhole && (i == 0 || d[i - 1] == C::kWhole)) ++runs;
        EXPECT_LE(runs, periods + 1);
    }
    {
        SCOPED_TRACE("a split cheapest");
        C c;
        const uint32_t best = way_of(40);
        auto cost = [best](uint32_t way) -> uint64_t { return way == best ? 25'000 : 60'000; };
        drive(c, C::kWays * C::kWarmup, cost);
        EXPECT_EQ(c.best_split(), best);
        // That split, but for one single probe in every kPeriod copies (the helper polls
        // anyway): one call, the next smaller stagger, the next larger, any, in turn.
        const size_t periods = 12;
        Ways d = drive(c, periods * C::kPeriod, cost);
        EXPECT_GE(count_way(d, best), d.size() - periods);
        EXPECT_LE(count_way(d, best), d.size() - 3 * periods / 4);
        EXPECT_EQ(count_way(d, C::kWhole), periods / 4);
        EXPECT_GE(count_way(d, best - 1), periods / 4);
        EXPECT_GE(count_way(d, best + 1), periods / 4);
    }
}

TEST(ShmCmaCopy, ChooserFindsTheStaggerPastTheLockContentionAndFollowsIt) {
    C c;
    uint32_t cliff = 35;
    auto machine = cliff_machine(cliff);
    drive(c, C::kWays * C::kWarmup + 6 * C::kPeriod, machine);
    EXPECT_EQ(c.best_split(), way_of(40));
    Ways d = drive(c, C::kPeriod, machine);
    EXPECT_EQ(count_way(d, way_of(40)), C::kPeriod - 1);

    // Pinning got slower: 40 ns per page is now too early. The averages of the way taken
    // and of the probed neighbours move the choice to 50.
    cliff = 45;
    drive(c, 20 * C::kPeriod, machine);
    d = drive(c, C::kPeriod, machine);
    EXPECT_EQ(count_way(d, way_of(50)), C::kPeriod - 1);

    // And faster again: the probes of the smaller neighbour bring it back down, step by
    // step, to the first stagger past the cliff.
    cliff = 25;
    drive(c, 60 * C::kPeriod, machine);
    d = drive(c, C::kPeriod, machine);
    EXPECT_EQ(count_way(d, way_of(30)), C::kPeriod - 1);
}

TEST(ShmCmaCopy, ChooserFollowsAMachineWhoseSplitGetsSlower) {
    C c;
    bool slow = false;
    auto machine = [&slow](uint32_t way) -> uint64_t {
        return way == C::kWhole ? 70'000 : slow ? 200'000 : 45'000;
    };
    drive(c, C::kWays * C::kWarmup + 4 * C::kPeriod, machine);
    ASSERT_LT(c.cost(c.best_split()), c.cost(C::kWhole));
    // Splits now cost 3x: the splits still taken and the probes pull their averages up
    // until one call wins.
    slow = true;
    Ways d = drive(c, 8 * C::kPeriod, machine);
    EXPECT_GT(c.cost(c.best_split()), c.cost(C::kWhole));
    EXPECT_EQ(count_way(d, C::kWhole, d.size() - C::kPeriod), C::kPeriod - C::kProbe);
}

// A warm-up under conditions where every split fought for the lock (a ping-pong phase,
// say) must not write the splits off: once the contention is gone, the probes of ways
// away from the best split find the stagger that now wins.
TEST(ShmCmaCopy, ChooserRetriesWaysJudgedUnderOtherConditions) {
    C c;
    uint32_t cliff = 1000;  // every stagger contended
    auto machine = cliff_machine(cliff);
    drive(c, C::kWays * C::kWarmup + 8 * C::kPeriod, machine);
    EXPECT_EQ(count_way(drive(c, C::kPeriod, machine), C::kWhole), C::kPeriod - C::kProbe);
    cliff = 35;
    drive(c, 4 * (C::kWays - 1) * C::kPeriod, machine);  // each way's turn comes round
    const Ways d = drive(c, C::kPeriod, machine);
    EXPECT_EQ(count_way(d, way_of(40)), C::kPeriod - 1);
}

// Same, with a helper that copied nothing during the warm-up: unsampled ways come first.
TEST(ShmCmaCopy, ChooserSamplesWaysTheWarmUpMissed) {
    C c;
    bool helper_copies = false;
    uint32_t cliff = 35;
    auto machine = [&helper_copies, m = cliff_machine(cliff)](uint32_t way) -> uint64_t {
        return way == C::kWhole || helper_copies ? m(way) : 0;
    };
    drive(c, C::kWays * C::kWarmup, machine);
    EXPECT_EQ(c.best_split(), C::kWhole);
    helper_copies = true;
    drive(c, 4 * (C::kWays - 1) * C::kPeriod, machine);
    for (uint32_t w = 1; w < C::kWays; ++w)
        EXPECT_NE(c.cost(w), 0u) << "way " << w;
    const Ways d = drive(c, C::kPeriod, machine);
    EXPECT_EQ(count_way(d, way_of(40)), C::kPeriod - 1);
}

TEST(ShmCmaCopy, ChooserBoundsWhatOneSlowCopyWeighs) {
    {
        SCOPED_TRACE("the way taken: 1/8 per copy");
        C c;
        drive(c, C::kWays * C::kWarmup + 1,
              [](uint32_t way) -> uint64_t { return way == C::kWhole ? 50'000 : 90'000; });
        ASSERT_EQ(c.cost(C::kWhole), 50'000u);
        c.record(C::kWhole, size_t{1} << 20, 50'000'000);  // preempted for 50 ms
        EXPECT_EQ(c.cost(C::kWhole), 50'000u + 3 * 50'000u / 8);
        c.record(C::kWhole, 0, 1);  // ignored: nothing copied
        c.record(C::kWhole, 1 << 20, 0);
        c.record(C::kWays, 1 << 20, 1);  // ignored: no such way
        EXPECT_EQ(c.cost(C::kWhole), 50'000u + 3 * 50'000u / 8);
        EXPECT_EQ(c.cost(C::kWays), 0u);
        // A way not taken (a probe) moves by half, still bounded by 4x.
        ASSERT_EQ(c.cost(1), 90'000u);
        c.record(1, size_t{1} << 20, 1'000'000'000);
        EXPECT_EQ(c.cost(1), 90'000u / 2 + 4 * 90'000u / 2);
    }
    {
        SCOPED_TRACE("warm-up: every way by 1/2");
        C c;
        c.record(C::kWhole, size_t{1} << 20, 80'000);  // a cold first copy
        c.record(C::kWhole, size_t{1} << 20, 40'000);
        EXPECT_EQ(c.cost(C::kWhole), 60'000u);
        // Per byte: a half-size copy of the same speed is the same cost.
        c.record(1, size_t{512} << 10, 25'000);
        EXPECT_EQ(c.cost(1), 50'000u);
    }
}

TEST(ShmCmaCopy, ChooserWithAHelperThatNeverCopiesSettlesOnOneCall) {
    C c;
    Ways d = drive(c, 8 * C::kPeriod,
                   [](uint32_t way) -> uint64_t { return way == C::kWhole ? 50'000 : 0; });
    EXPECT_EQ(c.best_split(), C::kWhole);
    const size_t last_period = d.size() - C::kPeriod;
    EXPECT_EQ(count_way(d, C::kWhole, last_period), C::kPeriod - C::kProbe);
    EXPECT_EQ(count_way(d, 1, last_period), C::kProbe) << "bursts of the first split way";
}

TEST(ShmCmaCopy, SplitModeFollowsTheEnvironment) {
    // This binary sets SOFTRNIC_SHM_COPY_THREADS=2 before the first large copy.
    EXPECT_EQ(cma_copy_split_mode(), CmaSplitMode::Always);
    EXPECT_TRUE(cma_copy_helper_enabled());
}

}  // namespace
}  // namespace softrnic::transport::shm
