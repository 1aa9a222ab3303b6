// The softrnic verbs provider: every ri_op_* of the RNICPI ops table, translating C calls
// into engine objects. Two tables: consumer-serialised (no locks on the data path) and
// provider-serialised (each call holds the RNIC handle's mutex), per RNICPI L1316-1363.
// No exception crosses this boundary.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "engine/abi.hpp"
#include "engine/device.hpp"
#include "engine/qp.hpp"
#include "rnicpi/provider.hpp"

namespace softrnic::rnicpi {

using namespace softrnic::engine;

namespace {

template <class F>
ri_api_return_t guarded(ri_err_data_t *err, F &&f) noexcept {
    if (err) *err = 0;
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return RI_RET_RESOURCE_SHORTAGE;
    } catch (...) {
        return RI_RET_FAIL;
    }
}

// Slow-path RNIC handle check: the handle must be one this provider issued and still owns.
RnicHandle *slow_rnic(ri_rnic_handle_t h) {
    return rnic_from_handle(h);
}

// Fast-path check: one compare (a forged pointer may fault, as L1413 allows).
inline RnicHandle *fast_rnic(ri_rnic_handle_t h) {
    auto *r = static_cast<RnicHandle *>(h);
    return (r && r->magic == RnicHandle::kMagic) ? r : nullptr;
}

template <class T>
T *owned(ObjectTable<T> &t, void *h, RnicHandle *r) {
    T *o = t.lookup(h);
    return (o && o->owner == r) ? o : nullptr;
}

MemEntry *owned_mem(Device &d, void *h, bool window, RnicHandle *r) {
    MemEntry *e = d.stags.from_handle(h, window);
    return (e && e->owner_rnic.load(std::memory_order_acquire) == r) ? e : nullptr;
}

constexpr uint32_t kMemAttrKnown = RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_ATOMICS |
                                   RI_MEM_FLAGS_BINDING | RI_MEM_FLAGS_CONSUMER_OWNS_KEY |
                                   RI_MEM_FLAGS_ZBVA | RI_MEM_FLAGS_NONCOHERENT |
                                   RI_MEM_FLAGS_USER_VA | RI_MEM_FLAGS_SHARED_REG_IOVA;

// Rights that let anything write the pages (locally, remotely, or by an atomic).
bool writes(uint32_t attr) {
    return attr & (RI_MEM_FLAGS_LOCAL_WRITE | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS);
}

ri_api_return_t check_access(uint32_t attr) {
    if (attr & ~kMemAttrKnown) return RI_RET_MEM_INVALID_ACCESS;
    if (attr & RI_MEM_FLAGS_NONCOHERENT) return RI_RET_MEM_INVALID_ACCESS;  // not offered
    // Remote write and atomics need local write (RDMAC Verbs memory access rules).
    if ((attr & (RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS)) &&
        !(attr & RI_MEM_FLAGS_LOCAL_WRITE))
        return RI_RET_MEM_INVALID_ACCESS;
    return RI_RET_SUCCESS;
}

uint8_t next_key(MemEntry &e, uint32_t requested, uint32_t attr) {
    if (attr & RI_MEM_FLAGS_CONSUMER_OWNS_KEY) return static_cast<uint8_t>(requested);
    return static_cast<uint8_t>((e.stag() & 0xFF) + 1 + (reinterpret_cast<uintptr_t>(&e) >> 6));
}

void publish_region(MemEntry &e, std::byte *host, uint64_t va, uint64_t len, uint32_t attr,
                    uint8_t key) {
    e.host = host;
    e.zbva = attr & RI_MEM_FLAGS_ZBVA;
    e.to_base = e.zbva ? 0 : va;
    e.length = len;
    e.access = attr | RI_MEM_FLAGS_LOCAL_READ;
    e.word.store(uint64_t{e.index} << 8 | key | MemEntry::kValid, std::memory_order_release);
}

// Validates a physical buffer list under the identity map; returns the host range.
ri_api_return_t phys_range(const Device &d, const ri_mr_reg_phys_attr_t &a, uint64_t &start,
                           uint64_t &total) {
    if (a.nbufs == 0 || !a.phys_buf_list) return RI_RET_MEM_INVALID_PBLE;
    if (a.nbufs > Limits::kMaxPbl) return RI_RET_MEM_INVALID_PBLE;
    total = 0;
    if (a.pble_size) {
        if (d.pbl_mode != RI_PHYS_PAGE_LIST_MODE) return RI_RET_RNIC_NOT_IN_PAGE_MODE;
        if (a.pble_size != Limits::kPageSize) return RI_RET_MEM_INVALID_PBLE_LENGTH;
        auto *pages = static_cast<const ri_phys_addr_t *>(a.phys_buf_list);
        for (uint32_t i = 0; i < a.nbufs; ++i) {
            if (pages[i] % Limits::kPageSize || pages[i] != pages[0] + i * Limits::kPageSize)
                return RI_RET_MEM_INVALID_PBLE;
        }
        start = pages[0];
        total = uint64_t{a.nbufs} * Limits::kPageSize;
    } else {
        if (d.pbl_mode != RI_PHYS_BLOCK_LIST_MODE) return RI_RET_RNIC_NOT_IN_BLOCK_MODE;
        auto *bufs = static_cast<const ri_phys_buf_t *>(a.phys_buf_list);
        start = bufs[0].phys_address;
        for (uint32_t i = 0; i < a.nbufs; ++i) {
            if (bufs[i].phys_len == 0) return RI_RET_MEM_INVALID_PBLE_LENGTH;
            if (bufs[i].phys_address != start + total) return RI_RET_MEM_INVALID_PBLE;
            total += bufs[i].phys_len;
        }
    }
    if (start + total < start) return RI_RET_MEM_INVALID_PBLE;
    if (a.address_offset >= total) return RI_RET_MEM_INVALID_OFFSET;
    // Written so it cannot wrap: offset < total is known.
    if (a.common.length == 0 || a.common.length > total - a.address_offset)
        return RI_RET_MEM_INVALID_LENGTH;
    if (!range_mapped(start, total, writes(raw(a.common.mem_attr)))) return RI_RET_MEM_INVALID_PBLE;
    return RI_RET_SUCCESS;
}

// ------------------------------------------------------------------------------ the ops

template <bool Locked>
struct Ops {
    // Provider-serialised calls take the handle's mutex; consumer-serialised take nothing.
    struct Serial {
        explicit Serial(RnicHandle *r) : r_(Locked ? r : nullptr) {
            if (r_) r_->serial.lock();
        }
        ~Serial() {
            if (r_) r_->serial.unlock();
        }
        RnicHandle *r_;
    };

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
                if (r->children.load(std::memory_order_acquire) != 0) return RI_RET_RNIC_INUSE;
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

