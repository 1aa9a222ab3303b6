// The face event queue (src/api/common/event_queue.hpp): the ring, the CQ drain (room,
// the caller's own first event, completions that vanish), arming, the bounded sleep, and
// the optional pollable descriptor.
#include "api/common/event_queue.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

// Whether `fd` is readable now (poll with no timeout).
bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST(EventQueueFd, IsOffByDefaultAndItsCallsAreHarmless) {
    EventQueue<Ev> q;
    EXPECT_EQ(q.fd(), -1);
    std::lock_guard lk(q.mu);
    q.q.push_back(Ev{1, 0});
    q.queued();
    q.notify();
    q.q.pop_front();
    q.dequeued();
    EXPECT_EQ(q.fd(), -1);
}

TEST(EventQueueFd, IsANonBlockingCloseOnExecDescriptorNotReadableWhenEmpty) {
    EventQueue<Ev> q;
    ASSERT_TRUE(q.enable_fd());
    const int fd = q.fd();
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(q.enable_fd());  // a second call keeps the first descriptor
    EXPECT_EQ(q.fd(), fd);
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    EXPECT_NE(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    EXPECT_FALSE(readable(fd));
}

TEST(EventQueueFd, ReadableWhileEventsAreQueuedUntilTheLastIsDequeued) {
    EventQueue<Ev> q;
    ASSERT_TRUE(q.enable_fd());
    std::lock_guard lk(q.mu);
    q.q.push_back(Ev{1, 0});
    q.queued();
    q.q.push_back(Ev{2, 0});
    q.queued();
    EXPECT_TRUE(readable(q.fd()));
    q.q.pop_front();
    q.dequeued();
    EXPECT_TRUE(readable(q.fd()));  // one event left
    q.q.pop_front();
    q.dequeued();
    EXPECT_FALSE(readable(q.fd()));
    q.q.push_back(Ev{3, 0});  // and readable again for the next one
    q.queued();
    EXPECT_TRUE(readable(q.fd()));
}

TEST(EventQueueFd, EnabledOnAQueueHoldingEventsIsReadableAtOnce) {
    EventQueue<Ev> q;
    q.q.push_back(Ev{1, 0});
    ASSERT_TRUE(q.enable_fd());
    EXPECT_TRUE(readable(q.fd()));
}

TEST(EventQueueFd, ANotificationWithoutACqLastsUntilTheNextDequeue) {
    EventQueue<Ev> q;
    ASSERT_TRUE(q.enable_fd());
    std::lock_guard lk(q.mu);
    q.notify();
    EXPECT_TRUE(readable(q.fd()));
    q.dequeued();  // a dequeue that found nothing
    EXPECT_FALSE(readable(q.fd()));
}

// A notification may stand for completions still in the CQ: the descriptor stays readable
// until a drain finds the CQ empty and the ring is emptied after it.
TEST(EventQueueFd, ANotificationLastsUntilTheCqIsDrainedAndTheRingEmptied) {
    FlushedCq f(3);
    ASSERT_TRUE(f.rnic.ok());
    EventQueue<Ev> q;
    f.attach(q);
    ASSERT_TRUE(q.enable_fd());
    std::lock_guard lk(q.mu);
    q.notify();
    q.dequeued();  // the ring is empty but the CQ was not drained
    EXPECT_TRUE(readable(q.fd()));
    EXPECT_FALSE(q.drain_cq(2, to_ev));  // room for two: the CQ is not found empty
    ASSERT_EQ(q.q.size(), 2u);
    q.q.pop_front();
    q.q.pop_front();
    q.dequeued();
    EXPECT_TRUE(readable(q.fd()));  // the third completion is still in the CQ
    Ev first{};
    EXPECT_TRUE(q.drain_cq(2, to_ev, &first));
    EXPECT_EQ(first.id, 2u);
    EXPECT_TRUE(q.q.empty());
    q.dequeued();
    EXPECT_FALSE(readable(q.fd()));
}

TEST(EventQueueFd, ADrainThatLeavesEventsInTheRingMakesItReadable) {
    FlushedCq f(3);
    ASSERT_TRUE(f.rnic.ok());
    EventQueue<Ev> q;
    f.attach(q);
    ASSERT_TRUE(q.enable_fd());
    std::lock_guard lk(q.mu);
    Ev first{};
    EXPECT_TRUE(q.drain_cq(1, to_ev, &first));  // one for the caller, one in the ring
    ASSERT_EQ(q.q.size(), 1u);
    q.dequeued();
    EXPECT_TRUE(readable(q.fd()));
}

TEST(EventQueueFd, AThreadBlockedInPollWakesWhenAnEventIsQueued) {
    EventQueue<Ev> q;
    ASSERT_TRUE(q.enable_fd());
    std::atomic<int> polled{-2};
    std::atomic<short> revents{0};
    std::thread waiter([&] {
        pollfd p{q.fd(), POLLIN, 0};
        polled.store(::poll(&p, 1, 5000), std::memory_order_release);
        revents.store(p.revents, std::memory_order_relaxed);
    });
    std::this_thread::sleep_for(20ms);  // most likely blocked in poll() by now
    {
        std::lock_guard lk(q.mu);
        q.q.push_back(Ev{7, 0});
        q.queued();
    }
    const auto t0 = std::chrono::steady_clock::now();
    waiter.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);  // woken, not timed out
    EXPECT_EQ(polled.load(std::memory_order_acquire), 1);
    EXPECT_NE(revents.load(std::memory_order_relaxed) & POLLIN, 0);
}

