// Upcalls: RNICPI CQ notifications and asynchronous events (through the shared upcall
// router), and the connection manager's events (requests, connections established and
// bound to their QP through the shared binder, failures). See provider.hpp for what the sources
// share.
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "api/common/connection_binder.hpp"
#include "api/common/upcall_router.hpp"
#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ RNIC upcalls

// CQ notifications are one-shot. An enabled EVD attached to a CNO keeps its CQ armed so
// that every completion can trigger the CNO (L2767), not only those that arrive while a
// thread blocks in dat_evd_wait. Caller holds evd->mu.
void cno_arm_locked(Evd *evd) {
    if (!evd->cq || !evd->cno || !evd->enabled) return;
    evd->arm();
}

// The RNICPI os_data of the IA (RNIC), EVDs (CQs), EPs (QPs) and SRQs are the objects
// themselves, validated by the router before use.
api::UpcallRouter router() {
    return api::UpcallRouter(handles(), api::UpcallKinds{DAT_HANDLE_TYPE_IA, DAT_HANDLE_TYPE_EVD,
                                                         DAT_HANDLE_TYPE_EP, DAT_HANDLE_TYPE_SRQ});
}

void on_cq(ri_os_data_t, ri_os_data_t cq_os) {
    auto *evd = static_cast<Evd *>(router().cq(cq_os));
    if (!evd) return;
    Cno *cno = nullptr;
    std::vector<Ep *> broken;
    {
        std::lock_guard lk(evd->mu);
        evd->notify();
        // Re-armed before the trigger: a completion that lands after this notification
        // either notifies again or is already in the CQ when the woken consumer dequeues
        // (and evd_dequeue re-triggers for what it leaves behind).
        cno_arm_locked(evd);
        if (!evd->waiter && evd->enabled && evd->cno) {
            // The completion behind this notification may already have been dequeued
            // (the notification is delivered later, on the event thread): trigger only
            // for an event the EVD still holds, so the CNO hands out the handle of an EVD
            // that has an event (L3129) and a consumer that then dequeues finds one.
            pull_cq_locked(evd, &broken);
            if (!evd->q.empty()) cno = evd->cno;
        }
    }
    if (cno) cno_trigger(cno, evd);
    break_all(broken);
}

void on_async(ri_os_data_t vp_os, ri_event_record_t *ev) {
    const std::optional<api::RoutedAsync> up = router().async(vp_os, ev);
    if (!up) return;
    auto *ia = static_cast<Ia *>(up->rnic);
    void *os = up->object;
    switch (up->what) {
        case api::AsyncUpcall::QpClosed:
            // The peer closed (gracefully or not): DISCONNECTED (L5357).
            ep_break(static_cast<Ep *>(os), DAT_CONNECTION_EVENT_DISCONNECTED, true);
            return;
        case api::AsyncUpcall::SrqLimit:
            post_async(ia, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, os,
                       DAT_SRQ_LOW_WATERMARK_EVENT);
            return;
        case api::AsyncUpcall::QpRqLimit:
            // An SRQ EP's high watermark (dat_ep_set_watermark): not an error of the QP.
            ep_watermark_reached(static_cast<Ep *>(os));
            return;
        case api::AsyncUpcall::CqError:
            post_async(ia, DAT_ASYNC_ERROR_EVD_OVERFLOW, os, DAT_EVD_OVERFLOW_ERROR);
            return;
        case api::AsyncUpcall::Catastrophic:
            post_async(ia, DAT_ASYNC_ERROR_IA_CATASTROPHIC, ia, DAT_IA_CATASTROPHIC_ERROR);
            return;
        case api::AsyncUpcall::QpError:
            ep_break(static_cast<Ep *>(os), DAT_CONNECTION_EVENT_BROKEN, true);
            return;
    }
}

// ------------------------------------------------------------------------------ CM upcalls

Ep *conn_ep(Ia *ia, cm::ConnId id) {
    std::lock_guard lk(ia->mu);
    auto it = ia->conns.find(id);
    return it == ia->conns.end() ? nullptr : it->second;
}

