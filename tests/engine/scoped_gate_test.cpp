// ScopedGate: users that enter with a plain store into a per-thread slot, closers that pay
// for the ordering (membarrier, or users' fenced stores with SOFTRNIC_GATE_FENCED=1; ctest
// runs this file in both modes).
#include <gtest/gtest.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "base/sync.hpp"

using namespace softrnic::base;
using namespace std::chrono_literals;

namespace {

bool fenced_requested() {
    const char *e = std::getenv("SOFTRNIC_GATE_FENCED");
    return e && e[0] == '1';
}

// Runs `fn` on a thread and reports whether it finished within `to`.
template <class Fn>
bool finishes_within(Fn fn, std::chrono::milliseconds to, std::thread &t) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    t = std::thread([fn, done] {
        fn();
        done->store(true, std::memory_order_release);
    });
    auto end = std::chrono::steady_clock::now() + to;
    while (!done->load(std::memory_order_acquire) && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(1ms);
    return done->load(std::memory_order_acquire);
}

TEST(ScopedGate, ModeFollowsTheEnvironment) {
    if (fenced_requested()) {
        EXPECT_FALSE(detail::g_asymmetric_fences);
        return;
    }
    int cmds = static_cast<int>(::syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0u, 0));
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        GTEST_SKIP() << "no private expedited membarrier here: users fence their stores";
    EXPECT_TRUE(detail::g_asymmetric_fences);
}

TEST(ScopedGate, ScopeEntersAnOpenGateAndFailsAClosedOne) {
    ScopedGate g;
    {
        GateScope s(g);
        EXPECT_TRUE(s);
    }
    g.close();  // nobody inside: returns at once
    {
        GateScope s(g);
        EXPECT_FALSE(s);
    }
    g.open();
    GateScope s(g);
    EXPECT_TRUE(s);
}

TEST(ScopedGate, CloseWaitsForAScopedUserOnAnotherThread) {
    ScopedGate g;
    std::atomic<int> phase{0};
    std::thread user([&] {
        GateScope s(g);
        ASSERT_TRUE(s);
        phase.store(1, std::memory_order_release);
        while (phase.load(std::memory_order_acquire) != 2)
            std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(20ms);  // still inside when the closer is waiting
        phase.store(3, std::memory_order_release);
    });
    while (phase.load(std::memory_order_acquire) != 1)
        std::this_thread::yield();
    phase.store(2, std::memory_order_release);
    g.close();
    // close() returned: the user has left, after its last store inside the gate.
    EXPECT_EQ(phase.load(std::memory_order_acquire), 3);
    user.join();
}

TEST(ScopedGate, CloseWaitsForCountedUsersToo) {
    ScopedGate g;
    ASSERT_TRUE(g.try_enter());  // a reference that may be released elsewhere
    std::thread closer;
    EXPECT_FALSE(finishes_within([&] { g.close(); }, 50ms, closer));
    std::thread releaser([&] { g.leave(); });  // released on another thread
    releaser.join();
    closer.join();
    EXPECT_TRUE(g.is_closed());
}

TEST(ScopedGate, WaitingScopeEntersWhenTheGateReopens) {
    ScopedGate g;
    g.close();
    std::thread user;
    std::atomic<bool> entered{false};
    EXPECT_FALSE(finishes_within(
        [&] {
            GateScope s(g, /*wait=*/true);
            entered.store(bool(s), std::memory_order_release);
        },
        30ms, user));
    g.open();
    user.join();
    EXPECT_TRUE(entered.load());
}

TEST(ScopedGate, WaitingScopeGivesUpOnAShutGate) {
    ScopedGate g;
    g.shut();
    GateScope s(g, /*wait=*/true);
    EXPECT_FALSE(s);
    g.revive();
    GateScope again(g, /*wait=*/true);
    EXPECT_TRUE(again);
}

TEST(ScopedGate, ShutNoWaitLetsTheCloserBeInside) {
    // A transport's own progress pass may detach its endpoint from inside the gate.
    ScopedGate g;
    GateScope s(g);
    ASSERT_TRUE(s);
    g.shut_no_wait();
    EXPECT_TRUE(g.is_closed());
    GateScope inner(g);
    EXPECT_FALSE(inner);
    s.exit();
    g.wait_users();  // returns now that the scope has ended
}