// The queue a CQ notification is delivered to (the face's handler finds it by the CQ's
// os_data; the test has one).
std::atomic<EventQueue<Ev> *> notified_queue{nullptr};
void notify_queue(ri_os_data_t, ri_os_data_t) {
    EventQueue<Ev> *q = notified_queue.load(std::memory_order_acquire);
    if (q == nullptr) return;
    std::lock_guard lk(q->mu);
    q->notify();
}

TEST(EventQueueFd, ACompletionOnTheArmedCqWakesAThreadBlockedInPoll) {
    EventQueue<Ev> q;  // outlives the RNIC, whose handler thread notifies it
    rt::Rnic rnic{"evq-fd"};
    ASSERT_TRUE(rnic.ok());
    ri_cq_event_handler_id_t handler = 0;
    ri_err_data_t err = 0;
    ASSERT_EQ(ri_cq_set_event_handler(rnic.vp, &handler, &notify_queue, &err), RI_RET_SUCCESS);
    const ri_cq_event_handler_id_t recorder = rnic.handler_id;
    rnic.handler_id = handler;  // the next CQ notifies the queue
    rt::Cq *cq = rnic.new_cq(64);
    rnic.handler_id = recorder;
    ASSERT_NE(cq, nullptr);
    rt::QpOpts o;
    o.rcq = cq;
    rt::Qp *qp = rnic.new_qp(o);
    ASSERT_NE(qp, nullptr);
    ASSERT_EQ(rt::post_recv(qp, 5, nullptr, 0), RI_RET_SUCCESS);
    q.rnic = rnic.rnic;
    q.cq = cq->h;
    ASSERT_TRUE(q.enable_fd());
    notified_queue.store(&q, std::memory_order_release);
    {
        std::lock_guard lk(q.mu);
        q.arm();
        EXPECT_FALSE(q.drain_cq(16, to_ev));
        q.dequeued();
    }
    EXPECT_FALSE(readable(q.fd()));
    std::atomic<int> polled{-2};
    std::thread waiter([&] {
        pollfd p{q.fd(), POLLIN, 0};
        polled.store(::poll(&p, 1, 5000), std::memory_order_release);
    });
    EXPECT_EQ(rt::modify_state(qp, RI_QP_STATE_ERROR), RI_RET_SUCCESS);  // flushes receive 5
    waiter.join();
    EXPECT_EQ(polled.load(std::memory_order_acquire), 1);
    {
        std::lock_guard lk(q.mu);
        Ev first{};
        EXPECT_TRUE(q.drain_cq(16, to_ev, &first));
        EXPECT_EQ(first.id, 5u);
        q.dequeued();
    }
    EXPECT_FALSE(readable(q.fd()));
    rnic.drain();  // no notification is still on its way to the queue
    notified_queue.store(nullptr, std::memory_order_release);
}

TEST(EventQueueFd, TheDestructorClosesIt) {
    int fd = -1;
    {
        EventQueue<Ev> q;
        ASSERT_TRUE(q.enable_fd());
        fd = q.fd();
        ASSERT_NE(::fcntl(fd, F_GETFD), -1);
    }
    errno = 0;
    EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
    EXPECT_EQ(errno, EBADF);
}

TEST(EventQueueFd, AFaceMayRaiseAndLowerItByItsOwnRule) {
    EventQueue<Ev> q;
    std::lock_guard lk(q.mu);
    q.fd_ready(true);  // off: harmless
    ASSERT_TRUE(q.enable_fd());
    q.q.push_back(Ev{1, 0});  // events alone do not make it readable under this rule
    EXPECT_FALSE(readable(q.fd()));
    q.fd_ready(true);
    EXPECT_TRUE(readable(q.fd()));
    q.fd_ready(true);  // twice: still one readiness, lowered by one call
    q.fd_ready(false);
    EXPECT_FALSE(readable(q.fd()));
}

TEST(EventQueueFd, WakeEndsASleepAndLeavesTheDescriptorAlone) {
    EventQueue<Ev> q;
    ASSERT_TRUE(q.enable_fd());
    std::atomic<bool> woke{false};
    std::thread t([&] {
        std::unique_lock lk(q.mu);
        const uint64_t seen = q.wake_seq;
        while (q.wake_seq == seen)
            q.sleep(lk, seen, std::nullopt, [] { return false; });
        woke.store(true, std::memory_order_release);
    });
    std::this_thread::sleep_for(10ms);
    {
        std::lock_guard lk(q.mu);
        q.wake();
    }
    t.join();
    EXPECT_TRUE(woke.load(std::memory_order_acquire));
    EXPECT_FALSE(readable(q.fd()));
}

TEST(EventQueueFd, KnowsWhetherADupStillRefersToIt) {
    EventQueue<Ev> q;
    EXPECT_FALSE(q.fd_is(0));  // off
    ASSERT_TRUE(q.enable_fd());
    const int dup = ::fcntl(q.fd(), F_DUPFD_CLOEXEC, 0);
    ASSERT_GE(dup, 0);
    EXPECT_TRUE(q.fd_is(dup));
    EXPECT_TRUE(q.fd_is(q.fd()));
    ::close(dup);
    EXPECT_FALSE(q.fd_is(dup));
    // The number reused by another file is not the queue's.
    const int other = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(other, 0);
    EXPECT_FALSE(q.fd_is(other));
    ::close(other);
}

}  // namespace