    static ri_api_return_t rnic_modify(ri_rnic_handle_t h, ri_rnic_attr_mask_t,
                                       ri_rnic_modify_req_t *, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            return RI_RET_XPORT_UNSUPPORTED;  // IB only (L2370)
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

    // --------------------------------------------------------------------------- PD
    static ri_api_return_t pd_alloc(ri_rnic_handle_t h, ri_pd_handle_t *pd, ri_vp_data_t,
                                    ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!pd) return RI_RET_INVALID_PARAMETER;
            auto p = std::make_unique<Pd>();
            p->owner = r;
            p->os_data = os;
            Pd *raw = p.get();
            void *handle = r->dev->pds.insert(std::move(p));
            if (!handle) return RI_RET_RESOURCE_SHORTAGE;
            raw->handle = handle;
            r->children.fetch_add(1, std::memory_order_acq_rel);
            *pd = handle;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t pd_dealloc(ri_rnic_handle_t h, ri_pd_handle_t pd, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            Pd *p = owned(r->dev->pds, pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            if (p->users.load(std::memory_order_acquire)) return RI_RET_PD_INUSE;
            r->dev->pds.erase(pd);
            r->children.fetch_sub(1, std::memory_order_acq_rel);
            return RI_RET_SUCCESS;
        });
    }

