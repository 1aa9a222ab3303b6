// libitapi.so.2's Event Dispatchers through the public calls: it_evd_create, _modify,
// _query, _dequeue, _wait, _post_se, _free, the fd, AEVDs and callbacks. Each test names
// the lines of the IT-API 2.1 specification it checks (IT-API Lnnnn).
#define ITAPI_ENABLE_V21_BINDINGS
#include <gtest/gtest.h>
#include <it_api.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "it_raw_calls.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const it_evd_flags_t kNoFlags = it_evd_flags_t(0);

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

class ItEvd : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(it_ia_create("softrnic", 2, 1, &ia), IT_SUCCESS); }
    void TearDown() override { EXPECT_EQ(it_ia_free(ia), IT_SUCCESS); }

    it_evd_handle_t sw(size_t qsize = 4, size_t threshold = 1, it_evd_handle_t aevd = nullptr,
                       it_evd_flags_t flags = kNoFlags) {
        it_evd_handle_t e = nullptr;
        EXPECT_EQ(
            it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, flags, qsize, threshold, aevd, &e, nullptr),
            IT_SUCCESS);
        return e;
    }
    it_evd_handle_t aevd(it_evd_flags_t flags, int *fd = nullptr) {
        it_evd_handle_t e = nullptr;
        EXPECT_EQ(
            it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, flags, 0, 0, nullptr, &e, fd),
            IT_SUCCESS);
        return e;
    }
    it_evd_param_t query(it_evd_handle_t e) {
        it_evd_param_t p{};
        EXPECT_EQ(it_evd_query(e, IT_EVD_PARAM_ALL, &p), IT_SUCCESS);
        return p;
    }
    void enable(it_evd_handle_t e, bool on) {
        it_evd_param_t p{};
        p.evd_enabled = on ? IT_TRUE : IT_FALSE;
        ASSERT_EQ(it_evd_modify(e, IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
    }
    it_ia_handle_t ia = nullptr;
};

// IT-API L4318-L4320: an SEVD of each stream, and an AEVD.
TEST_F(ItEvd, CreatesAnSevdOfEachStreamAndAnAevd_L4318) {
    for (it_event_type_t s :
         {IT_DTO_EVENT_STREAM, IT_CM_REQ_EVENT_STREAM, IT_CM_MSG_EVENT_STREAM,
          IT_ASYNC_AFF_EVENT_STREAM, IT_ASYNC_UNAFF_EVENT_STREAM, IT_SOFTWARE_EVENT_STREAM}) {
        it_evd_handle_t e = nullptr;
        ASSERT_EQ(it_evd_create(ia, s, kNoFlags, 16, 1, nullptr, &e, nullptr), IT_SUCCESS) << s;
        it_evd_param_t p = query(e);
        EXPECT_EQ(p.ia, ia);
        EXPECT_EQ(p.event_number, s);
        EXPECT_GE(p.sevd_queue_size, 16u);  // at least what was asked (IT-API L4477-L4481)
        EXPECT_EQ(p.sevd_threshold, 1u);
        EXPECT_EQ(p.aevid, nullptr);
        EXPECT_EQ(p.fd, -1);
        EXPECT_EQ(p.evd_enabled, IT_TRUE);  // IT-API L4555
        EXPECT_EQ(p.evd_overflowed, IT_FALSE);
        EXPECT_EQ(p.evd_callback, IT_FALSE);
        // Bound from creation on only for the built-in streams (IT-API L4310-L4318).
        const bool built_in = s == IT_ASYNC_AFF_EVENT_STREAM || s == IT_ASYNC_UNAFF_EVENT_STREAM ||
                              s == IT_SOFTWARE_EVENT_STREAM;
        EXPECT_EQ(p.evd_bound, built_in ? IT_TRUE : IT_FALSE) << s;
    }
    it_evd_handle_t a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    it_evd_param_t p = query(a);
    EXPECT_EQ(p.event_number, IT_AEVD_NOTIFICATION_EVENT_STREAM);
    EXPECT_EQ(p.sevd_queue_size, 0u);  // zero for an AEVD (IT-API L5229)
    EXPECT_EQ(p.evd_bound, IT_FALSE);
}

// IT-API L4549, L4536, L4470-L4476 (digest behaviour 30).
TEST_F(ItEvd, CreateRejectsBadCombinations_L4472) {
    it_evd_handle_t e = nullptr, a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    int fd = -1;
    EXPECT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, a, &e, &fd),
              IT_ERR_MISMATCH_FD);
    EXPECT_EQ(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, kNoFlags, 0, 0, a, &e, nullptr),
              IT_ERR_AEVD_NOT_ALLOWED);
    auto flags = [&](unsigned s, unsigned f) {
        return raw_evd_create(ia, s, f, 4, 1, nullptr, &e, nullptr);
    };
    EXPECT_EQ(flags(IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT | IT_EVD_OVERFLOW_NOTIFY),
              IT_ERR_INVALID_FLAGS);
    EXPECT_EQ(flags(IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT | IT_EVD_OVERFLOW_AUTO_RESET),
              IT_ERR_INVALID_FLAGS);
    EXPECT_EQ(flags(IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_AUTO_RESET), IT_ERR_INVALID_FLAGS);
    EXPECT_EQ(flags(IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_NOTIFY | IT_EVD_OVERFLOW_AUTO_RESET),
              IT_ERR_INVALID_FLAGS);
    EXPECT_EQ(flags(IT_ASYNC_UNAFF_EVENT_STREAM, IT_EVD_OVERFLOW_NOTIFY), IT_ERR_INVALID_FLAGS);
    EXPECT_EQ(flags(IT_CM_MSG_EVENT_STREAM, 0x40), IT_ERR_INVALID_FLAGS);
    EXPECT_EQ(flags(0x40000, 0), IT_ERR_INVALID_EVD_TYPE);
    EXPECT_EQ(flags(IT_DTO_SEND_CMPL_EVENT, 0), IT_ERR_INVALID_EVD_TYPE);
    EXPECT_EQ(flags(IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_NOTIFY | IT_EVD_OVERFLOW_AUTO_RESET),
              IT_SUCCESS);
}