void on_established(Ia *ia, cm::Established &e) {
    Ep *ep = conn_ep(ia, e.id);
    if (!ep || !handles().valid(ep, DAT_HANDLE_TYPE_EP)) {
        api::release_established(e);  // the EP gave up (disconnect or free during set-up)
        return;
    }
    Evd *conn = ep->conn;
    std::vector<uint8_t> pd;
    if (e.initiator) unwrap_pd(e.private_data, pd, nullptr);
    // Hold the connect EVD across RTS + ESTABLISHED so no completion of this connection
    // can be dequeued before ESTABLISHED when they share an EVD (L1565).
    std::unique_lock elk(conn->mu);
    std::unique_lock lk(ep->mu);
    bool pending = ep->state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
                   ep->state == DAT_EP_STATE_COMPLETION_PENDING;
    if (!pending || ep->conn_id != e.id) {
        lk.unlock();
        elk.unlock();
        api::release_established(e);
        return;
    }
    ri_api_return_t r;
    {
        // The binder releases the stream when the QP cannot take it.
        std::lock_guard q(ep->qp_mu);
        r = api::bind_established(ia->rnic, ep->qp, e,
                                  api::ReadCredits{uint32_t(ep->attr.max_rdma_read_out),
                                                   uint32_t(ep->attr.max_rdma_read_in)});
    }
    bool initiator = e.initiator;
    if (r != RI_RET_SUCCESS) {
        ep->state = DAT_EP_STATE_DISCONNECTED;
        ep->conn_id = 0;
        qp_flush(ep);
        lk.unlock();
        elk.unlock();
        {
            std::lock_guard ilk(ia->mu);
            ia->conns.erase(e.id);
        }
        post_conn(conn,
                  initiator ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                            : DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
                  ep, nullptr, true);
        return;
    }
    ep->state = DAT_EP_STATE_CONNECTED;
    std::memcpy(&ep->remote, &e.peer.storage, sizeof ep->remote);
    ep->est_pd = std::move(pd);  // the passive side gets size 0 (L3660)
    lk.unlock();
    DAT_EVENT ev{};
    ev.event_number = DAT_CONNECTION_EVENT_ESTABLISHED;
    ev.evd_handle = conn;
    ev.event_data.connect_event_data.ep_handle = ep;
    if (!ep->est_pd.empty()) {
        ev.event_data.connect_event_data.private_data_size = DAT_COUNT(ep->est_pd.size());
        ev.event_data.connect_event_data.private_data = ep->est_pd.data();
    }
    Cno *cno = nullptr;
    if (DAT_COUNT(conn->q.size()) < conn->qlen) {
        conn->q.push_back(ev);
        conn->cv.notify_all();
        if (!conn->waiter && conn->enabled) cno = conn->cno;
    }
    elk.unlock();
    if (cno) cno_trigger(cno, conn);
}

// Queues the CONNECTION_REQUEST event of `cr` on `sp`'s EVD; false when it is full.
bool deliver_cr(Ia *ia, Cr *cr, Sp *sp) {
    DAT_EVENT ev{};
    ev.event_number = DAT_CONNECTION_REQUEST_EVENT;
    auto &d = ev.event_data.cr_arrival_event_data;
    switch (sp->type) {
        case DAT_HANDLE_TYPE_RSP:
            d.sp_handle.rsp_handle = sp;
            break;
        case DAT_HANDLE_TYPE_CSP:
            d.sp_handle.csp_handle = sp;
            break;
        default:
            d.sp_handle.psp_handle = sp;
            break;
    }
    // A CSP may be bound to another address than its IA's (L4315).
    d.local_ia_address_ptr = sp->type == DAT_HANDLE_TYPE_CSP
                                 ? reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sp->addr)
                                 : reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ia->addr);
    d.conn_qual = sp->qual;
    d.cr_handle = cr;
    d.truncate_flag = DAT_FALSE;
    cr->sp = sp;
    cr->qual = sp->qual;
    if (sp->type == DAT_HANDLE_TYPE_CSP) {
        cr->comm = sp->comm;
        cr->sp_addr = sp->addr;
    } else {
        cr->comm = DAT_COMM{AF_INET, SOCK_STREAM, 0};  // the IA's (L4700)
        cr->sp_addr = sockaddr_storage{};
    }
    return push_event(sp->evd, ev, false);
}

