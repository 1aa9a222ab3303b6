// An EP's QP: creation, state changes, SRQ watermarks, and the end of a connection. See
// provider.hpp for what the sources share.
#include <algorithm>
#include <mutex>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ QP

ri_api_return_t qp_to_locked(Ep *ep, ri_qp_state_t s) {
    if (!ep->qp) return RI_RET_QP_INVALID_HANDLE;
    ri_qp_attr_t a{};
    a.state = s;
    ri_err_data_t e = 0;
    return ri_qp_modify(ep->ia->rnic, ep->qp, RI_QP_ATTR_NEXT_STATE, &a, &e);
}
ri_qp_state_t qp_state_locked(Ep *ep) {
    ri_qp_attr_t a{};
    ri_err_data_t e = 0;
    if (!ep->qp || ri_qp_query(ep->ia->rnic, ep->qp, &a, &e) != RI_RET_SUCCESS)
        return RI_QP_STATE_ERROR;
    return a.state;
}

ri_api_return_t qp_to(Ep *ep, ri_qp_state_t s) {
    std::lock_guard q(ep->qp_mu);
    return qp_to_locked(ep, s);
}
// Puts the QP in Error (flushing everything outstanding) whatever state it is in.
void qp_flush(Ep *ep) {
    std::lock_guard q(ep->qp_mu);
    if (!ep->qp) return;
    if (qp_state_locked(ep) != RI_QP_STATE_ERROR) qp_to_locked(ep, RI_QP_STATE_ERROR);
}

bool configured(const Ep *ep) {
    return ep->pz && ep->recv && ep->req && ep->conn;
}

// Arms the QP's RQ limit (RNICPI rq_hiwat: SRQ WQEs taken and not yet completed) for the
// lowest high watermark still watched: the soft one until it fired, the hard one always.
// "Above the watermark" is reaching watermark + 1. Caller holds ep->mu or owns `ep`.
void wm_arm(Ep *ep) {
    if (!ep->srq || !ep->qp) return;
    uint64_t mark = UINT64_MAX;
    if (ep->soft_armed && ep->attr.srq_soft_hw != DAT_WATERMARK_INFINITE)
        mark = uint64_t(ep->attr.srq_soft_hw) + 1;
    if (ep->attr.max_recv_dtos != DAT_WATERMARK_INFINITE)
        mark = std::min(mark, uint64_t(ep->attr.max_recv_dtos) + 1);
    ri_qp_attr_t a{};
    a.qp_xport.qp_iwarp.rq_hiwat = mark == UINT64_MAX ? 0 : uint32_t(mark);
    a.qp_xport.qp_iwarp.rq_armed = mark != UINT64_MAX;
    ri_err_data_t e = 0;
    ri_api_return_t r;
    {
        std::lock_guard q(ep->qp_mu);
        r = ep->qp ? ri_qp_modify(
                         ep->ia->rnic, ep->qp,
                         static_cast<ri_qp_attr_mask_t>(RI_QP_ATTR_RQ_HIWAT | RI_QP_ATTR_RQ_ARMED),
                         &a, &e)
                   : RI_RET_QP_INVALID_HANDLE;
    }
    ep->wm_mark = r == RI_RET_SUCCESS && mark != UINT64_MAX ? uint32_t(mark) : 0;
}

DAT_RETURN create_qp(Ep *ep) {
    Ia *ia = ep->ia;
    ri_qp_attr_t a{};
    a.scq.scq_handle = ep->req->cq;
    a.rcq.rcq_handle = ep->recv->cq;
    if (ep->srq) {
        a.srq.srq_handle = ep->srq->srq;
        a.srq_valid = true;
    }
    a.pd = ep->pz->pd;
    // One spare send slot so an RMR bind fits next to a full request queue.
    a.sq_size = uint32_t(std::max(ep->attr.max_request_dtos, 1)) + 1;
    a.rq_size = ep->srq ? 0 : uint32_t(std::max(ep->attr.max_recv_dtos, 1));
    a.sq_max_sges = uint32_t(std::max(ep->attr.max_request_iov, 1));
    a.sq_max_sges_rdmaw = uint32_t(std::max(ep->attr.max_rdma_write_iov, 1));
    a.rq_max_sges = uint32_t(std::max(ep->attr.max_recv_iov, 1));
    a.state = RI_QP_STATE_IDLE;
    a.enable_rdma_read = true;
    a.enable_rdma_write = true;
    a.max_rdma_read_outgoing = uint32_t(ep->attr.max_rdma_read_out);
    a.max_rdma_read_incoming = uint32_t(ep->attr.max_rdma_read_in);
    a.qp_xport.qp_iwarp.enable_bind = true;
    a.qp_xport.qp_iwarp.mpa_attrs.ddp_rdma_version = 1;
    ri_err_data_t e = 0;
    ri_api_return_t r;
    {
        std::lock_guard q(ep->qp_mu);
        r = ri_qp_create(ia->rnic, &a, &ep->qp, nullptr, ep, &e);
        if (r != RI_RET_SUCCESS) ep->qp = nullptr;
    }
    if (r != RI_RET_SUCCESS) {
        return r == RI_RET_RESOURCE_SHORTAGE ? err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP)
                                             : err(DAT_INVALID_PARAMETER);
    }
    wm_arm(ep);  // the hard watermark holds from the first connection on (L6428)
    return DAT_SUCCESS;
}
// ri_qp_destroy waits for the event thread, whose handlers may want qp_mu (ep_break ->
// qp_flush): the QP leaves the EP under the lock and is destroyed outside it.
void destroy_qp(Ep *ep) {
    ri_qp_handle_t qp;
    {
        std::lock_guard q(ep->qp_mu);
        qp = ep->qp;
        ep->qp = nullptr;
    }
    if (!qp) return;
    ri_err_data_t e = 0;
    ri_qp_destroy(ep->ia->rnic, qp, &e);
}

// Connection ends for one of the transport's reasons. Only the first end of a connection
// produces an event (never both BROKEN and DISCONNECTED, L5366).
void ep_break(Ep *ep, DAT_EVENT_NUMBER num, bool flush) {
    if (!handles().valid(ep, DAT_HANDLE_TYPE_EP)) return;
    Evd *conn = nullptr;
    cm::ConnId id = 0;
    {
        std::lock_guard lk(ep->mu);
        switch (ep->state) {
            case DAT_EP_STATE_CONNECTED:
            case DAT_EP_STATE_DISCONNECT_PENDING:
            case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
            case DAT_EP_STATE_COMPLETION_PENDING:
                break;
            default:
                return;
        }
        ep->state = DAT_EP_STATE_DISCONNECTED;
        conn = ep->conn;
        id = ep->conn_id;
        ep->conn_id = 0;
        if (flush) qp_flush(ep);
    }
    if (id) {
        std::lock_guard lk(ep->ia->mu);
        ep->ia->conns.erase(id);
    }
    post_conn(conn, num, ep, nullptr, true);
    srq_ep_ended(ep);
}

}  // namespace softrnic::dapl