    // --------------------------------------------------------------------------- CQ
    static ri_api_return_t cq_create(ri_rnic_handle_t h, ri_cq_attr_t *attr, ri_cq_handle_t *cq,
                                     ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!attr || !cq) return RI_RET_INVALID_PARAMETER;
            if (attr->num_cqe == 0) return RI_RET_INVALID_PARAMETER;
            if (attr->num_cqe > Limits::kMaxCqes) return RI_RET_CQ_CAPACITY_EXCEEDED;
            Device &d = *r->dev;
            uint32_t id = attr->handler_id;
            if (id != 0) {
                // User consumers cannot have kernel upcalls (L2744-2745).
                if (!r->privileged() || id > Limits::kMaxCqHandlers ||
                    !d.cq_handler_used[id].load(std::memory_order_acquire))
                    return RI_RET_CQ_INVALID_EVENT_HANDLER;
            }
            auto c = std::make_unique<Cq>();
            c->dev = &d;
            c->owner = r;
            c->os_data = os;
            c->handler_id = id;
            c->requested = attr->num_cqe;
            c->ring.reset(attr->num_cqe, 0);
            Cq *raw = c.get();
            void *handle = d.cqs.insert(std::move(c));
            if (!handle) return RI_RET_RESOURCE_SHORTAGE;
            raw->handle = handle;
            r->children.fetch_add(1, std::memory_order_acq_rel);
            attr->num_cqe = static_cast<uint32_t>(raw->ring.capacity());
            *cq = handle;
            return RI_RET_SUCCESS;
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
            if (attr->num_cqe > Limits::kMaxCqes) return RI_RET_CQ_CAPACITY_EXCEEDED;
            if (c->overflowed.load(std::memory_order_acquire)) return RI_RET_CQ_ERROR;
            // Resize: stop producers, move every CQE across, keep them all (L2998).
            c->resize_gate.close();
            if (attr->num_cqe < c->ring.size()) {
                c->resize_gate.open();
                return RI_RET_CQ_WOULD_OVERFLOW;
            }
            SlotQueue<Cqe> bigger;
            try {
                bigger.reset(attr->num_cqe, 0);
            } catch (...) {
                c->resize_gate.open();
                throw;
            }
            c->ring.move_into(bigger);
            c->ring.swap(bigger);
            c->requested = attr->num_cqe;
            c->resize_gate.open();
            attr->num_cqe = static_cast<uint32_t>(c->ring.capacity());
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t cq_destroy(ri_rnic_handle_t h, ri_cq_handle_t cq, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            std::unique_ptr<Cq> gone;
            {
                Serial s(r);
                Cq *c = owned(r->dev->cqs, cq, r);
                if (!c) return RI_RET_CQ_INVALID_HANDLE;
                if (c->users.load(std::memory_order_acquire)) return RI_RET_CQ_INUSE;
                gone = r->dev->cqs.erase(cq);
            }
            // No handler for this CQ runs after we return (L3070). Drained without the
            // handle's lock: the handler may be polling through this very handle.
            r->dev->events.drain();
            r->children.fetch_sub(1, std::memory_order_acq_rel);
            return RI_RET_SUCCESS;
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

    // --------------------------------------------------------------------------- QP
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
            q->owner = r;
            q->os_data = os;
            q->pd = pd;
            q->pd_handle = a->pd;
            q->scq = scq;
            q->rcq = rcq;
            q->srq = srq;
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
            pd->users.fetch_add(1, std::memory_order_acq_rel);
            scq->users.fetch_add(1, std::memory_order_acq_rel);
            rcq->users.fetch_add(1, std::memory_order_acq_rel);
            if (srq) srq->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);

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
            Qp *q = gone.get();
            q->pd->users.fetch_sub(1, std::memory_order_acq_rel);
            q->scq->users.fetch_sub(1, std::memory_order_acq_rel);
            q->rcq->users.fetch_sub(1, std::memory_order_acq_rel);
            if (q->srq) q->srq->users.fetch_sub(1, std::memory_order_acq_rel);
            r->children.fetch_sub(1, std::memory_order_acq_rel);
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

    static ri_api_return_t qp_post_datagram(ri_rnic_handle_t h, ri_qp_handle_t, ri_wr_type_t,
                                            ri_wr_flags_t, ri_wr_id_t, ri_data_seg_t *, uint_t,
                                            uint32_t, ri_address_handle_t, uint32_t, uint32_t,
                                            uint8_t, ri_err_data_t *err) {
        if (err) *err = 0;
        if (!fast_rnic(h)) return RI_RET_RNIC_INVALID_HANDLE;
        return RI_RET_XPORT_UNSUPPORTED;  // UD is InfiniBand only
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

    // --------------------------------------------------------------------------- SRQ
    static ri_api_return_t srq_create(ri_rnic_handle_t h, ri_srq_attr_t *a, ri_srq_handle_t *srq,
                                      ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!a || !srq) return RI_RET_INVALID_PARAMETER;
            Device &d = *r->dev;
            Pd *pd = owned(d.pds, a->pd, r);
            if (!pd) return RI_RET_PD_INVALID_HANDLE;
            if (a->max_wrs == 0) return RI_RET_INVALID_PARAMETER;
            if (a->max_wrs > Limits::kMaxWrsSrq) return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
            if (a->max_sgl > Limits::kMaxSge) return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
            if (a->lowat > a->max_wrs) return RI_RET_SRQ_LIMIT_OUT_OF_RANGE;
            auto s = std::make_unique<Srq>();
            s->dev = &d;
            s->owner = r;
            s->os_data = os;
            s->pd = pd;
            s->max_sgl = std::max<uint32_t>(a->max_sgl, 1);
            s->ring.reset(a->max_wrs, s->max_sgl);
            s->max_wrs = static_cast<uint32_t>(s->ring.capacity());
            s->lowat.store(a->lowat, std::memory_order_relaxed);
            s->limit_armed.store(a->lowat > 0, std::memory_order_relaxed);  // L8680
            Srq *raw = s.get();
            void *handle = d.srqs.insert(std::move(s));
            if (!handle) return RI_RET_RESOURCE_SHORTAGE;
            raw->handle = handle;
            pd->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);
            a->max_wrs = raw->max_wrs;
            a->max_sgl = raw->max_sgl;
            a->srq_armed = a->lowat > 0;
            *srq = handle;
            return RI_RET_SUCCESS;
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
            std::lock_guard lk(s->post_mu);
            uint32_t new_max = (m & RI_SRQ_ATTR_MAX_WRS) ? a->max_wrs : s->max_wrs;
            uint32_t new_lowat = (m & RI_SRQ_ATTR_LOWAT) ? a->lowat : s->lowat.load();
            if ((m & RI_SRQ_ATTR_MAX_WRS) && a->max_wrs > Limits::kMaxWrsSrq)
                return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
            if ((m & RI_SRQ_ATTR_MAX_WRS) && a->max_wrs == 0) return RI_RET_INVALID_PARAMETER;
            if (new_lowat > new_max) return RI_RET_SRQ_LIMIT_OUT_OF_RANGE;
            if (m & RI_SRQ_ATTR_MAX_WRS) {
                s->resize_gate.close();
                if (a->max_wrs < s->ring.size()) {
                    s->resize_gate.open();
                    return RI_RET_SRQ_CANNOT_SHRINK;
                }
                SlotQueue<RecvWqe, ri_data_seg_t> bigger(a->max_wrs, s->max_sgl);
                s->ring.move_into(bigger);
                s->ring.swap(bigger);
                s->max_wrs = static_cast<uint32_t>(s->ring.capacity());
                s->resize_gate.open();
            }
            if (m & RI_SRQ_ATTR_LOWAT) {
                // Setting lowat arms the limit event; it cannot be disarmed (L4867-4874).
                s->lowat.store(a->lowat, std::memory_order_release);
                if (a->lowat) s->limit_armed.store(true, std::memory_order_release);
            }
            a->max_wrs = s->max_wrs;
            a->max_sgl = s->max_sgl;
            a->lowat = s->lowat.load(std::memory_order_acquire);
            a->srq_armed = s->limit_armed.load(std::memory_order_acquire);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t srq_destroy(ri_rnic_handle_t h, ri_srq_handle_t srq,
                                       ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            std::unique_ptr<Srq> gone;
            {
                Serial ser(r);
                Srq *s = owned(r->dev->srqs, srq, r);
                if (!s) return RI_RET_SRQ_INVALID_HANDLE;
                if (s->users.load(std::memory_order_acquire)) return RI_RET_SRQ_INUSE;
                s->pd->users.fetch_sub(1, std::memory_order_acq_rel);
                gone = r->dev->srqs.erase(srq);  // posted WRs vanish, no flush (L4928)
            }
            r->dev->events.drain();
            r->children.fetch_sub(1, std::memory_order_acq_rel);
            return RI_RET_SUCCESS;
        });
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

