// Queue pairs: create, query, modify, destroy, special QPs. Posting is in wr_ops.cpp.
#include <algorithm>
#include <memory>

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
                if (srq->pd != pd) return RI_RET_PD_INVALID_HANDLE;
            }
            if (a->sq_size > Limits::kMaxWrsQp || (!srq && a->rq_size > Limits::kMaxWrsQp))
                return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
            if (a->sq_max_sges > Limits::kMaxSge || a->sq_max_sges_rdmaw > Limits::kMaxSge ||
                a->rq_max_sges > Limits::kMaxSge)
                return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
            if (a->max_rdma_read_outgoing > Limits::kMaxOrdQp ||
                a->max_rdma_read_incoming > Limits::kMaxIrdQp)
                return RI_RET_RNIC_IRD_ORD_EXCEEDED;
            const ri_iwarp_qp_attr_t &iw = a->qp_xport.qp_iwarp;
            if (iw.mpa_attrs.ddp_rdma_version > 1) return RI_RET_INVALID_DDP_RDMAP_VERSION;
            if (srq && iw.rq_hiwat > srq->max_wrs) return RI_RET_SRQ_LIMIT_OUT_OF_RANGE;

            auto q = std::make_unique<Qp>();
            q->dev = &d;
            q->owner.reset(r);
            q->os_data = os;
            q->pd.reset(pd);
            q->pd_handle = a->pd;
            q->scq.reset(scq);
            q->rcq.reset(rcq);
            q->srq.reset(srq);
            q->sq_size = std::max<uint32_t>(a->sq_size, 1);
            q->sq_max_sges = std::max<uint32_t>(a->sq_max_sges, 1);
            q->sq_max_sges_rdmaw = std::max<uint32_t>(a->sq_max_sges_rdmaw, 1);
            q->rq_max_sges = srq ? srq->max_sgl : std::max<uint32_t>(a->rq_max_sges, 1);
            if (!srq) {
                q->rq.reset(std::max<uint32_t>(a->rq_size, 1), q->rq_max_sges);
                q->rq_size = static_cast<uint32_t>(q->rq.capacity());
            } else {
                q->rq.reset(1, 1);
                q->rq_size = a->rq_size;  // a hint only with an SRQ (L8566)
            }
            q->ord = a->max_rdma_read_outgoing;
            q->ird = a->max_rdma_read_incoming;
            q->enable_read = a->enable_rdma_read;
            q->enable_write = a->enable_rdma_write;
            q->enable_stag0_fastreg = a->enable_stag0_fastreg;
            q->enable_bind = iw.enable_bind;
            q->mpa = iw.mpa_attrs;
            // Zero-initialised attributes mean the IETF version this RNIC speaks.
            q->mpa.ddp_rdma_version = 1;
            q->mpa.recv_marker_enabled = 0;
            q->mpa.xmit_marker_enabled = 0;
            q->rq_hiwat.store(iw.rq_hiwat, std::memory_order_relaxed);
            q->rq_armed.store(srq && iw.rq_hiwat != 0, std::memory_order_relaxed);
            q->qp_id = d.next_qp_id.fetch_add(1, std::memory_order_relaxed);
            Qp *raw = q.get();
            uint32_t slot = 0;
            void *handle = d.qps.insert(std::move(q), &slot);
            if (!handle) return RI_RET_RESOURCE_SHORTAGE;
            raw->handle = handle;
            raw->slot = slot;
            raw->incarnation = d.incarnation_seed.fetch_add(1, std::memory_order_relaxed);
            raw->reset_queues();

            a->qp_id = raw->qp_id;
            a->state = RI_QP_STATE_IDLE;
            a->sq_size = raw->sq_size;
            a->rq_size = raw->rq_size;
            a->sq_max_sges = raw->sq_max_sges;
            a->sq_max_sges_rdmaw = raw->sq_max_sges_rdmaw;
            a->rq_max_sges = raw->rq_max_sges;
            *qp = handle;
            return RI_RET_SUCCESS;
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

    static ri_api_return_t qp_modify(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_qp_attr_mask_t mask,
                                     ri_qp_attr_t *a, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            Qp *q = owned(r->dev->qps, qp, r);
            if (!q) return RI_RET_QP_INVALID_HANDLE;
            if (!a) return RI_RET_INVALID_PARAMETER;
            return q->modify(mask, *a);
        });
    }

    static ri_api_return_t qp_destroy(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            std::unique_ptr<Qp> gone;
            {
                Serial s(r);
                Qp *q = owned(r->dev->qps, qp, r);
                if (!q) return RI_RET_QP_INVALID_HANDLE;
                q->destroy();
                gone = r->dev->qps.erase(qp);
            }
            r->dev->events.drain();  // no event for this QP runs after we return (L4043)
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t special_qp_get(ri_rnic_handle_t h, uint8_t, ri_sqp_type_t,
                                          ri_qp_attr_t *, ri_qp_handle_t *, ri_vp_data_t,
                                          ri_os_data_t, ri_err_data_t *err) {
        return guarded(err, [&] {
            if (!slow_rnic(h)) return RI_RET_RNIC_INVALID_HANDLE;
            return RI_RET_XPORT_UNSUPPORTED;
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_special_qp_get = special_qp_get;
        t.ri_op_qp_create = qp_create;
        t.ri_op_qp_query = qp_query;
        t.ri_op_qp_modify = qp_modify;
        t.ri_op_qp_destroy = qp_destroy;
    }
};

}  // namespace

void fill_qp_ops(ri_ops_t &t, bool locked) {
    if (locked)
        QpOps<true>::fill(t);
    else
        QpOps<false>::fill(t);
}

}  // namespace softrnic::rnicpi::ops
