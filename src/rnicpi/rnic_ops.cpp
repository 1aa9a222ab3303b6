// The RNIC instance calls (RNICPI "RNIC" verbs): open, close, the async event handler,
// consumer handles, query and diagnostics (ri_rnic_modify depends on the personality:
// personality_ops.cpp); and the two ops tables built from every *_ops.cpp file.
#include <string>

#include "rnicpi/ops.hpp"
#include "rnicpi/provider.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct RnicOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t rnic_open(ri_vp_handle_t vp, ri_pbl_mode_t mode, ri_os_data_t os,
                                     ri_err_data_t *err) {
        return guarded(err, [&] {
            Device *d = device_from_vp(vp);
            if (!d) return RI_RET_VP_INVALID_HANDLE;
            if (static_cast<VpHandle *>(vp)->view == View::User) return RI_RET_NO_PERMISSION;
            uint32_t m = raw(mode);
            if (m != RI_PHYS_PAGE_LIST_MODE && m != RI_PHYS_BLOCK_LIST_MODE)
                return RI_RET_INVALID_PARAMETER;
            std::lock_guard lk(d->mu);
            if (!d->attached) return RI_RET_VP_INVALID_HANDLE;
            // Page mode is mandatory; block mode is not offered (L1826).
            if (m != RI_PHYS_PAGE_LIST_MODE) return RI_RET_INVALID_PBL_MODE;
            if (d->open) return RI_RET_RNIC_INUSE;
            d->pbl_mode = RI_PHYS_PAGE_LIST_MODE;
            d->open_os_data = os;
            d->open = true;
            d->start_events();
            // An IB instance's ports come up now (docs/ib-personality.md §2.4): each
            // Active port raises its port event.
            if (d->is_ib())
                for (uint8_t port : d->hca->attach())
                    d->raise_port_event(port, RI_IB_LINK_ACTIVE);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t rnic_close(ri_vp_handle_t vp, ri_err_data_t *err) {
        return guarded(err, [&] {
            Device *d = device_from_vp(vp);
            if (!d) return RI_RET_VP_INVALID_HANDLE;
            if (static_cast<VpHandle *>(vp)->view == View::User) return RI_RET_NO_PERMISSION;
            std::lock_guard lk(d->mu);
            if (!d->open) return RI_RET_VP_INVALID_HANDLE;
            if (!d->rnics.empty()) return RI_RET_RNIC_INUSE;
            if (d->events.on_event_thread()) return RI_RET_FAIL;  // would join itself
            d->stop_events();
            if (d->is_ib()) d->hca->detach();  // the ports go Down, their LIDs are free
            d->open = false;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t async_set_event_handler(ri_vp_handle_t vp, ri_async_event_callback_t cb,
                                                   ri_err_data_t *err) {
        return guarded(err, [&] {
            Device *d = device_from_vp(vp);
            if (!d) return RI_RET_VP_INVALID_HANDLE;
            if (static_cast<VpHandle *>(vp)->view == View::User) return RI_RET_NO_PERMISSION;
            d->async_cb.store(cb, std::memory_order_release);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t rnic_get_hdl(ri_vp_handle_t vp, ri_consumer_domain_t loc,
                                        ri_rnic_handle_t *out, ri_vp_data_t, ri_os_data_t os,
                                        ri_err_data_t *err) {
        return guarded(err, [&] {
            Device *d = device_from_vp(vp);
            if (!d) return RI_RET_VP_INVALID_HANDLE;
            if (!out) return RI_RET_INVALID_PARAMETER;
            uint32_t where = raw(loc);
            if (where != RI_CONSUMER_LOCATION_KERNEL && where != RI_CONSUMER_LOCATION_USER)
                return RI_RET_INVALID_PARAMETER;
            std::lock_guard lk(d->mu);
            if (!d->open) return RI_RET_RNIC_NOT_OPEN;
            View v = static_cast<VpHandle *>(vp)->view;
            if (where == RI_CONSUMER_LOCATION_USER) v = View::User;
            auto *r = new RnicHandle();
            r->ops = d->view(v)->ops;
            r->magic = RnicHandle::kMagic;
            r->dev = d;
            r->view = v;
            r->location = static_cast<ri_consumer_domain_t>(where);
            r->os_data = os;
            d->rnics.insert(r);
            register_rnic(r);
            *out = r;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t rnic_free_hdl(ri_vp_handle_t vp, ri_rnic_handle_t h,
                                         ri_err_data_t *err) {
        return guarded(err, [&] {
            Device *d = device_from_vp(vp);
            if (!d) return RI_RET_VP_INVALID_HANDLE;
            RnicHandle *r = slow_rnic(h);
            if (!r || r->dev != d) return RI_RET_RNIC_INVALID_HANDLE;
            {
                std::lock_guard lk(d->mu);
                if (r->users.in_use()) return RI_RET_RNIC_INUSE;
                d->rnics.erase(r);
                unregister_rnic(r);
            }
            // Outside the lock: a running callback may call back into the library.
            d->events.drain();
            r->magic = 0;
            delete r;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t rnic_query(ri_rnic_handle_t h, ri_rnic_query_flags_t flags,
                                      ri_rnic_attr_t *attrs, uint_t *attr_size,
                                      ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return fill_rnic_attr(*r->dev, raw(flags), attrs, attr_size);
        });
    }

    static ri_api_return_t rnic_diag(ri_rnic_handle_t h, ri_diag_op_type_t op, void *arg,
                                     unsigned char *opval, ri_length_t *oplen, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            if (!oplen) return RI_RET_INVALID_PARAMETER;
            std::string text;
            switch (raw(op)) {
                case RI_DIAG_RNIC_DETAILS:
                    text = diag_rnic(*r->dev, false);
                    break;
                case RI_DIAG_RNIC_DUMP:
                    text = diag_rnic(*r->dev, true);
                    break;
                case RI_DIAG_QP_DETAILS: {
                    Qp *qp = owned(r->dev->qps, arg, r);
                    if (!qp) return RI_RET_QP_INVALID_HANDLE;
                    text = diag_qp(*qp);
                    break;
                }
                case RI_DIAG_RDMA_RESET:
                    return RI_RET_OP_UNSUPPORTED;
                default:
                    return RI_RET_INVALID_PARAMETER;
            }
            ri_length_t need = text.size() + 1;
            if (*oplen < need || !opval) {
                *oplen = need;
                return RI_RET_BUFFER_TOO_SMALL;
            }
            std::memcpy(opval, text.c_str(), need);
            *oplen = need;
            return RI_RET_SUCCESS;
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_rnic_open = rnic_open;
        t.ri_op_rnic_close = rnic_close;
        t.ri_op_async_set_event_handler = async_set_event_handler;
        t.ri_op_rnic_get_hdl = rnic_get_hdl;
        t.ri_op_rnic_query = rnic_query;
        t.ri_op_rnic_free_hdl = rnic_free_hdl;
        t.ri_op_rnic_diag = rnic_diag;
    }
};

}  // namespace

void fill_rnic_ops(ri_ops_t &t, bool locked) {
    fill_both<RnicOps>(t, locked);
}

namespace {

ri_ops_t build_table(bool locked) {
    ri_ops_t t{};
    fill_rnic_ops(t, locked);
    fill_pd_ops(t, locked);
    fill_cq_ops(t, locked);
    fill_srq_ops(t, locked);
    fill_qp_ops(t, locked);
    fill_mem_ops(t, locked);
    fill_wr_ops(t, locked);
    fill_personality_ops(t, locked);
    return t;
}

}  // namespace

}  // namespace softrnic::rnicpi::ops

namespace softrnic::rnicpi {

const ri_ops_t *consumer_serialised_ops() {
    static const ri_ops_t t = ops::build_table(false);
    return &t;
}
const ri_ops_t *provider_serialised_ops() {
    static const ri_ops_t t = ops::build_table(true);
    return &t;
}

}  // namespace softrnic::rnicpi