TEST(ScopedGate, DeepNestingFallsBackToCounting) {
    // More nested scopes than a thread has slots: the extra ones count, and a closer waits
    // for them like any other user.
    constexpr size_t kGates = detail::kScopedDepth + 3;
    std::vector<ScopedGate> gates(kGates);
    std::vector<std::unique_ptr<GateScope>> scopes;
    for (auto &g : gates) {
        scopes.push_back(std::make_unique<GateScope>(g));
        ASSERT_TRUE(*scopes.back());
    }
    std::thread closer;
    EXPECT_FALSE(finishes_within([&] { gates.back().close(); }, 30ms, closer));
    while (!scopes.empty())
        scopes.pop_back();  // in reverse order of entry
    closer.join();
    // Every slot is free again: a fresh scope on each gate but the closed one enters.
    for (size_t i = 0; i + 1 < kGates; ++i) {
        GateScope s(gates[i]);
        EXPECT_TRUE(s);
    }
}

TEST(ScopedGate, EarlyExitLeavesOnce) {
    ScopedGate g;
    {
        GateScope s(g);
        ASSERT_TRUE(s);
        s.exit();
        EXPECT_FALSE(s);
        g.close();  // would wait for ever if the scope still held its slot
    }
    g.open();
    std::thread closer;
    EXPECT_TRUE(finishes_within([&] { g.close(); }, 5000ms, closer));
    closer.join();
}

TEST(ScopedGate, ThreadsThatExitGiveTheirSlotsBack) {
    // Many short-lived threads: blocks are reused, and none keeps a gate held after exit.
    ScopedGate g;
    for (int round = 0; round < 50; ++round) {
        std::vector<std::thread> ts;
        for (int i = 0; i < 4; ++i)
            ts.emplace_back([&] {
                GateScope s(g);
                EXPECT_TRUE(s);
            });
        for (auto &t : ts)
            t.join();
    }
    std::thread closer;
    EXPECT_TRUE(finishes_within([&] { g.close(); }, 5000ms, closer));
    closer.join();
}

TEST(ScopedGate, ScopesInThreadExitDestructorsStillWork) {
    // A thread_local destructor that runs after the thread's slot registration is gone.
    static ScopedGate g;
    static std::atomic<int> entered{0};
    struct AtExit {
        ~AtExit() {
            GateScope s(g);
            if (s) entered.fetch_add(1, std::memory_order_relaxed);
        }
    };
    std::thread t([] {
        // Thread-local objects are destroyed in reverse order of construction: AtExit,
        // made before this thread's first scope registered its slots, outlives the
        // registration, and its scope finds the slots already given back.
        static thread_local AtExit at_exit;
        (void)at_exit;
        GateScope first(g);
        EXPECT_TRUE(first);
    });
    t.join();
    EXPECT_EQ(entered.load(), 1);
    std::thread closer;
    EXPECT_TRUE(finishes_within([&] { g.close(); }, 5000ms, closer));
    closer.join();
    g.open();
}

// The property the gate exists for: once close() returns, no user is inside, and every
// user's accesses inside happened before it. Users read a non-atomic record that the
// closer rewrites while the gate is closed; a user inside that saw a half-written record,
// or a closer that returned early, shows up as a torn read here (and as a data race under
// ThreadSanitizer).
TEST(ScopedGate, UsersNeverSeeTheCloserAtWork) {
    ScopedGate g;
    struct Record {
        uint64_t a = 0, b = 0;
    } rec;
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> torn{0}, inside{0};
    std::vector<std::thread> users;
    for (int i = 0; i < 2; ++i)
        users.emplace_back([&, i] {
            while (!stop.load(std::memory_order_acquire)) {
                GateScope s(g, /*wait=*/(i & 1) != 0);
                if (!s) continue;
                uint64_t a = rec.a, b = rec.b;
                if (a != b) torn.fetch_add(1, std::memory_order_relaxed);
                inside.fetch_add(1, std::memory_order_relaxed);
            }
        });
    // At least 2,000 closes, and until the users got in 2,000 times between them (threads
    // start late on a loaded machine); bounded in time all the same.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    for (uint64_t v = 1; v <= 2000 || (inside.load(std::memory_order_relaxed) < 2000 &&
                                       std::chrono::steady_clock::now() < deadline);
         ++v) {
        g.close();
        rec.a = v;
        std::atomic_signal_fence(std::memory_order_seq_cst);
        rec.b = v;
        g.open();
        std::this_thread::yield();  // an open window the users can hit on 2 vCPUs
    }
    stop.store(true, std::memory_order_release);
    for (auto &t : users)
        t.join();
    EXPECT_EQ(torn.load(), 0u);
    EXPECT_GE(inside.load(), 2000u);
}

}  // namespace
