// The data path: posting to a QP's send and receive queues and to an SRQ, CQ polling and
// arming. No malloc, no locks (except the provider-serialised table's), no syscalls.
#include <algorithm>
#include <span>

#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct WrOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t cq_req_notification(ri_rnic_handle_t h, ri_cq_handle_t cq,
                                               ri_cmplt_notify_type_t type, ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        Cq *c = owned(r->dev->cqs, cq, r);
        if (!c) return RI_RET_CQ_INVALID_HANDLE;
        uint32_t kind = raw(type);
        if (kind != RI_CMPLT_NOTIFY_SOLICITED && kind != RI_CMPLT_NOTIFY_ANY)
            return RI_RET_INVALID_PARAMETER;
        if (c->handler_id == 0) return RI_RET_CQ_NO_EVENT_HANDLER;
        // One-shot; a later arm may widen SOLICITED to ANY, never narrow it (L3244).
        uint8_t want = kind == RI_CMPLT_NOTIFY_ANY ? 2 : 1;
        uint8_t cur = c->armed.load(std::memory_order_acquire);
        while (cur < want &&
               !c->armed.compare_exchange_weak(cur, want, std::memory_order_acq_rel)) {
        }
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t cq_poll(ri_rnic_handle_t h, ri_cq_handle_t cq, ri_wc_t *wcs, uint_t *num,
                                   ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        Serial s(r);
        Cq *c = owned(r->dev->cqs, cq, r);
        if (!c) return RI_RET_CQ_INVALID_HANDLE;
        if (!num || (!wcs && *num)) return RI_RET_INVALID_PARAMETER;
        uint32_t n = c->has_completions() ? c->poll(wcs, *num) : 0;
        if (n == 0 && *num != 0 && r->dev->progress.active()) {
            // Nothing yet: move this instance's streams ourselves rather than wait for the
            // progress thread to be scheduled (it parks while consumers poll).
            r->dev->progress.poll_inline();
            if (c->has_completions()) n = c->poll(wcs, *num);
        }
        *num = n;
        return n ? RI_RET_SUCCESS : RI_RET_CQ_EMPTY;
    }

    // ------------------------------------------------------------------------ posting
    static ri_api_return_t post_one(ri_rnic_handle_t h, ri_qp_handle_t qp, const ri_wr_t &wr,
                                    ri_err_data_t *err) {
        uint_t one = 1;
        return post_list<ri_wr_t>(h, qp, &wr, &one, err, &Qp::post_sq);
    }

    // A WR list posted to one of a QP's queues; *num in: count, out: how many were posted.
    template <class Wr>
    static ri_api_return_t post_list(ri_rnic_handle_t h, ri_qp_handle_t qp, const Wr *wr,
                                     uint_t *num, ri_err_data_t *err,
                                     ri_api_return_t (Qp::*post)(const Wr *, uint32_t &)) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        Serial s(r);
        Qp *q = owned(r->dev->qps, qp, r);
        if (!q) return RI_RET_QP_INVALID_HANDLE;
        if (!num) return RI_RET_INVALID_PARAMETER;
        uint32_t n = *num;
        ri_api_return_t ret = (q->*post)(wr, n);
        *num = n;
        return ret;
    }

    static ri_api_return_t qp_postsq(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_t *wr,
                                     uint_t *num, ri_err_data_t *err) {
        return post_list<ri_wr_t>(h, qp, wr, num, err, &Qp::post_sq);
    }

    static ri_api_return_t qp_post_send(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_type_t type,
                                        ri_wr_flags_t flags, ri_wr_id_t id, ri_data_seg_t *sg,
                                        ri_rtag_t rtag, uint_t num, uint32_t imm,
                                        ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_SEND && raw(type) != RI_WR_TYPE_SEND_INVALIDATE &&
            raw(type) != RI_WR_TYPE_SEND_IMMEDIATE)
            return RI_RET_WR_INVALID_TYPE;
        ri_wr_t wr{};
        wr.wr_send = {type, flags, id, sg, rtag, num, imm};
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_post_rdma_write(ri_rnic_handle_t h, ri_qp_handle_t qp,
                                              ri_wr_type_t type, ri_wr_flags_t flags, ri_wr_id_t id,
                                              ri_data_seg_t *sg, uint64_t addr, ri_rtag_t rtag,
                                              uint_t num, uint32_t imm, ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_RDMA_WRITE && raw(type) != RI_WR_TYPE_RDMA_WRITE_IMMEDIATE)
            return RI_RET_WR_INVALID_TYPE;
        ri_wr_t wr{};
        wr.wr_rdma_write = {type, flags, id, sg, addr, rtag, num, imm};
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_post_rdma_read(ri_rnic_handle_t h, ri_qp_handle_t qp,
                                             ri_wr_type_t type, ri_wr_flags_t flags, ri_wr_id_t id,
                                             ri_data_seg_t *sg, uint64_t addr, uint_t num,
                                             ri_rtag_t rtag, ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_RDMA_READ && raw(type) != RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE)
            return RI_RET_WR_INVALID_TYPE;
        ri_wr_t wr{};
        wr.wr_rdma_read = {type, flags, id, sg, addr, num, rtag};
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_post_bind(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_type_t type,
                                        ri_wr_flags_t flags, ri_wr_id_t id, ri_mw_handle_t mw,
                                        ri_rtag_t rtag, ri_mr_handle_t mr, ri_ltag_t ltag,
                                        ri_addr_t vaddr, ri_length_t len, ri_mem_attr_t attr,
                                        ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_BIND) return RI_RET_WR_INVALID_TYPE;
        ri_wr_t wr{};
        wr.wr_bind = {type, flags, id, mw, rtag, mr, ltag, vaddr, len, attr};
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_post_fmr(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_type_t type,
                                       ri_wr_flags_t flags, ri_wr_id_t id,
                                       ri_mr_reg_phys_attr_t *attr, ri_ltag_t ltag, ri_rtag_t rtag,
                                       ri_mr_handle_t mr, ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_FAST_REGISTER) return RI_RET_WR_INVALID_TYPE;
        if (!attr) return RI_RET_INVALID_PARAMETER;
        RnicHandle *r = fast_rnic(h);
        if (r && !r->privileged()) return RI_RET_NO_PERMISSION;
        ri_wr_t wr{};
        wr.wr_fmr.type = type;
        wr.wr_fmr.flags = flags;
        wr.wr_fmr.id = id;
        wr.wr_fmr.attr = *attr;
        wr.wr_fmr.ltag = ltag;
        wr.wr_fmr.rtag = rtag;
        wr.wr_fmr.mr_handle = mr;
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_post_local_invalidate(ri_rnic_handle_t h, ri_qp_handle_t qp,
                                                    ri_wr_type_t type, ri_wr_flags_t flags,
                                                    ri_wr_id_t id, ri_ltag_t ltag, ri_rtag_t rtag,
                                                    ri_mr_handle_t mrw, ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_LOCAL_INVALIDATE_MR &&
            raw(type) != RI_WR_TYPE_LOCAL_INVALIDATE_MW)
            return RI_RET_WR_INVALID_TYPE;
        ri_wr_t wr{};
        wr.wr_li.type = type;
        wr.wr_li.flags = flags;
        wr.wr_li.id = id;
        wr.wr_li.ltag = ltag;
        wr.wr_li.rtag = rtag;
        if (raw(type) == RI_WR_TYPE_LOCAL_INVALIDATE_MR)
            wr.wr_li.mrw_handle.mr_handle = mrw;
        else
            wr.wr_li.mrw_handle.mw_handle = mrw;
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_post_atomic(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_type_t type,
                                          ri_wr_flags_t flags, ri_wr_id_t id, ri_rtag_t rtag,
                                          uint64_t op1, uint64_t op2, ri_data_seg_t *result,
                                          ri_err_data_t *err) {
        if (raw(type) != RI_WR_TYPE_COMPARE_AND_SWAP && raw(type) != RI_WR_TYPE_FETCH_AND_ADD)
            return RI_RET_WR_INVALID_TYPE;
        if (!result) return RI_RET_WR_SG_INVALID_FORMAT;
        ri_wr_t wr{};
        wr.wr_atomic.type = type;
        wr.wr_atomic.flags = flags;
        wr.wr_atomic.id = id;
        wr.wr_atomic.rtag = rtag;
        wr.wr_atomic.atomic_operand1 = op1;
        wr.wr_atomic.atomic_operand2 = op2;
        wr.wr_atomic.atomic_result = *result;
        return post_one(h, qp, wr, err);
    }

    static ri_api_return_t qp_postrq(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_recv_t *wr,
                                     uint_t *num, ri_err_data_t *err) {
        return post_list<ri_wr_recv_t>(h, qp, wr, num, err, &Qp::post_rq);
    }

    static ri_api_return_t qp_post_recv(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_wr_flags_t flags,
                                        ri_wr_id_t id, ri_data_seg_t *sg, uint_t num,
                                        ri_err_data_t *err) {
        ri_wr_recv_t wr{flags, id, sg, num};
        uint_t one = 1;
        return qp_postrq(h, qp, &wr, &one, err);
    }

    static ri_api_return_t srq_post(ri_rnic_handle_t h, ri_srq_handle_t srq, ri_wr_recv_t *wr,
                                    uint_t *num, ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        Serial ser(r);
        Srq *s = owned(r->dev->srqs, srq, r);
        if (!s) return RI_RET_SRQ_INVALID_HANDLE;
        if (!num || (*num && !wr)) return RI_RET_INVALID_PARAMETER;
        uint32_t n = *num;
        *num = 0;
        constexpr uint32_t kRecvFlags = RI_WR_LOCAL_SOLICITED_FLAG | RI_WR_COALESCE_FLAG |
                                        RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1;
        for (uint32_t i = 0; i < n; ++i) {
            const ri_wr_recv_t &w = wr[i];
            if (raw(w.flags) & ~kRecvFlags) return RI_RET_WR_INVALID_FLAGS;
            if (w.num_sgls > s->max_sgl) return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
            if (w.num_sgls && !w.sg_list) return RI_RET_WR_SG_INVALID_FORMAT;
            GateScope g(s->resize_gate, /*wait=*/true);
            // Counted before it becomes visible, so an arrival that takes it at once never
            // sees the count go below zero (which would hide the limit event).
            s->posted.fetch_add(1, std::memory_order_acq_rel);
            bool ok = s->ring.push([&](RecvWqe &hd, std::span<ri_data_seg_t> sg) {
                hd = {w.id, raw(w.flags), w.num_sgls};
                std::copy_n(w.sg_list, w.num_sgls, sg.begin());
            });
            if (!ok) {
                s->posted.fetch_sub(1, std::memory_order_acq_rel);
                return RI_RET_QP_CAPACITY_EXCEEDED;
            }
            ++*num;
        }
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t srq_post_recv(ri_rnic_handle_t h, ri_srq_handle_t srq,
                                         ri_wr_flags_t flags, ri_wr_id_t id, ri_data_seg_t *sg,
                                         uint_t num, ri_err_data_t *err) {
        ri_wr_recv_t wr{flags, id, sg, num};
        uint_t one = 1;
        return srq_post(h, srq, &wr, &one, err);
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_cq_req_notification = cq_req_notification;
        t.ri_op_cq_poll = cq_poll;
        t.ri_op_qp_postsq = qp_postsq;
        t.ri_op_qp_post_send = qp_post_send;
        t.ri_op_qp_post_rdma_read = qp_post_rdma_read;
        t.ri_op_qp_post_rdma_write = qp_post_rdma_write;
        t.ri_op_qp_post_bind = qp_post_bind;
        t.ri_op_qp_post_fmr = qp_post_fmr;
        t.ri_op_qp_post_local_invalidate = qp_post_local_invalidate;
        t.ri_op_qp_post_atomic = qp_post_atomic;
        t.ri_op_qp_postrq = qp_postrq;
        t.ri_op_qp_post_recv = qp_post_recv;
        t.ri_op_srq_post = srq_post;
        t.ri_op_srq_post_recv = srq_post_recv;
    }
};

}  // namespace

void fill_wr_ops(ri_ops_t &t, bool locked) {
    fill_both<WrOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
