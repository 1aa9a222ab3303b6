// Data transfers: sends, receives, RDMA Reads and Writes, and the SRQ watermarks of an EP. See
// provider.hpp for what the sources share.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ DTOs

DAT_RETURN post_sq(Ep *ep, ri_wr_t &wr) {
    uint_t n = 1;
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_qp_postsq(ep->ia->rnic, ep->qp, &wr, &n, &e);
    if (r == RI_RET_SUCCESS) return DAT_SUCCESS;
    if (r == RI_RET_QP_INVALID_STATE) return ep_state_error(ep->state);
    return from_ri(r);
}

DAT_RETURN post_send_common(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                            DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags, bool inv,
                            DAT_RMR_CONTEXT rmr) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (n < 0 || n > ep->attr.max_request_iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (n > 0 && !iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    unsigned rf = 0;
    if (DAT_RETURN r = request_flags(ep, flags, rf)) return r;
    if (DAT_RETURN r = post_state(ep)) return r;
    Sgl sg;
    if (!sg.build(n, iov)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (sg.total > (1u << 30))
        return err(DAT_LENGTH_ERROR);  // the IA limit; EP sizes are advisory here
    ri_wr_t wr;
    std::memset(&wr, 0, sizeof wr);
    wr.wr_send.type = inv ? RI_WR_TYPE_SEND_INVALIDATE : RI_WR_TYPE_SEND;
    wr.wr_send.flags = static_cast<ri_wr_flags_t>(rf);
    wr.wr_send.id = cookie.as_64;
    wr.wr_send.sg_list = sg.segs;
    wr.wr_send.num_sgls = sg.n;
    wr.wr_send.rtag = rmr;
    return post_sq(ep, wr);
}

DAT_RETURN ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                        DAT_COMPLETION_FLAGS flags) {
    return post_send_common(h, n, iov, cookie, flags, false, 0);
}
DAT_RETURN ep_post_send_with_invalidate(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                                        DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
                                        DAT_BOOLEAN inv, DAT_RMR_CONTEXT rmr) {
    return post_send_common(h, n, iov, cookie, flags, inv != DAT_FALSE, rmr);
}

DAT_RETURN ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                        DAT_COMPLETION_FLAGS flags) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (ep->srq) return err(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_RECV_WATERMARK);  // L7336
    if (n < 0 || n > ep->attr.max_recv_iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (n > 0 && !iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    // Receives take neither SUPPRESS nor BARRIER_FENCE (L8463).
    if (flags & ~unsigned(DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    if (!ep->qp) return ep_state_error(ep->state);
    Sgl sg;
    if (!sg.build(n, iov)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ri_wr_recv_t wr{};
    wr.id = cookie.as_64;
    wr.sg_list = sg.segs;
    wr.num_sgls = sg.n;
    uint_t cnt = 1;
    ri_err_data_t e = 0;
    // Counted before the post: its completion may be taken by another thread at once.
    const uint64_t posted = ep->recvs_posted.load(std::memory_order_relaxed);
    ep->recvs_posted.store(posted + 1, std::memory_order_relaxed);
    ri_api_return_t r = ri_qp_postrq(ep->ia->rnic, ep->qp, &wr, &cnt, &e);
    if (r != RI_RET_SUCCESS) {
        ep->recvs_posted.store(posted, std::memory_order_relaxed);
        return from_ri(r);
    }
    return DAT_SUCCESS;
}

DAT_RETURN post_rdma(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
                     const DAT_RMR_TRIPLET *remote, DAT_COMPLETION_FLAGS flags, bool read) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    // Reads are split per segment, so any gather list the request queue takes is fine.
    DAT_COUNT max = read ? std::max(ep->attr.max_rdma_read_iov, ep->attr.max_request_iov)
                         : std::max(ep->attr.max_rdma_write_iov, ep->attr.max_request_iov);
    if (n < 0 || n > std::max<DAT_COUNT>(max, 1))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (n > 0 && !iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (!remote) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    unsigned rf = 0;
    if (DAT_RETURN r = request_flags(ep, flags, rf, DAT_INVALID_ARG6)) return r;
    if (DAT_RETURN r = post_state(ep)) return r;
    Sgl sg;
    if (!sg.build(n, iov)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (sg.total > (1u << 30)) return err(DAT_LENGTH_ERROR);
    ri_wr_t wr;
    std::memset(&wr, 0, sizeof wr);
    if (read) {
        ri_data_seg_t empty{};
        wr.wr_rdma_read.type = RI_WR_TYPE_RDMA_READ;
        wr.wr_rdma_read.flags = static_cast<ri_wr_flags_t>(rf);
        wr.wr_rdma_read.id = cookie.as_64;
        // A zero-length read still needs one (empty) sink segment.
        if (sg.n == 0) {
            empty.addr.vaddr = remote->virtual_address;
            wr.wr_rdma_read.sg_list = &empty;
            wr.wr_rdma_read.num_sgls = 1;
        } else if (sg.n > 1) {
            // The RNIC reads into one sink segment per Read Request (iWARP), so a gather
            // list becomes consecutive reads of the remote range; only the last carries
            // the consumer's flags, and its completion reports the total length.
            uint64_t off = 0;
            for (uint_t i = 0; i + 1 < sg.n; ++i) {
                ri_wr_t part;
                std::memset(&part, 0, sizeof part);
                part.wr_rdma_read.type = RI_WR_TYPE_RDMA_READ;
                part.wr_rdma_read.flags =
                    static_cast<ri_wr_flags_t>(rf & ~unsigned(RI_WR_SIGNALED_FLAG));
                part.wr_rdma_read.id = cookie.as_64;
                part.wr_rdma_read.sg_list = &sg.segs[i];
                part.wr_rdma_read.num_sgls = 1;
                part.wr_rdma_read.rdma_addr = remote->virtual_address + off;
                part.wr_rdma_read.rtag = remote->rmr_context;
                off += sg.segs[i].len;
                if (DAT_RETURN r = post_sq(ep, part)) return r;
            }
            {
                std::lock_guard lk(ep->mu);
                ep->split_reads.push_back({cookie.as_64, uint32_t(sg.total)});
            }
            wr.wr_rdma_read.sg_list = &sg.segs[sg.n - 1];
            wr.wr_rdma_read.num_sgls = 1;
            wr.wr_rdma_read.rdma_addr = remote->virtual_address + off;
            wr.wr_rdma_read.rtag = remote->rmr_context;
            return post_sq(ep, wr);
        } else {
            wr.wr_rdma_read.sg_list = sg.segs;
            wr.wr_rdma_read.num_sgls = sg.n;
        }
        wr.wr_rdma_read.rdma_addr = remote->virtual_address;
        wr.wr_rdma_read.rtag = remote->rmr_context;
    } else {
        wr.wr_rdma_write.type = RI_WR_TYPE_RDMA_WRITE;
        wr.wr_rdma_write.flags = static_cast<ri_wr_flags_t>(rf);
        wr.wr_rdma_write.id = cookie.as_64;
        wr.wr_rdma_write.sg_list = sg.segs;
        wr.wr_rdma_write.num_sgls = sg.n;
        wr.wr_rdma_write.rdma_addr = remote->virtual_address;
        wr.wr_rdma_write.rtag = remote->rmr_context;
    }
    return post_sq(ep, wr);
}

DAT_RETURN ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                             DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                             DAT_COMPLETION_FLAGS flags) {
    return post_rdma(h, n, iov, cookie, remote, flags, true);
}
DAT_RETURN ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                              DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                              DAT_COMPLETION_FLAGS flags) {
    return post_rdma(h, n, iov, cookie, remote, flags, false);
}
// An RDMA Read whose sink is a bound RMR named by its context (L7459): RNICPI lets a
// window's RTag be the local sink of an RDMA Read on iWARP (rnicpi L8925), so this is one
// read work request whose single local segment carries the RMR's context.
DAT_RETURN ep_post_rdma_read_to_rmr(DAT_EP_HANDLE h, const DAT_RMR_TRIPLET *local,
                                    DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *remote,
                                    DAT_COMPLETION_FLAGS flags) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (!local) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!remote) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    unsigned rf = 0;
    if (DAT_RETURN r = request_flags(ep, flags, rf)) return r;
    if (DAT_RETURN r = post_state(ep)) return r;
    if (local->segment_length > (1u << 30)) return err(DAT_LENGTH_ERROR);
    // Checked against what the provider knows of the sink; the RNIC checks again when the
    // read runs (a remote invalidation may have come in between).
    DAT_LMR_TRIPLET bound{};  // the range the RMR is bound to
    DAT_MEM_PRIV_FLAGS priv{};
    Pz *pz = nullptr;
    bool wrong_ep = false;
    {
        std::lock_guard lk(ep->ia->mu);
        auto it = ep->ia->rmr_contexts.find(local->rmr_context);
        if (it == ep->ia->rmr_contexts.end()) return err(DAT_PRIVILEGES_VIOLATION);  // L7533
        Rmr *r = it->second;
        bound = r->triplet;
        priv = r->priv;
        pz = r->pz;
        wrong_ep = r->scope == DAT_RMR_SCOPE_EP && r->ep != ep;  // L8235
    }
    if (pz != ep->pz || wrong_ep) return err(DAT_PROTECTION_VIOLATION);
    if (!(priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)) return err(DAT_PRIVILEGES_VIOLATION);
    if (local->segment_length != 0 && (local->virtual_address < bound.virtual_address ||
                                       local->virtual_address + local->segment_length >
                                           bound.virtual_address + bound.segment_length))
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);  // outside its RMR (L7531)
    ri_data_seg_t sink{};
    sink.addr.vaddr = local->virtual_address;
    sink.tag.rtag = local->rmr_context;
    sink.len = local->segment_length;
    ri_wr_t wr;
    std::memset(&wr, 0, sizeof wr);
    wr.wr_rdma_read.type = RI_WR_TYPE_RDMA_READ;
    wr.wr_rdma_read.flags = static_cast<ri_wr_flags_t>(rf);
    wr.wr_rdma_read.id = cookie.as_64;
    wr.wr_rdma_read.sg_list = &sink;
    wr.wr_rdma_read.num_sgls = 1;
    wr.wr_rdma_read.rdma_addr = remote->virtual_address;
    wr.wr_rdma_read.rtag = remote->rmr_context;
    return post_sq(ep, wr);
}

