// Service points: PSPs, RSPs and CSPs, and the EPs a PSP makes itself
// (DAT_PSP_PROVIDER_FLAG). See provider.hpp for what the sources share.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ PSP / RSP

// Listens on `addr` (port 0: one the system picks) for `sp`. One SP per qualifier on the
// IA (L3951); the socket layer enforces it host-wide. On success sp->qual is the port.
DAT_RETURN sp_listen_at(Ia *ia, Sp *sp, const sockaddr *addr, socklen_t len, DAT_RETURN in_use,
                        DAT_RETURN unavailable) {
    DAT_CONN_QUAL qual = addr_port(addr);
    std::lock_guard lk(ia->mu);
    if (qual != 0 && ia->quals.count(qual)) return in_use;
    auto l = ia->cm->listen(addr, len, 1024);
    if (!l.ok()) {
        if (l.sys_errno == EADDRINUSE) return qual ? in_use : unavailable;
        if (l.status == cm::CmStatus::InvalidArgument || l.sys_errno == EADDRNOTAVAIL ||
            l.sys_errno == EAFNOSUPPORT || l.sys_errno == EINVAL)
            return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    }
    sp->listener = l.value;
    if (qual == 0) {
        auto la = ia->cm->local_address(l.value);
        qual = addr_port(la.value.get());
    }
    if (ia->quals.count(qual)) {  // the system picked a port another SP of the IA holds
        ia->cm->stop_listen(l.value);
        sp->listener = 0;
        return unavailable;
    }
    sp->qual = qual;
    ia->listeners[l.value] = sp;
    ia->quals[qual] = sp;
    return DAT_SUCCESS;
}
DAT_RETURN sp_listen(Ia *ia, Sp *sp, DAT_CONN_QUAL qual) {
    sockaddr_in a = ia->addr;
    a.sin_port = htons(qual_port(qual));
    return sp_listen_at(ia, sp, reinterpret_cast<const sockaddr *>(&a), sizeof a,
                        err(DAT_CONN_QUAL_IN_USE), err(DAT_CONN_QUAL_UNAVAILABLE));
}
void sp_unlisten(Sp *sp) {
    Ia *ia = sp->ia;
    std::lock_guard lk(ia->mu);
    if (sp->listener) {
        ia->cm->stop_listen(sp->listener);
        ia->listeners.erase(sp->listener);
        ia->quals.erase(sp->qual);
        sp->listener = 0;
    }
}

