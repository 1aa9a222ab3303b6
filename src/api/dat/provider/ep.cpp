// EPs: attributes, creation, query, modify and free, and the checks of the socket-style
// communicator. See provider.hpp for what the sources share.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ EP

DAT_EP_ATTR default_ep_attr(Ia *ia) {
    DAT_EP_ATTR a{};
    a.service_type = DAT_SERVICE_TYPE_RC;
    a.max_message_size = 1u << 30;
    a.max_rdma_size = 1u << 30;
    a.qos = DAT_QOS_BEST_EFFORT;
    a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
    a.max_recv_dtos = 64;
    a.max_request_dtos = 64;
    a.max_recv_iov = std::min<DAT_COUNT>(4, DAT_COUNT(ia->attr.max_sgl_send_recvqp));
    a.max_request_iov = a.max_recv_iov;
    // Spec recommends 0 (L4687); practical consumers expect reads to work by default.
    a.max_rdma_read_in = std::min<DAT_COUNT>(4, DAT_COUNT(ia->attr.max_ird_per_qp));
    a.max_rdma_read_out = std::min<DAT_COUNT>(4, DAT_COUNT(ia->attr.max_ord_per_qp));
    a.srq_soft_hw = DAT_HW_DEFAULT;
    a.max_rdma_read_iov = 1;
    a.max_rdma_write_iov = std::min<DAT_COUNT>(4, DAT_COUNT(ia->attr.max_sgl_rdma_write));
    return a;
}

// `attr_arg` is the DAT_INVALID_ARGn subtype naming the attributes' position in the call.
DAT_RETURN check_ep_attr(Ia *ia, const DAT_EP_ATTR &a, bool with_srq, DAT_RETURN attr_arg) {
    const ri_rnic_attr_t &r = ia->attr;
    // Unreliable datagram EPs need the InfiniBand personality, which these IAs lack.
    if (a.service_type == static_cast<DAT_SERVICE_TYPE>(DAT_IB_SERVICE_TYPE_UD))
        return err(DAT_MODEL_NOT_SUPPORTED);
    if (a.service_type != DAT_SERVICE_TYPE_RC) return err(DAT_INVALID_PARAMETER, attr_arg);
    if (a.qos != DAT_QOS_BEST_EFFORT) return err(DAT_MODEL_NOT_SUPPORTED);
    if (a.max_request_dtos < 0 || uint32_t(a.max_request_dtos) >= r.max_wrs_qp ||
        (!with_srq && (a.max_recv_dtos < 0 || uint32_t(a.max_recv_dtos) > r.max_wrs_qp)) ||
        a.max_request_iov < 0 || uint32_t(a.max_request_iov) > r.max_sgl_send_recvqp ||
        (!with_srq && (a.max_recv_iov < 0 || uint32_t(a.max_recv_iov) > r.max_sgl_send_recvqp)) ||
        a.max_rdma_read_in < 0 || uint32_t(a.max_rdma_read_in) > r.max_ird_per_qp ||
        a.max_rdma_read_out < 0 || uint32_t(a.max_rdma_read_out) > r.max_ord_per_qp ||
        a.max_rdma_read_iov < 0 || uint32_t(a.max_rdma_read_iov) > r.max_sgl_send_recvqp ||
        a.max_rdma_write_iov < 0 || uint32_t(a.max_rdma_write_iov) > r.max_sgl_rdma_write ||
        a.max_message_size > (1u << 30) || a.max_rdma_size > (1u << 30))
        return err(DAT_INVALID_PARAMETER, attr_arg);
    const unsigned req_ok = DAT_COMPLETION_SUPPRESS_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG |
                            DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    const unsigned recv_ok = DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    if ((a.request_completion_flags & ~req_ok) || (a.recv_completion_flags & ~recv_ok))
        return err(DAT_INVALID_PARAMETER, attr_arg);
    return DAT_SUCCESS;
}