// Receive buffers of an EP with its own receive queue (L6148): posted and not yet
// completed to its recv_evd. Buffers are matched in posting order, so the span equals the
// count. SRQ buffers taken by an EP are not visible through RNICPI: unknown, and
// MODEL_NOT_SUPPORTED as ep_recv_info_supported (which speaks of SRQ buffers) says.
DAT_RETURN ep_recv_query(DAT_EP_HANDLE h, DAT_COUNT *nbufs, DAT_COUNT *span) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    Evd *recv = nullptr;
    {
        std::lock_guard lk(ep->mu);
        if (ep->srq) {
            if (nbufs) *nbufs = DAT_VALUE_UNKNOWN;
            if (span) *span = DAT_VALUE_UNKNOWN;
            return err(DAT_MODEL_NOT_SUPPORTED);
        }
        recv = ep->recv;
    }
    if (recv && handles().valid(recv, DAT_HANDLE_TYPE_EVD)) {
        // Completions the RNIC already produced leave the count once queued on the EVD.
        std::vector<Ep *> broken;
        {
            std::lock_guard lk(recv->mu);
            size_t had = recv->q.size();
            pull_cq_locked(recv, &broken);
            if (recv->q.size() != had) recv->cv.notify_all();  // a waiter may want them
        }
        break_all(broken);
    }
    DAT_COUNT n = DAT_COUNT(std::max<int64_t>(0, ep->recvs_outstanding()));
    if (nbufs) *nbufs = n;
    if (span) *span = n;
    return DAT_SUCCESS;
}