DAT_RETURN psp_create_common(DAT_IA_HANDLE h, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evdh,
                             DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out, bool any) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    Evd *evd = as<Evd>(evdh, DAT_HANDLE_TYPE_EVD);
    if (!evd || !(evd->flags & DAT_EVD_CR_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
    // ep_creator is IFASKED: both flags work (L4015).
    if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if (!out || !qual) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    if (!any && (*qual == 0 || *qual > 0xFFFF)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto *sp = new Sp(ia->provider, DAT_HANDLE_TYPE_PSP, ia);
    sp->evd = evd;
    sp->flags = flags;
    if (DAT_RETURN r = sp_listen(ia, sp, any ? 0 : *qual)) {
        delete sp;
        return r;
    }
    evd->users.fetch_add(1, std::memory_order_relaxed);
    add_child(ia, sp);
    if (any) *qual = sp->qual;
    *out = sp;
    return DAT_SUCCESS;
}
DAT_RETURN psp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
                      DAT_PSP_HANDLE *out) {
    return psp_create_common(h, &qual, evd, flags, out, false);
}
DAT_RETURN psp_create_any(DAT_IA_HANDLE h, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd,
                          DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out) {
    if (!qual) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    return psp_create_common(h, qual, evd, flags, out, true);
}
DAT_RETURN psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM *p) {
    Sp *sp = as<Sp>(h, DAT_HANDLE_TYPE_PSP);
    if (!sp) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
    if (mask & ~DAT_PSP_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = sp->ia;
    p->conn_qual = sp->qual;
    p->evd_handle = sp->evd;
    p->psp_flags = sp->flags;
    return DAT_SUCCESS;
}
DAT_RETURN psp_free(DAT_PSP_HANDLE h) {
    Sp *sp = as<Sp>(h, DAT_HANDLE_TYPE_PSP);
    if (!sp) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
    sp_unlisten(sp);  // later requests see no listener; pending CRs stay valid (L4166)
    sp->evd->users.fetch_sub(1, std::memory_order_relaxed);
    retire(sp);
    return DAT_SUCCESS;
}

DAT_RETURN rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE eph, DAT_EVD_HANDLE evdh,
                      DAT_RSP_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    Ep *ep = as_ep(eph);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    Evd *evd = as<Evd>(evdh, DAT_HANDLE_TYPE_EVD);
    if (!evd || !(evd->flags & DAT_EVD_CR_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    if (qual == 0 || qual > 0xFFFF) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto *sp = new Sp(ia->provider, DAT_HANDLE_TYPE_RSP, ia);
    sp->evd = evd;
    sp->ep = ep;
    std::lock_guard lk(ep->mu);
    if (ep->state != DAT_EP_STATE_UNCONNECTED &&
        ep->state != DAT_EP_STATE_UNCONFIGURED_UNCONNECTED) {
        delete sp;
        return ep_state_error(ep->state);
    }
    if (DAT_RETURN r = sp_listen(ia, sp, qual)) {
        delete sp;
        return r;
    }
    ep->state = ep->state == DAT_EP_STATE_UNCONNECTED ? DAT_EP_STATE_RESERVED
                                                      : DAT_EP_STATE_UNCONFIGURED_RESERVED;
    ep->rsp = sp;
    ep->local_qual = qual;
    evd->users.fetch_add(1, std::memory_order_relaxed);
    add_child(ia, sp);
    *out = sp;
    return DAT_SUCCESS;
}
DAT_RETURN rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM *p) {
    Sp *sp = as<Sp>(h, DAT_HANDLE_TYPE_RSP);
    if (!sp) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
    if (mask & ~DAT_RSP_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = sp->ia;
    p->conn_qual = sp->qual;
    p->evd_handle = sp->evd;
    p->ep_handle = sp->ep;
    return DAT_SUCCESS;
}
DAT_RETURN rsp_free(DAT_RSP_HANDLE h) {
    Sp *sp = as<Sp>(h, DAT_HANDLE_TYPE_RSP);
    if (!sp) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
    sp_unlisten(sp);
    Ep *ep = sp->ep;
    if (handles().valid(ep, DAT_HANDLE_TYPE_EP)) {
        std::lock_guard lk(ep->mu);
        if (ep->rsp == sp) ep->rsp = nullptr;
        // The EP returns to the consumer (L4480).
        if (ep->state == DAT_EP_STATE_RESERVED) ep->state = DAT_EP_STATE_UNCONNECTED;
        if (ep->state == DAT_EP_STATE_UNCONFIGURED_RESERVED)
            ep->state = DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
    }
    sp->evd->users.fetch_sub(1, std::memory_order_relaxed);
    retire(sp);
    return DAT_SUCCESS;
}

// ------------------------------------------------------------------------------ CSP etc.

// A socket-style listener (L4237): the communicator and the address (port included) are
// the consumer's; requests for another address or communicator never reach it (the
// socket it listens on only accepts TCP connections to that address).
DAT_RETURN csp_create(DAT_IA_HANDLE h, DAT_COMM *comm, DAT_IA_ADDRESS_PTR addr, DAT_EVD_HANDLE evdh,
                      DAT_CSP_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    Evd *evd = as<Evd>(evdh, DAT_HANDLE_TYPE_EVD);
    if (!evd || !(evd->flags & DAT_EVD_CR_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
    if (!comm) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    // Domain and type are required, protocol may be 0 (L4262).
    if (comm->domain == AF_UNSPEC || comm->type == 0)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!comm_supported(*comm)) return err(DAT_COMM_NOT_SUPPORTED);
    sockaddr_storage bind{};
    if (!addr) {
        // No address: the IA's, with a port the provider picks (L4317). The IA is IPv4.
        if (comm->domain != AF_INET) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
        std::memcpy(&bind, &ia->addr, sizeof ia->addr);
    } else {
        if (addr->sa_family != comm->domain) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
        std::memcpy(&bind, addr, addr_len(addr));
    }
    auto *sp = new Sp(ia->provider, DAT_HANDLE_TYPE_CSP, ia);
    sp->evd = evd;
    sp->comm = *comm;
    const auto *ba = reinterpret_cast<const sockaddr *>(&bind);
    if (DAT_RETURN r = sp_listen_at(ia, sp, ba, addr_len(ba), err(DAT_PORT_IN_USE),
                                    err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY))) {
        delete sp;
        return r;
    }
    sp->addr = bind;
    if (bind.ss_family == AF_INET6)
        reinterpret_cast<sockaddr_in6 *>(&sp->addr)->sin6_port = htons(uint16_t(sp->qual));
    else
        reinterpret_cast<sockaddr_in *>(&sp->addr)->sin_port = htons(uint16_t(sp->qual));
    evd->users.fetch_add(1, std::memory_order_relaxed);
    add_child(ia, sp);
    *out = sp;
    return DAT_SUCCESS;
}
DAT_RETURN csp_query(DAT_CSP_HANDLE h, DAT_CSP_PARAM_MASK mask, DAT_CSP_PARAM *p) {
    Sp *sp = as<Sp>(h, DAT_HANDLE_TYPE_CSP);
    if (!sp) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CSP);
    if (unsigned(mask) & ~unsigned(DAT_CSP_FIELD_ALL))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = sp->ia;
    p->comm = &sp->comm;  // provider storage, valid until dat_csp_free
    p->address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&sp->addr);
    p->evd_handle = sp->evd;
    return DAT_SUCCESS;
}
DAT_RETURN csp_free(DAT_CSP_HANDLE h) {
    Sp *sp = as<Sp>(h, DAT_HANDLE_TYPE_CSP);
    if (!sp) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CSP);
    sp_unlisten(sp);  // later requests see no listener; pending CRs stay valid (L4340)
    sp->evd->users.fetch_sub(1, std::memory_order_relaxed);
    retire(sp);
    return DAT_SUCCESS;
}

