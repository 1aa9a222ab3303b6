// Queue pairs: create (with the personality's checks), query, destroy. Posting is in
// wr_ops.cpp; ri_qp_modify and the special QPs depend on the personality
// (personality_ops.cpp).

#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct QpOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t qp_create(ri_rnic_handle_t h, ri_qp_attr_t *a, ri_qp_handle_t *qp,
                                     ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!a || !qp) return RI_RET_INVALID_PARAMETER;
            Serial s(r);
            Device &d = *r->dev;
            Pd *pd = owned(d.pds, a->pd, r);
            if (!pd) return RI_RET_PD_INVALID_HANDLE;
            Cq *scq = owned(d.cqs, a->scq.scq_handle, r);
            Cq *rcq = owned(d.cqs, a->rcq.rcq_handle, r);
            if (!scq || !rcq) return RI_RET_CQ_INVALID_HANDLE;
            Srq *srq = nullptr;
            if (a->srq_valid) {
                srq = owned(d.srqs, a->srq.srq_handle, r);
                if (!srq) return RI_RET_SRQ_INVALID_HANDLE;
            }
            // The personality says which QPs it can make (no IB service type yet).
            if (ri_api_return_t c = d.personality->qp_create_check(*r, *a); c != RI_RET_SUCCESS)
                return c;
            Qp *q = nullptr;
            ri_api_return_t ret = d.create_qp(*r, {*pd, *scq, *rcq, srq}, *a, os, q);
            if (ret == RI_RET_SUCCESS) *qp = q->handle;
            return ret;
        });
    }

    static ri_api_return_t qp_query(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_qp_attr_t *a,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            Qp *q = owned(r->dev->qps, qp, r);
            if (!q) return RI_RET_QP_INVALID_HANDLE;
            if (!a) return RI_RET_INVALID_PARAMETER;
            q->query(*a);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t qp_destroy(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            // No event for this QP runs after it returns (L4043).
            return r->dev->destroy_qp(*r, qp, Serial::kBy);
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_qp_create = qp_create;
        t.ri_op_qp_query = qp_query;
        t.ri_op_qp_destroy = qp_destroy;
    }
};

}  // namespace

void fill_qp_ops(ri_ops_t &t, bool locked) {
    fill_both<QpOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
