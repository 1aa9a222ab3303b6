// The face event queue (src/api/common/event_queue.hpp): the ring, the CQ drain (room,
// the caller's own first event, completions that vanish), arming, and the bounded sleep.
#include "api/common/event_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "../rnicpi/fixture.hpp"

namespace {

using namespace std::chrono_literals;
using softrnic::api::EventQueue;
using softrnic::api::EventRing;

struct Ev {
    uint64_t id = 0;
    int from = 0;  // 1: drained from the CQ
};

TEST(EventRing, FirstInFirstOutAcrossWrapAndGrowth) {
    EventRing<Ev> r;
    r.reserve(4);
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 3; ++round) {  // wrap around the 4 slots
        for (int i = 0; i < 3; ++i)
            r.push_back(Ev{next_in++, 0});
        for (int i = 0; i < 3; ++i, r.pop_front())
            ASSERT_EQ(r.front().id, next_out++);
    }
    for (int i = 0; i < 11; ++i)  // grows past 4 with the head mid-buffer
        r.push_back(Ev{next_in++, 0});
    EXPECT_EQ(r.size(), 11u);
    for (; !r.empty(); r.pop_front())
        ASSERT_EQ(r.front().id, next_out++);
    EXPECT_EQ(next_out, next_in);
}

TEST(EventRing, EmplacedSlotsAreZeroedAndCanBeTakenBack) {
    EventRing<Ev> r;
    r.push_back(Ev{7, 3});
    r.pop_front();
    Ev &slot = r.emplace_back();  // the slot that held {7, 3}
    EXPECT_EQ(slot.id, 0u);
    EXPECT_EQ(slot.from, 0);
    r.pop_back();
    EXPECT_TRUE(r.empty());
}