// IT-API L4525-L4527 (digest behaviour 31), L4485.
TEST_F(ItEvd, CreateChecksThresholdAndQueueSize_L4525) {
    it_evd_handle_t e = nullptr;
    EXPECT_EQ(it_evd_create(ia, IT_DTO_EVENT_STREAM, kNoFlags, 4, 5, nullptr, &e, nullptr),
              IT_ERR_INVALID_THRESHOLD);
    EXPECT_EQ(
        it_evd_create(ia, IT_DTO_EVENT_STREAM, kNoFlags, size_t(1) << 40, 1, nullptr, &e, nullptr),
        IT_ERR_RESOURCE_QUEUE_SIZE);
    ASSERT_EQ(it_evd_create(ia, IT_DTO_EVENT_STREAM, kNoFlags, 4, IT_THRESHOLD_DISABLE, nullptr, &e,
                            nullptr),
              IT_SUCCESS);
    EXPECT_EQ(query(e).sevd_threshold, 0u);
}

// IT-API L4327-L4336 (digest behaviour 29): one AFF and one UNAFF SEVD per IA.
TEST_F(ItEvd, OneAsyncSevdOfEachKindPerIa_L4327) {
    it_evd_handle_t aff = nullptr, unaff = nullptr, again = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &aff, nullptr),
              IT_SUCCESS);
    EXPECT_EQ(
        it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &again, nullptr),
        IT_ERR_ASYNC_AFF_EVD_EXISTS);
    ASSERT_EQ(
        it_evd_create(ia, IT_ASYNC_UNAFF_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &unaff, nullptr),
        IT_SUCCESS);
    EXPECT_EQ(
        it_evd_create(ia, IT_ASYNC_UNAFF_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &again, nullptr),
        IT_ERR_ASYNC_UNAFF_EVD_EXISTS);
    ASSERT_EQ(it_evd_free(aff), IT_SUCCESS);  // any time for the async streams (IT-API L4920)
    ASSERT_EQ(it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &aff, nullptr),
              IT_SUCCESS);
}

// IT-API L4838 (digest behaviour 32), L5153-L5156 (36): software events round-trip.
TEST_F(ItEvd, PostSeThenDequeueReturnsTheEventsInOrder_L5153) {
    it_evd_handle_t e = sw(4);
    it_event_t ev{};
    EXPECT_EQ(it_evd_dequeue(e, &ev), IT_ERR_QUEUE_EMPTY);
    int a = 0, b = 0;
    ASSERT_EQ(it_evd_post_se(e, &a), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(e, &b), IT_SUCCESS);
    ASSERT_EQ(it_evd_dequeue(e, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_SOFTWARE_EVENT);
    EXPECT_EQ(ev.sw.evd, e);
    EXPECT_EQ(ev.sw.data, &a);
    ASSERT_EQ(it_evd_dequeue(e, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &b);
    EXPECT_EQ(it_evd_dequeue(e, &ev), IT_ERR_QUEUE_EMPTY);
}

// IT-API L5158-L5160 (digest behaviour 36): a full software SEVD refuses,
// never overflows, and the affiliated SEVD hears nothing of it.
TEST_F(ItEvd, PostSeOnAFullQueueIsRefusedWithoutOverflow_L5158) {
    it_evd_handle_t aff = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, nullptr,
                            &aff, nullptr),
              IT_SUCCESS);
    it_evd_handle_t e = sw(2, 1, nullptr, IT_EVD_OVERFLOW_NOTIFY);
    const size_t size = query(e).sevd_queue_size;
    for (size_t i = 0; i < size; ++i)
        ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_EQ(it_evd_post_se(e, nullptr), IT_ERR_EVD_QUEUE_FULL);
    EXPECT_EQ(query(e).evd_overflowed, IT_FALSE);
    it_event_t ev{};
    EXPECT_EQ(it_evd_dequeue(aff, &ev), IT_ERR_QUEUE_EMPTY);
    ASSERT_EQ(it_evd_dequeue(e, &ev), IT_SUCCESS);
    EXPECT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);  // room again
}

