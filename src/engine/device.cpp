#include "engine/device.hpp"

#include <cstddef>
#include <cstring>

#include "base/log.hpp"
#include "base/stats.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

Device::Device(std::string name) : name_(std::move(name)) {
    sq_retired.reset(new std::atomic<uint64_t>[Limits::kMaxQps]);
    for (uint32_t i = 0; i < Limits::kMaxQps; ++i)
        sq_retired[i].store(0, std::memory_order_relaxed);
    for (auto &h : cq_handlers)
        h.store(nullptr, std::memory_order_relaxed);
    for (auto &u : cq_handler_used)
        u.store(false, std::memory_order_relaxed);
    for (int i = 0; i < 3; ++i)
        views_[i] = VpHandle{nullptr, VpHandle::kMagic, this, static_cast<View>(i)};
}

Device::~Device() {
    events.stop();
}

void Device::start_events() {
    events.start([this](const QueuedEvent &ev) { deliver(ev); });
}

void Device::stop_events() {
    events.stop();
}

namespace {

const char *kind_name(ObjKind k) {
    switch (k) {
        case ObjKind::Qp:
            return "QP";
        case ObjKind::Cq:
            return "CQ";
        case ObjKind::Srq:
            return "SRQ";
        default:
            return "RNIC";
    }
}

}  // namespace

void Device::raise(ri_async_event_type_t type, void *object, ObjKind kind, ri_os_data_t os_data) {
    base::stat_add(base::Stat::AsyncEvents);
    // Events raised while no handler is registered are lost (L2067-2071).
    ri_async_event_callback_t cb = async_cb.load(std::memory_order_acquire);
    SOFTRNIC_LOG(Info, Engine, "%s: async event %s on %s %p%s", name_.c_str(),
                 async_event_name(type), kind_name(kind), object,
                 cb ? "" : " (lost: no async handler registered, RNICPI L2067)");
    if (!cb) return;
    QueuedEvent ev;
    ev.kind = EventKind::Async;
    ev.object = object;
    ev.object_kind = static_cast<uint8_t>(kind);
    ev.record.event_type = type;
    ev.record.event_data.resource_os_data = os_data;
    ev.record.err_data = 0;
    ev.async_cb = cb;
    events.post(ev);
}

void Device::raise_port_event(uint8_t port, ri_ib_port_state_t state) {
    ri_async_event_callback_t cb = async_cb.load(std::memory_order_acquire);
    SOFTRNIC_LOG(Info, Engine, "%s: port %u is now in state 0x%x%s", name_.c_str(),
                 static_cast<unsigned>(port), static_cast<unsigned>(state),
                 cb ? "" : " (event lost: no async handler registered, RNICPI L2067)");
    if (!cb) return;
    QueuedEvent ev;
    ev.kind = EventKind::Async;
    ev.record.event_type = RI_EVENT_PORT_EVENT;
    ev.record.event_data.port_event.port_number = port;
    ev.record.event_data.port_event.port_state = state;
    ev.record.err_data = 0;
    ev.async_cb = cb;
    events.post(ev);
}

void Device::notify_cq(Cq &cq) {
    QueuedEvent ev;
    ev.kind = EventKind::CqNotify;
    ev.object = cq.handle;
    ev.object_kind = static_cast<uint8_t>(ObjKind::Cq);
    ev.cq_handler_id = cq.handler_id;
    ev.cq_os_data = cq.os_data;
    events.post(ev);
}

void Device::deliver(const QueuedEvent &ev) {
    // Nothing is delivered for an object destroyed after the event was queued; destroy()
    // drains the thread, so nothing for it is in progress after destroy returns either.
    if (ev.object) {
        bool live = false;
        switch (static_cast<ObjKind>(ev.object_kind)) {
            case ObjKind::Cq:
                live = cqs.lookup(ev.object) != nullptr;
                break;
            case ObjKind::Qp:
                live = qps.lookup(ev.object) != nullptr;
                break;
            case ObjKind::Srq:
                live = srqs.lookup(ev.object) != nullptr;
                break;
            default:
                live = true;
                break;
        }
        if (!live) return;
    }
    if (ev.kind == EventKind::CqNotify) {
        if (ev.cq_handler_id > Limits::kMaxCqHandlers) return;
        ri_cq_event_callback_t cb = cq_handlers[ev.cq_handler_id].load(std::memory_order_acquire);
        if (cb) cb(open_os_data, ev.cq_os_data);
    } else {
        ri_event_record_t rec = ev.record;
        ev.async_cb(open_os_data, &rec);
    }
}

