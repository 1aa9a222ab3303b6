// The receive queue and the responder side: what the transport delivers for this QP
// (tagged placement, receives, atomics, Terminates, the stream's end).
#include "engine/qp.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "base/stats.hpp"
#include "engine/abi.hpp"
#include "engine/qp_internal.hpp"

namespace softrnic::engine {

// -------------------------------------------------------------------------- receive queue

ri_api_return_t Qp::post_rq(const ri_wr_recv_t *wrs, uint32_t &num) {
    uint32_t n = num;
    num = 0;
    if (n && !wrs) return RI_RET_INVALID_PARAMETER;
    if (srq) return RI_RET_QP_TIED_TO_SRQ;
    for (uint32_t i = 0; i < n; ++i) {
        const ri_wr_recv_t &w = wrs[i];
        if (raw(w.flags) & ~kRecvFlagsKnown) return RI_RET_WR_INVALID_FLAGS;
        if (w.num_sgls > rq_max_sges) return RI_RET_RNIC_SG_LIMIT_EXCEEDED;
        if (w.num_sgls && !w.sg_list) return RI_RET_WR_SG_INVALID_FORMAT;
        ri_qp_state_t st = state.load(std::memory_order_acquire);
        if (st != RI_QP_STATE_IDLE && st != RI_QP_STATE_READY_TO_SEND) {
            if (st != kIbParked && st != kIbReceiving) {
                // Error (and transient) states: accepted and completed as flushed (L4659-4665).
                RecvWqe wqe{w.id, raw(w.flags), w.num_sgls};
                complete_recv(wqe, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, 0, 0,
                              0);
                ++num;
                continue;
            }
            // An IB QP outside Error (ib_qp_context.hpp): its receive queue takes WRs from
            // Init on; in Reset they are refused (L4659, docs/ib-personality.md A15).
            if (ib->state.load(std::memory_order_acquire) == IbQpState::Reset)
                return RI_RET_QP_INVALID_STATE;
        }
        bool ok = rq.push([&](RecvWqe &h, std::span<ri_data_seg_t> sg) {
            h = {w.id, raw(w.flags), w.num_sgls};
            std::copy_n(w.sg_list, w.num_sgls, sg.begin());
        });
        if (!ok) return RI_RET_QP_CAPACITY_EXCEEDED;
        // A concurrent move to ERROR may have flushed before our push landed: flush again.
        ri_qp_state_t after = state.load(std::memory_order_seq_cst);
        if (after != RI_QP_STATE_IDLE && after != RI_QP_STATE_READY_TO_SEND && after != kIbParked &&
            after != kIbReceiving && !error_pending.load(std::memory_order_acquire))
            flush_rq();
        ++num;
    }
    return RI_RET_SUCCESS;
}

void Qp::complete_recv(const RecvWqe &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                       uint32_t wc_flags, uint32_t inv_rtag, uint32_t imm) {
    Cqe e{};
    recv_cqe(w, type, status, bytes, wc_flags, inv_rtag, imm, e);
    if (!rcq->push(e)) {
        raise(RI_EVENT_QP_CQ_RQ_ERROR);
        enter_error(true);
    }
}

void Qp::discard_rq() {
    std::lock_guard lk(rq_mu);
    while (rq.pop([](const RecvWqe &, std::span<const ri_data_seg_t>) {})) {
    }
}

void Qp::flush_rq() {
    std::lock_guard lk(rq_mu);  // against a receive-queue resize (slow paths only)
    RecvWqe w{};
    while (rq.pop([&](const RecvWqe &h, std::span<const ri_data_seg_t>) { w = h; }))
        complete_recv(w, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, 0, 0, 0);
}

bool Qp::take_recv(RecvWqe &w, ri_data_seg_t *sges) {
    auto take = [&](const RecvWqe &h, std::span<const ri_data_seg_t> sg) {
        w = h;
        std::copy_n(sg.begin(), std::min<size_t>(h.num_sgls, sg.size()), sges);
    };
    if (!srq) return rq.pop(take);
    GateScope g(srq->resize_gate, /*wait=*/true);
    if (!g || !srq->ring.pop(take)) return false;
    uint32_t left = srq->posted.fetch_sub(1, std::memory_order_acq_rel) - 1;
    uint32_t lowat = srq->lowat.load(std::memory_order_acquire);
    if (lowat && left < lowat && srq->limit_armed.exchange(false, std::memory_order_acq_rel))
        dev->raise(RI_EVENT_SRQ_LIMIT_REACHED, srq->handle, ObjKind::Srq, srq->os_data);
    uint32_t outstanding = srq_outstanding.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (rq_armed.load(std::memory_order_acquire)) {
        // A zero high-water mark fires on the first WQE taken after arming (L2700-2706).
        uint32_t hiwat = rq_hiwat.load(std::memory_order_acquire);
        if (outstanding >= std::max<uint32_t>(hiwat, 1) &&
            rq_armed.exchange(false, std::memory_order_acq_rel))
            raise(RI_EVENT_QP_RQ_LIMIT_REACHED);
    }
    return true;
}

// ------------------------------------------------------------------------ responder side

RxStatus Qp::rx_tagged_acquire(uint32_t stag, uint64_t to, uint64_t len, bool for_read, IoSpan &out,
                               void *&ref) {
    RxScope scope(*this);
    if (!scope) return RxStatus::fail(RemoteFault::Catastrophic);
    const FaultReport site{RemoteFault::UnexpectedOpcode,
                           for_read ? FaultedOp::ReadRequest : FaultedOp::Write, stag, to};
    if (for_read && !enable_read)
        return fail_rx(RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_RD_DISABLED, site);
    if (!for_read && !enable_write)
        return fail_rx(RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_WR_RD_RESP_DISABLED, site);
    MemRef r;
    uint32_t need = for_read ? RI_MEM_FLAGS_REMOTE_READ : RI_MEM_FLAGS_REMOTE_WRITE;
    MemFault f = dev->stags.acquire(stag, to, len, need, pd, this, r);
    if (f == MemFault::None) {
        out = {r.ptr, len};
        ref = r.entry;
        return RxStatus::success();
    }
    return fail_remote(f, for_read, site);
}

bool Qp::rx_tagged_grant(void *ref, uint64_t &to, uint64_t &len, std::byte *&host) {
    // The caller holds the entry's gate (its reference): the fields are stable, and a
    // writer that closes the gate sees the mark once it has. An invalidation flips the
    // valid bit without waiting for us: marked first, re-checked after, so that either it
    // sees the mark (and withdraws) or we see its flip (and grant nothing).
    auto *e = static_cast<MemEntry *>(ref);
    if (!e) return false;
    e->granted.store(true, std::memory_order_seq_cst);
    if (!(e->word.load(std::memory_order_seq_cst) & MemEntry::kValid)) return false;
    to = e->to_base;
    len = e->length;
    host = e->host;
    return true;
}

void Qp::rx_tagged_release(void *ref) {
    MemRef r{static_cast<MemEntry *>(ref), nullptr, 0};
    StagTable::put(r);
}

RxStatus Qp::rx_recv_begin(transport::RxRecv &r) {
    RxScope scope(*this);
    if (!scope) return RxStatus::fail(RemoteFault::Catastrophic);
    return recv_begin(r);
}

RxStatus Qp::recv_begin(transport::RxRecv &r) {
    RecvWqe w{};
    if (!take_recv(w, rx_sges_))
        return fail_rx(RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN,
                       {RemoteFault::NoReceiveBuffer, FaultedOp::Send});
    rx_wqe_ = w;
    uint64_t cap = 0;
    for (uint32_t i = 0; i < w.num_sgls; ++i)
        cap += rx_sges_[i].len;
    r.wqe = &rx_wqe_;
    r.capacity = cap;
    return RxStatus::success();
}

RxStatus Qp::rx_recv_place(transport::RxRecv &r, uint64_t offset, std::span<const std::byte> data) {
    RxScope scope(*this);
    if (!scope || !r.wqe) return RxStatus::fail(RemoteFault::Catastrophic);
    return recv_place(r, offset, data);
}

RxStatus Qp::recv_place(transport::RxRecv &r, uint64_t offset, std::span<const std::byte> data) {
    if (offset + data.size() > r.capacity) {
        complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_LOCAL_LENGTH_ERROR, 0, 0, 0,
                      0);
        r.wqe = nullptr;
        return fail_rx(RI_EVENT_QP_LLQ_INTEGRITY_ERROR_SIZE,
                       {RemoteFault::MessageTooLong, FaultedOp::Send});
    }
    // Walk the receive SGEs to the offset, checking each piece as it is written.
    uint64_t sge_start = 0;
    size_t done = 0;
    for (uint32_t i = 0; i < rx_wqe_.num_sgls && done < data.size(); ++i) {
        const ri_data_seg_t &s = rx_sges_[i];
        uint64_t sge_end = sge_start + s.len;
        uint64_t pos = offset + done;
        if (pos < sge_end) {
            uint64_t in_sge = pos - sge_start;
            uint64_t n = std::min<uint64_t>(s.len - in_sge, data.size() - done);
            MemRef ref;
            std::byte *dst = nullptr;
            MemFault f = MemFault::None;
            if (s.tag.ltag == 0 && owner->privileged() && enable_stag0_fastreg) {
                dst = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(s.addr.vaddr)) + in_sge;
            } else {
                f = dev->stags.acquire(s.tag.ltag, s.addr.vaddr + in_sge, n,
                                       RI_MEM_FLAGS_LOCAL_WRITE, pd, this, ref);
                dst = ref.ptr;
            }
            if (f != MemFault::None) {
                complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, fault_status(f), 0, 0, 0, 0);
                r.wqe = nullptr;
                return fail_rx(RI_EVENT_QP_LOCAL_CATASTROPHIC_ERROR,
                               {RemoteFault::Catastrophic, FaultedOp::Send});
            }
            std::memcpy(dst, data.data() + done, n);
            StagTable::put(ref);
            done += n;
        }
        sge_start = sge_end;
    }
    return RxStatus::success();
}

