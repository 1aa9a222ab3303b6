// The upcall router (src/api/common/upcall_router.hpp): what each RNICPI asynchronous event
// means to a face, and that objects are handed back only while the registry holds them.
#include "api/common/upcall_router.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

using softrnic::api::AsyncUpcall;
using softrnic::api::ObjectRegistry;
using softrnic::api::UpcallKinds;
using softrnic::api::UpcallRouter;

constexpr UpcallKinds kKinds{1, 2, 3, 4};  // rnic, cq, qp, srq

struct Objects {
    int rnic = 0, cq = 0, qp = 0, srq = 0;  // addresses only, never read
    ObjectRegistry reg;
    Objects() {
        reg.add(&rnic, kKinds.rnic);
        reg.add(&cq, kKinds.cq);
        reg.add(&qp, kKinds.qp);
        reg.add(&srq, kKinds.srq);
    }
};

ri_event_record_t event(ri_async_event_type_t t, void *os) {
    ri_event_record_t ev{};
    ev.event_type = t;
    ev.event_data.resource_os_data = os;
    return ev;
}

TEST(UpcallRouter, EachEventGoesToTheObjectItConcerns) {
    Objects o;
    UpcallRouter r(o.reg, kKinds);
    struct Case {
        ri_async_event_type_t type;
        void *os;
        AsyncUpcall what;
    } cases[] = {
        {RI_EVENT_QP_LLQ_CLOSE_COMPLETE, &o.qp, AsyncUpcall::QpClosed},
        {RI_EVENT_TYPE_BAD_CLOSE, &o.qp, AsyncUpcall::QpClosed},
        {RI_EVENT_QP_BAD_LLQ_CLOSE, &o.qp, AsyncUpcall::QpClosed},
        {RI_EVENT_QP_LLQ_CONNECTION_RESET, &o.qp, AsyncUpcall::QpClosed},
        {RI_EVENT_QP_RQ_LIMIT_REACHED, &o.qp, AsyncUpcall::QpRqLimit},
        {RI_EVENT_SRQ_LIMIT_REACHED, &o.srq, AsyncUpcall::SrqLimit},
        {RI_EVENT_CQ_OVERFLOW_DETECTED, &o.cq, AsyncUpcall::CqError},
        {RI_EVENT_CQ_OP_ERROR, &o.cq, AsyncUpcall::CqError},
        {RI_EVENT_CQ_ERROR, &o.cq, AsyncUpcall::CqError},
        {RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, &o.qp, AsyncUpcall::QpError},
        {RI_EVENT_QP_LLQ_CONNECTION_LOST, &o.qp, AsyncUpcall::QpError},
    };
    for (const Case &c : cases) {
        ri_event_record_t ev = event(c.type, c.os);
        auto up = r.async(&o.rnic, &ev);
        ASSERT_TRUE(up.has_value()) << "event " << int(c.type);
        EXPECT_EQ(up->what, c.what) << "event " << int(c.type);
        EXPECT_EQ(up->object, c.os) << "event " << int(c.type);
        EXPECT_EQ(up->rnic, &o.rnic);
    }
    ri_event_record_t cat = event(RI_EVENT_LOCAL_CATASTROPHIC_ERROR, nullptr);
    auto up = r.async(&o.rnic, &cat);
    ASSERT_TRUE(up.has_value());
    EXPECT_EQ(up->what, AsyncUpcall::Catastrophic);
    EXPECT_EQ(up->object, &o.rnic);
}

TEST(UpcallRouter, ObjectsOfTheWrongKindOrGoneAreDropped) {
    Objects o;
    UpcallRouter r(o.reg, kKinds);
    ri_event_record_t srq_as_qp = event(RI_EVENT_QP_LLQ_CLOSE_COMPLETE, &o.srq);
    EXPECT_FALSE(r.async(&o.rnic, &srq_as_qp).has_value());
    ri_event_record_t qp_as_srq = event(RI_EVENT_SRQ_LIMIT_REACHED, &o.qp);
    EXPECT_FALSE(r.async(&o.rnic, &qp_as_srq).has_value());
    ri_event_record_t unknown = event(RI_EVENT_QP_LLQ_CONNECTION_LOST, nullptr);
    EXPECT_FALSE(r.async(&o.rnic, &unknown).has_value());
    EXPECT_FALSE(r.async(&o.rnic, nullptr).has_value());
    o.reg.remove(&o.qp);
    ri_event_record_t gone = event(RI_EVENT_QP_LLQ_CLOSE_COMPLETE, &o.qp);
    EXPECT_FALSE(r.async(&o.rnic, &gone).has_value());
}

TEST(UpcallRouter, NothingIsRoutedOnceTheRnicObjectIsGone) {
    Objects o;
    UpcallRouter r(o.reg, kKinds);
    o.reg.remove(&o.rnic);
    ri_event_record_t ev = event(RI_EVENT_QP_LLQ_CLOSE_COMPLETE, &o.qp);
    EXPECT_FALSE(r.async(&o.rnic, &ev).has_value());
    ri_event_record_t cat = event(RI_EVENT_LOCAL_CATASTROPHIC_ERROR, nullptr);
    EXPECT_FALSE(r.async(&o.rnic, &cat).has_value());
}

TEST(UpcallRouter, CqNotificationsReachOnlyLiveCqObjects) {
    Objects o;
    UpcallRouter r(o.reg, kKinds);
    EXPECT_EQ(r.cq(&o.cq), &o.cq);
    EXPECT_EQ(r.cq(&o.qp), nullptr);
    EXPECT_EQ(r.cq(nullptr), nullptr);
    o.reg.remove(&o.cq);
    EXPECT_EQ(r.cq(&o.cq), nullptr);
}

}  // namespace
