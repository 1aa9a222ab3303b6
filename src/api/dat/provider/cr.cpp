// Connection requests: query, accept, reject and handoff. See provider.hpp for what the sources
// share.
#include <arpa/inet.h>

#include <cstring>
#include <mutex>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ CR

Cr *as_cr(DAT_HANDLE h) {
    return as<Cr>(h, DAT_HANDLE_TYPE_CR);
}
void cr_done(Cr *cr) {
    {
        std::lock_guard lk(cr->ia->mu);
        cr->ia->crs.erase(cr);
    }
    retire(cr);  // the accept/reject/handoff calls are its destructors (L1839)
}

DAT_RETURN cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *p) {
    Cr *cr = as_cr(h);
    if (!cr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
    if (mask & ~DAT_CR_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->remote_ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&cr->peer);
    p->remote_port_qual = ntohs(reinterpret_cast<sockaddr_in *>(&cr->peer)->sin_port);
    p->private_data_size = DAT_COUNT(cr->pd.size());
    p->private_data = cr->pd.empty() ? nullptr : cr->pd.data();
    p->local_ep_handle = cr->ep;
    return DAT_SUCCESS;
}

DAT_RETURN cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE eph, DAT_COUNT pd_size, const DAT_PVOID pd) {
    Cr *cr = as_cr(h);
    if (!cr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
    Ep *ep = nullptr;
    if (cr->ep) {
        if (eph != DAT_HANDLE_NULL && eph != cr->ep)
            return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        ep = cr->ep;
    } else {
        ep = as_ep(eph);
        if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    }
    if (!handles().valid(ep, DAT_HANDLE_TYPE_EP))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (DAT_RETURN r = check_pd(pd_size, pd, DAT_INVALID_ARG3, DAT_INVALID_ARG4)) return r;
    Ia *ia = cr->ia;
    // The SP's communicator and address: a CSP's own, the IA's for PSPs and RSPs.
    const bool from_csp = cr->sp_addr.ss_family != AF_UNSPEC;
    const DAT_COMM sp_comm = cr->comm;
    sockaddr_storage sp_addr{};
    if (from_csp)
        sp_addr = cr->sp_addr;
    else
        std::memcpy(&sp_addr, &ia->addr, sizeof ia->addr);
    {
        std::lock_guard lk(ep->mu);
        DAT_EP_STATE want = !cr->ep                 ? DAT_EP_STATE_UNCONNECTED
                            : cr->ep->provider_made ? DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING
                                                    : DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
        if (ep->state != want || !configured(ep)) return ep_state_error(ep->state);  // L4662
        // What the EP defines must match the SP; what it leaves open it inherits (L4668).
        const auto *la = reinterpret_cast<const sockaddr *>(&ep->local);
        if ((comm_set(ep->comm) && !comm_equal(ep->comm, sp_comm)) ||
            (ep->local.ss_family != AF_UNSPEC && !addr_wildcard(la) &&
             !addr_wildcard(reinterpret_cast<const sockaddr *>(&sp_addr)) &&
             !addr_same_ip(la, reinterpret_cast<const sockaddr *>(&sp_addr))) ||
            (ep->local.ss_family != AF_UNSPEC && ep->local.ss_family != sp_addr.ss_family))
            return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        if (!comm_set(ep->comm)) ep->comm = sp_comm;
        if (ep->local.ss_family == AF_UNSPEC && from_csp) ep->local = sp_addr;
        ep->provider_made = false;  // accepted, it is the consumer's for good (L5503)
        ep->state = DAT_EP_STATE_COMPLETION_PENDING;
        ep->conn_id = cr->id;
        ep->remote = cr->peer;
        ep->remote_qual = ntohs(reinterpret_cast<sockaddr_in *>(&cr->peer)->sin_port);
        ep->local_qual = cr->qual;
        ep->cr = nullptr;
        ep->est_pd.clear();
    }
    cm::ConnParams cp;
    cp.private_data = wrap_pd(pd, size_t(pd_size), 0);
    cp.ird = uint16_t(ep->attr.max_rdma_read_in);
    cp.ord = uint16_t(ep->attr.max_rdma_read_out);
    cp.rfc7306 = true;  // as the initiator does (ep_connect.cpp)
    {
        std::lock_guard lk(ia->mu);
        ia->conns[cr->id] = ep;
    }
    cm::CmStatus st = ia->cm->accept(cr->id, cp);
    if (st != cm::CmStatus::Ok) {
        // The initiator went away: SUCCESS then ACCEPT_COMPLETION_ERROR (L1087).
        on_active_failure(ia, cr->id, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
    }
    cr_done(cr);
    return DAT_SUCCESS;
}

DAT_RETURN cr_reject(DAT_CR_HANDLE h, DAT_COUNT pd_size, const DAT_PVOID pd) {
    Cr *cr = as_cr(h);
    if (!cr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
    if (DAT_RETURN r = check_pd(pd_size, pd, DAT_INVALID_ARG2, DAT_INVALID_ARG3)) return r;
    auto frame = wrap_pd(pd, size_t(pd_size), 0);
    if (cr->ia->cm) cr->ia->cm->reject(cr->id, frame);
    if (Ep *ep = cr->ep; ep && ep->provider_made) {
        cr->ep = nullptr;
        drop_provider_ep(ep);  // TENTATIVE_CONNECTION_PENDING: back to the provider (L5496)
    } else if (ep && handles().valid(ep, DAT_HANDLE_TYPE_EP)) {
        // An RSP's EP goes back to the consumer as UNCONNECTED (L4472, L5350; the
        // conflicting L5335 says DISCONNECTED).
        std::lock_guard lk(ep->mu);
        ep->cr = nullptr;
        if (ep->state == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING)
            ep->state = DAT_EP_STATE_UNCONNECTED;
        if (ep->state == DAT_EP_STATE_UNCONFIGURED_PASSIVE)
            ep->state = DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
    }
    cr_done(cr);
    return DAT_SUCCESS;
}

DAT_RETURN cr_handoff(DAT_CR_HANDLE h, DAT_CONN_QUAL qual) {
    Cr *cr = as_cr(h);
    if (!cr) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
    Ia *ia = cr->ia;
    Sp *sp = nullptr;
    {
        std::lock_guard lk(ia->mu);
        auto it = ia->quals.find(qual);
        if (it != ia->quals.end()) sp = it->second;
    }
    // An RSP's CR stays with its EP; an RSP target would need its own EP.
    if (!sp || sp == cr->sp || sp->type == DAT_HANDLE_TYPE_RSP ||
        (cr->ep && !cr->ep->provider_made))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    // Re-delivered as if it came from the originator (L1147): the provider EP of the old
    // SP goes back to the provider, a PSP with DAT_PSP_PROVIDER_FLAG makes a fresh one.
    if (cr->ep) {
        Ep *old = cr->ep;
        cr->ep = nullptr;
        drop_provider_ep(old);
    }
    if (sp->type == DAT_HANDLE_TYPE_PSP && sp->flags == DAT_PSP_PROVIDER_FLAG &&
        !make_provider_ep(ia, sp, cr)) {
        ia->cm->reject(cr->id, wrap_pd(nullptr, 0, kFlagNonPeer));
        cr_done(cr);
        return DAT_SUCCESS;
    }
    if (!deliver_cr(ia, cr, sp)) {
        if (cr->ep) {
            Ep *ep = cr->ep;
            cr->ep = nullptr;
            drop_provider_ep(ep);
        }
        ia->cm->reject(cr->id, wrap_pd(nullptr, 0, kFlagNonPeer));
        cr_done(cr);
    }
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