RxStatus Qp::rx_recv_map(transport::RxRecv &r, uint64_t offset, uint64_t len, std::span<IoSpan> out,
                         std::span<void *> refs, size_t &n) {
    n = 0;
    RxScope scope(*this);
    if (!scope || !r.wqe) return RxStatus::fail(RemoteFault::Catastrophic);
    if (offset + len > r.capacity || offset + len < offset) {
        complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_LOCAL_LENGTH_ERROR, 0, 0, 0,
                      0);
        r.wqe = nullptr;
        return fail_rx(RI_EVENT_QP_LLQ_INTEGRITY_ERROR_SIZE,
                       {RemoteFault::MessageTooLong, FaultedOp::Send});
    }
    // Same walk and checks as recv_place, keeping each piece pinned instead of copying.
    uint64_t sge_start = 0, done = 0;
    for (uint32_t i = 0; i < rx_wqe_.num_sgls && done < len; ++i) {
        const ri_data_seg_t &s = rx_sges_[i];
        uint64_t sge_end = sge_start + s.len;
        uint64_t pos = offset + done;
        if (pos < sge_end) {
            uint64_t in_sge = pos - sge_start;
            uint64_t k = std::min<uint64_t>(s.len - in_sge, len - done);
            if (n >= out.size() || n >= refs.size()) {  // caller's arrays too small
                for (size_t j = 0; j < n; ++j)
                    rx_tagged_release(refs[j]);
                n = 0;
                return RxStatus::fail(RemoteFault::Catastrophic);
            }
            MemRef ref;
            MemFault f = MemFault::None;
            if (s.tag.ltag == 0 && owner->privileged() && enable_stag0_fastreg) {
                ref.ptr =
                    reinterpret_cast<std::byte *>(static_cast<uintptr_t>(s.addr.vaddr)) + in_sge;
            } else {
                f = dev->stags.acquire(s.tag.ltag, s.addr.vaddr + in_sge, k,
                                       RI_MEM_FLAGS_LOCAL_WRITE, pd, this, ref);
            }
            if (f != MemFault::None) {
                for (size_t j = 0; j < n; ++j)
                    rx_tagged_release(refs[j]);
                n = 0;
                complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, fault_status(f), 0, 0, 0, 0);
                r.wqe = nullptr;
                return fail_rx(RI_EVENT_QP_LOCAL_CATASTROPHIC_ERROR,
                               {RemoteFault::Catastrophic, FaultedOp::Send});
            }
            out[n] = {ref.ptr, k};
            refs[n] = ref.entry;
            ++n;
            done += k;
        }
        sge_start = sge_end;
    }
    return RxStatus::success();
}

