// Active connections: dat_ep_connect, dup_connect, common_connect, disconnect and reset. See
// provider.hpp for what the sources share.
#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "provider.hpp"
#include "softrnic/softrnic.h"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ connect

DAT_RETURN check_pd(DAT_COUNT n, const void *pd, DAT_RETURN size_arg, DAT_RETURN data_arg) {
    if (n < 0 || n > kMaxPrivateData) return err(DAT_INVALID_PARAMETER, size_arg);
    if (n > 0 && !pd) return err(DAT_INVALID_PARAMETER, data_arg);
    return DAT_SUCCESS;
}

uint16_t qual_port(DAT_CONN_QUAL q) {
    return static_cast<uint16_t>(q & 0xFFFF);  // IP: low 16 bits are the port (L3922)
}

// Starts an active connection to `addr` (port from `qual`); the callers have checked the
// timeout and the private data, whose argument positions differ between them.
DAT_RETURN connect_to(Ep *ep, const sockaddr *addr, DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
                      DAT_COUNT pd_size, const void *pd) {
    if (!addr) return err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED);
    if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
        return err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
    cm::Address dst;
    if (addr->sa_family == AF_INET) {
        std::memcpy(&dst.storage, addr, sizeof(sockaddr_in));
        reinterpret_cast<sockaddr_in *>(&dst.storage)->sin_port = htons(qual_port(qual));
        dst.len = sizeof(sockaddr_in);
    } else {
        std::memcpy(&dst.storage, addr, sizeof(sockaddr_in6));
        reinterpret_cast<sockaddr_in6 *>(&dst.storage)->sin6_port = htons(qual_port(qual));
        dst.len = sizeof(sockaddr_in6);
    }
    std::unique_lock lk(ep->mu);
    if (ep->state != DAT_EP_STATE_UNCONNECTED) return ep_state_error(ep->state);
    cm::ConnParams cp;
    cp.private_data = wrap_pd(pd, size_t(pd_size), 0);
    cp.ird = uint16_t(ep->attr.max_rdma_read_in);
    cp.ord = uint16_t(ep->attr.max_rdma_read_out);
    // Both ends are softrnic uDAPL providers, which always agree to RFC 7306 (atomics and
    // immediate data, needed by the IB extension); shm carries them regardless.
    cp.rfc7306 = true;
    cp.timeout =
        timeout == DAT_TIMEOUT_INFINITE
            ? std::chrono::milliseconds(0)
            : std::chrono::milliseconds(std::max<uint64_t>(1, (uint64_t(timeout) + 999) / 1000));
    // Register before connecting: the CM may answer on its thread before connect() returns.
    std::lock_guard ilk(ep->ia->mu);
    auto c = ep->ia->cm->connect(dst.get(), dst.len, cp);
    if (!c.ok()) {
        return c.status == cm::CmStatus::InvalidArgument
                   ? err(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED)
                   : err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    }
    ep->ia->conns[c.value] = ep;
    ep->conn_id = c.value;
    std::memcpy(&ep->remote, &dst.storage, sizeof ep->remote);
    ep->remote_qual = qual;
    ep->est_pd.clear();
    ep->state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
    return DAT_SUCCESS;
}

DAT_RETURN ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
                      DAT_TIMEOUT timeout, DAT_COUNT pd_size, const DAT_PVOID pd, DAT_QOS qos,
                      DAT_CONNECT_FLAGS flags) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (qos != DAT_QOS_BEST_EFFORT) return err(DAT_MODEL_NOT_SUPPORTED);
    if (flags & DAT_CONNECT_MULTIPATH_REQUIRED_FLAG) return err(DAT_MODEL_NOT_SUPPORTED);
    if (flags & ~(DAT_CONNECT_MULTIPATH_FLAG | DAT_CONNECT_MULTIPATH_REQUIRED_FLAG))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
    if (timeout == 0) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);  // L6543
    if (DAT_RETURN r = check_pd(pd_size, pd, DAT_INVALID_ARG5, DAT_INVALID_ARG6)) return r;
    {
        std::lock_guard lk(ep->mu);
        if (ep->state != DAT_EP_STATE_UNCONNECTED) return ep_state_error(ep->state);
    }
    return connect_to(ep, addr, qual, timeout, pd_size, pd);
}