// A CQ holding `n` flushed receive completions (ids 0..n-1): receives posted on an IDLE
// QP, which then goes to Error.
struct FlushedCq {
    rt::Rnic rnic{"evq"};
    rt::Cq *cq = nullptr;
    explicit FlushedCq(int n) {
        cq = rnic.new_cq(64);
        rt::QpOpts o;
        o.rcq = cq;
        rt::Qp *qp = rnic.new_qp(o);
        if (qp == nullptr) return;
        for (int i = 0; i < n; ++i)
            EXPECT_EQ(rt::post_recv(qp, uint64_t(i), nullptr, 0), RI_RET_SUCCESS);
        EXPECT_EQ(rt::modify_state(qp, RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    }
    void attach(EventQueue<Ev> &q) {
        q.rnic = rnic.rnic;
        q.cq = cq->h;
    }
};

auto to_ev = [](const ri_wc_t &wc, Ev &ev) {
    ev.id = wc.rc_wc.id;
    ev.from = 1;
    return true;
};

TEST(EventQueue, DrainTakesCompletionsWhileThereIsRoom) {
    FlushedCq f(10);
    ASSERT_TRUE(f.rnic.ok());
    EventQueue<Ev> q;
    f.attach(q);
    std::lock_guard lk(q.mu);
    EXPECT_FALSE(q.drain_cq(4, to_ev));
    ASSERT_EQ(q.q.size(), 4u);  // the other six stay in the CQ
    for (uint64_t id = 0; id < 4; ++id, q.q.pop_front())
        EXPECT_EQ(q.q.front().id, id);
    EXPECT_FALSE(q.drain_cq(100, to_ev));
    ASSERT_EQ(q.q.size(), 6u);
    EXPECT_EQ(q.q.front().id, 4u);
    EXPECT_EQ(q.q.front().from, 1);
}

TEST(EventQueue, DrainFillsTheCallersFirstEventWithoutARingSlot) {
    FlushedCq f(3);
    ASSERT_TRUE(f.rnic.ok());
    EventQueue<Ev> q;
    f.attach(q);
    std::lock_guard lk(q.mu);
    Ev first{};
    EXPECT_TRUE(q.drain_cq(1, to_ev, &first));
    EXPECT_EQ(first.id, 0u);
    ASSERT_EQ(q.q.size(), 1u);  // the limit counts ring slots only
    EXPECT_EQ(q.q.front().id, 1u);
}

TEST(EventQueue, CompletionsThatDoNotConvertVanish) {
    FlushedCq f(6);
    ASSERT_TRUE(f.rnic.ok());
    EventQueue<Ev> q;
    f.attach(q);
    std::lock_guard lk(q.mu);
    auto odd_only = [](const ri_wc_t &wc, Ev &ev) {
        ev.id = wc.rc_wc.id;
        return wc.rc_wc.id % 2 == 1;
    };
    Ev first{};
    EXPECT_TRUE(q.drain_cq(16, odd_only, &first));
    EXPECT_EQ(first.id, 1u);  // completion 0 vanished before it
    ASSERT_EQ(q.q.size(), 2u);
    EXPECT_EQ(q.q.front().id, 3u);
    q.q.pop_front();
    EXPECT_EQ(q.q.front().id, 5u);
}

TEST(EventQueue, WithoutACqNothingIsDrainedAndArmingIsHarmless) {
    EventQueue<Ev> q;
    std::lock_guard lk(q.mu);
    Ev first{};
    EXPECT_FALSE(q.drain_cq(8, to_ev, &first));
    q.arm();
    EXPECT_TRUE(q.q.empty());
}

TEST(EventQueue, AnArmedCqNotifiesTheNextCompletion) {
    rt::Rnic rnic{"evq-arm"};
    ASSERT_TRUE(rnic.ok());
    rt::Cq *cq = rnic.new_cq(64);
    rt::QpOpts o;
    o.rcq = cq;
    rt::Qp *qp = rnic.new_qp(o);
    ASSERT_NE(qp, nullptr);
    ASSERT_EQ(rt::post_recv(qp, 1, nullptr, 0), RI_RET_SUCCESS);
    EventQueue<Ev> q;
    q.rnic = rnic.rnic;
    q.cq = cq->h;
    {
        std::lock_guard lk(q.mu);
        q.arm();
    }
    ASSERT_EQ(rt::modify_state(qp, RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (rnic.recorder().count_cq(cq->os()) == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    EXPECT_GE(rnic.recorder().count_cq(cq->os()), 1u);
}

TEST(EventQueue, SleepEndsOnNotify) {
    EventQueue<Ev> q;
    std::unique_lock lk(q.mu);
    const uint64_t seen = q.wake_seq;
    std::thread t([&] {
        std::this_thread::sleep_for(20ms);
        std::lock_guard g(q.mu);
        q.notify();
    });
    // The notify may land in any of the bounded sleeps: loop as a waiter does.
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (q.wake_seq == seen && std::chrono::steady_clock::now() < deadline)
        q.sleep(lk, seen, deadline, [] { return false; });
    lk.unlock();
    t.join();
    EXPECT_NE(q.wake_seq, seen);
}

TEST(EventQueue, SleepEndsWhenAnEventIsQueued) {
    EventQueue<Ev> q;
    std::unique_lock lk(q.mu);
    std::thread t([&] {
        std::this_thread::sleep_for(20ms);
        std::lock_guard g(q.mu);
        q.q.push_back(Ev{42, 0});
        q.cv.notify_all();
    });
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (q.q.empty() && std::chrono::steady_clock::now() < deadline)
        q.sleep(lk, q.wake_seq, deadline, [] { return false; });
    EXPECT_EQ(q.q.size(), 1u);
    lk.unlock();
    t.join();
}

TEST(EventQueue, SleepIsBoundedByTheDeadlineAndByItsMaximum) {
    EventQueue<Ev> q;
    std::unique_lock lk(q.mu);
    auto t0 = std::chrono::steady_clock::now();
    q.sleep(lk, q.wake_seq, t0 + 10ms, [] { return false; });
    auto slept = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(slept, 10ms);
    EXPECT_LT(slept, EventQueue<Ev>::kMaxSleep + 2s);
    t0 = std::chrono::steady_clock::now();
    q.sleep(lk, q.wake_seq, std::nullopt, [] { return false; });  // no deadline: one step
    slept = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(slept, EventQueue<Ev>::kMaxSleep);
    EXPECT_LT(slept, EventQueue<Ev>::kMaxSleep + 2s);
}

TEST(EventQueue, SleepEndsAtOnceWhenTheFaceSaysStop) {
    EventQueue<Ev> q;
    std::unique_lock lk(q.mu);
    auto t0 = std::chrono::steady_clock::now();
    q.sleep(lk, q.wake_seq, std::nullopt, [] { return true; });
    EXPECT_LT(std::chrono::steady_clock::now() - t0, EventQueue<Ev>::kMaxSleep);
}

}  // namespace