void on_request(Ia *ia, cm::ConnectRequest &r) {
    std::vector<uint8_t> pd;
    uint8_t flags = 0;
    Sp *sp = nullptr;
    {
        std::lock_guard lk(ia->mu);
        auto it = ia->listeners.find(r.listener);
        if (it != ia->listeners.end()) sp = it->second;
    }
    auto nonpeer = wrap_pd(nullptr, 0, kFlagNonPeer);
    if (!sp || !handles().valid(sp, sp->type) || !unwrap_pd(r.private_data, pd, &flags)) {
        ia->cm->reject(r.id, nonpeer);
        return;
    }
    auto *cr = new Cr(ia->provider, DAT_HANDLE_TYPE_CR, ia);
    cr->sp = sp;
    cr->id = r.id;
    cr->qual = sp->qual;
    std::memcpy(&cr->peer, &r.peer.storage, sizeof cr->peer);
    cr->pd = std::move(pd);
    cr->peer_ird = r.ird;
    cr->peer_ord = r.ord;
    if (sp->type == DAT_HANDLE_TYPE_RSP) {
        // An RSP gives at most one CR; later requests see "no listener" (L4414).
        Ep *ep = sp->ep;
        std::lock_guard lk(ep->mu);
        if (sp->fired || !handles().valid(ep, DAT_HANDLE_TYPE_EP)) {
            delete cr;
            ia->cm->reject(r.id, nonpeer);
            return;
        }
        sp->fired = true;
        cr->ep = ep;
        ep->cr = cr;
        ep->state = ep->state == DAT_EP_STATE_UNCONFIGURED_RESERVED
                        ? DAT_EP_STATE_UNCONFIGURED_PASSIVE
                        : DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
    } else if (sp->type == DAT_HANDLE_TYPE_PSP && sp->flags == DAT_PSP_PROVIDER_FLAG) {
        if (!make_provider_ep(ia, sp, cr)) {  // the CR carries it (L4015)
            delete cr;
            ia->cm->reject(r.id, nonpeer);
            return;
        }
    }
    add_child(ia, cr);
    {
        std::lock_guard lk(ia->mu);
        ia->crs.insert(cr);
    }
    if (!deliver_cr(ia, cr, sp)) {
        // A CR that would overflow the EVD is rejected with no event (L2898).
        {
            std::lock_guard lk(ia->mu);
            ia->crs.erase(cr);
        }
        if (Ep *ep = cr->ep; ep && ep->provider_made) {
            drop_provider_ep(ep);
        } else if (ep) {
            std::lock_guard lk(ep->mu);
            ep->cr = nullptr;
        }
        ia->cm->reject(r.id, nonpeer);
        retire(cr);
    }
}

void on_active_failure(Ia *ia, cm::ConnId id, DAT_EVENT_NUMBER num, std::vector<uint8_t> *pd) {
    Ep *ep = conn_ep(ia, id);
    if (!ep || !handles().valid(ep, DAT_HANDLE_TYPE_EP)) return;
    Evd *conn = nullptr;
    {
        std::lock_guard lk(ep->mu);
        if (ep->conn_id != id) return;
        bool passive = ep->state == DAT_EP_STATE_COMPLETION_PENDING;
        if (!passive && ep->state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING) return;
        if (passive) num = DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
        ep->state = DAT_EP_STATE_DISCONNECTED;
        ep->conn_id = 0;
        conn = ep->conn;
        if (pd) ep->est_pd = std::move(*pd);
        qp_flush(ep);  // pre-posted receives are flushed (L5245)
    }
    {
        std::lock_guard lk(ia->mu);
        ia->conns.erase(id);
    }
    post_conn(conn, num, ep, &ep->est_pd, true);
    srq_ep_ended(ep);
}

void cm_handler(Ia *ia, cm::Event &ev) {
    if (auto *e = std::get_if<cm::Established>(&ev)) {
        on_established(ia, *e);
    } else if (auto *r = std::get_if<cm::ConnectRequest>(&ev)) {
        on_request(ia, *r);
    } else if (auto *j = std::get_if<cm::Rejected>(&ev)) {
        std::vector<uint8_t> pd;
        uint8_t flags = 0;
        bool ours = unwrap_pd(j->private_data, pd, &flags);
        if (ours && (flags & kFlagNonPeer))
            on_active_failure(ia, j->id, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
        else
            on_active_failure(ia, j->id, DAT_CONNECTION_EVENT_PEER_REJECTED, &pd);
    } else if (auto *u = std::get_if<cm::Unreachable>(&ev)) {
        on_active_failure(ia, u->id,
                          u->sys_errno == ECONNREFUSED ? DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                                                       : DAT_CONNECTION_EVENT_UNREACHABLE);
    } else if (auto *t = std::get_if<cm::TimedOut>(&ev)) {
        on_active_failure(ia, t->id, DAT_CONNECTION_EVENT_TIMED_OUT);
    } else if (auto *f = std::get_if<cm::Failed>(&ev)) {
        on_active_failure(ia, f->id, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
    }
}

}  // namespace softrnic::dapl
