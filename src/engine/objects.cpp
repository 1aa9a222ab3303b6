// Device's object creation and destruction. Creation validates the consumer's attributes
// against the RNIC's limits, builds the object, publishes its handle and reports what it
// got; destruction checks ownership and use, unpublishes the object and waits out the
// events about it. The RNICPI ops files only translate handles, arguments and return codes
// around these.
#include <algorithm>
#include <memory>
#include <mutex>
#include <random>

#include "base/stats.hpp"
#include "engine/abi.hpp"
#include "engine/device.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

namespace {

// Publishes `obj` in `table` and points it at its handle; nullptr when the table is full
// (the object, and every use it holds, is gone then).
template <class T>
T *publish(ObjectTable<T> &table, std::unique_ptr<T> obj, uint32_t *slot = nullptr) {
    T *o = obj.get();
    void *handle = table.insert(std::move(obj), slot);
    if (!handle) return nullptr;
    o->handle = handle;
    return o;
}

template <class T>
std::unique_ptr<T> make_object(Device &d, RnicHandle &owner, ri_os_data_t os) {
    auto o = std::make_unique<T>();
    o->dev = &d;
    o->owner.reset(&owner);
    o->os_data = os;
    return o;
}

// The object behind `handle` when it is one of `owner`'s.
template <class T>
T *owned_by(ObjectTable<T> &table, void *handle, const RnicHandle &owner) {
    T *o = table.lookup(handle);
    return (o && o->owner == &owner) ? o : nullptr;
}

// IB: attaches one queue of a QP to `c` as special or ordinary; false when the CQ already
// serves the other kind (RNICPI L4131-4133, docs/ib-personality.md A9).
bool claim_cq_kind(Cq &c, bool special) {
    int32_t v = c.ib_qp_kinds.load(std::memory_order_acquire);
    for (;;) {
        if (special ? v > 0 : v < 0) return false;
        if (c.ib_qp_kinds.compare_exchange_weak(v, v + (special ? -1 : 1),
                                                std::memory_order_acq_rel))
            return true;
    }
}
void release_cq_kind(Cq &c, bool special) {
    c.ib_qp_kinds.fetch_add(special ? 1 : -1, std::memory_order_acq_rel);
}
bool is_special(IbService s) {
    return s == IbService::Qp0 || s == IbService::Qp1;
}

// `owner`'s serialisation lock, held when the provider serialises the calls on it.
std::unique_lock<std::recursive_mutex> serialise(RnicHandle &owner, Serialisation by) {
    if (by == Serialisation::ByProvider) return std::unique_lock(owner.serial);
    return std::unique_lock(owner.serial, std::defer_lock);
}

// Unpublishes `owner`'s unused object `handle` from `table` (under the lock `by` asks for),
// then drains the event thread without that lock held. The object is freed only after the
// drain: a callback that looked it up before it left the table may still be using it.
template <class T>
ri_api_return_t unpublish_and_drain(Device &d, ObjectTable<T> &table, RnicHandle &owner,
                                    void *handle, Serialisation by, ri_api_return_t invalid,
                                    ri_api_return_t in_use) {
    std::unique_ptr<T> gone;
    {
        auto serial = serialise(owner, by);
        T *o = owned_by(table, handle, owner);
        if (!o) return invalid;
        if (o->users.in_use()) return in_use;
        gone = table.erase(handle);
    }
    d.events.drain();
    return RI_RET_SUCCESS;
}

}  // namespace

ri_api_return_t Device::create_pd(RnicHandle &owner, ri_os_data_t os, Pd *&out) {
    out = publish(pds, make_object<Pd>(*this, owner, os));
    return out ? RI_RET_SUCCESS : RI_RET_RESOURCE_SHORTAGE;
}

