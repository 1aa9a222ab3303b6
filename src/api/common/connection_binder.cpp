#include "api/common/connection_binder.hpp"

#include <algorithm>

namespace softrnic::api {

ri_api_return_t bind_established(ri_rnic_handle_t rnic, ri_qp_handle_t qp,
                                 const cm::Established &est, ReadCredits local) {
    if (qp == nullptr) {
        release_established(est);
        return RI_RET_QP_INVALID_HANDLE;
    }
    ri_qp_attr_t a{};
    a.state = RI_QP_STATE_READY_TO_SEND;
    a.qp_xport.qp_iwarp.llp_stream_handle = est.llp;
    a.max_rdma_read_outgoing = std::min<uint32_t>(est.params.ord, local.outgoing);
    a.max_rdma_read_incoming = std::max<uint32_t>(est.params.ird, local.incoming);
    ri_err_data_t e = 0;
    const ri_api_return_t r = ri_qp_modify(
        rnic, qp,
        static_cast<ri_qp_attr_mask_t>(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &a,
        &e);
    if (r != RI_RET_SUCCESS) release_established(est);
    return r;
}

void release_established(const cm::Established &est) {
    cm::release_unclaimed(est.llp);
}

}  // namespace softrnic::api