// IT-API L5173-L5175: only software SEVDs take software events.
TEST_F(ItEvd, PostSeOnANonSoftwareEvdIsInvalid_L5173) {
    it_evd_handle_t e = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &e, nullptr),
              IT_SUCCESS);
    EXPECT_EQ(it_evd_post_se(e, nullptr), IT_ERR_INVALID_SOFT_EVD);
    EXPECT_EQ(it_evd_post_se(aevd(kNoFlags), nullptr), IT_ERR_INVALID_SOFT_EVD);
    EXPECT_EQ(it_evd_post_se(nullptr, nullptr), IT_ERR_INVALID_EVD);
}

// IT-API L5402-L5405 (digest behaviour 33): an empty SEVD times out, nmore 0, in bounded time.
TEST_F(ItEvd, WaitTimesOutOnAnEmptySevd_L5402) {
    it_evd_handle_t e = sw();
    it_event_t ev{};
    size_t nmore = 99;
    EXPECT_EQ(it_evd_wait(e, 0, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
    EXPECT_EQ(nmore, 0u);
    const auto t0 = Clock::now();
    nmore = 99;
    EXPECT_EQ(it_evd_wait(e, 20000, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
    const auto took = Clock::now() - t0;
    EXPECT_GE(took, 20ms);
    EXPECT_LT(took, 2s);
    EXPECT_EQ(nmore, 0u);
}

// IT-API L5368-L5369, L5325-L5326: an event queued returns at once, with nmore.
TEST_F(ItEvd, WaitReturnsAQueuedEventAndNmore_L5368) {
    it_evd_handle_t e = sw(4);
    int x = 0;
    ASSERT_EQ(it_evd_post_se(e, &x), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(e, &x), IT_SUCCESS);
    it_event_t ev{};
    size_t nmore = 0;
    ASSERT_EQ(it_evd_wait(e, IT_TIMEOUT_INFINITE, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.sw.data, &x);
    EXPECT_EQ(nmore, 1u);
}

// IT-API L5377-L5378: a waiter blocked on an empty SEVD wakes when an event arrives.
TEST_F(ItEvd, WaitWakesWhenAnEventIsPosted_L5377) {
    it_evd_handle_t e = sw(4);
    int x = 0;
    std::thread poster([&] {
        std::this_thread::sleep_for(20ms);
        EXPECT_EQ(it_evd_post_se(e, &x), IT_SUCCESS);
    });
    it_event_t ev{};
    size_t nmore = 9;
    const auto t0 = Clock::now();
    EXPECT_EQ(it_evd_wait(e, 5000000, &ev, &nmore), IT_SUCCESS);
    EXPECT_LT(Clock::now() - t0, 4s);
    EXPECT_EQ(ev.sw.data, &x);
    EXPECT_EQ(nmore, 0u);
    poster.join();
}

// IT-API L5355-L5360 (digest behaviour 34): above threshold 1, one waiter only; at 1, many.
TEST_F(ItEvd, SecondWaiterAboveThresholdOneIsRefused_L5357) {
    it_evd_handle_t e = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_DTO_EVENT_STREAM, kNoFlags, 8, 2, nullptr, &e, nullptr),
              IT_SUCCESS);
    std::atomic<bool> started{false};
    std::thread first([&] {
        it_event_t ev{};
        size_t nmore = 0;
        started.store(true);
        EXPECT_EQ(it_evd_wait(e, 300000, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
    });
    while (!started.load())
        std::this_thread::yield();
    it_event_t ev{};
    size_t nmore = 0;
    it_status_t st = IT_ERR_TIMEOUT_EXPIRED;
    for (int i = 0; i < 200 && st != IT_ERR_WAITER_LIMIT; ++i) {  // until the first is inside
        st = it_evd_wait(e, 0, &ev, &nmore);
        if (st != IT_ERR_WAITER_LIMIT) std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(st, IT_ERR_WAITER_LIMIT);
    first.join();
    // Threshold 1: several waiters at once, each gets one event.
    it_evd_handle_t m = sw(8, 1);
    std::vector<std::thread> ws;
    std::atomic<int> got{0};
    for (int i = 0; i < 3; ++i)
        ws.emplace_back([&] {
            it_event_t v{};
            size_t n = 0;
            if (it_evd_wait(m, 5000000, &v, &n) == IT_SUCCESS) got.fetch_add(1);
        });
    std::this_thread::sleep_for(20ms);
    for (int i = 0; i < 3; ++i)
        ASSERT_EQ(it_evd_post_se(m, nullptr), IT_SUCCESS);
    for (auto &t : ws)
        t.join();
    EXPECT_EQ(got.load(), 3);
}

// IT-API L5923-L5924 (digest behaviour 40): freeing the IA unblocks waiters.
TEST(ItEvdAbort, IaFreeUnblocksAWaiter_L5923) {
    it_ia_handle_t ia = nullptr;
    ASSERT_EQ(it_ia_create("softrnic", 2, 1, &ia), IT_SUCCESS);
    it_evd_handle_t e = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, kNoFlags, 4, 1, nullptr, &e, nullptr),
              IT_SUCCESS);
    std::atomic<bool> started{false};
    it_status_t st = IT_SUCCESS;
    std::thread waiter([&] {
        it_event_t ev{};
        size_t nmore = 0;
        started.store(true);
        st = it_evd_wait(e, IT_TIMEOUT_INFINITE, &ev, &nmore);
    });
    while (!started.load())
        std::this_thread::yield();
    std::this_thread::sleep_for(20ms);
    const auto t0 = Clock::now();
    ASSERT_EQ(it_ia_free(ia), IT_SUCCESS);
    waiter.join();
    EXPECT_LT(Clock::now() - t0, 3s);
    EXPECT_EQ(st, IT_ERR_ABORT);
}

// IT-API L5426, L5488-L5490: it_evd_free on an EVD with a waiter: the waiter gets IT_ERR_ABORT.
TEST_F(ItEvd, FreeUnblocksAWaiterWithAbort_L5426) {
    it_evd_handle_t e = sw();
    std::atomic<bool> started{false};
    it_status_t st = IT_SUCCESS;
    std::thread waiter([&] {
        it_event_t ev{};
        size_t nmore = 0;
        started.store(true);
        st = it_evd_wait(e, IT_TIMEOUT_INFINITE, &ev, &nmore);
    });
    while (!started.load())
        std::this_thread::yield();
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(it_evd_free(e), IT_SUCCESS);
    waiter.join();
    EXPECT_EQ(st, IT_ERR_ABORT);
}

// IT-API L4539-L4544, L5344-L5347: the fd polls readable when an event is ready; waiting
// needs the EVD disabled first.
TEST_F(ItEvd, FdIsReadableWhenAnEventIsReady_L4541) {
    it_evd_handle_t e = nullptr;
    int fd = -1;
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, nullptr, &e, &fd),
              IT_SUCCESS);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(query(e).fd, fd);
    EXPECT_FALSE(readable(fd));
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_TRUE(readable(fd));
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(e, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);  // enabled with an fd
    ASSERT_EQ(it_evd_dequeue(e, &ev), IT_SUCCESS);  // dequeue is allowed (IT-API L4462)
    EXPECT_FALSE(readable(fd));
    enable(e, false);
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_FALSE(readable(fd));  // a disabled EVD does not notify its fd
    EXPECT_EQ(it_evd_wait(e, 0, &ev, &nmore), IT_SUCCESS);
}

// IT-API L4541: a thread blocked in poll() wakes when an event is posted.
TEST_F(ItEvd, PollWakesWhenAnEventIsPosted_L4541) {
    it_evd_handle_t e = nullptr;
    int fd = -1;
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, nullptr, &e, &fd),
              IT_SUCCESS);
    std::thread poster([&] {
        std::this_thread::sleep_for(20ms);
        EXPECT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    });
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 5000), 1);
    poster.join();
}