    // ------------------------------------------------------------------------ memory
    static ri_api_return_t ltag_alloc(ri_rnic_handle_t h, uint_t *list_len, ri_pd_handle_t pd,
                                      ri_mem_attr_t attr, ri_mr_handle_t *mr, ri_ltag_t *ltag,
                                      ri_rtag_t *rtag, ri_vp_data_t, ri_os_data_t os,
                                      ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            if (!list_len || !mr || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            if (*list_len == 0 || *list_len > Limits::kMaxPbl) return RI_RET_INVALID_PARAMETER;
            MemEntry *e = r->dev->stags.allocate(MemKind::FastRegRegion);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            e->pd = p;
            e->access = static_cast<uint32_t>(attr) | RI_MEM_FLAGS_LOCAL_READ;
            e->pbl_capacity = *list_len;
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            // Invalid until fast-registered; the key comes from the input *ltag (L5018).
            e->word.store(uint64_t{e->index} << 8 | (*ltag & 0xFF), std::memory_order_release);
            p->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *mr = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mr_reg(ri_rnic_handle_t h, const ri_mr_reg_attr_t *a, ri_mr_handle_t *mr,
                                  ri_ltag_t *ltag, ri_rtag_t *rtag, ri_vp_data_t, ri_os_data_t os,
                                  ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!a || !mr || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, a->pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            uint32_t attr = raw(a->mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            if (a->length == 0) return RI_RET_MEM_INVALID_LENGTH;
            if (a->va == 0) return RI_RET_MEM_INVALID_ADDRESS;
            if (a->va + a->length < a->va) return RI_RET_MEM_INVALID_LENGTH;
            if (!range_mapped(a->va, a->length, writes(attr))) return RI_RET_MEM_INVALID_ADDRESS;
            MemEntry *e = r->dev->stags.allocate(MemKind::Region);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            auto pages = std::make_shared<RegionPages>();
            pages->base = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(a->va));
            pages->length = a->length;
            e->pages = pages;
            e->pd = p;
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            publish_region(*e, pages->base, a->va, a->length, attr, next_key(*e, *ltag, attr));
            p->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *mr = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mr_query(ri_rnic_handle_t h, ri_mr_handle_t mr, ri_mr_info_t *info,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, mr, false, r);
            if (!e) return RI_RET_MR_INVALID_HANDLE;
            if (!info) return RI_RET_INVALID_PARAMETER;
            ri_mr_info_t out{};
            out.attr.va = e->zbva ? 0 : e->to_base;
            out.attr.length = e->length;
            out.attr.mem_attr = static_cast<ri_mem_attr_t>(e->access);
            out.attr.pd = (e->pd ? e->pd->handle : nullptr);
            out.ltag = e->stag();
            out.rtag = e->stag();
            out.is_shared_region = e->pages && e->pages.use_count() > 1;
            if (e->length) {
                out.local_lb = e->to_base;
                out.local_ub = e->to_base + e->length - 1;
                if (e->access & (RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_ATOMICS)) {
                    out.remote_lb = out.local_lb;
                    out.remote_ub = out.local_ub;
                }
            }
            out.stag_state = e->valid() ? RI_STAG_STATE_VALID : RI_STAG_STATE_INVALID;
            *info = out;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t rereg_common(RnicHandle *r, void *handle, uint32_t mask,
                                        const ri_mr_reg_attr_t *a,
                                        const ri_mr_reg_phys_attr_t *phys, ri_mr_handle_t *out_mr,
                                        ri_ltag_t *ltag, ri_rtag_t *rtag) {
        if (mask & ~uint32_t(RI_MR_REREG_TRANSLATE | RI_MR_REREG_PD | RI_MR_REREG_ACCESS))
            return RI_RET_INVALID_PARAMETER;
        Device &d = *r->dev;
        MemEntry *e = owned_mem(d, handle, false, r);
        if (!e) return RI_RET_MR_INVALID_HANDLE;
        std::lock_guard change(e->change_mu);
        // Looked up again under the entry's writer lock: a concurrent dereg may have won.
        if (owned_mem(d, handle, false, r) != e || e->kind() != MemKind::Region)
            return RI_RET_MR_INVALID_HANDLE;
        // The gate stays closed until the new registration is published or dropped, so no
        // access runs on half-changed fields; binds check the window count from inside it.
        e->gate.close();
        if (e->bound_windows.load(std::memory_order_acquire)) {
            e->gate.open();
            return RI_RET_WINDOWS_BOUND;
        }
        withdraw_grants(*e);
        // Conceptually a deregistration followed by a registration (L5263): from here on the
        // old STag is invalid, whatever happens to the new one (L5339-5347). The entry is
        // kept, so nothing else can claim its index in between (L5380).
        e->word.fetch_and(~MemEntry::kValid, std::memory_order_acq_rel);
        // Any later failure frees the region: both old and new registrations are gone
        // (L3787-3788), and the handle is no longer valid.
        auto dropped = [&](ri_api_return_t c) {
            Pd *old_pd = e->pd;
            d.stags.release(e);
            e->gate.open();
            old_pd->users.fetch_sub(1, std::memory_order_acq_rel);
            r->children.fetch_sub(1, std::memory_order_acq_rel);
            return c;
        };
        Pd *new_pd = e->pd;
        uint32_t attr = e->access;
        std::byte *host = e->host;
        uint64_t va = e->zbva ? reinterpret_cast<uintptr_t>(e->host) : e->to_base;
        uint64_t len = e->length;
        if (mask & RI_MR_REREG_PD) {
            new_pd = owned(d.pds, a->pd, r);
            if (!new_pd) return dropped(RI_RET_PD_INVALID_HANDLE);
        }
        if (mask & RI_MR_REREG_ACCESS) {
            attr = raw(a->mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return dropped(c);
        }
        if (mask & RI_MR_REREG_TRANSLATE) {
            if (phys) {
                uint64_t start = 0, total = 0;
                if (ri_api_return_t c = phys_range(d, *phys, start, total); c != RI_RET_SUCCESS)
                    return dropped(c);
                host = reinterpret_cast<std::byte *>(
                    static_cast<uintptr_t>(start + phys->address_offset));
                va = phys->common.va;
                len = phys->common.length;
            } else {
                if (a->length == 0 || a->va + a->length < a->va)
                    return dropped(RI_RET_MEM_INVALID_LENGTH);
                if (a->va == 0) return dropped(RI_RET_MEM_INVALID_ADDRESS);
                if (!range_mapped(a->va, a->length, writes(attr)))
                    return dropped(RI_RET_MEM_INVALID_ADDRESS);
                host = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(a->va));
                va = a->va;
                len = a->length;
            }
            auto pages = std::make_shared<RegionPages>();
            pages->base = host;
            pages->length = len;
            e->pages = pages;
        } else if (writes(attr) && !range_mapped(reinterpret_cast<uintptr_t>(host), len, true)) {
            // New rights on the old pages: they must allow what the rights allow.
            return dropped(RI_RET_MEM_INVALID_ACCESS);
        }
        if (new_pd != e->pd) {
            e->pd->users.fetch_sub(1, std::memory_order_acq_rel);
            new_pd->users.fetch_add(1, std::memory_order_acq_rel);
            e->pd = new_pd;
        }
        publish_region(*e, host, va, len, attr, next_key(*e, *ltag, attr));
        e->gate.open();
        *ltag = e->stag();
        if (rtag) *rtag = e->stag();
        *out_mr = d.stags.handle_of(e, false);
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t mr_rereg(ri_rnic_handle_t h, ri_mr_handle_t in, ri_mr_rereg_t mask,
                                    const ri_mr_reg_attr_t *a, ri_mr_handle_t *out, ri_ltag_t *ltag,
                                    ri_rtag_t *rtag, ri_vp_data_t, ri_os_data_t,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, in, false, r);
            if (!e || e->kind() != MemKind::Region) return RI_RET_MR_INVALID_HANDLE;
            if (!out || !ltag || (raw(mask) && !a)) return RI_RET_INVALID_PARAMETER;
            return rereg_common(r, in, raw(mask), a, nullptr, out, ltag, rtag);
        });
    }

    static ri_api_return_t mr_dereg(ri_rnic_handle_t h, ri_mr_handle_t mr, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, mr, false, r);
            if (!e) return RI_RET_MR_INVALID_HANDLE;
            std::lock_guard change(e->change_mu);
            if (owned_mem(*r->dev, mr, false, r) != e) return RI_RET_MR_INVALID_HANDLE;
            // Every access through the STag has finished when the gate closes (L5423). The
            // window count is read with the gate closed: a bind counts itself from inside.
            e->gate.close();
            if (e->bound_windows.load(std::memory_order_acquire)) {
                e->gate.open();
                return RI_RET_WINDOWS_BOUND;
            }
            e->word.fetch_and(~MemEntry::kValid, std::memory_order_acq_rel);
            withdraw_grants(*e);  // peers' own writes finish too (L5423)
            Pd *p = e->pd;
            r->dev->stags.release(e);
            e->gate.open();
            p->users.fetch_sub(1, std::memory_order_acq_rel);
            r->children.fetch_sub(1, std::memory_order_acq_rel);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mr_reg_phys(ri_rnic_handle_t h, ri_mr_reg_phys_attr_t *a,
                                       ri_mr_handle_t *mr, ri_ltag_t *ltag, ri_rtag_t *rtag,
                                       ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            if (!a || !mr || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, a->common.pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            uint32_t attr = raw(a->common.mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            uint64_t start = 0, total = 0;
            if (ri_api_return_t c = phys_range(*r->dev, *a, start, total); c != RI_RET_SUCCESS)
                return c;
            MemEntry *e = r->dev->stags.allocate(MemKind::Region);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            auto pages = std::make_shared<RegionPages>();
            pages->base =
                reinterpret_cast<std::byte *>(static_cast<uintptr_t>(start + a->address_offset));
            pages->length = a->common.length;
            e->pages = pages;
            e->pd = p;
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            publish_region(*e, pages->base, a->common.va, a->common.length, attr,
                           next_key(*e, *ltag, attr));
            p->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *mr = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mr_rereg_phys(ri_rnic_handle_t h, ri_mr_handle_t in, ri_mr_rereg_t mask,
                                         ri_mr_reg_phys_attr_t *a, ri_mr_handle_t *out,
                                         ri_ltag_t *ltag, ri_rtag_t *rtag, ri_vp_data_t,
                                         ri_os_data_t, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            MemEntry *e = owned_mem(*r->dev, in, false, r);
            if (!e || e->kind() != MemKind::Region) return RI_RET_MR_INVALID_HANDLE;
            if (e->pages && e->pages.use_count() > 1) return RI_RET_MR_INVALID_HANDLE;  // L5656
            if (!out || !ltag || (raw(mask) && !a)) return RI_RET_INVALID_PARAMETER;
            return rereg_common(r, in, raw(mask), a ? &a->common : nullptr, a, out, ltag, rtag);
        });
    }

    static ri_api_return_t mr_reg_shared(ri_rnic_handle_t h, ri_mr_handle_t in, ri_mr_reg_attr_t *a,
                                         ri_mr_handle_t *out, ri_ltag_t *ltag, ri_rtag_t *rtag,
                                         ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *src = owned_mem(*r->dev, in, false, r);
            if (!src || src->kind() != MemKind::Region || !src->pages)
                return RI_RET_MR_INVALID_HANDLE;
            if (!a || !out || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, a->pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            uint32_t attr = raw(a->mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            std::lock_guard change(src->change_mu);
            if (owned_mem(*r->dev, in, false, r) != src || !src->pages)
                return RI_RET_MR_INVALID_HANDLE;
            // The pages must allow what the new rights allow.
            if (!range_mapped(reinterpret_cast<uintptr_t>(src->pages->base), src->pages->length,
                              writes(attr)))
                return RI_RET_MEM_INVALID_ACCESS;
            uint64_t va = a->va;
            if (!(attr & RI_MEM_FLAGS_ZBVA) && va == 0) va = src->to_base;
            MemEntry *e = r->dev->stags.allocate(MemKind::Region);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            e->pages = src->pages;
            e->pd = p;
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            // The length is the original region's; the input length is ignored (L5722).
            publish_region(*e, src->pages->base, va, src->pages->length,
                           attr & ~uint32_t(RI_MEM_FLAGS_SHARED_REG_IOVA),
                           next_key(*e, *ltag, attr));
            a->length = src->pages->length;
            p->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *out = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mw_alloc(ri_rnic_handle_t h, ri_pd_handle_t pd, ri_mw_type_t type,
                                    ri_mw_handle_t *mw, ri_rtag_t *rtag, ri_vp_data_t,
                                    ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!mw) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            uint32_t kind = raw(type);
            if (kind != RI_MW_TYPE_1 && kind != RI_MW_TYPE_2) return RI_RET_WINDOW_TYPE_UNSUPPORTED;
            MemEntry *e =
                r->dev->stags.allocate(kind == RI_MW_TYPE_1 ? MemKind::Window1 : MemKind::Window2);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            e->pd = p;
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            p->users.fetch_add(1, std::memory_order_acq_rel);
            r->children.fetch_add(1, std::memory_order_acq_rel);
            if (rtag) *rtag = e->stag();  // invalid until bound (L5848)
            *mw = r->dev->stags.handle_of(e, true);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mw_query(ri_rnic_handle_t h, ri_mw_handle_t mw, ri_mw_type_t *type,
                                    ri_stag_state_t *state, ri_pd_handle_t *pd, ri_mem_attr_t *attr,
                                    ri_rtag_t *rtag, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, mw, true, r);
            if (!e) return RI_RET_MW_INVALID_HANDLE;
            if (type) *type = e->kind() == MemKind::Window1 ? RI_MW_TYPE_1 : RI_MW_TYPE_2;
            if (state) *state = e->valid() ? RI_STAG_STATE_VALID : RI_STAG_STATE_INVALID;
            if (pd) *pd = (e->pd ? e->pd->handle : nullptr);
            if (attr) *attr = static_cast<ri_mem_attr_t>(e->valid() ? e->access : 0);
            if (rtag) *rtag = e->stag();
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mw_dealloc(ri_rnic_handle_t h, ri_mw_handle_t mw, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, mw, true, r);
            if (!e) return RI_RET_MW_INVALID_HANDLE;
            std::lock_guard change(e->change_mu);
            if (owned_mem(*r->dev, mw, true, r) != e) return RI_RET_MW_INVALID_HANDLE;
            e->gate.close();  // in-flight remote users finish first; later ones fail (L5962)
            withdraw_grants(*e);
            if (e->valid() && e->parent)
                e->parent->bound_windows.fetch_sub(1, std::memory_order_acq_rel);
            Pd *p = e->pd;
            r->dev->stags.release(e);
            e->gate.open();
            p->users.fetch_sub(1, std::memory_order_acq_rel);
            r->children.fetch_sub(1, std::memory_order_acq_rel);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mem_pin(ri_rnic_handle_t h, ri_vaddr_t va, ri_length_t len,
                                   ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            ri_err_data_t e2 = 0;
            return ri_svc_mem_pin(va, len, os, &e2);
        });
    }

    static ri_api_return_t mem_unpin(ri_rnic_handle_t h, ri_vaddr_t va, ri_length_t len,
                                     ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            ri_err_data_t e2 = 0;
            return ri_svc_mem_unpin(va, len, os, &e2);
        });
    }

    static ri_api_return_t mem_map(ri_rnic_handle_t h, ri_vaddr_t va, ri_length_t len,
                                   ri_phys_buf_t *io, ri_os_data_t, ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        if (!r->privileged()) return RI_RET_NO_PERMISSION;
        if (!io || !va || len == 0) return RI_RET_INVALID_PARAMETER;
        // Identity map: the whole range is one "bus-contiguous" chunk.
        io->phys_address = reinterpret_cast<uintptr_t>(va);
        io->phys_len = len;
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t mem_unmap(ri_rnic_handle_t h, ri_phys_buf_t *io, ri_os_data_t,
                                     ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        if (!r->privileged()) return RI_RET_NO_PERMISSION;
        if (!io) return RI_RET_INVALID_PARAMETER;
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t mem_sync(ri_rnic_handle_t h, ri_data_seg_t *segs, uint_t n,
                                    ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        if (n && !segs) return RI_RET_INVALID_PARAMETER;
        // Coherent memory only: nothing to flush, but the segments must name real memory.
        for (uint_t i = 0; i < n; ++i) {
            MemEntry *e = r->dev->stags.by_stag(segs[i].tag.ltag);
            if (!e || !e->valid() || e->stag() != segs[i].tag.ltag) return RI_RET_MEM_INVALID_LTAG;
            uint64_t to = segs[i].addr.vaddr;
            if (to < e->to_base || to >= e->to_base + e->length) return RI_RET_MEM_INVALID_ADDRESS;
            if (to + segs[i].len > e->to_base + e->length) return RI_RET_MEM_INVALID_LENGTH;
        }
        return RI_RET_SUCCESS;
    }

    // ---------------------------------------------------------------- InfiniBand only
    static ri_api_return_t ah_create(ri_rnic_handle_t h, ri_pd_handle_t, ri_ud_address_vector_t *,
                                     ri_address_handle_t *, ri_vp_data_t, ri_os_data_t,
                                     ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ah_query(ri_rnic_handle_t h, ri_address_handle_t,
                                    ri_ud_address_vector_t *, ri_pd_handle_t *,
                                    ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ah_modify(ri_rnic_handle_t h, ri_address_handle_t,
                                     ri_ud_address_vector_t *, ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ah_destroy(ri_rnic_handle_t h, ri_address_handle_t, ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t mcast_attach(ri_rnic_handle_t h, ri_lid_t, ri_gid_t *, ri_qp_handle_t,
                                        ri_vp_data_t, ri_os_data_t, ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t mcast_detach(ri_rnic_handle_t h, ri_lid_t, ri_gid_t *, ri_qp_handle_t,
                                        ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t process_sma_mad(ri_rnic_handle_t h, uint8_t, char *, char *,
                                           ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ib_only(ri_rnic_handle_t h, ri_err_data_t *err) {
        return guarded(err, [&] {
            if (!slow_rnic(h)) return RI_RET_RNIC_INVALID_HANDLE;
            return RI_RET_XPORT_UNSUPPORTED;
        });
    }

    static ri_ops_t table() {
        ri_ops_t t{};
        t.ri_op_rnic_open = rnic_open;
        t.ri_op_rnic_close = rnic_close;
        t.ri_op_async_set_event_handler = async_set_event_handler;
        t.ri_op_rnic_get_hdl = rnic_get_hdl;
        t.ri_op_rnic_query = rnic_query;
        t.ri_op_rnic_modify = rnic_modify;
        t.ri_op_rnic_free_hdl = rnic_free_hdl;
        t.ri_op_rnic_diag = rnic_diag;
        t.ri_op_pd_alloc = pd_alloc;
        t.ri_op_pd_dealloc = pd_dealloc;
        t.ri_op_cq_create = cq_create;
        t.ri_op_cq_query = cq_query;
        t.ri_op_cq_modify = cq_modify;
        t.ri_op_cq_destroy = cq_destroy;
        t.ri_op_special_qp_get = special_qp_get;
        t.ri_op_cq_set_event_handler = cq_set_event_handler;
        t.ri_op_cq_req_notification = cq_req_notification;
        t.ri_op_cq_poll = cq_poll;
        t.ri_op_qp_create = qp_create;
        t.ri_op_qp_query = qp_query;
        t.ri_op_qp_modify = qp_modify;
        t.ri_op_qp_destroy = qp_destroy;
        t.ri_op_qp_postsq = qp_postsq;
        t.ri_op_qp_post_send = qp_post_send;
        t.ri_op_qp_post_rdma_read = qp_post_rdma_read;
        t.ri_op_qp_post_rdma_write = qp_post_rdma_write;
        t.ri_op_qp_post_bind = qp_post_bind;
        t.ri_op_qp_post_fmr = qp_post_fmr;
        t.ri_op_qp_post_local_invalidate = qp_post_local_invalidate;
        t.ri_op_qp_post_atomic = qp_post_atomic;
        t.ri_op_qp_post_datagram = qp_post_datagram;
        t.ri_op_qp_postrq = qp_postrq;
        t.ri_op_qp_post_recv = qp_post_recv;
        t.ri_op_srq_create = srq_create;
        t.ri_op_srq_query = srq_query;
        t.ri_op_srq_modify = srq_modify;
        t.ri_op_srq_destroy = srq_destroy;
        t.ri_op_srq_post = srq_post;
        t.ri_op_srq_post_recv = srq_post_recv;
        t.ri_op_ltag_alloc = ltag_alloc;
        t.ri_op_mr_reg = mr_reg;
        t.ri_op_mr_query = mr_query;
        t.ri_op_mr_rereg = mr_rereg;
        t.ri_op_mr_dereg = mr_dereg;
        t.ri_op_mr_reg_phys = mr_reg_phys;
        t.ri_op_mr_rereg_phys = mr_rereg_phys;
        t.ri_op_mr_reg_shared = mr_reg_shared;
        t.ri_op_mw_alloc = mw_alloc;
        t.ri_op_mw_dealloc = mw_dealloc;
        t.ri_op_mw_query = mw_query;
        t.ri_op_mem_pin = mem_pin;
        t.ri_op_mem_unpin = mem_unpin;
        t.ri_op_mem_map = mem_map;
        t.ri_op_mem_unmap = mem_unmap;
        t.ri_op_mem_sync_rread = mem_sync;
        t.ri_op_mem_sync_rwrite = mem_sync;
        t.ri_op_ah_create = ah_create;
        t.ri_op_ah_query = ah_query;
        t.ri_op_ah_modify = ah_modify;
        t.ri_op_ah_destroy = ah_destroy;
        t.ri_op_mcast_attach = mcast_attach;
        t.ri_op_mcast_detach = mcast_detach;
        t.ri_op_process_sma_mad = process_sma_mad;
        return t;
    }
};

const ri_ops_t kConsumerSerialised = Ops<false>::table();
const ri_ops_t kProviderSerialised = Ops<true>::table();

}  // namespace

const ri_ops_t *consumer_serialised_ops() {
    return &kConsumerSerialised;
}
const ri_ops_t *provider_serialised_ops() {
    return &kProviderSerialised;
}

}  // namespace softrnic::rnicpi
