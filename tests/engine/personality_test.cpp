// The personality tables (engine/personality.hpp): the default one answers every entry with
// the spec's "not supported" code, a personality overrides only what it implements, and an
// RNIC instance is iWARP.
#include <gtest/gtest.h>

#include "engine/device.hpp"
#include "engine/personality.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {
namespace {

// Calls every entry of `p` with harmless arguments (no entry under test dereferences them
// beyond what it owns) and expects `ib_only` from the InfiniBand-only calls and
// `qp_modify` from the QP state machine.
void expect_answers(const Personality &p, ri_api_return_t ib_only, ri_api_return_t qp_modify) {
    RnicHandle r{};
    ri_rnic_modify_req_t req{};
    EXPECT_EQ(p.rnic_modify(r, RI_IB_RNIC_ATTR_SI_GUID, &req), ib_only);
    ri_qp_attr_t qa{};
    ri_qp_handle_t qh = nullptr;
    EXPECT_EQ(p.special_qp_get(r, 1, RI_SQP_TYPE_GSI, &qa, &qh, nullptr, nullptr), ib_only);
    EXPECT_EQ(p.qp_post_datagram(r, nullptr, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 1, nullptr, 0, 0,
                                 nullptr, 0, 0, 0),
              ib_only);
    ri_ud_address_vector_t av{};
    ri_address_handle_t ah = nullptr;
    ri_pd_handle_t pd = nullptr;
    EXPECT_EQ(p.ah_create(r, nullptr, &av, &ah, nullptr, nullptr), ib_only);
    EXPECT_EQ(p.ah_query(r, nullptr, &av, &pd), ib_only);
    EXPECT_EQ(p.ah_modify(r, nullptr, &av), ib_only);
    EXPECT_EQ(p.ah_destroy(r, nullptr), ib_only);
    ri_gid_t gid{};
    EXPECT_EQ(p.mcast_attach(r, 0xC001, &gid, nullptr, nullptr, nullptr), ib_only);
    EXPECT_EQ(p.mcast_detach(r, 0xC001, &gid, nullptr), ib_only);
    char in[256] = {}, out[256] = {};
    EXPECT_EQ(p.process_sma_mad(r, 1, in, out), ib_only);
    ri_qp_attr_t create{};
    EXPECT_EQ(p.qp_create_check(r, create),
              qp_modify == RI_RET_SUCCESS ? RI_RET_SUCCESS : RI_RET_QP_INVALID_SERVICE_TYPE);
    if (qp_modify != RI_RET_SUCCESS) {
        Qp q;
        EXPECT_EQ(p.qp_modify(q, RI_QP_ATTR_NEXT_STATE, qa), qp_modify);
    }
}

// RNICPI: the InfiniBand-only calls answer XPORT_UNSUPPORTED on any other device (L2407,
// L2370, L4178, L6426, L6688); an operation nothing implements, OP_UNSUPPORTED (L2405).
TEST(Personality, DefaultTableAnswersNotSupported) {
    const Personality &d = default_personality();
    EXPECT_STREQ(d.name, "none");
    expect_answers(d, RI_RET_XPORT_UNSUPPORTED, RI_RET_OP_UNSUPPORTED);
}

TEST(Personality, WithDefaultsKeepsOverridesAndFillsTheRest) {
    Personality over;
    over.name = "test";
    over.ah_destroy = [](RnicHandle &, ri_address_handle_t) { return RI_RET_SUCCESS; };
    Personality p = with_defaults(over);
    EXPECT_STREQ(p.name, "test");
    EXPECT_EQ(p.ah_destroy, over.ah_destroy);
    const Personality &d = default_personality();
    EXPECT_EQ(p.rnic_modify, d.rnic_modify);
    EXPECT_EQ(p.qp_create_check, d.qp_create_check);
    EXPECT_EQ(p.qp_modify, d.qp_modify);
    EXPECT_EQ(p.special_qp_get, d.special_qp_get);
    EXPECT_EQ(p.qp_post_datagram, d.qp_post_datagram);
    EXPECT_EQ(p.ah_create, d.ah_create);
    EXPECT_EQ(p.ah_query, d.ah_query);
    EXPECT_EQ(p.ah_modify, d.ah_modify);
    EXPECT_EQ(p.mcast_attach, d.mcast_attach);
    EXPECT_EQ(p.mcast_detach, d.mcast_detach);
    EXPECT_EQ(p.process_sma_mad, d.process_sma_mad);
}

// iWARP implements the QP state machine and nothing InfiniBand-only.
TEST(Personality, IwarpOverridesTheStateMachineOnly) {
    const Personality &iw = iwarp_personality();
    const Personality &d = default_personality();
    EXPECT_STREQ(iw.name, "iwarp");
    EXPECT_NE(iw.qp_modify, d.qp_modify);
    expect_answers(iw, RI_RET_XPORT_UNSUPPORTED, RI_RET_SUCCESS);
    Device dev("personality-test");
    EXPECT_EQ(dev.personality, &iw);
    EXPECT_FALSE(dev.is_ib());
}

// InfiniBand implements ri_rnic_modify (step 2 of docs/ib-personality.md §10), the QP state
// machine and special QPs (step 3), address handles and datagrams (step 4); everything else
// keeps the default answers until its step lands.
TEST(Personality, IbOverridesRnicModifyAndQps) {
    const Personality &ib = ib_personality();
    const Personality &d = default_personality();
    EXPECT_STREQ(ib.name, "ib");
    EXPECT_NE(ib.rnic_modify, d.rnic_modify);
    EXPECT_NE(ib.qp_create_check, d.qp_create_check);
    EXPECT_NE(ib.qp_modify, d.qp_modify);
    EXPECT_NE(ib.special_qp_get, d.special_qp_get);
    EXPECT_NE(ib.qp_post_datagram, d.qp_post_datagram);
    EXPECT_NE(ib.ah_create, d.ah_create);
    EXPECT_NE(ib.ah_query, d.ah_query);
    EXPECT_NE(ib.ah_modify, d.ah_modify);
    EXPECT_NE(ib.ah_destroy, d.ah_destroy);
    EXPECT_EQ(ib.mcast_attach, d.mcast_attach);
    EXPECT_EQ(ib.mcast_detach, d.mcast_detach);
    EXPECT_EQ(ib.process_sma_mad, d.process_sma_mad);
}

}  // namespace
}  // namespace softrnic::engine