// IT-API L5065-L5066: closing the fd detaches it (IT_EVD_CREATE_FD cleared), and the EVD
// can then be waited on while enabled.
TEST_F(ItEvd, ClosingTheFdDetachesIt_L5065) {
    it_evd_handle_t e = nullptr;
    int fd = -1;
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, nullptr, &e, &fd),
              IT_SUCCESS);
    ASSERT_EQ(::close(fd), 0);
    it_evd_param_t p = query(e);
    EXPECT_EQ(p.fd, -1);
    EXPECT_EQ(p.evd_flag & IT_EVD_CREATE_FD, 0);
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(e, 0, &ev, &nmore), IT_SUCCESS);
}

// IT-API L4564-L4566, L4422-L4427: an SEVD feeding an AEVD that dequeues notifications
// posts IT_AEVD_NOTIFICATION_EVENT; the event itself is dequeued from the SEVD.
TEST_F(ItEvd, SevdNotifiesItsAevd_L4564) {
    it_evd_handle_t a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    it_evd_handle_t s = sw(4, 1, a);
    EXPECT_EQ(query(s).aevid, a);
    EXPECT_EQ(query(a).evd_bound, IT_TRUE);
    it_event_t ev{};
    EXPECT_EQ(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
    int x = 0;
    ASSERT_EQ(it_evd_post_se(s, &x), IT_SUCCESS);
    ASSERT_EQ(it_evd_dequeue(a, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_AEVD_NOTIFICATION_EVENT);
    EXPECT_EQ(ev.aevd_notify.aevd, a);
    EXPECT_EQ(ev.aevd_notify.sevd, s);
    ASSERT_EQ(it_evd_dequeue(s, &ev), IT_SUCCESS);  // the SEVD may be dequeued at will
    EXPECT_EQ(ev.sw.data, &x);
    EXPECT_EQ(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
}

// IT-API L5458-L5463: an SEVD left in its criteria notifies again on the next dequeue.
TEST_F(ItEvd, AnUndrainedSevdNotifiesAgain_L5458) {
    it_evd_handle_t a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    it_evd_handle_t s = sw(4, 1, a);
    ASSERT_EQ(it_evd_post_se(s, nullptr), IT_SUCCESS);
    it_event_t ev{};
    ASSERT_EQ(it_evd_dequeue(a, &ev), IT_SUCCESS);
    ASSERT_EQ(it_evd_dequeue(a, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.aevd_notify.sevd, s);
}

// IT-API L5373-L5374: a waiter on the AEVD wakes for an SEVD's event.
TEST_F(ItEvd, AevdWaiterWakesForAnSevdEvent_L5373) {
    it_evd_handle_t a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    it_evd_handle_t s = sw(4, 1, a);
    std::thread poster([&] {
        std::this_thread::sleep_for(20ms);
        EXPECT_EQ(it_evd_post_se(s, nullptr), IT_SUCCESS);
    });
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(a, 5000000, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_AEVD_NOTIFICATION_EVENT);
    poster.join();
}

// IT-API L4445-L4447, L4430 (digest behaviour 35): an AEVD without
// IT_EVD_DEQUEUE_NOTIFICATIONS hands out the SEVD's events; the SEVD itself cannot be
// waited on or dequeued from, even disabled.
TEST_F(ItEvd, AevdWithoutNotificationsHandsOutSevdEvents_L4445) {
    it_evd_handle_t a = aevd(kNoFlags);
    it_evd_handle_t s1 = sw(4, 1, a), s2 = sw(4, 1, a);
    int x = 1, y = 2;
    ASSERT_EQ(it_evd_post_se(s1, &x), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(s2, &y), IT_SUCCESS);
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_dequeue(s1, &ev), IT_ERR_INVALID_EVD_STATE);
    enable(s1, false);
    EXPECT_EQ(it_evd_dequeue(s1, &ev), IT_ERR_INVALID_EVD_STATE);
    EXPECT_EQ(it_evd_wait(s1, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);
    ASSERT_EQ(it_evd_dequeue(a, &ev), IT_SUCCESS);  // a disabled SEVD is still dequeued
    void *first = ev.sw.data;
    ASSERT_EQ(it_evd_wait(a, 0, &ev, &nmore), IT_SUCCESS);  // s2 is enabled: wakes
    EXPECT_NE(ev.sw.data, first);
    EXPECT_EQ(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
}

// IT-API L5084, L5040: a disabled SEVD does not notify its AEVD; enabling it
// while in its criteria does. The AEVD's own fd is readable while it has a notification,
// and an enabled AEVD with an fd cannot be waited on (IT-API L5341-L5347).
TEST_F(ItEvd, EnablingAnSevdInItsCriteriaNotifiesTheAevdAndItsFd_L5084) {
    int fd = -1;
    it_evd_handle_t a = aevd(it_evd_flags_t(IT_EVD_DEQUEUE_NOTIFICATIONS | IT_EVD_CREATE_FD), &fd);
    ASSERT_GE(fd, 0);
    it_evd_handle_t s = sw(4, 1, a);
    enable(s, false);
    ASSERT_EQ(it_evd_post_se(s, nullptr), IT_SUCCESS);
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);
    EXPECT_FALSE(readable(fd));
    enable(s, true);
    EXPECT_TRUE(readable(fd));
    EXPECT_EQ(it_evd_wait(a, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);
    ASSERT_EQ(it_evd_dequeue(a, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.aevd_notify.sevd, s);
    ASSERT_EQ(it_evd_dequeue(s, &ev), IT_SUCCESS);
    EXPECT_FALSE(readable(fd));
    enable(a, false);  // a disabled AEVD may be waited on
    EXPECT_EQ(it_evd_wait(a, 0, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
}

// IT-API L5344-L5347: waiting on an SEVD that is enabled to notify its AEVD is refused;
// disabled it may be waited on.
TEST_F(ItEvd, WaitOnAnEnabledFeedingSevdIsRefused_L5344) {
    it_evd_handle_t a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    it_evd_handle_t s = sw(4, 1, a);
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(s, 0, &ev, &nmore), IT_ERR_INVALID_EVD_STATE);
    enable(s, false);
    EXPECT_EQ(it_evd_wait(s, 0, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
}

// IT-API L5048-L5054: an SEVD moves between AEVDs only disabled and without an fd.
TEST_F(ItEvd, ModifyMovesADisabledSevdToAnotherAevd_L5048) {
    it_evd_handle_t a1 = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS), a2 = aevd(kNoFlags);
    it_evd_handle_t s = sw(4, 1, a1);
    it_evd_param_t p{};
    p.aevid = a2;
    EXPECT_EQ(it_evd_modify(s, IT_EVD_PARAM_AEVD_HANDLE, &p), IT_ERR_INVALID_EVD_STATE);
    enable(s, false);
    ASSERT_EQ(it_evd_modify(s, IT_EVD_PARAM_AEVD_HANDLE, &p), IT_SUCCESS);
    EXPECT_EQ(query(s).aevid, a2);
    EXPECT_EQ(query(a1).evd_bound, IT_FALSE);
    // Never away from an AEVD that hands out its events (IT-API L5036-L5038).
    p.aevid = nullptr;
    EXPECT_EQ(it_evd_modify(s, IT_EVD_PARAM_AEVD_HANDLE, &p), IT_ERR_INVALID_EVD_STATE);
    p.aevid = reinterpret_cast<it_evd_handle_t>(ia);
    EXPECT_EQ(it_evd_modify(s, IT_EVD_PARAM_AEVD_HANDLE, &p), IT_ERR_INVALID_AEVD);
}

// IT-API L5073-L5079 (digest behaviour 31): queue size and threshold changes.
TEST_F(ItEvd, ModifyQueueSizeAndThreshold_L5073) {
    it_evd_handle_t e = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, kNoFlags, 8, 4, nullptr, &e, nullptr),
              IT_SUCCESS);
    it_evd_param_t p{};
    p.sevd_queue_size = 3;  // below the threshold
    EXPECT_EQ(it_evd_modify(e, IT_EVD_PARAM_QUEUE_SIZE, &p), IT_ERR_INVALID_QUEUE_SIZE);
    EXPECT_EQ(query(e).sevd_queue_size, 8u);
    p.sevd_threshold = 9;
    EXPECT_EQ(it_evd_modify(e, IT_EVD_PARAM_THRESHOLD, &p), IT_ERR_INVALID_THRESHOLD);
    EXPECT_EQ(query(e).sevd_threshold, 4u);
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    p.sevd_queue_size = 4;  // below the queued events
    p.sevd_threshold = 1;
    EXPECT_EQ(
        it_evd_modify(e, it_evd_param_mask_t(IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD), &p),
        IT_ERR_INVALID_QUEUE_SIZE);
    EXPECT_EQ(query(e).sevd_threshold, 4u);  // all or nothing
    p.sevd_queue_size = 16;
    ASSERT_EQ(
        it_evd_modify(e, it_evd_param_mask_t(IT_EVD_PARAM_QUEUE_SIZE | IT_EVD_PARAM_THRESHOLD), &p),
        IT_SUCCESS);
    EXPECT_GE(query(e).sevd_queue_size, 16u);
    EXPECT_EQ(query(e).sevd_threshold, 1u);
}

// IT-API L5028-L5033, L5113, L5284: masks.
TEST_F(ItEvd, ModifyAndQueryMasks_L5028) {
    it_evd_handle_t a = aevd(kNoFlags), s = sw();
    it_evd_param_t p{};
    p.sevd_threshold = 1;
    EXPECT_EQ(it_evd_modify(a, IT_EVD_PARAM_THRESHOLD, &p), IT_ERR_INVALID_MASK);
    EXPECT_EQ(it_evd_modify(a, IT_EVD_PARAM_QUEUE_SIZE, &p), IT_ERR_INVALID_MASK);
    EXPECT_EQ(it_evd_modify(s, IT_EVD_PARAM_FD, &p), IT_ERR_INVALID_MASK);
    EXPECT_EQ(raw_evd_query(s, 0x1000, &p), IT_ERR_INVALID_MASK);
    // Any non-zero it_boolean_t is true, as C reads it.
    ASSERT_EQ(raw_evd_modify_enabled(s, 2), IT_SUCCESS);
    EXPECT_EQ(query(s).evd_enabled, IT_TRUE);
    ASSERT_EQ(it_evd_query(s, IT_EVD_PARAM_THRESHOLD, &p), IT_SUCCESS);
    EXPECT_EQ(p.sevd_threshold, 1u);
    EXPECT_EQ(it_evd_modify(nullptr, IT_EVD_PARAM_ENABLED, &p), IT_ERR_INVALID_EVD);
    EXPECT_EQ(it_evd_query(nullptr, IT_EVD_PARAM_ALL, &p), IT_ERR_INVALID_EVD);
}

// IT-API L4917-L4922 (digest behaviour 37): an AEVD fed by an SEVD is busy; the software
// SEVD may go at any time, and then the AEVD may.
TEST_F(ItEvd, FreeOfAnAevdWithFeedersIsBusy_L4917) {
    it_evd_handle_t a = aevd(IT_EVD_DEQUEUE_NOTIFICATIONS);
    it_evd_handle_t s = sw(4, 1, a);
    ASSERT_EQ(it_evd_post_se(s, nullptr), IT_SUCCESS);  // a notification queued on a
    EXPECT_EQ(it_evd_free(a), IT_ERR_EVD_BUSY);
    ASSERT_EQ(it_evd_free(s), IT_SUCCESS);
    it_event_t ev{};
    EXPECT_EQ(it_evd_dequeue(a, &ev), IT_ERR_QUEUE_EMPTY);  // its notification went with it
    EXPECT_EQ(it_evd_free(a), IT_SUCCESS);
    EXPECT_EQ(it_evd_free(a), IT_ERR_INVALID_EVD);
    EXPECT_EQ(it_evd_dequeue(s, &ev), IT_ERR_INVALID_EVD);
}

// IT-API L4063-L4071: a callback is invoked once the criteria come, after a full drain.
TEST_F(ItEvd, CallbackRunsWhenTheCriteriaCome_L4064) {
    if (::geteuid() != 0) GTEST_SKIP() << "callbacks need a Privileged Consumer (euid 0)";
    it_evd_handle_t e = sw(4, 2);
    static std::atomic<int> calls{0};
    calls = 0;
    auto cb = [](it_evd_handle_t, void *arg) {
        static_cast<std::atomic<int> *>(arg)->fetch_add(1);
    };
    ASSERT_EQ(it_evd_callback_attach(e, cb, &calls), IT_SUCCESS);
    EXPECT_EQ(it_evd_callback_attach(e, cb, &calls), IT_ERR_CALLBACK_EXISTS);
    EXPECT_EQ(query(e).evd_callback, IT_TRUE);
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(e, 0, &ev, &nmore), IT_ERR_CALLBACK_EXISTS);
    // A software event is a Notification Event (IT-API L4508): the first one brings the
    // criteria despite the threshold of 2; the second finds the callback spent.
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_EQ(calls.load(), 1);
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_EQ(calls.load(), 1);
    ASSERT_EQ(it_evd_dequeue(e, &ev), IT_SUCCESS);
    ASSERT_EQ(it_evd_dequeue(e, &ev), IT_SUCCESS);  // drained: armed again
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_EQ(calls.load(), 2);
    ASSERT_EQ(it_evd_callback_detach(e), IT_SUCCESS);
    EXPECT_EQ(it_evd_callback_detach(e), IT_ERR_INVALID_EVD_STATE);
}

// IT-API L4936-L4938, L5925-L5926: freeing the EVD, or its IA, while its callback runs
// fails with IT_ERR_INVALID_EVD_STATE; detaching from inside the callback is allowed
// (IT-API L4171-L4172).
TEST_F(ItEvd, FreeWhileTheCallbackRunsIsRefused_L4936) {
    if (::geteuid() != 0) GTEST_SKIP() << "callbacks need a Privileged Consumer (euid 0)";
    struct Seen {
        it_ia_handle_t ia;
        it_status_t evd_free = IT_SUCCESS, ia_free = IT_SUCCESS, detach = IT_ERR_ABORT;
    } seen{ia};
    it_evd_handle_t e = sw();
    auto cb = [](it_evd_handle_t evd, void *arg) {
        auto *s = static_cast<Seen *>(arg);
        s->evd_free = it_evd_free(evd);
        s->ia_free = it_ia_free(s->ia);
        s->detach = it_evd_callback_detach(evd);
    };
    ASSERT_EQ(it_evd_callback_attach(e, cb, &seen), IT_SUCCESS);
    ASSERT_EQ(it_evd_post_se(e, nullptr), IT_SUCCESS);
    EXPECT_EQ(seen.evd_free, IT_ERR_INVALID_EVD_STATE);
    EXPECT_EQ(seen.ia_free, IT_ERR_INVALID_EVD_STATE);
    EXPECT_EQ(seen.detach, IT_SUCCESS);
    EXPECT_EQ(query(e).evd_callback, IT_FALSE);
    EXPECT_EQ(it_evd_free(e), IT_SUCCESS);
}

// IT-API L4053-L4056: no callback on an SEVD feeding an AEVD, or on an EVD with an fd.
TEST_F(ItEvd, CallbackNotWithAnotherMechanism_L4053) {
    if (::geteuid() != 0) GTEST_SKIP() << "callbacks need a Privileged Consumer (euid 0)";
    auto cb = [](it_evd_handle_t, void *) {};
    it_evd_handle_t s = sw(4, 1, aevd(kNoFlags));
    EXPECT_EQ(it_evd_callback_attach(s, cb, nullptr), IT_ERR_INVALID_EVD_STATE);
    it_evd_handle_t f = nullptr;
    int fd = -1;
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, IT_EVD_CREATE_FD, 4, 1, nullptr, &f, &fd),
              IT_SUCCESS);
    EXPECT_EQ(it_evd_callback_attach(f, cb, nullptr), IT_ERR_INVALID_EVD_STATE);
    EXPECT_EQ(it_evd_callback_attach(nullptr, cb, nullptr), IT_ERR_INVALID_EVD);
}

// IT-API L4045-L4047, L1734: a non-privileged consumer (effective uid not 0) gets
// IT_ERR_NO_PERMISSION; checked in a child that gives up root.
TEST_F(ItEvd, CallbackNeedsAPrivilegedConsumer_L4045) {
    it_evd_handle_t e = sw();
    auto cb = [](it_evd_handle_t, void *) {};
    if (::geteuid() != 0) {
        EXPECT_EQ(it_evd_callback_attach(e, cb, nullptr), IT_ERR_NO_PERMISSION);
        EXPECT_EQ(it_evd_callback_detach(e), IT_ERR_NO_PERMISSION);
        return;
    }
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (::seteuid(65534) != 0) ::_exit(2);
        const bool ok = it_evd_callback_attach(e, cb, nullptr) == IT_ERR_NO_PERMISSION &&
                        it_evd_callback_detach(e) == IT_ERR_NO_PERMISSION;
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// IT-API L1713: every EVD call on a NULL, freed or forged handle.
TEST_F(ItEvd, EveryCallRejectsInvalidHandles_L1713) {
    it_evd_handle_t freed = sw();
    ASSERT_EQ(it_evd_free(freed), IT_SUCCESS);
    alignas(16) unsigned char junk[512] = {};
    for (it_evd_handle_t bad :
         {it_evd_handle_t(nullptr), freed, reinterpret_cast<it_evd_handle_t>(junk),
          reinterpret_cast<it_evd_handle_t>(ia)}) {
        it_event_t ev{};
        size_t nmore = 0;
        it_evd_param_t p{};
        EXPECT_EQ(it_evd_dequeue(bad, &ev), IT_ERR_INVALID_EVD);
        EXPECT_EQ(it_evd_wait(bad, 0, &ev, &nmore), IT_ERR_INVALID_EVD);
        EXPECT_EQ(it_evd_post_se(bad, nullptr), IT_ERR_INVALID_EVD);
        EXPECT_EQ(it_evd_query(bad, IT_EVD_PARAM_ALL, &p), IT_ERR_INVALID_EVD);
        EXPECT_EQ(it_evd_modify(bad, IT_EVD_PARAM_ENABLED, &p), IT_ERR_INVALID_EVD);
        EXPECT_EQ(it_evd_free(bad), IT_ERR_INVALID_EVD);
        EXPECT_EQ(it_evd_callback_detach(bad), IT_ERR_INVALID_EVD);
    }
    it_evd_handle_t e = nullptr;
    EXPECT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, kNoFlags, 4, 1,
                            reinterpret_cast<it_evd_handle_t>(junk), &e, nullptr),
              IT_ERR_INVALID_AEVD);
    EXPECT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, kNoFlags, 4, 1, sw(), &e, nullptr),
              IT_ERR_INVALID_AEVD);  // an SEVD is no AEVD
}

