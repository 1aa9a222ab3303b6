// The IT-API library's objects linked directly (not libitapi.so.2), to drive what no public
// call produces yet: events of the DTO, CM and async streams (their producers, EPs and
// listens, come in later slices), and the references EPs and LMRs will hold on PZs and
// EVDs. Each test names the lines of the IT-API 2.1 specification it checks (IT-API Lnnnn).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>

#include "api/it/it_internal.hpp"

namespace {

using namespace softrnic::itapi;
using namespace std::chrono_literals;

const it_evd_flags_t kNoFlags = it_evd_flags_t(0);

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

class ItInternal : public ::testing::Test {
  protected:
    void SetUp() override { ASSERT_EQ(it_ia_create("softrnic", 2, 1, &ia), IT_SUCCESS); }
    void TearDown() override { EXPECT_EQ(it_ia_free(ia), IT_SUCCESS); }

    it_evd_handle_t sevd(it_event_type_t s, unsigned flags, size_t qsize = 2, size_t threshold = 1,
                         int *fd = nullptr) {
        it_evd_handle_t e = nullptr;
        EXPECT_EQ(it_evd_create(ia, s, it_evd_flags_t(flags), qsize, threshold, nullptr, &e, fd),
                  IT_SUCCESS);
        return e;
    }
    static Evd *obj(it_evd_handle_t h) { return reinterpret_cast<Evd *>(h); }
    // An event of the SEVD's stream, as its producer would make it.
    static bool produce(it_evd_handle_t h, bool notify = true) {
        it_event_t ev{};
        switch (obj(h)->stream) {
            case IT_DTO_EVENT_STREAM:
                ev.dto_cmpl.event_number = IT_DTO_SEND_CMPL_EVENT;
                break;
            case IT_CM_MSG_EVENT_STREAM:
                ev.conn.event_number = IT_CM_MSG_CONN_BROKEN_EVENT;
                break;
            case IT_ASYNC_AFF_EVENT_STREAM:
                ev.aff_async.event_number = IT_ASYNC_AFF_EP_FAILURE;
                break;
            default:
                ev.unaff_async.event_number = IT_ASYNC_UNAFF_SPIGOT_OFFLINE;
                break;
        }
        return deliver(obj(h), ev, notify);
    }
    static bool overflowed(it_evd_handle_t h) {
        it_evd_param_t p{};
        EXPECT_EQ(it_evd_query(h, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
        return p.evd_overflowed == IT_TRUE;
    }
    static int drain(it_evd_handle_t h) {
        int n = 0;
        it_event_t ev{};
        while (it_evd_dequeue(h, &ev) == IT_SUCCESS)
            ++n;
        return n;
    }
    it_ia_handle_t ia = nullptr;
};

// IT-API L4407-L4408, L4393-L4396: a CM message SEVD with the default overflow behaviour
// reports each overflow on the affiliated SEVD and re-arms once room is made.
TEST_F(ItInternal, DefaultOverflowNotifiesAndAutoResets_L4407) {
    it_evd_handle_t aff = sevd(IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8);
    it_evd_handle_t cm = sevd(IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 2);
    ASSERT_TRUE(produce(cm));
    ASSERT_TRUE(produce(cm));
    EXPECT_FALSE(produce(cm));  // dropped
    EXPECT_FALSE(produce(cm));  // dropped, no second overflow event
    EXPECT_TRUE(overflowed(cm));
    it_event_t ev{};
    ASSERT_EQ(it_evd_dequeue(aff, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_ASYNC_AFF_SEVD_ENQUEUE_FAILURE);
    EXPECT_EQ(ev.aff_async.evd, aff);
    EXPECT_EQ(ev.aff_async.cause.sevd, cm);
    EXPECT_EQ(it_evd_dequeue(aff, &ev), IT_ERR_QUEUE_EMPTY);
    ASSERT_EQ(it_evd_dequeue(cm, &ev), IT_SUCCESS);  // room: corrected, re-armed
    EXPECT_FALSE(overflowed(cm));
    EXPECT_TRUE(produce(cm));  // not dropped any more (IT-API L4372-L4375)
    EXPECT_FALSE(produce(cm));
    EXPECT_EQ(drain(aff), 1);
}

// IT-API L4409-L4411: consumer-controlled mode re-arms only when
// it_evd_modify clears evd_overflowed.
TEST_F(ItInternal, ConsumerControlledOverflowNeedsTheClear_L4409) {
    it_evd_handle_t aff = sevd(IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8);
    it_evd_handle_t cm = sevd(IT_CM_MSG_EVENT_STREAM, IT_EVD_OVERFLOW_NOTIFY, 1);
    ASSERT_TRUE(produce(cm));
    EXPECT_FALSE(produce(cm));
    EXPECT_EQ(drain(aff), 1);
    EXPECT_EQ(drain(cm), 1);
    EXPECT_TRUE(overflowed(cm));  // stays until cleared
    ASSERT_TRUE(produce(cm));     // room: accepted again
    EXPECT_FALSE(produce(cm));
    EXPECT_EQ(drain(aff), 0);  // not re-armed
    it_evd_param_t p{};
    p.evd_overflowed = IT_FALSE;
    ASSERT_EQ(it_evd_modify(cm, IT_EVD_PARAM_OVERFLOWED, &p), IT_SUCCESS);
    EXPECT_FALSE(overflowed(cm));
    EXPECT_FALSE(produce(cm));
    EXPECT_EQ(drain(aff), 1);
    EXPECT_TRUE(overflowed(cm));
}

// IT-API L4373-L4377: a DTO SEVD's overflow cannot be corrected.
TEST_F(ItInternal, DtoOverflowDropsForever_L4373) {
    it_evd_handle_t aff = sevd(IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8);
    it_evd_handle_t dto = sevd(IT_DTO_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 1);
    ASSERT_TRUE(produce(dto));
    EXPECT_FALSE(produce(dto));
    EXPECT_EQ(drain(dto), 1);
    EXPECT_FALSE(produce(dto));  // still dropped with room
    EXPECT_TRUE(overflowed(dto));
    EXPECT_EQ(drain(aff), 1);
}

// IT-API L4393-L4399: the affiliated SEVD's overflow goes to the unaffiliated one; the
// unaffiliated one's is never reported.
TEST_F(ItInternal, AsyncOverflowChain_L4393) {
    it_evd_handle_t unaff = sevd(IT_ASYNC_UNAFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 1);
    it_evd_handle_t aff = sevd(IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 1);
    ASSERT_TRUE(produce(aff));
    EXPECT_FALSE(produce(aff));
    it_event_t ev{};
    ASSERT_EQ(it_evd_dequeue(unaff, &ev), IT_SUCCESS);
    EXPECT_EQ(ev.event_number, IT_ASYNC_UNAFF_SEVD_ENQUEUE_FAILURE);
    EXPECT_EQ(ev.unaff_async.ia, ia);
    ASSERT_TRUE(produce(unaff));
    EXPECT_FALSE(produce(unaff));  // dropped silently (IT-API L16896-L16899)
    EXPECT_EQ(drain(aff), 1);
}

// IT-API L4473: with IT_EVD_OVERFLOW_NOTIFY clear, overflow sets the state only.
TEST_F(ItInternal, OverflowWithoutNotifyPostsNothing_L4473) {
    it_evd_handle_t aff = sevd(IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8);
    it_evd_handle_t cm = sevd(IT_CM_MSG_EVENT_STREAM, 0, 1);
    ASSERT_TRUE(produce(cm));
    EXPECT_FALSE(produce(cm));
    EXPECT_TRUE(overflowed(cm));
    EXPECT_EQ(drain(aff), 0);
}

// IT-API L4500-L4527: DTO non-notification events wake a waiter only at the threshold; a
// Notification Event wakes at once; the fd follows the same criteria.
TEST_F(ItInternal, ThresholdAndNotificationCriteria_L4523) {
    int fd = -1;
    it_evd_handle_t dto = sevd(IT_DTO_EVENT_STREAM, IT_EVD_CREATE_FD, 8, 3, &fd);
    it_evd_param_t p{};
    p.evd_enabled = IT_FALSE;  // waiting on an EVD with an fd needs it disabled
    ASSERT_TRUE(produce(dto, false));
    ASSERT_TRUE(produce(dto, false));
    EXPECT_FALSE(readable(fd));
    ASSERT_TRUE(produce(dto, false));
    EXPECT_TRUE(readable(fd));  // three: the threshold
    EXPECT_EQ(drain(dto), 3);
    EXPECT_FALSE(readable(fd));
    ASSERT_EQ(it_evd_modify(dto, IT_EVD_PARAM_ENABLED, &p), IT_SUCCESS);
    ASSERT_TRUE(produce(dto, false));
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(dto, 1000, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
    EXPECT_EQ(nmore, 1u);
    ASSERT_TRUE(produce(dto, true));  // a Notification Event
    ASSERT_EQ(it_evd_wait(dto, 0, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(nmore, 1u);
    // IT_THRESHOLD_DISABLE: only Notification Events wake (IT-API L4527-L4529).
    p.sevd_threshold = IT_THRESHOLD_DISABLE;
    ASSERT_EQ(it_evd_modify(dto, IT_EVD_PARAM_THRESHOLD, &p), IT_SUCCESS);
    ASSERT_EQ(it_evd_wait(dto, 0, &ev, &nmore), IT_SUCCESS);  // the Notification Event is queued
    for (int i = 0; i < 7; ++i)
        produce(dto, false);
    EXPECT_EQ(it_evd_wait(dto, 0, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
}

// IT-API L10305 (digest behaviour 26): a PZ something names is busy.
TEST_F(ItInternal, PzBusyWhileReferenced_L10305) {
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    Pz *p = reinterpret_cast<Pz *>(pz);
    p->users.fetch_add(1);  // as an EP or LMR will
    EXPECT_EQ(it_pz_free(pz), IT_ERR_PZ_BUSY);
    it_pz_param_t q{};
    EXPECT_EQ(it_pz_query(pz, IT_PZ_PARAM_IA, &q), IT_SUCCESS);  // unaffected
    p->users.fetch_sub(1);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
}

// IT-API L4917-L4919 (digest behaviour 37): an SEVD an EP or listen feeds is busy, and bound.
TEST_F(ItInternal, EvdBusyWhileAStreamFeedsIt_L4917) {
    it_evd_handle_t cm = sevd(IT_CM_MSG_EVENT_STREAM, 0);
    obj(cm)->streams.fetch_add(1);  // as an EP will
    it_evd_param_t p{};
    ASSERT_EQ(it_evd_query(cm, IT_EVD_PARAM_BOUND, &p), IT_SUCCESS);
    EXPECT_EQ(p.evd_bound, IT_TRUE);
    EXPECT_EQ(it_evd_free(cm), IT_ERR_EVD_BUSY);
    obj(cm)->streams.fetch_sub(1);
    EXPECT_EQ(it_evd_free(cm), IT_SUCCESS);
}

// IT-API L5370-L5372: an AEVD without IT_EVD_DEQUEUE_NOTIFICATIONS: its waiter returns the
// SEVD event that reached the criteria, not one still below its threshold.
TEST_F(ItInternal, DirectAevdWaitsForCriteria_L5370) {
    it_evd_handle_t a = nullptr, below = nullptr, at = nullptr;
    ASSERT_EQ(
        it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, kNoFlags, 0, 0, nullptr, &a, nullptr),
        IT_SUCCESS);
    ASSERT_EQ(it_evd_create(ia, IT_DTO_EVENT_STREAM, kNoFlags, 8, 4, a, &below, nullptr),
              IT_SUCCESS);
    ASSERT_EQ(it_evd_create(ia, IT_CM_MSG_EVENT_STREAM, kNoFlags, 8, 1, a, &at, nullptr),
              IT_SUCCESS);
    ASSERT_TRUE(produce(below, false));
    it_event_t ev{};
    size_t nmore = 0;
    EXPECT_EQ(it_evd_wait(a, 1000, &ev, &nmore), IT_ERR_TIMEOUT_EXPIRED);
    ASSERT_TRUE(produce(at));
    ASSERT_EQ(it_evd_wait(a, 0, &ev, &nmore), IT_SUCCESS);
    EXPECT_EQ(ev.any.evd, at);
    ASSERT_EQ(it_evd_dequeue(a, &ev), IT_SUCCESS);  // dequeue takes any event
    EXPECT_EQ(ev.any.evd, below);
}

// IT-API L6911-L6913, L7265-L7267, L7275-L7277: an LMR that an RMR is linked to (only
// it_rmr_link, with endpoints, links one) can be neither freed nor modified, and stays as it
// was; freeing the RMR destroys the link (IT-API L10618-L10619).
TEST_F(ItInternal, LmrBusyWhileAnRmrIsLinked_L6911) {
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    static char buf[256];
    it_lmr_handle_t l = nullptr;
    ASSERT_EQ(it_lmr_create(pz, buf, nullptr, sizeof buf, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_ALL,
                            IT_LMR_FLAG_NONE, 0, &l, nullptr),
              IT_SUCCESS);
    it_rmr_handle_t r = nullptr;
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_NARROW, &r), IT_SUCCESS);
    auto *lmr = reinterpret_cast<Lmr *>(l);
    auto *rmr = reinterpret_cast<Rmr *>(r);
    rmr->lmr = lmr;  // what a completed link records
    lmr->rmr_links.fetch_add(1);
    EXPECT_EQ(it_lmr_free(l), IT_ERR_LMR_BUSY);
    it_lmr_param_t p{};
    p.privs = IT_PRIV_LOCAL;
    EXPECT_EQ(it_lmr_modify(l, IT_LMR_PARAM_MEM_PRIV, &p), IT_ERR_LMR_BUSY);
    ASSERT_EQ(it_lmr_query(l, IT_LMR_PARAM_MEM_PRIV, &p), IT_SUCCESS);
    EXPECT_EQ(p.privs, IT_PRIV_ALL);
    it_rmr_param_t rp{};
    ASSERT_EQ(it_rmr_query(r, it_rmr_param_mask_t(IT_RMR_PARAM_LINKED | IT_RMR_PARAM_LMR), &rp),
              IT_SUCCESS);
    EXPECT_EQ(rp.linked, IT_TRUE);
    EXPECT_EQ(rp.lmr, l);
    EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    EXPECT_EQ(lmr->rmr_links.load(), 0);
    EXPECT_EQ(it_lmr_free(l), IT_SUCCESS);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
}

// IT-API L6552-L6557, L7387: the RMR Context is the RNICPI STag of the registration, in
// network byte order; the RMR's is its window's STag.
TEST_F(ItInternal, RmrContextsAreTheStags_L6557) {
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    static char buf[256];
    it_lmr_handle_t l = nullptr;
    it_rmr_context_t ctx = 0;
    ASSERT_EQ(it_lmr_create(pz, buf, nullptr, sizeof buf, IT_ADDR_MODE_ABSOLUTE, IT_PRIV_ALL,
                            IT_LMR_FLAG_NONE, 0, &l, &ctx),
              IT_SUCCESS);
    auto *lmr = reinterpret_cast<Lmr *>(l);
    EXPECT_EQ(ntohl(ctx), lmr->mr.rtag());
    EXPECT_EQ(lmr->mr.va(), reinterpret_cast<uintptr_t>(buf));
    EXPECT_EQ(lmr->mr.length(), sizeof buf);
    // The registration RNICPI holds is what was asked for.
    ri_mr_info_t info{};
    ri_err_data_t e = 0;
    ASSERT_EQ(ri_mr_query(lmr->ia->rnic, lmr->mr.handle(), &info, &e), RI_RET_SUCCESS);
    EXPECT_EQ(info.attr.va, reinterpret_cast<uintptr_t>(buf));
    EXPECT_EQ(info.attr.length, sizeof buf);
    EXPECT_EQ(info.attr.pd, reinterpret_cast<Pz *>(pz)->pd);
    EXPECT_TRUE(info.attr.mem_attr & RI_MEM_FLAGS_REMOTE_WRITE);
    EXPECT_EQ(info.rtag, lmr->mr.rtag());
    // Modified: a new STag, the old one no longer valid.
    const ri_rtag_t old = lmr->mr.rtag();
    it_lmr_param_t p{};
    p.privs = it_mem_priv_t(IT_PRIV_LOCAL | IT_PRIV_REMOTE_READ);
    ASSERT_EQ(it_lmr_modify(l, IT_LMR_PARAM_MEM_PRIV, &p), IT_SUCCESS);
    EXPECT_NE(lmr->mr.rtag(), old);
    ASSERT_EQ(ri_mr_query(lmr->ia->rnic, lmr->mr.handle(), &info, &e), RI_RET_SUCCESS);
    EXPECT_FALSE(info.attr.mem_attr & RI_MEM_FLAGS_REMOTE_WRITE);
    EXPECT_TRUE(info.attr.mem_attr & RI_MEM_FLAGS_REMOTE_READ);
    ASSERT_EQ(it_lmr_query(l, IT_LMR_PARAM_RMR_CONTEXT, &p), IT_SUCCESS);
    EXPECT_EQ(ntohl(p.rmr_context), lmr->mr.rtag());
    it_rmr_handle_t r = nullptr;
    ASSERT_EQ(it_rmr_create(pz, IT_RMR_TYPE_NARROW, &r), IT_SUCCESS);
    it_rmr_param_t rp{};
    ASSERT_EQ(it_rmr_query(r, IT_RMR_PARAM_RMR_CONTEXT, &rp), IT_SUCCESS);
    EXPECT_EQ(ntohl(rp.rmr_context), reinterpret_cast<Rmr *>(r)->mw.rtag());
    EXPECT_EQ(reinterpret_cast<Rmr *>(r)->mw.type(), RI_MW_TYPE_NARROW);
    EXPECT_EQ(it_rmr_free(r), IT_SUCCESS);
    EXPECT_EQ(it_lmr_free(l), IT_SUCCESS);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
}

}  // namespace
