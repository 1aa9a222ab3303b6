// An iWARP instance through both ops tables: every call that dispatches through the
// personality answers as it did before the dispatch existed (engine/personality.hpp).
#include "fixture.hpp"

using namespace rt;

namespace {

ri_err_data_t err = 0;

// Every InfiniBand-only call on an iWARP RNIC: XPORT_UNSUPPORTED (L2370, L4178, L6426,
// L6688); with a handle that is not an RNIC handle: RNIC_INVALID_HANDLE.
void expect_iwarp_answers(ri_rnic_handle_t h, ri_pd_handle_t pd, ri_qp_handle_t qp,
                          ri_api_return_t want) {
    ri_rnic_modify_req_t req{};
    EXPECT_EQ(ri_rnic_modify(h, RI_IB_RNIC_ATTR_SI_GUID, &req, &err), want);
    ri_qp_attr_t qa{};
    ri_qp_handle_t sq = nullptr;
    EXPECT_EQ(ri_special_qp_get(h, 1, RI_SQP_TYPE_SMI, &qa, &sq, nullptr, nullptr, &err), want);
    EXPECT_EQ(ri_qp_post_datagram(h, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 7, nullptr, 0, 0,
                                  nullptr, 1, 0, 0, &err),
              want);
    ri_ud_address_vector_t av{};
    ri_address_handle_t ah = nullptr;
    ri_pd_handle_t out_pd = nullptr;
    EXPECT_EQ(ri_ah_create(h, pd, &av, &ah, nullptr, nullptr, &err), want);
    EXPECT_EQ(ri_ah_query(h, ah, &av, &out_pd, &err), want);
    EXPECT_EQ(ri_ah_modify(h, ah, &av, &err), want);
    EXPECT_EQ(ri_ah_destroy(h, ah, &err), want);
    ri_gid_t gid{};
    EXPECT_EQ(ri_mcast_attach(h, 0xC001, &gid, qp, nullptr, nullptr, &err), want);
    EXPECT_EQ(ri_mcast_detach(h, 0xC001, &gid, qp, &err), want);
    char in[256] = {}, out[256] = {};
    EXPECT_EQ(ri_process_sma_mad(h, 1, in, out, &err), want);
}

void check_instance(softrnic_vp_view_t view) {
    Rnic r("personality", view);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.attr().transport_type, RI_RDMA_TRANSPORT_TYPE_IWARP);
    Qp *q = r.new_qp();
    ASSERT_NE(q, nullptr);
    expect_iwarp_answers(r.rnic, r.default_pd->h, q->h, RI_RET_XPORT_UNSUPPORTED);
    // Not an RNIC handle, but dispatched to this provider (its ops pointer comes first).
    struct {
        const void *ops;
        uint32_t magic;
    } not_a_handle{*static_cast<const void *const *>(r.rnic), 0};
    expect_iwarp_answers(&not_a_handle, r.default_pd->h, q->h, RI_RET_RNIC_INVALID_HANDLE);

    // The QP state machine is iWARP's: the checks before the dispatch, then Qp::modify.
    ri_qp_attr_t a{};
    EXPECT_EQ(ri_qp_modify(r.rnic, q->h, RI_QP_ATTR_NEXT_STATE, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_qp_modify(r.rnic, r.default_pd->h, RI_QP_ATTR_NEXT_STATE, &a, &err),
              RI_RET_QP_INVALID_HANDLE);
    EXPECT_EQ(ri_qp_modify(&not_a_handle, q->h, RI_QP_ATTR_NEXT_STATE, &a, &err),
              RI_RET_RNIC_INVALID_HANDLE);
    a.state = RI_QP_STATE_ERROR;
    EXPECT_EQ(ri_qp_modify(r.rnic, q->h, RI_QP_ATTR_NEXT_STATE, &a, &err), RI_RET_SUCCESS);
    ri_qp_attr_t now{};
    EXPECT_EQ(ri_qp_query(r.rnic, q->h, &now, &err), RI_RET_SUCCESS);
    EXPECT_EQ(now.state, RI_QP_STATE_ERROR);
}

TEST(RnicpiPersonality, IwarpInstanceConsumerSerialised) {
    check_instance(SOFTRNIC_VIEW_PRIVILEGED);
}

TEST(RnicpiPersonality, IwarpInstanceProviderSerialised) {
    check_instance(SOFTRNIC_VIEW_PRIVILEGED_VP_LOCKING);
}

// ri_rnic_modify is privileged (K, Pv): a user handle is refused before the personality.
TEST(RnicpiPersonality, RnicModifyNeedsPrivilegeFirst) {
    Rnic r("personality-user", SOFTRNIC_VIEW_USER);
    ASSERT_TRUE(r.ok());
    ri_rnic_modify_req_t req{};
    EXPECT_EQ(ri_rnic_modify(r.rnic, RI_IB_RNIC_ATTR_SI_GUID, &req, &err), RI_RET_NO_PERMISSION);
}

}  // namespace