void ep_attach(Ep *ep) {
    if (ep->pz) ep->pz->users.fetch_add(1, std::memory_order_relaxed);
    for (Evd *e : {ep->recv, ep->req, ep->conn})
        if (e) e->users.fetch_add(1, std::memory_order_relaxed);
    if (ep->req && (ep->attr.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
        ep->req->unsignalled.fetch_add(1, std::memory_order_relaxed);
    if (ep->srq) ep->srq->users.fetch_add(1, std::memory_order_relaxed);
    if (ep->srq && ep->ia->async_evd)
        ep->ia->async_evd->reserved.fetch_add(1, std::memory_order_relaxed);
}
void ep_detach(Ep *ep) {
    if (ep->pz) ep->pz->users.fetch_sub(1, std::memory_order_relaxed);
    for (Evd *e : {ep->recv, ep->req, ep->conn})
        if (e) e->users.fetch_sub(1, std::memory_order_relaxed);
    if (ep->req && (ep->attr.request_completion_flags & DAT_COMPLETION_UNSIGNALLED_FLAG))
        ep->req->unsignalled.fetch_sub(1, std::memory_order_relaxed);
    if (ep->srq) ep->srq->users.fetch_sub(1, std::memory_order_relaxed);
    if (ep->srq && ep->ia->async_evd)
        ep->ia->async_evd->reserved.fetch_sub(1, std::memory_order_relaxed);
}

DAT_RETURN ep_create_common(DAT_IA_HANDLE h, DAT_PZ_HANDLE pzh, DAT_EVD_HANDLE rh,
                            DAT_EVD_HANDLE qh, DAT_EVD_HANDLE ch, DAT_SRQ_HANDLE srqh,
                            const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    auto ep = std::make_unique<Ep>(ia->provider, DAT_HANDLE_TYPE_EP, ia);
    if (pzh && !(ep->pz = as<Pz>(pzh, DAT_HANDLE_TYPE_PZ)))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (rh && !(ep->recv = as<Evd>(rh, DAT_HANDLE_TYPE_EVD)))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
    if (qh && !(ep->req = as<Evd>(qh, DAT_HANDLE_TYPE_EVD)))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
    if (ch && !(ep->conn = as<Evd>(ch, DAT_HANDLE_TYPE_EVD)))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
    if (ep->recv && !(ep->recv->flags & DAT_EVD_DTO_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
    if (ep->req && !(ep->req->flags & (DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG)))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
    if (ep->conn && !(ep->conn->flags & DAT_EVD_CONNECTION_FLAG))
        return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
    if (srqh) {
        if (!(ep->srq = as<Srq>(srqh, DAT_HANDLE_TYPE_SRQ)))
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
        if (ep->pz && ep->srq->pz != ep->pz) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    }
    // dat_ep_create_with_srq has the SRQ before the attributes: one position later each.
    const DAT_RETURN attr_arg = srqh ? DAT_INVALID_ARG7 : DAT_INVALID_ARG6;
    const DAT_RETURN out_arg = srqh ? DAT_INVALID_ARG8 : DAT_INVALID_ARG7;
    if (!out) return err(DAT_INVALID_PARAMETER, out_arg);
    ep->attr = attr ? *attr : default_ep_attr(ia);
    if (DAT_RETURN r = check_ep_attr(ia, ep->attr, ep->srq != nullptr, attr_arg); r != DAT_SUCCESS)
        return r;
    if (ep->srq) {
        // max_recv_dtos is the hard and srq_soft_hw the soft high watermark (L5838, L5845).
        // Zero-initialised attributes are the common case (dtestsrq memsets them and then
        // expects no watermark event), so 0 here means "none"; dat_ep_set_watermark takes 0
        // literally.
        for (DAT_COUNT *wm : {&ep->attr.max_recv_dtos, &ep->attr.srq_soft_hw}) {
            if (*wm < 0 && *wm != DAT_WATERMARK_INFINITE)
                return err(DAT_INVALID_PARAMETER, attr_arg);
            if (*wm == 0) *wm = DAT_WATERMARK_INFINITE;
        }
        ep->soft_armed = ep->attr.srq_soft_hw != DAT_WATERMARK_INFINITE;
    } else {
        ep->attr.srq_soft_hw = DAT_HW_DEFAULT;  // what a query reports without an SRQ (L6132)
    }
    if (configured(ep.get())) {
        if (DAT_RETURN r = create_qp(ep.get()); r != DAT_SUCCESS) return r;
        ep->state = DAT_EP_STATE_UNCONNECTED;
    }
    ep_attach(ep.get());
    Ep *p = ep.release();
    add_child(ia, p);
    *out = p;
    return DAT_SUCCESS;
}

DAT_RETURN ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE r, DAT_EVD_HANDLE q,
                     DAT_EVD_HANDLE c, const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out) {
    return ep_create_common(ia, pz, r, q, c, nullptr, attr, out);
}
DAT_RETURN ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE r,
                              DAT_EVD_HANDLE q, DAT_EVD_HANDLE c, DAT_SRQ_HANDLE srq,
                              const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out) {
    if (!srq) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    if (!attr) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
    return ep_create_common(ia, pz, r, q, c, srq, attr, out);
}

// ------------------------------------------------------------------------------ comm

// What PSPs, RSPs and EPs without a communicator of their own use (L4700): the IA's, a
// TCP stream over IPv4 (softrnic is iWARP over TCP).
DAT_COMM ia_comm() {
    return DAT_COMM{AF_INET, SOCK_STREAM, 0};
}
bool comm_set(const DAT_COMM &c) {
    return c.domain != AF_UNSPEC;
}
// softrnic carries connections over TCP streams (or the same MPA exchange over shm), IPv4
// or IPv6; protocol 0 is the platform default for a stream socket, i.e. TCP (L4262).
bool comm_supported(const DAT_COMM &c) {
    return (c.domain == AF_INET || c.domain == AF_INET6) && c.type == SOCK_STREAM &&
           (c.protocol == 0 || c.protocol == IPPROTO_TCP);
}
bool comm_equal(const DAT_COMM &a, const DAT_COMM &b) {
    auto proto = [](int p) { return p == 0 ? IPPROTO_TCP : p; };
    return a.domain == b.domain && a.type == b.type && proto(a.protocol) == proto(b.protocol);
}
socklen_t addr_len(const sockaddr *a) {
    return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}
uint16_t addr_port(const sockaddr *a) {
    return a->sa_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6 *>(a)->sin6_port)
                                    : ntohs(reinterpret_cast<const sockaddr_in *>(a)->sin_port);
}
bool addr_wildcard(const sockaddr *a) {
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr);
}
// Same family and IP (ports ignored).
bool addr_same_ip(const sockaddr *a, const sockaddr *b) {
    if (a->sa_family != b->sa_family) return false;
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr ==
               reinterpret_cast<const sockaddr_in *>(b)->sin_addr.s_addr;
    return IN6_ARE_ADDR_EQUAL(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr,
                              &reinterpret_cast<const sockaddr_in6 *>(b)->sin6_addr);
}