DAT_RETURN ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE duph, DAT_TIMEOUT timeout,
                          DAT_COUNT pd_size, const DAT_PVOID pd, DAT_QOS qos) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    Ep *dup = as_ep(duph);
    if (!dup) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE2);
    if (qos != DAT_QOS_BEST_EFFORT) return err(DAT_MODEL_NOT_SUPPORTED);
    if (timeout == 0) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);  // L6846
    if (DAT_RETURN r = check_pd(pd_size, pd, DAT_INVALID_ARG4, DAT_INVALID_ARG5)) return r;
    sockaddr_storage ss;
    DAT_CONN_QUAL q;
    {
        std::lock_guard lk(dup->mu);
        // "Parameter in an invalid state" (L6856): the subtype names the dup EP's state.
        if (dup->state != DAT_EP_STATE_CONNECTED) return ep_state_error(dup->state);
        ss = dup->remote;
        q = dup->remote_qual;
    }
    if (q == 0) q = ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    return connect_to(ep, reinterpret_cast<sockaddr *>(&ss), q, timeout, pd_size, pd);
}

// Socket-style connect (L6634): the remote address carries the port, the EP must have a
// communicator (set with dat_ep_modify) of the address's family.
DAT_RETURN ep_common_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_TIMEOUT timeout,
                             DAT_COUNT pd_size, const DAT_PVOID pd) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
        addr_port(addr) == 0 || addr_wildcard(addr))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (timeout == 0) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);  // L6670
    if (pd_size < 0 || pd_size > kMaxPrivateData)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if (pd_size > 0 && !pd) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    {
        std::lock_guard lk(ep->mu);
        if (ep->state != DAT_EP_STATE_UNCONNECTED) return ep_state_error(ep->state);
        // "the EP Communicator is not defined" is an invalid state (L6676).
        if (!comm_set(ep->comm)) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
        if (addr->sa_family != ep->comm.domain ||
            (ep->local.ss_family != AF_UNSPEC && ep->local.ss_family != addr->sa_family))
            return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    }
    return connect_to(ep, addr, addr_port(addr), timeout, pd_size, pd);
}

DAT_RETURN ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    Evd *conn = nullptr;
    cm::ConnId id = 0;
    {
        std::lock_guard lk(ep->mu);
        switch (ep->state) {
            case DAT_EP_STATE_DISCONNECTED:
                return DAT_SUCCESS;  // no-op (L6948)
            case DAT_EP_STATE_CONNECTED:
            case DAT_EP_STATE_DISCONNECT_PENDING:
                if (ep->state == DAT_EP_STATE_CONNECTED) {
                    // RTS -> Closing sends the LLP close after the queued work; the QP ends
                    // Idle or (with receives outstanding) in Error, flushing them. Abrupt
                    // too: RTS -> Error would reset the stream, and a reset throws away
                    // what the kernel still holds of sends already completed to us, so the
                    // peer would miss a message we were told had gone (dapltest's client
                    // sends its last sync message, then disconnects abruptly). OFED's
                    // providers do the same (rdma_disconnect is graceful on iWARP); what
                    // is abrupt is the local side: our outstanding DTOs flush at once.
                    if (qp_to(ep, RI_QP_STATE_CLOSING) != RI_RET_SUCCESS) qp_flush(ep);
                }
                qp_flush(ep);
                break;
            case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
            case DAT_EP_STATE_COMPLETION_PENDING:
                // The CM set-up cannot be cancelled; its outcome finds no EP and is dropped.
                qp_flush(ep);
                break;
            default:
                return ep_state_error(ep->state);
        }
        ep->state = DAT_EP_STATE_DISCONNECTED;
        id = ep->conn_id;
        ep->conn_id = 0;
        conn = ep->conn;
    }
    if (id) {
        std::lock_guard lk(ep->ia->mu);
        ep->ia->conns.erase(id);
    }
    post_conn(conn, DAT_CONNECTION_EVENT_DISCONNECTED, ep, nullptr, true);
    srq_ep_ended(ep);
    return DAT_SUCCESS;
}

DAT_RETURN ep_reset(DAT_EP_HANDLE h) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    {
        std::lock_guard lk(ep->mu);
        if (ep->state == DAT_EP_STATE_UNCONNECTED) return DAT_SUCCESS;
        if (ep->state != DAT_EP_STATE_DISCONNECTED) return ep_state_error(ep->state);
    }
    // Let async events of the old connection drain so none hits the next one.
    softrnic_vp_drain_events(ep->ia->vp);
    std::lock_guard lk(ep->mu);
    if (ep->state != DAT_EP_STATE_DISCONNECTED) return ep_state_error(ep->state);
    if (ep->qp) {
        qp_flush(ep);
        qp_to(ep, RI_QP_STATE_IDLE);
    }
    ep->est_pd.clear();
    // The receive counts stay: every receive the flush ended still gets its (flushed)
    // completion, which takes it off the count.
    wm_arm(ep);  // a hard watermark that broke the last connection watches the next one
    ep->state = configured(ep) ? DAT_EP_STATE_UNCONNECTED : DAT_EP_STATE_UNCONFIGURED_UNCONNECTED;
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
