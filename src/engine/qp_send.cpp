// The send queue: validating and posting work requests, handing them to the transport,
// their completions; the local memory operations (bind, fast-register, invalidate).
#include "engine/qp.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "base/stats.hpp"
#include "engine/abi.hpp"
#include "engine/qp_internal.hpp"

namespace softrnic::engine {

// ----------------------------------------------------------------------------- send queue

ri_api_return_t Qp::validate_sq_wr(const ri_wr_t &wr) const {
    const ri_wr_common_t &c = wr.wr_common;
    uint32_t flags = raw(c.flags);
    if (flags & ~kWrFlagsKnown) return RI_RET_WR_INVALID_FLAGS;
    ri_wr_type_t t = c.type;
    bool send = is_send_type(t);
    bool write = t == RI_WR_TYPE_RDMA_WRITE || t == RI_WR_TYPE_RDMA_WRITE_IMMEDIATE;
    if ((flags & RI_WR_SOLICITED_EVENT_FLAG) && !send && t != RI_WR_TYPE_RDMA_WRITE_IMMEDIATE)
        return RI_RET_WR_INVALID_FLAGS;
    if ((flags & RI_WR_READ_FENCE_FLAG) && !send && !write) return RI_RET_WR_INVALID_FLAGS;
    if ((flags & RI_WR_LOCAL_FENCE_FLAG) && t != RI_WR_TYPE_LOCAL_INVALIDATE_MR &&
        t != RI_WR_TYPE_LOCAL_INVALIDATE_MW)
        return RI_RET_WR_INVALID_FLAGS;
    auto check_sgl = [](const ri_data_seg_t *sg, uint32_t n, uint32_t max) -> ri_api_return_t {
        if (n > max) return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
        if (n && !sg) return RI_RET_WR_SG_INVALID_FORMAT;
        return RI_RET_SUCCESS;
    };
    uint32_t caps = chan_caps.load(std::memory_order_acquire);
    if (t == RI_WR_TYPE_SEND_IMMEDIATE && !(caps & transport::Channel::kCapSendImmediate))
        return RI_RET_OP_UNSUPPORTED;
    if (t == RI_WR_TYPE_RDMA_WRITE_IMMEDIATE && !(caps & transport::Channel::kCapWriteImmediate))
        return RI_RET_OP_UNSUPPORTED;
    switch (t) {
        case RI_WR_TYPE_SEND:
        case RI_WR_TYPE_SEND_INVALIDATE:
        case RI_WR_TYPE_SEND_IMMEDIATE:
            return check_sgl(wr.wr_send.sg_list, wr.wr_send.num_sgls, sq_max_sges);
        case RI_WR_TYPE_RDMA_WRITE:
        case RI_WR_TYPE_RDMA_WRITE_IMMEDIATE:
            return check_sgl(wr.wr_rdma_write.sg_list, wr.wr_rdma_write.num_sgls,
                             sq_max_sges_rdmaw);
        case RI_WR_TYPE_RDMA_READ:
            return check_sgl(wr.wr_rdma_read.sg_list, wr.wr_rdma_read.num_sgls, sq_max_sges);
        case RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE:
            // The sink is one STag that gets invalidated: exactly one SGE (L4389).
            if (wr.wr_rdma_read.num_sgls != 1 || !wr.wr_rdma_read.sg_list)
                return RI_RET_WR_SG_INVALID_FORMAT;
            return RI_RET_SUCCESS;
        case RI_WR_TYPE_BIND: {
            const ri_wr_bind_t &b = wr.wr_bind;
            MemEntry *mw = dev->stags.from_handle(b.mw_handle, true);
            if (!mw || mw->owner_rnic.load(std::memory_order_acquire) != owner)
                return RI_RET_MW_INVALID_HANDLE;
            if (!dev->stags.from_handle(b.mr_handle, false)) return RI_RET_MR_INVALID_HANDLE;
            if (b.length == 0 && mw->kind() == MemKind::Window2) return RI_RET_INVALID_WINDOW_TYPE;
            if (raw(b.mem_attr) & ~static_cast<uint32_t>(RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE |
                                                         RI_MEM_FLAGS_ATOMICS | RI_MEM_FLAGS_ZBVA))
                return RI_RET_MEM_INVALID_ACCESS;
            return RI_RET_SUCCESS;
        }
        case RI_WR_TYPE_FAST_REGISTER: {
            if (!dev->stags.from_handle(wr.wr_fmr.mr_handle, false))
                return RI_RET_MR_INVALID_HANDLE;
            const ri_mr_reg_phys_attr_t &a = wr.wr_fmr.attr;
            if (a.nbufs && !a.phys_buf_list) return RI_RET_MEM_INVALID_PBLE;
            return RI_RET_SUCCESS;
        }
        case RI_WR_TYPE_LOCAL_INVALIDATE_MR:
            if (!dev->stags.from_handle(wr.wr_li.mrw_handle.mr_handle, false))
                return RI_RET_MR_INVALID_HANDLE;
            return RI_RET_SUCCESS;
        case RI_WR_TYPE_LOCAL_INVALIDATE_MW: {
            MemEntry *mw = dev->stags.from_handle(wr.wr_li.mrw_handle.mw_handle, true);
            if (!mw) return RI_RET_MW_INVALID_HANDLE;
            // Type 1 windows are unbound by a zero-length bind, never invalidated (L4440).
            if (mw->kind() == MemKind::Window1) return RI_RET_INVALID_WINDOW_TYPE;
            return RI_RET_SUCCESS;
        }
        case RI_WR_TYPE_COMPARE_AND_SWAP:
        case RI_WR_TYPE_FETCH_AND_ADD:
            // The stream must carry them (RFC 7306 agreed with a TCP peer).
            if (!(caps & transport::Channel::kCapAtomics)) return RI_RET_RNIC_ATOMICS_UNSUPPORTED;
            if (wr.wr_atomic.atomic_result.len < 8) return RI_RET_WR_SG_INVALID_FORMAT;
            return RI_RET_SUCCESS;
    }
    return RI_RET_WR_INVALID_TYPE;
}

ri_api_return_t Qp::post_sq(const ri_wr_t *wrs, uint32_t &num) {
    // A UD QP's WRs are datagrams (qp_datagram.cpp); one test per call, not per WR.
    if (ib && ib->service == IbService::Ud) [[unlikely]]
        return post_sq_datagram(wrs, num);
    uint32_t n = num;
    num = 0;
    if (n && !wrs) return RI_RET_INVALID_PARAMETER;
    for (uint32_t i = 0; i < n; ++i) {
        const ri_wr_t &wr = wrs[i];
        ri_qp_state_t st = state.load(std::memory_order_acquire);
        if (st == RI_QP_STATE_IDLE) return RI_RET_QP_INVALID_STATE;
        if (raw(wr.wr_common.type) > RI_WR_TYPE_RDMA_WRITE_IMMEDIATE) return RI_RET_WR_INVALID_TYPE;
        if (ri_api_return_t r = validate_sq_wr(wr); r != RI_RET_SUCCESS) return r;
        uint64_t retired = dev->sq_retired[slot].load(std::memory_order_acquire);
        uint64_t retired_pos = (retired >> 40) == (incarnation & 0xFFFFFF) ? retired & kPosMask : 0;
        if (sq_head - retired_pos >= sq_size) return RI_RET_QP_CAPACITY_EXCEEDED;
        WrInfo info{wr.wr_common.id, raw(wr.wr_common.flags) | sq_sig_all, wr.wr_common.type,
                    is_send_type(wr.wr_common.type) ? wr.wr_send.rtag : 0, ++sq_head};
        if (st == RI_QP_STATE_READY_TO_SEND) {
            execute_sq_wr(wr, info);
        } else {
            // An IB QP outside RTS: its own state decides (qp_ib_state.cpp).
            if (ib) {
                if (ri_api_return_t r = ib_sq_post_state(); r != RI_RET_SUCCESS) {
                    --sq_head;
                    return r;
                }
            }
            complete_sq(info, wc_type_of(info.type), RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
        }
        ++num;
    }
    return RI_RET_SUCCESS;
}

void Qp::complete_sq(const WrInfo &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                     bool force) {
    Cqe e{};
    if (!sq_cqe(w, type, status, bytes, force, e)) return;
    if (!scq->push(e)) {
        raise(RI_EVENT_QP_CQ_SQ_ERROR);
        enter_error(false);
    }
}

ri_wc_status_t Qp::resolve_local(const ri_data_seg_t *sg, uint32_t n, uint32_t need, IoSpan *spans,
                                 MemRef *refs, uint64_t &total) {
    total = 0;
    for (uint32_t i = 0; i < n; ++i) {
        refs[i] = MemRef{};
        const ri_data_seg_t &s = sg[i];
        if (s.tag.ltag == 0) {
            // STag0: already pinned memory, privileged consumers on enabled QPs only (L1589).
            if (!owner->privileged() || !enable_stag0_fastreg) {
                put_refs(refs, i);
                return RI_WC_STATUS_INVALID_STAG_ERROR;
            }
            spans[i] = {reinterpret_cast<std::byte *>(static_cast<uintptr_t>(s.addr.vaddr)), s.len};
        } else {
            MemFault f =
                dev->stags.acquire(s.tag.ltag, s.addr.vaddr, s.len, need, pd, this, refs[i]);
            if (f != MemFault::None) {
                put_refs(refs, i);
                return fault_status(f);
            }
            spans[i] = {refs[i].ptr, s.len};
        }
        total += s.len;
    }
    if (total > UINT32_MAX) {
        put_refs(refs, n);
        return RI_WC_STATUS_HUGE_PAYLOAD_ERROR;
    }
    return RI_WC_STATUS_SUCCESS;
}

void Qp::put_refs(MemRef *refs, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i)
        StagTable::put(refs[i]);
}

void Qp::execute_sq_wr(const ri_wr_t &wr, const WrInfo &info) {
    ri_wr_type_t t = wr.wr_common.type;
    ri_wc_type_t wct = wc_type_of(t);
    uint32_t flags = raw(wr.wr_common.flags);
    switch (t) {
        case RI_WR_TYPE_BIND:
        case RI_WR_TYPE_FAST_REGISTER:
        case RI_WR_TYPE_LOCAL_INVALIDATE_MR:
        case RI_WR_TYPE_LOCAL_INVALIDATE_MW: {
            ri_wc_status_t st = t == RI_WR_TYPE_BIND            ? local_bind(wr.wr_bind)
                                : t == RI_WR_TYPE_FAST_REGISTER ? local_fmr(wr.wr_fmr)
                                                                : local_invalidate(wr.wr_li);
            complete_sq(info, wct, st, 0, false);
            if (st != RI_WC_STATUS_SUCCESS)
                fail_local(RI_EVENT_QP_LOCAL_CATASTROPHIC_ERROR, true, RemoteFault::Catastrophic);
            return;
        }
        default:
            break;
    }

    transport::OutboundOp op;
    IoSpan spans[Limits::kMaxSge + 1];
    InFlight f;
    f.w = info;
    f.wct = wct;
    MemRef *refs = f.refs;
    uint32_t nrefs = 0;
    ri_wc_status_t st = RI_WC_STATUS_SUCCESS;
    op.solicited = flags & RI_WR_SOLICITED_EVENT_FLAG;
    switch (t) {
        case RI_WR_TYPE_SEND:
        case RI_WR_TYPE_SEND_INVALIDATE:
        case RI_WR_TYPE_SEND_IMMEDIATE:
            op.kind = t == RI_WR_TYPE_SEND              ? OpKind::Send
                      : t == RI_WR_TYPE_SEND_INVALIDATE ? OpKind::SendInvalidate
                                                        : OpKind::SendImmediate;
            op.remote_stag = wr.wr_send.rtag;
            op.immediate = wr.wr_send.imm_data;
            nrefs = wr.wr_send.num_sgls;
            st = resolve_local(wr.wr_send.sg_list, nrefs, RI_MEM_FLAGS_LOCAL_READ, spans, refs,
                               op.length);
            break;
        case RI_WR_TYPE_RDMA_WRITE:
        case RI_WR_TYPE_RDMA_WRITE_IMMEDIATE:
            op.kind = t == RI_WR_TYPE_RDMA_WRITE ? OpKind::RdmaWrite : OpKind::RdmaWriteImmediate;
            op.remote_stag = wr.wr_rdma_write.rtag;
            op.remote_to = wr.wr_rdma_write.rdma_addr;
            op.immediate = wr.wr_rdma_write.imm_data;
            nrefs = wr.wr_rdma_write.num_sgls;
            st = resolve_local(wr.wr_rdma_write.sg_list, nrefs, RI_MEM_FLAGS_LOCAL_READ, spans,
                               refs, op.length);
            break;
        case RI_WR_TYPE_RDMA_READ:
        case RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE:
            op.kind = OpKind::RdmaRead;
            op.remote_stag = wr.wr_rdma_read.rtag;
            op.remote_to = wr.wr_rdma_read.rdma_addr;
            nrefs = wr.wr_rdma_read.num_sgls;
            if (ord == 0) {
                st = RI_WC_STATUS_ZERO_ORD_ERROR;
                nrefs = 0;
                break;
            }
            // The sink may be a window bound with local write (RNICPI L8925).
            st =
                resolve_local(wr.wr_rdma_read.sg_list, nrefs,
                              RI_MEM_FLAGS_LOCAL_WRITE | kWindowAsReadSink, spans, refs, op.length);
            break;
        case RI_WR_TYPE_COMPARE_AND_SWAP:
        case RI_WR_TYPE_FETCH_AND_ADD:
            op.kind = t == RI_WR_TYPE_FETCH_AND_ADD ? OpKind::FetchAdd : OpKind::CompareSwap;
            op.remote_stag = wr.wr_atomic.rtag;
            op.operand1 = wr.wr_atomic.atomic_operand1;
            op.operand2 = wr.wr_atomic.atomic_operand2;

            nrefs = 0;
            if (ord == 0) {
                st = RI_WC_STATUS_ZERO_ORD_ERROR;
                break;
            }
            {
                ri_data_seg_t res = wr.wr_atomic.atomic_result;
                res.len = 8;
                nrefs = 1;
                st = resolve_local(&res, 1, RI_MEM_FLAGS_LOCAL_WRITE, spans, refs, op.length);
            }
            // RNICPI's atomic WR has no remote address (L8707-9053): the target is the first
            // 8 bytes of the region or window the rtag names (docs/spec-deviations.md).
            op.remote_to = transport::kAtomicAtBase;
            op.length = 8;
            break;
        default:
            break;
    }
    if (st != RI_WC_STATUS_SUCCESS) {
        complete_sq(info, wct, st, 0, true);
        fail_local(RI_EVENT_QP_LOCAL_CATASTROPHIC_ERROR, true, RemoteFault::Catastrophic);
        return;
    }
    f.nrefs = nrefs;
    f.bytes = op.length;
    if (t == RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE) f.li_stag = wr.wr_rdma_read.sg_list[0].tag.ltag;
    if (t == RI_WR_TYPE_FETCH_AND_ADD || t == RI_WR_TYPE_COMPARE_AND_SWAP)
        f.atomic_dst = spans[0].ptr;
    op.local = std::span<const IoSpan>(spans, nrefs);
    if (!chan) {
        finish_outbound(f, {OpOutcome::Disconnected, {}});
        return;
    }
    if (!async_chan) {
        op.atomic_result = &f.atomic_value;
        finish_outbound(f, chan->submit(op));
        return;
    }
    // Asynchronous transport. First its synchronous fast path, while nothing is in flight
    // (completing at once cannot overtake anything then): no record, no lock. An atomic
    // carried out there (the IB RC channel's) leaves its original value in `f`.
    op.atomic_result = &f.atomic_value;
    if (transport::OpResult now; inflight.idle() && chan->submit_now(op, now)) {
        finish_outbound(f, now);
        return;
    }
    // Otherwise the record goes into the list before submit, since the transport may
    // finish it from its own thread before submit returns.
    auto &entry = inflight.push(f);
    transport::InflightOp &rec = entry.op;
    op.inflight = &rec;
    op.atomic_result = &entry.work.atomic_value;
    transport::OpResult res = chan->submit(op);
    if (res.outcome == OpOutcome::Pending) return;
    // Finished by submit itself: complete it now if nothing older is left; otherwise the
    // transport's next report, which the older ones' finishing brings, completes it in turn.
    InFlight done;
    if (inflight.take_finished_head(done, res, &rec)) {
        finish_outbound(done, res);
        inflight.taken();
    }
}

void Qp::finish_outbound(InFlight &f, transport::OpResult res) {
    if (cancelling.load(std::memory_order_acquire)) {
        put_refs(f.refs, f.nrefs);  // destroy: cancelled, no completion (L4033-4043)
        f.nrefs = 0;
        return;
    }
    ri_wr_type_t t = f.w.type;
    if (res.outcome == OpOutcome::Done && f.atomic_dst)
        std::memcpy(f.atomic_dst, &f.atomic_value, 8);
    ri_wc_status_t li_status = RI_WC_STATUS_SUCCESS;
    if (res.outcome == OpOutcome::Done && t == RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE) {
        // The sink STag is invalidated once the data is in, under the same rules as a
        // local invalidate (no windows bound, not shared).
        MemEntry *e = f.nrefs ? f.refs[0].entry : nullptr;
        li_status = e ? invalidate_status(StagTable::invalidate(*e, f.li_stag, pd, this))
                      : RI_WC_STATUS_INVALID_STAG_ERROR;
    }
    put_refs(f.refs, f.nrefs);
    f.nrefs = 0;
    if (li_status != RI_WC_STATUS_SUCCESS) {
        complete_sq(f.w, f.wct, li_status, 0, true);
        fail_local(RI_EVENT_QP_LOCAL_CATASTROPHIC_ERROR, true, RemoteFault::Catastrophic);
        return;
    }
    switch (res.outcome) {
        case OpOutcome::Done:
            complete_sq(f.w, f.wct, RI_WC_STATUS_SUCCESS, f.bytes, false);
            break;
        case OpOutcome::Pending:
            break;
        case OpOutcome::Terminated:
            if (ib) {
                ib_fail_outbound(f, res);
            } else if (state.load(std::memory_order_acquire) == RI_QP_STATE_READY_TO_SEND) {
                // Reported by the submit itself (synchronous transport): this is the news.
                complete_sq(f.w, f.wct, RI_WC_STATUS_REMOTE_TERMINATION_ERROR, 0, true);
                record_fault({res.fault, res.op, 0, 0, false}, false);
                raise(RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED);
                enter_error(false);
            } else if (terminate_received.exchange(false, std::memory_order_acq_rel)) {
                // rx_terminate already raised the event and moved to Error.
                complete_sq(f.w, f.wct, RI_WC_STATUS_REMOTE_TERMINATION_ERROR, 0, true);
            } else {
                complete_sq(f.w, f.wct, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
            }
            break;
        case OpOutcome::Disconnected:
            if (ib) {
                ib_fail_outbound(f, res);
                break;
            }
            complete_sq(f.w, f.wct, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
            if (state.load(std::memory_order_acquire) == RI_QP_STATE_READY_TO_SEND) {
                raise(RI_EVENT_QP_LLQ_CONNECTION_LOST);
                enter_error(false);
            }
            break;
    }
}

void Qp::ib_fail_outbound(const InFlight &f, transport::OpResult res) {
    // A QP still sending reports what its operation met and goes to Error. Otherwise a NAK is
    // still the operation's own news (a QP paired with itself is in Error from the
    // responder's side of the fault already); anything else was cut short: flushed.
    // (RTS, or SQD, where operations held before it go on: kIbReceiving.)
    const ri_qp_state_t now = state.load(std::memory_order_acquire);
    const bool live = now == RI_QP_STATE_READY_TO_SEND || now == kIbReceiving;
    ri_wc_status_t st = RI_WC_STATUS_REMOTE_OP_ERROR;
    if (res.outcome == OpOutcome::Disconnected) {
        // The responder never answered within the retry clock (docs/ib-personality.md 7.2).
        st = live ? RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED : RI_WC_STATUS_WR_FLUSHED_ERROR;
    } else {
        // The NAK the responder's fault is (7.1).
        switch (res.fault) {
            case RemoteFault::NoReceiveBuffer:
                st = RI_WC_STATUS_RNR_RETRY_EXCEEDED;
                break;
            case RemoteFault::InvalidStag:
            case RemoteFault::Bounds:
            case RemoteFault::Access:
            case RemoteFault::NotAssociated:
            case RemoteFault::Wrap:
            case RemoteFault::CannotInvalidate:
                st = RI_WC_STATUS_REMOTE_ACCESS_ERROR;
                break;
            case RemoteFault::UnexpectedOpcode:
            case RemoteFault::MessageTooLong:
                st = RI_WC_STATUS_REMOTE_INVALID_REQ_ERROR;
                break;
            default:
                break;
        }
    }
    complete_sq(f.w, f.wct, st, 0, true);
    // A requester's error is reported by its completion alone (no affiliated event).
    if (live) enter_error(false);
}

transport::InflightOp *Qp::tx_record(uint32_t seq) {
    return inflight.find(seq);
}

void Qp::tx_fail_all(transport::OpResult oldest) {
    inflight.fail_all(oldest);
}

void Qp::tx_report() {
    InFlight f;
    transport::OpResult r;
    while (inflight.take_finished_head(f, r)) {
        finish_outbound(f, r);
        inflight.taken();
    }
}

void Qp::complete_inflight() {
    // Only once the transport let go of every record (detached): nothing can still be
    // writing into the sink buffers these records pin. Unfinished ones flush; on destroy
    // (cancelling) they only release their memory.
    InFlight f;
    transport::OpResult r;
    while (inflight.take_any_head(f, r)) {
        finish_outbound(f, r);
        inflight.taken();
    }
}

// ------------------------------------------------------------------ local memory operations

ri_wc_status_t Qp::local_bind(const ri_wr_bind_t &b) {
    if (!enable_bind) return RI_WC_STATUS_INVALID_BIND_MW_ERROR;
    MemEntry *mw = dev->stags.from_handle(b.mw_handle, true);
    MemEntry *mr = dev->stags.from_handle(b.mr_handle, false);
    if (!mw) return RI_WC_STATUS_INVALID_BIND_MW_ERROR;
    if (!mr) return RI_WC_STATUS_INVALID_BIND_MR_ERROR;
    std::lock_guard change(mw->change_mu);
    if (mw->pd != pd) return RI_WC_STATUS_INVALID_BIND_MW_ERROR;
    // Type 2 windows must be free (invalid) to bind; type 1 may be re-bound.
    if (mw->kind() == MemKind::Window2 && mw->valid()) return RI_WC_STATUS_INVALID_BIND_MW_ERROR;
    // The region is checked and counted from inside its gate, so a concurrent dereg or
    // rereg (which closes the gate before looking at the count) either sees this window
    // or makes the bind fail.
    if (!mr->gate.try_enter()) return RI_WC_STATUS_INVALID_BIND_MR_ERROR;
    struct Leave {
        MemEntry *e;
        ~Leave() { e->gate.leave(); }
    } leave{mr};
    // The MR: valid, same LTag, same PD, allows binding, window inside it.
    if (!mr->valid() || mr->stag() != b.ltag || mr->pd != pd ||
        !(mr->access & RI_MEM_FLAGS_BINDING))
        return RI_WC_STATUS_INVALID_BIND_MR_ERROR;
    bool zbva = raw(b.mem_attr) & RI_MEM_FLAGS_ZBVA;
    if (b.length && (b.vaddr < mr->to_base || b.vaddr + b.length < b.vaddr ||
                     b.vaddr + b.length > mr->to_base + mr->length))
        return RI_WC_STATUS_INVALID_BIND_MR_ERROR;
    // A window grants remote rights, plus local write so that it can be an RDMA Read
    // sink (L8925; no other local use accepts a window), and only where the region's pages
    // may be written: remote write, atomics and local write need the region's local write
    // (L8338-8382).
    uint32_t want =
        raw(b.mem_attr) & (RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_ATOMICS | RI_MEM_FLAGS_LOCAL_WRITE);
    if ((want & (RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS | RI_MEM_FLAGS_LOCAL_WRITE)) &&
        !(mr->access & RI_MEM_FLAGS_LOCAL_WRITE))
        return RI_WC_STATUS_INVALID_BIND_MR_ERROR;
    mw->gate.close();
    withdraw_grants(*mw);  // the old binding's grants go with it
    MemEntry *old_parent = mw->valid() ? mw->parent : nullptr;
    mw->word.store(uint64_t{mw->index} << 8 | (b.rtag & 0xFF), std::memory_order_release);
    if (old_parent) old_parent->bound_windows.fetch_sub(1, std::memory_order_acq_rel);
    mw->parent = nullptr;
    if (b.length == 0) {  // type 1 zero-length bind: unbind (RDMAC)
        mw->gate.open();
        return RI_WC_STATUS_SUCCESS;
    }
    mw->parent = mr;
    mw->host = mr->host + (b.vaddr - mr->to_base);
    mw->to_base = zbva ? 0 : b.vaddr;
    mw->zbva = zbva;
    mw->length = b.length;
    mw->access = want;
    mw->bound_qp.store(mw->kind() == MemKind::Window2 ? this : nullptr, std::memory_order_release);
    if (mw->kind() == MemKind::Window2) bound_narrow_windows.store(true, std::memory_order_release);
    mr->bound_windows.fetch_add(1, std::memory_order_acq_rel);
    mw->word.store(uint64_t{mw->index} << 8 | (b.rtag & 0xFF) | MemEntry::kValid,
                   std::memory_order_release);
    mw->gate.open();
    return RI_WC_STATUS_SUCCESS;
}

ri_wc_status_t Qp::local_fmr(const ri_wr_fmr_t &w) {
    if (!enable_stag0_fastreg || !owner->privileged())
        return RI_WC_STATUS_FMR_QP_NOT_PRIVILEGED_ERROR;
    MemEntry *e = dev->stags.from_handle(w.mr_handle, false);
    if (!e || e->kind() != MemKind::FastRegRegion) return RI_WC_STATUS_INVALID_STAG_ERROR;
    std::lock_guard change(e->change_mu);
    if ((w.ltag >> 8) != e->index) return RI_WC_STATUS_INVALID_STAG_ERROR;
    if (e->valid()) return RI_WC_STATUS_STAG_NOT_IN_INVALID_STATE_ERROR;
    if (e->pd != pd) return RI_WC_STATUS_INVALID_PD_ERROR;
    const ri_mr_reg_phys_attr_t &a = w.attr;
    uint32_t access = raw(a.common.mem_attr) | RI_MEM_FLAGS_LOCAL_READ;
    if ((access & (RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_ATOMICS | RI_MEM_FLAGS_LOCAL_WRITE)) &
        ~e->access)
        return RI_WC_STATUS_INVALID_FMR_PERMS_ERROR;
    if (a.nbufs > e->pbl_capacity) return RI_WC_STATUS_FMR_PBL_TOO_LONG_ERROR;
    if (a.nbufs == 0) return RI_WC_STATUS_INVALID_FMR_LENGTH_ERROR;
    // Identity "physical" pages: the list must describe one virtually contiguous range.
    uint64_t start = 0, total = 0;
    if (a.pble_size) {
        if (a.pble_size != Limits::kPageSize) return RI_WC_STATUS_INVALID_FMR_PAGE_SIZE_ERROR;
        auto *pages = static_cast<const ri_phys_addr_t *>(a.phys_buf_list);
        for (uint32_t i = 0; i < a.nbufs; ++i) {
            if (pages[i] % Limits::kPageSize) return RI_WC_STATUS_INVALID_FMR_PBL_ENTRY_ERROR;
            if (i && pages[i] != pages[0] + i * Limits::kPageSize)
                return RI_WC_STATUS_INVALID_FMR_PBL_ENTRY_ERROR;
        }
        start = pages[0];
        total = uint64_t{a.nbufs} * Limits::kPageSize;
    } else {
        auto *bufs = static_cast<const ri_phys_buf_t *>(a.phys_buf_list);
        start = bufs[0].phys_address;
        for (uint32_t i = 0; i < a.nbufs; ++i) {
            if (bufs[i].phys_address != start + total)
                return RI_WC_STATUS_INVALID_FMR_PBL_ENTRY_ERROR;
            total += bufs[i].phys_len;
        }
    }
    if (total == 0 || start + total < start) return RI_WC_STATUS_INVALID_FMR_LENGTH_ERROR;
    if (a.address_offset >= total) return RI_WC_STATUS_INVALID_FMR_FBO_ERROR;
    uint64_t len = a.common.length;
    // Written so it cannot wrap: offset < total is known.
    if (len == 0 || len > total - a.address_offset) return RI_WC_STATUS_INVALID_FMR_LENGTH_ERROR;
    bool zbva = access & RI_MEM_FLAGS_ZBVA;
    if (!zbva && a.common.va + len < a.common.va) return RI_WC_STATUS_INVALID_FMR_VA_ERROR;
    // The "physical" pages are this process's memory: they must exist, and be writable
    // if anything may write them.
    bool need_write =
        access & (RI_MEM_FLAGS_LOCAL_WRITE | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS);
    if (!range_mapped(start, total, need_write)) return RI_WC_STATUS_INVALID_FMR_PBL_ENTRY_ERROR;
    e->gate.close();
    withdraw_grants(*e);
    e->host = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(start + a.address_offset));
    e->to_base = zbva ? 0 : a.common.va;
    e->zbva = zbva;
    e->length = len;
    e->access = access;
    e->word.store(uint64_t{e->index} << 8 | (w.ltag & 0xFF) | MemEntry::kValid,
                  std::memory_order_release);
    e->gate.open();
    return RI_WC_STATUS_SUCCESS;
}

ri_wc_status_t Qp::local_invalidate(const ri_wr_local_invalidate_t &w) {
    bool window = false;
    MemEntry *e = dev->stags.from_handle(w.mrw_handle.mr_handle, false);
    if (!e) {
        e = dev->stags.from_handle(w.mrw_handle.mw_handle, true);
        window = true;
    }
    if (!e) return RI_WC_STATUS_INVALID_STAG_ERROR;
    return invalidate_status(StagTable::invalidate(*e, window ? w.rtag : w.ltag, pd, this));
}

}  // namespace softrnic::engine