// IT-API L5370-L5374, L4564-L4566: several threads post to SEVDs feeding an
// AEVD while one thread waits on the AEVD and takes every event, with either AEVD kind.
TEST_F(ItEvd, PostersAndAnAevdWaiterLoseNothing_L5370) {
    constexpr int kPosters = 4, kEach = 500;
    for (bool notifications : {true, false}) {
        it_evd_handle_t a = aevd(notifications ? IT_EVD_DEQUEUE_NOTIFICATIONS : kNoFlags);
        it_evd_handle_t s[2] = {sw(kPosters * kEach, 1, a), sw(kPosters * kEach, 1, a)};
        std::vector<std::thread> posters;
        for (int t = 0; t < kPosters; ++t)
            posters.emplace_back([&, t] {
                for (int i = 0; i < kEach; ++i)
                    ASSERT_EQ(it_evd_post_se(s[(t + i) % 2], nullptr), IT_SUCCESS);
            });
        int got = 0;
        const auto give_up = Clock::now() + 30s;
        while (got < kPosters * kEach && Clock::now() < give_up) {
            it_event_t ev{};
            size_t nmore = 0;
            if (it_evd_wait(a, 100000, &ev, &nmore) != IT_SUCCESS) continue;
            if (!notifications) {
                ++got;
                continue;
            }
            ASSERT_EQ(ev.event_number, IT_AEVD_NOTIFICATION_EVENT);
            while (it_evd_dequeue(ev.aevd_notify.sevd, &ev) == IT_SUCCESS)
                ++got;
        }
        for (auto &t : posters)
            t.join();
        EXPECT_EQ(got, kPosters * kEach) << (notifications ? "notifications" : "direct");
        for (it_evd_handle_t e : s)
            ASSERT_EQ(it_evd_free(e), IT_SUCCESS);
        ASSERT_EQ(it_evd_free(a), IT_SUCCESS);
    }
}

}  // namespace
