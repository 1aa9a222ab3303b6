// Shared receive queues: create, query, modify (resize, limit), destroy. Posting is in
// wr_ops.cpp.

#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct SrqOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t srq_create(ri_rnic_handle_t h, ri_srq_attr_t *a, ri_srq_handle_t *srq,
                                      ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!a || !srq) return RI_RET_INVALID_PARAMETER;
            Device &d = *r->dev;
            Pd *pd = owned(d.pds, a->pd, r);
            if (!pd) return RI_RET_PD_INVALID_HANDLE;
            Srq *s = nullptr;
            ri_api_return_t ret = d.create_srq(*r, *pd, *a, os, s);
            if (ret == RI_RET_SUCCESS) *srq = s->handle;
            return ret;
        });
    }

    static ri_api_return_t srq_query(ri_rnic_handle_t h, ri_srq_handle_t srq, ri_srq_attr_t *a,
                                     ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Srq *s = owned(r->dev->srqs, srq, r);
            if (!s) return RI_RET_SRQ_INVALID_HANDLE;
            if (!a) return RI_RET_INVALID_PARAMETER;
            if (s->in_error.load(std::memory_order_acquire)) return RI_RET_SRQ_IN_ERROR;
            a->max_wrs = s->max_wrs;
            a->max_sgl = s->max_sgl;
            a->lowat = s->lowat.load(std::memory_order_acquire);
            a->pd = s->pd->handle;
            a->srq_armed = s->limit_armed.load(std::memory_order_acquire);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t srq_modify(ri_rnic_handle_t h, ri_srq_handle_t srq,
                                      ri_srq_attr_mask_t mask, ri_srq_attr_t *a,
                                      ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial ser(r);
            Srq *s = owned(r->dev->srqs, srq, r);
            if (!s) return RI_RET_SRQ_INVALID_HANDLE;
            uint32_t m = raw(mask);
            if (!a || (m & ~uint32_t(RI_SRQ_ATTR_MAX_WRS | RI_SRQ_ATTR_LOWAT)) || !m)
                return RI_RET_INVALID_PARAMETER;
            return s->modify(m, *a);
        });
    }

    static ri_api_return_t srq_destroy(ri_rnic_handle_t h, ri_srq_handle_t srq,
                                       ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return r->dev->destroy_srq(*r, srq, Serial::kBy);  // no flush (L4928)
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_srq_create = srq_create;
        t.ri_op_srq_query = srq_query;
        t.ri_op_srq_modify = srq_modify;
        t.ri_op_srq_destroy = srq_destroy;
    }
};

}  // namespace

void fill_srq_ops(ri_ops_t &t, bool locked) {
    fill_both<SrqOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