DAT_RETURN ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *p) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (mask & ~DAT_EP_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    std::lock_guard lk(ep->mu);
    std::memset(static_cast<void *>(p), 0, sizeof *p);
    p->ia_handle = ep->ia;
    p->ep_state = ep->state;
    // Until the consumer sets them (or an accept inherits them), an EP has its IA's.
    p->comm = comm_set(ep->comm) ? ep->comm : ia_comm();
    p->local_ia_address_ptr = ep->local.ss_family != AF_UNSPEC
                                  ? reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ep->local)
                                  : reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ep->ia->addr);
    p->local_port_qual = ep->local_qual;
    bool remote = ep->state == DAT_EP_STATE_CONNECTED ||
                  ep->state == DAT_EP_STATE_DISCONNECT_PENDING ||
                  ep->state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING ||
                  ep->state == DAT_EP_STATE_COMPLETION_PENDING ||
                  ep->state == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING ||
                  ep->state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING ||
                  ep->state == DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
    p->remote_ia_address_ptr = remote ? reinterpret_cast<DAT_IA_ADDRESS_PTR>(&ep->remote) : nullptr;
    p->remote_port_qual = remote ? ep->remote_qual : 0;
    p->pz_handle = ep->pz;
    p->recv_evd_handle = ep->recv;
    p->request_evd_handle = ep->req;
    p->connect_evd_handle = ep->conn;
    p->srq_handle = ep->srq;
    p->ep_attr = ep->attr;
    return DAT_SUCCESS;
}

DAT_RETURN ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                         DAT_BOOLEAN *req_idle) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (state) {
        std::lock_guard lk(ep->mu);  // state changes under ep->mu (CM upcalls, disconnect)
        *state = ep->state;
    }
    if (recv_idle) *recv_idle = ep->recvs_outstanding() <= 0 ? DAT_TRUE : DAT_FALSE;
    if (req_idle) *req_idle = DAT_TRUE;  // not tracked: request completions may be suppressed
    return DAT_SUCCESS;
}

bool quiescent(DAT_EP_STATE s) {
    switch (s) {
        case DAT_EP_STATE_UNCONNECTED:
        case DAT_EP_STATE_RESERVED:
        case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
        case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
        case DAT_EP_STATE_UNCONFIGURED_UNCONNECTED:
        case DAT_EP_STATE_UNCONFIGURED_RESERVED:
        case DAT_EP_STATE_UNCONFIGURED_PASSIVE:
        case DAT_EP_STATE_UNCONFIGURED_TENTATIVE:
            return true;
        default:
            return false;
    }
}