// Soft and hard high watermarks of an EP on an SRQ (L6369). Values are counts of SRQ
// buffers the EP holds without a completion; DAT_WATERMARK_INFINITE turns one off. The
// QP's RNICPI RQ limit watches the lower of them; ep_watermark_reached() acts.
DAT_RETURN ep_set_watermark(DAT_EP_HANDLE h, DAT_COUNT soft, DAT_COUNT hard) {
    Ep *ep = as_ep(h);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (soft < 0 && soft != DAT_WATERMARK_INFINITE)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (hard < 0 && hard != DAT_WATERMARK_INFINITE)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    // srq_watermarks_supported covers EPs on an SRQ only (L2399-2401), as does RNICPI's
    // per-QP limit (RI_RET_QP_ATTRIBUTE_CANT_CHANGE without an SRQ).
    if (!ep->srq) return err(DAT_MODEL_NOT_SUPPORTED);
    std::lock_guard lk(ep->mu);  // any EP state (L6415)
    ep->attr.srq_soft_hw = soft;
    ep->attr.max_recv_dtos = hard;
    ep->soft_armed = soft != DAT_WATERMARK_INFINITE;  // re-armed by every call (L6404)
    // An EP already above a new mark is told at once: the RNIC fires on arming (L6436).
    wm_arm(ep);
    return DAT_SUCCESS;
}

// RNICPI RQ limit reached: the EP holds wm_mark SRQ buffers without completions.
void ep_watermark_reached(Ep *ep) {
    bool soft = false, hard = false;
    {
        std::lock_guard lk(ep->mu);
        if (!ep->qp || ep->wm_mark == 0) return;
        ri_qp_attr_t a{};
        ri_err_data_t e = 0;
        // Still armed: the event belongs to an earlier arming that a later
        // dat_ep_set_watermark replaced before this event was delivered.
        ri_api_return_t qr;
        {
            std::lock_guard q(ep->qp_mu);
            qr = ep->qp ? ri_qp_query(ep->ia->rnic, ep->qp, &a, &e) : RI_RET_QP_INVALID_HANDLE;
        }
        if (qr != RI_RET_SUCCESS || a.qp_xport.qp_iwarp.rq_armed) return;
        const uint64_t reached = ep->wm_mark;
        ep->wm_mark = 0;
        const DAT_COUNT s = ep->attr.srq_soft_hw, hw = ep->attr.max_recv_dtos;
        if (ep->soft_armed && s != DAT_WATERMARK_INFINITE && reached > uint64_t(s)) {
            soft = true;
            ep->soft_armed = false;  // once per setting (L6404)
        }
        hard = hw != DAT_WATERMARK_INFINITE && reached > uint64_t(hw);
        if (!hard) wm_arm(ep);  // keep watching what is left
    }
    if (soft)
        post_async(ep->ia, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, ep,
                   DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT);
    // Above the hard watermark the connection breaks, reported on connect_evd (L5892).
    if (hard) ep_break(ep, DAT_CONNECTION_EVENT_BROKEN, true);
}

}  // namespace softrnic::dapl