RxStatus Qp::rx_recv_end(transport::RxRecv &r, OpKind kind, uint64_t total_len, bool solicited,
                         uint32_t invalidate_stag, uint32_t immediate) {
    RxScope scope(*this);
    if (!scope || !r.wqe) return RxStatus::fail(RemoteFault::Catastrophic);
    return recv_end(r, kind, total_len, solicited, invalidate_stag, immediate);
}

RxStatus Qp::rx_send(OpKind kind, std::span<const IoSpan> payload, uint64_t total_len,
                     bool solicited, uint32_t invalidate_stag, uint32_t immediate) {
    // The whole message in one arrival: one pass through the rx gate instead of three.
    RxScope scope(*this);
    if (!scope) return RxStatus::fail(RemoteFault::Catastrophic);
    transport::RxRecv r;
    RxStatus st = recv_begin(r);
    if (!st.ok) return st;
    uint64_t off = 0;
    for (const IoSpan &s : payload) {
        if (s.len == 0) continue;
        st = recv_place(r, off, {s.ptr, static_cast<size_t>(s.len)});
        if (!st.ok) return st;
        off += s.len;
    }
    return recv_end(r, kind, total_len, solicited, invalidate_stag, immediate);
}

RxStatus Qp::recv_end(transport::RxRecv &r, OpKind kind, uint64_t total_len, bool solicited,
                      uint32_t invalidate_stag, uint32_t immediate) {
    if (!r.wqe) return RxStatus::fail(RemoteFault::Catastrophic);
    r.wqe = nullptr;
    uint32_t flags = solicited ? RI_WC_FLAG_SOLICITED_EVENT : 0;
    uint32_t inv = 0;
    if (kind == OpKind::SendInvalidate) {
        // Remote invalidation: a region of our PD with no windows and not shared, or a
        // type 2 window bound through this QP (RFC 5040 6.10).
        MemEntry *e = dev->stags.by_stag(invalidate_stag);
        InvalidateFault f =
            e ? StagTable::invalidate(*e, invalidate_stag, pd, this) : InvalidateFault::InvalidStag;
        if (f != InvalidateFault::None) {
            complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_STAG_INVALIDATE_ERROR, 0,
                          0, 0, 0);
            return fail_rx(
                RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH,
                {RemoteFault::CannotInvalidate, FaultedOp::SendInvalidate, invalidate_stag});
        }
        flags |= RI_WC_FLAG_RTAG_INVALIDATE;
        inv = invalidate_stag;
    }
    if (kind == OpKind::SendImmediate) flags |= RI_WC_FLAG_IMMEDIATE_DATA;
    complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, total_len, flags, inv,
                  kind == OpKind::SendImmediate ? immediate : 0);
    return RxStatus::success();
}

