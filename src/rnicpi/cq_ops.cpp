// Completion queues: create, query, resize, destroy, and the CQ event handlers.
// Polling and arming are in wr_ops.cpp, with the rest of the data path.

#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct CqOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t cq_create(ri_rnic_handle_t h, ri_cq_attr_t *attr, ri_cq_handle_t *cq,
                                     ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!attr || !cq) return RI_RET_INVALID_PARAMETER;
            Cq *c = nullptr;
            ri_api_return_t ret = r->dev->create_cq(*r, *attr, os, c);
            if (ret == RI_RET_SUCCESS) *cq = c->handle;
            return ret;
        });
    }

    static ri_api_return_t cq_query(ri_rnic_handle_t h, ri_cq_handle_t cq, ri_cq_attr_t *attr,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Cq *c = owned(r->dev->cqs, cq, r);
            if (!c) return RI_RET_CQ_INVALID_HANDLE;
            if (!attr) return RI_RET_INVALID_PARAMETER;
            if (c->overflowed.load(std::memory_order_acquire)) return RI_RET_CQ_ERROR;
            attr->num_cqe = static_cast<uint32_t>(c->ring.capacity());
            attr->handler_id = r->privileged() ? c->handler_id : 0;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t cq_modify(ri_rnic_handle_t h, ri_cq_handle_t cq,
                                     ri_cq_modify_mask_t mask, ri_cq_attr_t *attr,
                                     ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            Cq *c = owned(r->dev->cqs, cq, r);
            if (!c) return RI_RET_CQ_INVALID_HANDLE;
            if (!attr || raw(mask) != RI_CQ_MODIFY_MASK_NUM_CQE) return RI_RET_INVALID_PARAMETER;
            if (attr->num_cqe == 0) return RI_RET_INVALID_PARAMETER;
            return c->resize(attr->num_cqe);
        });
    }

    static ri_api_return_t cq_destroy(ri_rnic_handle_t h, ri_cq_handle_t cq, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            // No handler for this CQ runs after it returns (L3070).
            return r->dev->destroy_cq(*r, cq, Serial::kBy);
        });
    }

    static ri_api_return_t cq_set_event_handler(ri_vp_handle_t vp, ri_cq_event_handler_id_t *id,
                                                ri_cq_event_callback_t cb, ri_err_data_t *err) {
        return guarded(err, [&] {
            Device *d = device_from_vp(vp);
            if (!d) return RI_RET_VP_INVALID_HANDLE;
            if (static_cast<VpHandle *>(vp)->view == View::User) return RI_RET_NO_PERMISSION;
            if (!id) return RI_RET_INVALID_PARAMETER;
            std::lock_guard lk(d->mu);
            if (*id == 0) {
                for (uint32_t i = 1; i <= Limits::kMaxCqHandlers; ++i) {
                    if (!d->cq_handler_used[i].load(std::memory_order_acquire)) {
                        d->cq_handlers[i].store(cb, std::memory_order_release);
                        d->cq_handler_used[i].store(true, std::memory_order_release);
                        *id = i;
                        return RI_RET_SUCCESS;
                    }
                }
                return RI_RET_RESOURCE_SHORTAGE;
            }
            if (*id > Limits::kMaxCqHandlers ||
                !d->cq_handler_used[*id].load(std::memory_order_acquire))
                return RI_RET_INVALID_HANDLER_ID;
            d->cq_handlers[*id].store(cb, std::memory_order_release);  // NULL clears (L3151)
            return RI_RET_SUCCESS;
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_cq_create = cq_create;
        t.ri_op_cq_query = cq_query;
        t.ri_op_cq_modify = cq_modify;
        t.ri_op_cq_destroy = cq_destroy;
        t.ri_op_cq_set_event_handler = cq_set_event_handler;
    }
};

}  // namespace

void fill_cq_ops(ri_ops_t &t, bool locked) {
    fill_both<CqOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