DAT_EP_STATE configured_state(DAT_EP_STATE s) {
    switch (s) {
        case DAT_EP_STATE_UNCONFIGURED_UNCONNECTED:
            return DAT_EP_STATE_UNCONNECTED;
        case DAT_EP_STATE_UNCONFIGURED_RESERVED:
            return DAT_EP_STATE_RESERVED;
        case DAT_EP_STATE_UNCONFIGURED_PASSIVE:
            return DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
        case DAT_EP_STATE_UNCONFIGURED_TENTATIVE:
            return DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
        default:
            return s;
    }
}

// Table 5 (L6279): what may change in which state.
DAT_RETURN ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM *p) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (mask & ~DAT_EP_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    const DAT_EP_PARAM_MASK never = DAT_EP_FIELD_IA_HANDLE | DAT_EP_FIELD_EP_STATE |
                                    DAT_EP_FIELD_LOCAL_PORT_QUAL |
                                    DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR |
                                    DAT_EP_FIELD_REMOTE_PORT_QUAL | DAT_EP_FIELD_SRQ_HANDLE;
    if (mask & never) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    const DAT_EP_PARAM_MASK socket_fields = DAT_EP_FIELD_COMM | DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR;
    std::unique_lock lk(ep->mu);
    if (!quiescent(ep->state)) return ep_state_error(ep->state);
    DAT_COMM comm = ep->comm;
    sockaddr_storage local = ep->local;
    if (mask & socket_fields) {
        // Communicator and local address: Unconnected or Unconfigured only (Table 5, L6288).
        if (ep->state != DAT_EP_STATE_UNCONNECTED &&
            ep->state != DAT_EP_STATE_UNCONFIGURED_UNCONNECTED)
            return ep_state_error(ep->state);
        if (mask & DAT_EP_FIELD_COMM) {
            // Assigned once: only an EP without one takes a (different) communicator.
            if (!comm_supported(p->comm) || (comm_set(comm) && !comm_equal(comm, p->comm)))
                return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
            comm = p->comm;
        }
        if (mask & DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR) {
            const sockaddr *a = p->local_ia_address_ptr;
            if (!a) {
                local = sockaddr_storage{};
            } else {
                // The connection manager binds no local address or port of its own: the
                // EP may name its IA's address or the wildcard, with port 0 (the
                // restriction L6680 allows).
                bool ok = (a->sa_family == AF_INET || a->sa_family == AF_INET6) &&
                          addr_port(a) == 0 &&
                          (addr_wildcard(a) ||
                           addr_same_ip(a, reinterpret_cast<const sockaddr *>(&ep->ia->addr)));
                if (!ok) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
                local = sockaddr_storage{};
                std::memcpy(&local, a, addr_len(a));
            }
        }
        if (comm_set(comm) && local.ss_family != AF_UNSPEC && local.ss_family != comm.domain)
            return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
        if (!(mask & ~socket_fields)) {
            // Nothing else asked: the QP (and the receives posted to it) stays as it is.
            ep->comm = comm;
            ep->local = local;
            return DAT_SUCCESS;
        }
    }
    Ep next(ep->ia->provider, DAT_HANDLE_TYPE_EP, ep->ia);
    next.pz = ep->pz;
    next.recv = ep->recv;
    next.req = ep->req;
    next.conn = ep->conn;
    next.srq = ep->srq;
    next.attr = ep->attr;
    if (mask & DAT_EP_FIELD_PZ_HANDLE) {
        if (p->pz_handle && !(next.pz = as<Pz>(p->pz_handle, DAT_HANDLE_TYPE_PZ)))
            return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
        if (!p->pz_handle) next.pz = nullptr;
    }
    auto pick = [&](DAT_EVD_HANDLE in, Evd *&slot, DAT_EVD_FLAGS need,
                    DAT_RETURN sub) -> DAT_RETURN {
        if (!in) {
            slot = nullptr;
            return DAT_SUCCESS;
        }
        Evd *e = as<Evd>(in, DAT_HANDLE_TYPE_EVD);
        if (!e || !(e->flags & need)) return err(DAT_INVALID_HANDLE, sub);
        slot = e;
        return DAT_SUCCESS;
    };
    DAT_RETURN r = DAT_SUCCESS;
    if ((mask & DAT_EP_FIELD_RECV_EVD_HANDLE) &&
        (r = pick(p->recv_evd_handle, next.recv, DAT_EVD_DTO_FLAG, DAT_INVALID_HANDLE_EVD_RECV)))
        return r;
    if ((mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE) &&
        (r = pick(p->request_evd_handle, next.req,
                  static_cast<DAT_EVD_FLAGS>(DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG),
                  DAT_INVALID_HANDLE_EVD_REQUEST)))
        return r;
    if ((mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE) &&
        (r = pick(p->connect_evd_handle, next.conn, DAT_EVD_CONNECTION_FLAG,
                  DAT_INVALID_HANDLE_EVD_CONN)))
        return r;
    const DAT_EP_ATTR &in = p->ep_attr;
    DAT_EP_ATTR &a = next.attr;
    if (mask & DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE) a.service_type = in.service_type;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE) a.max_message_size = in.max_message_size;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE) a.max_rdma_size = in.max_rdma_size;
    if (mask & DAT_EP_FIELD_EP_ATTR_QOS) a.qos = in.qos;
    if (mask & DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
        a.recv_completion_flags = in.recv_completion_flags;
    if (mask & DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
        a.request_completion_flags = in.request_completion_flags;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS) {
        if (next.srq) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);  // L6336
        a.max_recv_dtos = in.max_recv_dtos;
    }
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS) a.max_request_dtos = in.max_request_dtos;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV) a.max_recv_iov = in.max_recv_iov;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV) a.max_request_iov = in.max_request_iov;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN) a.max_rdma_read_in = in.max_rdma_read_in;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT) a.max_rdma_read_out = in.max_rdma_read_out;
    if (mask & DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV) a.max_rdma_read_iov = in.max_rdma_read_iov;
    if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV)
        a.max_rdma_write_iov = in.max_rdma_write_iov;
    if ((r = check_ep_attr(ep->ia, a, next.srq != nullptr, DAT_INVALID_ARG3))) return r;
    // The QP is rebuilt with the new objects; it is idle in every quiescent state.
    ep_detach(ep);
    // ri_qp_destroy waits for the event thread, whose async handler may want this EP's
    // locks: destroy outside them.
    ri_qp_handle_t old_qp;
    {
        std::lock_guard q(ep->qp_mu);
        old_qp = ep->qp;
        ep->qp = nullptr;
    }
    lk.unlock();
    if (old_qp) {
        ri_err_data_t e = 0;
        ri_qp_destroy(ep->ia->rnic, old_qp, &e);
    }
    lk.lock();
    ep->pz = next.pz;
    ep->recv = next.recv;
    ep->req = next.req;
    ep->conn = next.conn;
    ep->attr = a;
    ep->comm = comm;
    ep->local = local;
    ep_attach(ep);
    ep->recvs_posted.store(ep->recvs_completed.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
    DAT_EP_STATE base = configured_state(ep->state);
    if (configured(ep)) {
        if ((r = create_qp(ep))) {
            ep->state = ep->state == base ? DAT_EP_STATE_UNCONFIGURED_UNCONNECTED : ep->state;
            return r;
        }
        ep->state = base;
    } else {
        switch (base) {
            case DAT_EP_STATE_UNCONNECTED:
                ep->state = DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
                break;
            case DAT_EP_STATE_RESERVED:
                ep->state = DAT_EP_STATE_UNCONFIGURED_RESERVED;
                break;
            case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
                ep->state = DAT_EP_STATE_UNCONFIGURED_PASSIVE;
                break;
            default:
                ep->state = DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
                break;
        }
    }
    return DAT_SUCCESS;
}