void Qp::rx_recv_abort(transport::RxRecv &r, ri_wc_status_t status) {
    RxScope scope(*this);
    if (!r.wqe) return;
    r.wqe = nullptr;
    complete_recv(rx_wqe_, RI_WC_TYPE_DATA_RECEIVED, status, 0, 0, 0, 0);
}

RxStatus Qp::rx_write_immediate(uint64_t length, uint32_t immediate, bool solicited) {
    RxScope scope(*this);
    if (!scope) return RxStatus::fail(RemoteFault::Catastrophic);
    RecvWqe w{};
    ri_data_seg_t sg[Limits::kMaxSge];
    if (!take_recv(w, sg))
        return fail_rx(RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN,
                       {RemoteFault::NoReceiveBuffer, FaultedOp::WriteImmediate});
    uint32_t flags = RI_WC_FLAG_IMMEDIATE_DATA | (solicited ? RI_WC_FLAG_SOLICITED_EVENT : 0);
    complete_recv(w, RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED, RI_WC_STATUS_SUCCESS, length, flags, 0,
                  immediate);
    return RxStatus::success();
}

RxStatus Qp::rx_atomic(OpKind kind, uint32_t stag, uint64_t to, uint64_t op1, uint64_t op2,
                       uint64_t &original) {
    RxScope scope(*this);
    if (!scope) return RxStatus::fail(RemoteFault::Catastrophic);
    // An IB responder takes atomics only where its access flags allow them (IBA 1.2 ch. 9:
    // an Invalid Request NAK otherwise); iWARP has no such flag.
    if (ib && !ib->enable_atomic) [[unlikely]]
        return fail_rx(RI_EVENT_QP_INVALID_REQ_LOCAL_WQ_ERROR,
                       {RemoteFault::UnexpectedOpcode, FaultedOp::Atomic, stag, to});
    if (to == transport::kAtomicAtBase) {
        MemEntry *e = dev->stags.by_stag(stag);
        to = e ? e->to_base : 0;
    }
    MemRef r;
    MemFault f = dev->stags.acquire(stag, to, 8, RI_MEM_FLAGS_ATOMICS, pd, this, r);
    if (f == MemFault::None && (reinterpret_cast<uintptr_t>(r.ptr) & 7)) {
        StagTable::put(r);
        f = MemFault::Bounds;  // RFC 7306: the target must be 8-byte aligned
    }
    if (f != MemFault::None)
        return fail_remote(f, true, {RemoteFault::None, FaultedOp::Atomic, stag, to});
    std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t *>(r.ptr));
    if (kind == OpKind::FetchAdd) {
        original = target.fetch_add(op1, std::memory_order_acq_rel);
    } else {
        uint64_t expected = op1;
        target.compare_exchange_strong(expected, op2, std::memory_order_acq_rel);
        original = expected;
    }
    StagTable::put(r);
    return RxStatus::success();
}