// A completion in error at info, with its status and work request; a flush at debug only:
// it follows an error already logged (the QP's async event, or the failed completion).
void Cq::log_error_completion(const Cqe &e) const {
    if (e.wc.op_status == RI_WC_STATUS_SUCCESS) return;
    const char *fmt =
        "%s: completion in error on CQ %p: %s, work request 0x%llx (type %d), QP context %p";
    const unsigned long long id = e.wc.id;
    const int type = static_cast<int>(e.wc.op_type);
    if (e.wc.op_status == RI_WC_STATUS_WR_FLUSHED_ERROR)
        SOFTRNIC_LOG(Debug, Engine, fmt, dev->name().c_str(), handle,
                     wc_status_name(e.wc.op_status), id, type, e.wc.qp_os_data);
    else
        SOFTRNIC_LOG(Info, Engine, fmt, dev->name().c_str(), handle, wc_status_name(e.wc.op_status),
                     id, type, e.wc.qp_os_data);
}

bool Cq::push(const Cqe &e) {
    return push_with(e, [&](Cqe &slot, std::span<std::byte>) { slot = e; });
}

bool Cq::push_datagram(const Cqe &e, const CqeDatagram &d) {
    return push_with(e, [&](Cqe &slot, std::span<std::byte> t) {
        slot = e;
        slot.datagram = t.size() >= sizeof d;
        if (slot.datagram) std::memcpy(t.data(), &d, sizeof d);
    });
}

template <class Fill>
bool Cq::push_with(const Cqe &e, Fill &&fill) {
    // Behind the level's branch first: nothing but that branch on the success path.
    if (base::log_on(base::LogLevel::Info, base::LogSubsys::Engine)) [[unlikely]]
        log_error_completion(e);
    GateScope g(resize_gate, /*wait=*/true);
    if (overflowed.load(std::memory_order_acquire)) return false;
    bool ok = ring.push(fill);
    if (!ok) {
        if (!overflowed.exchange(true, std::memory_order_acq_rel))
            dev->raise(RI_EVENT_CQ_OVERFLOW_DETECTED, handle, ObjKind::Cq, os_data);
        return false;
    }
    uint8_t a = armed.load(std::memory_order_acquire);
    while (a != 0 && (a == 2 || e.solicited)) {
        if (armed.compare_exchange_weak(a, 0, std::memory_order_acq_rel)) {
            dev->notify_cq(*this);
            break;
        }
    }
    return true;
}

ri_api_return_t Cq::resize(uint32_t &num_cqe) {
    if (num_cqe > Limits::kMaxCqes) return RI_RET_CQ_CAPACITY_EXCEEDED;
    if (overflowed.load(std::memory_order_acquire)) return RI_RET_CQ_ERROR;
    // Stop producers, move every CQE across, keep them all (RNICPI L2998).
    resize_gate.close();
    struct Reopen {
        ScopedGate &g;
        ~Reopen() { g.open(); }
    } reopen{resize_gate};
    if (num_cqe < ring.size()) return RI_RET_CQ_WOULD_OVERFLOW;
    SlotQueue<Cqe> bigger;
    bigger.reset(num_cqe, ring.trailers());
    ring.move_into(bigger);
    ring.swap(bigger);
    requested = num_cqe;
    num_cqe = static_cast<uint32_t>(ring.capacity());
    return RI_RET_SUCCESS;
}

ri_api_return_t Srq::modify(uint32_t m, ri_srq_attr_t &a) {
    std::lock_guard lk(post_mu);
    const uint32_t new_max = (m & RI_SRQ_ATTR_MAX_WRS) ? a.max_wrs : max_wrs;
    const uint32_t new_lowat =
        (m & RI_SRQ_ATTR_LOWAT) ? a.lowat : lowat.load(std::memory_order_acquire);
    if ((m & RI_SRQ_ATTR_MAX_WRS) && a.max_wrs > Limits::kMaxWrsSrq)
        return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
    if ((m & RI_SRQ_ATTR_MAX_WRS) && a.max_wrs == 0) return RI_RET_INVALID_PARAMETER;
    if (new_lowat > new_max) return RI_RET_SRQ_LIMIT_OUT_OF_RANGE;
    if (m & RI_SRQ_ATTR_MAX_WRS) {
        resize_gate.close();
        struct Reopen {
            ScopedGate &g;
            ~Reopen() { g.open(); }
        } reopen{resize_gate};
        if (a.max_wrs < ring.size()) return RI_RET_SRQ_CANNOT_SHRINK;
        SlotQueue<RecvWqe, ri_data_seg_t> bigger(a.max_wrs, max_sgl);
        ring.move_into(bigger);
        ring.swap(bigger);
        max_wrs = static_cast<uint32_t>(ring.capacity());
    }
    if (m & RI_SRQ_ATTR_LOWAT) {
        // Setting lowat arms the limit event; it cannot be disarmed (RNICPI L4867-4874).
        lowat.store(a.lowat, std::memory_order_release);
        if (a.lowat) limit_armed.store(true, std::memory_order_release);
    }
    a.max_wrs = max_wrs;
    a.max_sgl = max_sgl;
    a.lowat = lowat.load(std::memory_order_acquire);
    a.srq_armed = limit_armed.load(std::memory_order_acquire);
    return RI_RET_SUCCESS;
}