// ------------------------------------------------------------------------------ provider EPs

// The EP a PSP with DAT_PSP_PROVIDER_FLAG hands out with a CR (L4015): default
// attributes with RDMA Read credits matching the request's (L4013), no PZ and no EVDs, so
// UNCONFIGURED_TENTATIVE until dat_ep_modify supplies them; it belongs to the consumer
// once accepted (L5503).
Ep *make_provider_ep(Ia *ia, Sp *sp, Cr *cr) {
    auto *ep = new (std::nothrow) Ep(ia->provider, DAT_HANDLE_TYPE_EP, ia);
    if (!ep) return nullptr;
    ep->attr = default_ep_attr(ia);
    ep->attr.srq_soft_hw = DAT_HW_DEFAULT;
    // Reads the requester sends are ours to take in, and the other way round.
    ep->attr.max_rdma_read_in =
        std::min<DAT_COUNT>(cr->peer_ord, DAT_COUNT(ia->attr.max_ird_per_qp));
    ep->attr.max_rdma_read_out =
        std::min<DAT_COUNT>(cr->peer_ird, DAT_COUNT(ia->attr.max_ord_per_qp));
    ep->provider_made = true;
    ep->state = DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
    ep->local_qual = sp->qual;
    ep->remote = cr->peer;
    ep->remote_qual = ntohs(reinterpret_cast<const sockaddr_in *>(&cr->peer)->sin_port);
    ep->cr = cr;
    cr->ep = ep;
    add_child(ia, ep);
    return ep;
}

// Takes back a provider EP whose CR was rejected, handed off or never delivered.
void drop_provider_ep(Ep *ep) {
    if (!handles().valid(ep, DAT_HANDLE_TYPE_EP)) return;
    {
        std::lock_guard lk(ep->mu);
        ep->cr = nullptr;
        ep->state = DAT_EP_STATE_DISCONNECTED;  // so that ep_free takes it (L6011)
    }
    ep_free(ep);
}

}  // namespace softrnic::dapl
