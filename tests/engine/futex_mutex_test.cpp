// The futex mutex (the lock of a uDAPL EVD) on its own: mutual exclusion under contention (the
// futex path), try_lock, and waits on a condition_variable_any that the EVD pairs it with.
#include "base/futex_mutex.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using softrnic::base::FutexMutex;

// Four threads (on two CPUs: holders get preempted, waiters sleep on the futex) each add
// to a two-word record that is consistent only under the lock.
TEST(FutexMutex, ExcludesUnderContention) {
    FutexMutex mu;
    uint64_t a = 0, b = 0;  // always equal outside the lock
    uint64_t torn = 0;
    constexpr int kThreads = 4;
    constexpr int kRounds = 100000;
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; ++t)
        th.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard lk(mu);
                if (a != b) ++torn;
                ++a;
                if (i % 1024 == 0) std::this_thread::yield();  // hold it across a switch
                ++b;
            }
        });
    for (auto &t : th)
        t.join();
    EXPECT_EQ(torn, 0u);
    EXPECT_EQ(a, uint64_t{kThreads} * kRounds);
    EXPECT_EQ(b, a);
}

TEST(FutexMutex, TryLockFailsWhileHeld) {
    FutexMutex mu;
    ASSERT_TRUE(mu.try_lock());
    bool other = true;
    std::thread([&] { other = mu.try_lock(); }).join();
    EXPECT_FALSE(other);
    mu.unlock();
    std::thread([&] {
        other = mu.try_lock();
        if (other) mu.unlock();
    }).join();
    EXPECT_TRUE(other);
}

// dat_evd_wait sleeps on the EVD's condition variable with this lock; a producer that
// takes the lock (sleeping on the futex while the waiter's wait releases it) and notifies
// must wake it, every time.
TEST(FutexMutex, ConditionVariableHandOff) {
    FutexMutex mu;
    std::condition_variable_any cv;
    int produced = 0, consumed = 0;
    constexpr int kItems = 2000;
    std::thread producer([&] {
        for (int i = 0; i < kItems; ++i) {
            std::unique_lock lk(mu);
            cv.wait(lk, [&] { return produced == consumed; });
            ++produced;
            cv.notify_all();
        }
    });
    for (int i = 0; i < kItems; ++i) {
        std::unique_lock lk(mu);
        ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(20), [&] { return produced > consumed; }))
            << "item " << i << " never came";
        ++consumed;
        cv.notify_all();
    }
    producer.join();
    EXPECT_EQ(consumed, kItems);
}

}  // namespace