DAT_RETURN ep_free(DAT_EP_HANDLE h) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    cm::ConnId id = 0;
    {
        std::lock_guard lk(ep->mu);
        switch (ep->state) {
            case DAT_EP_STATE_RESERVED:
            case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
            case DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING:
            case DAT_EP_STATE_UNCONFIGURED_RESERVED:
            case DAT_EP_STATE_UNCONFIGURED_PASSIVE:
            case DAT_EP_STATE_UNCONFIGURED_TENTATIVE:
                return ep_state_error(ep->state);  // L6011
            default:
                break;
        }
        id = ep->conn_id;
        ep->conn_id = 0;
        ep->state = DAT_EP_STATE_DISCONNECTED;
    }
    if (id) {
        std::lock_guard lk(ep->ia->mu);
        ep->ia->conns.erase(id);
    }
    // Abort the connection (the peer sees a reset) and make the handle invalid before the
    // QP goes, so completion conversion drops this EP's leftovers (L5999).
    if (ep->qp) qp_flush(ep);
    handles().remove(ep);  // unregistered now; parked below once the QP is gone
    destroy_qp(ep);
    ep_detach(ep);
    {
        std::lock_guard lk(ep->ia->mu);
        ep->ia->children.erase(ep);
    }
    handles().retire(ep, destroy_obj);
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