ri_api_return_t Device::create_cq(RnicHandle &owner, ri_cq_attr_t &attr, ri_os_data_t os,
                                  Cq *&out) {
    if (attr.num_cqe == 0) return RI_RET_INVALID_PARAMETER;
    if (attr.num_cqe > Limits::kMaxCqes) return RI_RET_CQ_CAPACITY_EXCEEDED;
    uint32_t id = attr.handler_id;
    if (id != 0) {
        // User consumers cannot have kernel upcalls (L2744-2745).
        if (!owner.privileged() || id > Limits::kMaxCqHandlers ||
            !cq_handler_used[id].load(std::memory_order_acquire))
            return RI_RET_CQ_INVALID_EVENT_HANDLER;
    }
    auto c = make_object<Cq>(*this, owner, os);
    c->handler_id = id;
    c->requested = attr.num_cqe;
    c->ring.reset(attr.num_cqe, is_ib() ? static_cast<uint32_t>(sizeof(CqeDatagram)) : 0);
    out = publish(cqs, std::move(c));
    if (!out) return RI_RET_RESOURCE_SHORTAGE;
    attr.num_cqe = static_cast<uint32_t>(out->ring.capacity());
    base::stat_add(base::Stat::CqsCreated);
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::create_srq(RnicHandle &owner, Pd &pd, ri_srq_attr_t &a, ri_os_data_t os,
                                   Srq *&out) {
    if (a.max_wrs == 0) return RI_RET_INVALID_PARAMETER;
    if (a.max_wrs > Limits::kMaxWrsSrq) return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
    if (a.max_sgl > Limits::kMaxSge) return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
    if (a.lowat > a.max_wrs) return RI_RET_SRQ_LIMIT_OUT_OF_RANGE;
    auto s = make_object<Srq>(*this, owner, os);
    s->pd.reset(&pd);
    s->max_sgl = std::max<uint32_t>(a.max_sgl, 1);
    s->ring.reset(a.max_wrs, s->max_sgl);
    s->max_wrs = static_cast<uint32_t>(s->ring.capacity());
    s->lowat.store(a.lowat, std::memory_order_relaxed);
    s->limit_armed.store(a.lowat > 0, std::memory_order_relaxed);  // L8680
    out = publish(srqs, std::move(s));
    if (!out) return RI_RET_RESOURCE_SHORTAGE;
    a.max_wrs = out->max_wrs;
    a.max_sgl = out->max_sgl;
    a.srq_armed = a.lowat > 0;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::create_qp(RnicHandle &owner, const QpParts &parts, ri_qp_attr_t &a,
                                  ri_os_data_t os, Qp *&out, IbService special,
                                  uint8_t fixed_port) {
    Srq *srq = parts.srq;
    if (srq && srq->pd != &parts.pd) return RI_RET_PD_INVALID_HANDLE;
    if (a.sq_size > Limits::kMaxWrsQp || (!srq && a.rq_size > Limits::kMaxWrsQp))
        return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
    if (a.sq_max_sges > Limits::kMaxSge || a.sq_max_sges_rdmaw > Limits::kMaxSge ||
        a.rq_max_sges > Limits::kMaxSge)
        return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
    // On IB the union holds the IB attributes, and the read/write enables and ORD/IRD are
    // not create attributes (RNICPI L8575-8577, docs/ib-personality.md A16).
    const bool ib = is_ib();
    if (!ib && (a.max_rdma_read_outgoing > Limits::kMaxOrdQp ||
                a.max_rdma_read_incoming > Limits::kMaxIrdQp))
        return RI_RET_RNIC_IRD_ORD_EXCEEDED;
    const ri_iwarp_qp_attr_t &iw = a.qp_xport.qp_iwarp;
    if (!ib && iw.mpa_attrs.ddp_rdma_version > 1) return RI_RET_INVALID_DDP_RDMAP_VERSION;
    if (!ib && srq && iw.rq_hiwat > srq->max_wrs) return RI_RET_SRQ_LIMIT_OUT_OF_RANGE;

    // IB: the CQs serve either special QPs or ordinary ones; the claims are given back if
    // the QP is not created after all (a full table, an allocation that throws).
    const bool special_cqs = ib && fixed_port != 0;
    if (ib) {
        if (!claim_cq_kind(parts.scq, special_cqs)) return RI_RET_CQ_INVALID_HANDLE;
        if (!claim_cq_kind(parts.rcq, special_cqs)) {
            release_cq_kind(parts.scq, special_cqs);
            return RI_RET_CQ_INVALID_HANDLE;
        }
    }
    struct CqClaims {
        const QpParts *parts;  // null once the QP holds the claims
        bool special;
        ~CqClaims() {
            if (!parts) return;
            release_cq_kind(parts->scq, special);
            release_cq_kind(parts->rcq, special);
        }
    } claims{ib ? &parts : nullptr, special_cqs};
    auto q = make_object<Qp>(*this, owner, os);
    q->pd.reset(&parts.pd);
    q->pd_handle = a.pd;
    q->scq.reset(&parts.scq);
    q->rcq.reset(&parts.rcq);
    q->srq.reset(srq);
    q->sq_size = std::max<uint32_t>(a.sq_size, 1);
    q->sq_max_sges = std::max<uint32_t>(a.sq_max_sges, 1);
    q->sq_max_sges_rdmaw = std::max<uint32_t>(a.sq_max_sges_rdmaw, 1);
    q->rq_max_sges = srq ? srq->max_sgl : std::max<uint32_t>(a.rq_max_sges, 1);
    if (!srq) {
        q->rq.reset(std::max<uint32_t>(a.rq_size, 1), q->rq_max_sges);
        q->rq_size = static_cast<uint32_t>(q->rq.capacity());
    } else {
        q->rq.reset(1, 1);
        q->rq_size = a.rq_size;  // a hint only with an SRQ (L8566)
    }
    q->enable_stag0_fastreg = a.enable_stag0_fastreg;
    if (ib) {
        // Created in Reset (RNICPI's Idle, digest rnicpi section 3.1) with its QPN; the rest
        // comes with ri_qp_modify (qp_ib_state.cpp). The personality's create check has
        // vetted trans_type.
        IbService svc = special_cqs ? special
                        : raw(a.qp_xport.qp_ib.trans_type) == RI_SERVICE_UNRELIABLE_DATAGRAM
                            ? IbService::Ud
                            : IbService::Rc;
        auto c = std::make_unique<IbQpContext>();
        c->service = svc;
        c->signal_completions = a.qp_xport.qp_ib.signal_completions;
        c->fixed_port = fixed_port;
        c->clear();
        q->ib = std::move(c);
        q->enable_bind = true;  // IB has no per-QP bind enable: the window's PD decides
        q->state.store(kIbParked, std::memory_order_relaxed);
        q->qp_id = !special_cqs ? allocate_qpn() : svc == IbService::Qp0 ? 0 : 1;
    } else {
        q->ord = a.max_rdma_read_outgoing;
        q->ird = a.max_rdma_read_incoming;
        q->enable_read = a.enable_rdma_read;
        q->enable_write = a.enable_rdma_write;
        q->enable_bind = iw.enable_bind;
        q->mpa = iw.mpa_attrs;
        // Zero-initialised attributes mean the IETF version this RNIC speaks.
        q->mpa.ddp_rdma_version = 1;
        q->mpa.recv_marker_enabled = 0;
        q->mpa.xmit_marker_enabled = 0;
        q->rq_hiwat.store(iw.rq_hiwat, std::memory_order_relaxed);
        q->rq_armed.store(srq && iw.rq_hiwat != 0, std::memory_order_relaxed);
        q->qp_id = next_qp_id.fetch_add(1, std::memory_order_relaxed);
    }
    uint32_t slot = 0;
    Qp *qp = publish(qps, std::move(q), &slot);
    if (!qp) return RI_RET_RESOURCE_SHORTAGE;
    claims.parts = nullptr;
    qp->slot = slot;
    qp->incarnation = incarnation_seed.fetch_add(1, std::memory_order_relaxed);
    qp->reset_queues();

    a.qp_id = qp->qp_id;
    a.state = RI_QP_STATE_IDLE;
    if (ib) {
        a.enable_rdma_read = a.enable_rdma_write = false;
        a.max_rdma_read_outgoing = a.max_rdma_read_incoming = 0;
    }
    a.sq_size = qp->sq_size;
    a.rq_size = qp->rq_size;
    a.sq_max_sges = qp->sq_max_sges;
    a.sq_max_sges_rdmaw = qp->sq_max_sges_rdmaw;
    a.rq_max_sges = qp->rq_max_sges;
    out = qp;
    base::stat_add(base::Stat::QpsCreated);
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::create_special_qp(RnicHandle &owner, uint8_t port, uint32_t t,
                                          ri_qp_attr_t &a, ri_os_data_t os, Qp *&out) {
    if (t != RI_SQP_TYPE_SMI && t != RI_SQP_TYPE_GSI) return RI_RET_QP_INVALID_SPECIAL_TYPE;
    if (port < 1 || port > hca->num_ports()) return RI_RET_RNIC_INVALID_PORT;
    Pd *pd = owned_pd(a.pd, &owner);
    if (!pd) return RI_RET_PD_INVALID_HANDLE;
    Cq *scq = owned_by(cqs, a.scq.scq_handle, owner);
    Cq *rcq = owned_by(cqs, a.rcq.rcq_handle, owner);
    if (!scq || !rcq) return RI_RET_CQ_INVALID_HANDLE;
    Srq *srq = nullptr;
    if (a.srq_valid) {
        srq = owned_by(srqs, a.srq.srq_handle, owner);
        if (!srq) return RI_RET_SRQ_INVALID_HANDLE;
    }
    // Once per port and type until destroyed (L4128); claimed last of the checks that need
    // nothing undone, released again if the creation fails.
    std::atomic<bool> &taken = special_qps[2 * (port - 1) + (t == RI_SQP_TYPE_GSI)];
    if (taken.exchange(true, std::memory_order_acq_rel)) return RI_RET_QP_INUSE;
    const IbService svc = t == RI_SQP_TYPE_SMI ? IbService::Qp0 : IbService::Qp1;
    ri_api_return_t r = create_qp(owner, {*pd, *scq, *rcq, srq}, a, os, out, svc, port);
    if (r != RI_RET_SUCCESS) taken.store(false, std::memory_order_release);
    return r;
}

uint32_t Device::allocate_qpn() {
    // A random 24-bit start per instance (docs/ib-personality.md section 3.1), so that QPNs
    // of a recreated instance do not repeat; 0 and 1 are the special QPs and 0xFFFFFF the
    // multicast QPN (IBA 1.2 ch. 10), never handed out.
    uint32_t n = next_qpn.load(std::memory_order_relaxed);
    if (n == 0) {
        uint32_t seed = (static_cast<uint32_t>(std::random_device{}()) & 0xFFFFFF) | 2;
        next_qpn.compare_exchange_strong(n, seed, std::memory_order_relaxed);
    }
    for (;;) {
        n = next_qpn.fetch_add(1, std::memory_order_relaxed) & 0xFFFFFF;
        if (n > 1 && n != 0xFFFFFF) return n;
    }
}

ri_api_return_t Device::destroy_pd(RnicHandle &owner, void *handle, Serialisation by) {
    auto serial = serialise(owner, by);
    Pd *p = owned_pd(handle, &owner);
    if (!p) return RI_RET_PD_INVALID_HANDLE;
    // Its users are the SRQs, QPs and memory entries created on it (RNICPI L2662).
    if (p->users.in_use()) return RI_RET_PD_INUSE;
    pds.erase(handle);  // no event names a PD: nothing to drain
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::destroy_cq(RnicHandle &owner, void *handle, Serialisation by) {
    // In use while a QP is attached to it. No handler for it runs after this (L3070).
    ri_api_return_t rc = unpublish_and_drain(*this, cqs, owner, handle, by,
                                             RI_RET_CQ_INVALID_HANDLE, RI_RET_CQ_INUSE);
    if (rc == RI_RET_SUCCESS) base::stat_add(base::Stat::CqsDestroyed);
    return rc;
}

ri_api_return_t Device::destroy_srq(RnicHandle &owner, void *handle, Serialisation by) {
    // In use while a QP is attached to it; WRs still posted vanish, no flush (L4928), and
    // no event for it runs after this (L4944).
    return unpublish_and_drain(*this, srqs, owner, handle, by, RI_RET_SRQ_INVALID_HANDLE,
                               RI_RET_SRQ_INUSE);
}

ri_api_return_t Device::destroy_qp(RnicHandle &owner, void *handle, Serialisation by) {
    std::unique_ptr<Qp> gone;
    {
        auto serial = serialise(owner, by);
        Qp *q = owned_by(qps, handle, owner);
        if (!q) return RI_RET_QP_INVALID_HANDLE;
        // Detaches the stream; outstanding WRs vanish without completions (L4033-4043).
        q->destroy();
        if (q->ib) {
            const bool special = is_special(q->ib->service);
            release_cq_kind(*q->scq, special);
            release_cq_kind(*q->rcq, special);
            // The special QP may be handed out again (RNICPI L4128).
            if (special)
                special_qps[2 * (q->ib->fixed_port - 1) + (q->ib->service == IbService::Qp1)].store(
                    false, std::memory_order_release);
        }
        gone = qps.erase(handle);
    }
    base::stat_add(base::Stat::QpsDestroyed);
    events.drain();  // no event for this QP runs after we return (L4043)
    return RI_RET_SUCCESS;
}

}  // namespace softrnic::engine