void Qp::rx_terminate(std::span<const uint8_t> msg) {
    RxScope scope(*this);
    ri_qp_state_t st = state.load(std::memory_order_acquire);
    if (st == RI_QP_STATE_ERROR || st == RI_QP_STATE_IDLE) return;
    record_terminate(msg, false);
    terminate_received.store(true, std::memory_order_release);
    terminate_in_transport.store(true, std::memory_order_release);  // its carrier closes
    raise(RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED);
    enter_error(true);
}

void Qp::rx_stream_error(RemoteFault fault, std::span<const uint8_t> msg) {
    RxScope scope(*this);
    // Which async event a malformed stream raises (L1984-2023).
    ri_async_event_type_t ev = RI_EVENT_QP_LLQ_INTEGRITY_ERROR_BAD_FPDU;
    switch (fault) {
        case RemoteFault::Crc:
            ev = RI_EVENT_QP_LLQ_INTEGRITY_ERROR_CRC;
            break;
        case RemoteFault::ConnectionLost:
            ev = RI_EVENT_QP_LLQ_CONNECTION_LOST;
            break;
        case RemoteFault::DdpVersion:
            ev = RI_EVENT_QP_REMOTE_OP_ERROR_DDP_VERSION;
            break;
        case RemoteFault::InvalidQueue:
            ev = RI_EVENT_QP_REMOTE_OP_ERROR_DDP_QN;
            break;
        case RemoteFault::NoReceiveBuffer:
        case RemoteFault::InvalidOffset:
            ev = RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN;
            break;
        case RemoteFault::InvalidSequence:
            ev = RI_EVENT_QP_RQ_PROTECTION_ERROR_MSN_GAP;
            break;
        case RemoteFault::MessageTooLong:
            ev = RI_EVENT_QP_LLQ_INTEGRITY_ERROR_SIZE;
            break;
        case RemoteFault::RdmaVersion:
            ev = RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_VERSION;
            break;
        case RemoteFault::UnexpectedOpcode:
            ev = RI_EVENT_QP_REMOTE_OP_ERROR_OPCODE;
            break;
        default:
            break;
    }
    ri_qp_state_t expect = RI_QP_STATE_READY_TO_SEND;
    if (!state.compare_exchange_strong(expect, RI_QP_STATE_TERMINATE, std::memory_order_acq_rel))
        return;
    terminate_in_transport.store(true, std::memory_order_release);  // it sends and closes
    record_terminate(msg, true);
    raise(ev);
    enter_error(true);
}

void Qp::rx_llp_closed(transport::CloseKind kind) {
    RxScope scope(*this);
    ri_qp_state_t st = state.load(std::memory_order_acquire);
    if (st != RI_QP_STATE_READY_TO_SEND && st != RI_QP_STATE_CLOSING) return;
    // Closing with the gate closed: our graceful close is completing (to Idle) and the
    // transport's progress was already inside it when it started; the end of the stream is
    // the peer's answer, not a failure.
    if (st == RI_QP_STATE_CLOSING && !scope.entered()) return;
    if (kind == transport::CloseKind::Graceful && rq.size() == 0 &&
        st == RI_QP_STATE_READY_TO_SEND) {
        // Graceful close with nothing outstanding: Closing, then Idle (RDMAC Fig. 6).
        ri_qp_state_t expect = RI_QP_STATE_READY_TO_SEND;
        if (state.compare_exchange_strong(expect, RI_QP_STATE_IDLE, std::memory_order_acq_rel)) {
            raise(RI_EVENT_QP_LLQ_CLOSE_COMPLETE);
            error_pending.store(false, std::memory_order_release);
        }
        return;
    }
    raise(kind == transport::CloseKind::Graceful ? RI_EVENT_TYPE_BAD_CLOSE
                                                 : RI_EVENT_QP_LLQ_CONNECTION_RESET);
    enter_error(true);
}

}  // namespace softrnic::engine