uint32_t Cq::poll(ri_wc_t *out, uint32_t max) {
    // An IB instance's CQ carries UD completions: its own loop, so an iWARP CQ's is as it was.
    if (ring.trailers()) [[unlikely]]
        return poll_ib(out, max);
    // No resize gate here: a poll and a resize of the same CQ never overlap (the consumer
    // serialises calls on one CQ, or the provider-serialised view holds the handle's lock).
    uint32_t n = 0;
    constexpr uint64_t kPosMask = (uint64_t{1} << 40) - 1;
    while (n < max && ring.pop_single_consumer([&](const Cqe &c, std::span<const std::byte>) {
        out[n].rc_wc = c.wc;
        if (c.retire_slot != ~0u) {
            // Free the send-queue slots up to this WR, unless the QP was reset since.
            std::atomic<uint64_t> &w = dev->sq_retired[c.retire_slot];
            uint64_t cur = w.load(std::memory_order_acquire);
            while ((cur >> 40) == (c.retire_word >> 40) &&
                   (cur & kPosMask) < (c.retire_word & kPosMask) &&
                   !w.compare_exchange_weak(cur, c.retire_word, std::memory_order_acq_rel)) {
            }
        }
    }))
        ++n;
    return n;
}

// ri_wc_t overlays the two completion layouts: what poll_ib copies as ri_rc_wc_t must be
// where ri_gen_wc_t has the same fields.
static_assert(offsetof(ri_gen_wc_t, flags) == offsetof(ri_rc_wc_t, flags) &&
              offsetof(ri_gen_wc_t, qpn) == offsetof(ri_rc_wc_t, invalidated_rtag) &&
              offsetof(ri_gen_wc_t, qp_os_data) == offsetof(ri_rc_wc_t, qp_os_data) &&
              offsetof(ri_gen_wc_t, id) == offsetof(ri_rc_wc_t, id) &&
              offsetof(ri_gen_wc_t, op_status) == offsetof(ri_rc_wc_t, op_status) &&
              offsetof(ri_gen_wc_t, bytes_transferred) == offsetof(ri_rc_wc_t, bytes_transferred) &&
              offsetof(ri_gen_wc_t, immediate_data) == offsetof(ri_rc_wc_t, immediate_data));

// As poll(), writing ri_gen_wc_t's fields for UD receives (the rest as ri_rc_wc_t, whose
// tail, err_data, the provider leaves zero either way).
uint32_t Cq::poll_ib(ri_wc_t *out, uint32_t max) {
    uint32_t n = 0;
    constexpr uint64_t kPosMask = (uint64_t{1} << 40) - 1;
    while (n < max && ring.pop_single_consumer([&](const Cqe &c, std::span<const std::byte> t) {
        std::memset(&out[n], 0, sizeof out[n]);
        out[n].rc_wc = c.wc;
        if (c.datagram && t.size() >= sizeof(CqeDatagram)) {
            CqeDatagram d;
            std::memcpy(&d, t.data(), sizeof d);
            ri_gen_wc_t &g = out[n].ud_wc;
            g.qpn = d.qpn;
            g.remote_qpn = d.remote_qpn;
            g.remote_lid = d.remote_lid;
            g.remote_sl = d.remote_sl;
            g.local_lid_pathbits = d.local_lid_pathbits;
            g.grh_present = d.grh_present;
            g.pkey_index = d.pkey_index;
            g.err_data = 0;
        }
        if (c.retire_slot != ~0u) {
            std::atomic<uint64_t> &w = dev->sq_retired[c.retire_slot];
            uint64_t cur = w.load(std::memory_order_acquire);
            while ((cur >> 40) == (c.retire_word >> 40) &&
                   (cur & kPosMask) < (c.retire_word & kPosMask) &&
                   !w.compare_exchange_weak(cur, c.retire_word, std::memory_order_acq_rel)) {
            }
        }
    }))
        ++n;
    return n;
}

}  // namespace softrnic::engine
