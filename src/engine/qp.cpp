#include "engine/qp.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "engine/abi.hpp"

namespace softrnic::engine {

using transport::FaultedOp;
using transport::FaultReport;
using transport::IoSpan;
using transport::OpKind;
using transport::OpOutcome;
using transport::RemoteFault;
using transport::RxStatus;

namespace {

constexpr uint32_t kWrFlagsKnown =
    RI_WR_SIGNALED_FLAG | RI_WR_LOCAL_SOLICITED_FLAG | RI_WR_SOLICITED_EVENT_FLAG |
    RI_WR_READ_FENCE_FLAG | RI_WR_LOCAL_FENCE_FLAG | RI_WR_COALESCE_FLAG | RI_WR_INLINE_OK_FLAG |
    RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1;
constexpr uint32_t kRecvFlagsKnown =
    RI_WR_LOCAL_SOLICITED_FLAG | RI_WR_COALESCE_FLAG | RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1;
constexpr uint64_t kPosMask = (uint64_t{1} << 40) - 1;

ri_wc_status_t invalidate_status(InvalidateFault f) {
    switch (f) {
        case InvalidateFault::None:
            return RI_WC_STATUS_SUCCESS;
        case InvalidateFault::InvalidStag:
            return RI_WC_STATUS_INVALID_STAG_ERROR;
        case InvalidateFault::Pd:
            return RI_WC_STATUS_INVALID_PD_ERROR;
        case InvalidateFault::NotAllowed:
            return RI_WC_STATUS_STAG_INVALIDATE_ERROR;
    }
    return RI_WC_STATUS_STAG_INVALIDATE_ERROR;
}

ri_wc_status_t fault_status(MemFault f) {
    switch (f) {
        case MemFault::None:
            return RI_WC_STATUS_SUCCESS;
        case MemFault::InvalidStag:
        case MemFault::QpMismatch:
            return RI_WC_STATUS_INVALID_STAG_ERROR;
        case MemFault::Bounds:
            return RI_WC_STATUS_BASE_BOUNDS_VIOLATION_ERROR;
        case MemFault::Access:
            return RI_WC_STATUS_ACCESS_VIOLATION_ERROR;
        case MemFault::Pd:
            return RI_WC_STATUS_INVALID_PD_ERROR;
        case MemFault::Wrap:
            return RI_WC_STATUS_ADDRESS_WRAP_ERROR;
    }
    return RI_WC_STATUS_LOCAL_QP_OP_ERROR;
}

// What a responder-side STag fault raises and reports (docs/spec-deviations.md): Read
// Requests and atomics use the IRRQ events, tagged placement (RDMA write) the protection
// events; the transport says the fault on its wire.
struct RemoteFaultInfo {
    ri_async_event_type_t event;
    RemoteFault fault;
};

RemoteFaultInfo remote_fault(MemFault f, bool irrq) {
    if (irrq) {
        switch (f) {
            case MemFault::Bounds:
                return {RI_EVENT_QP_IRRQ_PROTECTION_ERROR_BOUNDS_VIOLATION, RemoteFault::Bounds};
            case MemFault::Access:
                return {RI_EVENT_QP_IRRQ_PROTECTION_ERROR_ACCESS_VIOLATION, RemoteFault::Access};
            case MemFault::Pd:
                return {RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_PD, RemoteFault::NotAssociated};
            case MemFault::Wrap:
                return {RI_EVENT_QP_IRRQ_PROTECTION_ERROR_WRAP_ERROR, RemoteFault::Wrap};
            default:
                return {RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_STAG, RemoteFault::InvalidStag};
        }
    }
    switch (f) {
        case MemFault::Bounds:
            return {RI_EVENT_QP_PROTECTION_ERROR_BOUNDS_VIOLATION, RemoteFault::Bounds};
        case MemFault::Access:
            return {RI_EVENT_QP_PROTECTION_ERROR_ACCESS_VIOLATION, RemoteFault::Access};
        case MemFault::Pd:
            return {RI_EVENT_QP_PROTECTION_ERROR_INVALID_PD, RemoteFault::NotAssociated};
        case MemFault::Wrap:
            return {RI_EVENT_QP_PROTECTION_ERROR_WRAP_ERROR, RemoteFault::Wrap};
        default:
            // The family has no "invalid STag" event (L1984-2023).
            return {RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH, RemoteFault::InvalidStag};
    }
}

bool is_send_type(ri_wr_type_t t) {
    return t == RI_WR_TYPE_SEND || t == RI_WR_TYPE_SEND_INVALIDATE ||
           t == RI_WR_TYPE_SEND_IMMEDIATE;
}

ri_wc_type_t wc_type_of(ri_wr_type_t t) {
    switch (t) {
        case RI_WR_TYPE_SEND:
        case RI_WR_TYPE_SEND_INVALIDATE:
        case RI_WR_TYPE_SEND_IMMEDIATE:
            return RI_WC_TYPE_SEND;
        case RI_WR_TYPE_RDMA_WRITE:
        case RI_WR_TYPE_RDMA_WRITE_IMMEDIATE:
            return RI_WC_TYPE_RDMA_WRITE;
        case RI_WR_TYPE_RDMA_READ:
            return RI_WC_TYPE_RDMA_READ;
        case RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE:
            return RI_WC_TYPE_RDMA_READ_LOCAL_INVALIDATE;
        case RI_WR_TYPE_BIND:
            return RI_WC_TYPE_BIND;
        case RI_WR_TYPE_FAST_REGISTER:
            return RI_WC_TYPE_FAST_REGISTER;
        case RI_WR_TYPE_LOCAL_INVALIDATE_MR:
        case RI_WR_TYPE_LOCAL_INVALIDATE_MW:
            return RI_WC_TYPE_LOCAL_INVALIDATE;
        case RI_WR_TYPE_COMPARE_AND_SWAP:
            return RI_WC_TYPE_COMPARE_AND_SWAP;
        case RI_WR_TYPE_FETCH_AND_ADD:
            return RI_WC_TYPE_FETCH_AND_ADD;
    }
    return RI_WC_TYPE_SEND;
}

}  // namespace

// Brackets one arrival from the transport: enters the QP's rx gate, and once the arrival is
// over, finishes an error transition the arrival started (the flush must not run while the
// arrival itself is still inside the gate).
class RxScope {
  public:
    explicit RxScope(Qp &qp) : qp_(qp), entry_(qp.rx_gate), in_(bool(entry_)) {}
    ~RxScope() {
        if (!in_) return;
        entry_.exit();
        // Load first: the exchange (a locked RMW) is only paid when an error is pending.
        if (qp_.error_pending.load(std::memory_order_acquire) &&
            qp_.error_pending.exchange(false, std::memory_order_acq_rel))
            qp_.finish_error();
    }
    explicit operator bool() const {
        return in_ && qp_.state.load(std::memory_order_acquire) == RI_QP_STATE_READY_TO_SEND;
    }
    // False when the gate was closed: whoever closed it (a flush, a graceful close, a reset
    // or a receive-queue resize) is moving the QP right now.
    bool entered() const { return in_; }

  private:
    Qp &qp_;
    GateScope entry_;
    bool in_;
};

Qp::~Qp() = default;

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
        WrInfo info{wr.wr_common.id, raw(wr.wr_common.flags), wr.wr_common.type,
                    is_send_type(wr.wr_common.type) ? wr.wr_send.rtag : 0, ++sq_head};
        if (st == RI_QP_STATE_READY_TO_SEND)
            execute_sq_wr(wr, info);
        else
            complete_sq(info, wc_type_of(info.type), RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
        ++num;
    }
    return RI_RET_SUCCESS;
}

void Qp::complete_sq(const WrInfo &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                     bool force) {
    uint32_t flags = w.flags;
    bool signaled = flags & RI_WR_SIGNALED_FLAG;
    if (status == RI_WC_STATUS_SUCCESS && !signaled && !force) return;
    Cqe e{};
    e.wc.op_type = type;
    e.wc.cq_os_data = scq->os_data;
    e.wc.qp_os_data = os_data;
    e.wc.id = w.id;
    e.wc.op_status = status;
    e.wc.bytes_transferred = static_cast<uint32_t>(bytes);
    uint32_t wc_flags = flags & (RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1);
    if (flags & RI_WR_LOCAL_SOLICITED_FLAG) wc_flags |= RI_WC_FLAG_LOCAL_SOLICITED;
    // A send's completion tells whether it carried SE and whether it invalidated (L3514).
    if (is_send_type(w.type) && (flags & RI_WR_SOLICITED_EVENT_FLAG))
        wc_flags |= RI_WC_FLAG_SOLICITED_EVENT;
    if (w.type == RI_WR_TYPE_SEND_INVALIDATE) {
        wc_flags |= RI_WC_FLAG_RTAG_INVALIDATE;
        e.wc.invalidated_rtag = w.send_rtag;
    }
    e.wc.flags = static_cast<ri_wc_flags_t>(wc_flags);
    // Solicited for notification: local-solicited success, or any error (L3236-3241).
    e.solicited = status != RI_WC_STATUS_SUCCESS || (flags & RI_WR_LOCAL_SOLICITED_FLAG);
    e.retire_slot = slot;
    e.retire_word = ((incarnation & 0xFFFFFF) << 40) | (w.pos & kPosMask);
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
    // Asynchronous transport. First its synchronous fast path (small inline operations with
    // nothing queued ahead): no pending record, no lock.
    if (transport::OpResult now; chan->submit_now(op, now)) {
        finish_outbound(f, now);
        return;
    }
    // Otherwise the record must be in place before submit, since the transport may complete
    // it from its own thread before submit returns.
    InFlight *slot_rec = nullptr;
    {
        std::lock_guard lk(pending_mu);
        pending.push_back(f);
        slot_rec = &pending.back();
        op.atomic_result = &slot_rec->atomic_value;
    }
    transport::OpResult res = chan->submit(op);
    if (res.outcome == OpOutcome::Pending) return;
    InFlight done;
    {
        std::lock_guard lk(pending_mu);
        done = pending.back();
        pending.pop_back();
    }
    finish_outbound(done, res);
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
            if (state.load(std::memory_order_acquire) == RI_QP_STATE_READY_TO_SEND) {
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
            complete_sq(f.w, f.wct, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
            if (state.load(std::memory_order_acquire) == RI_QP_STATE_READY_TO_SEND) {
                raise(RI_EVENT_QP_LLQ_CONNECTION_LOST);
                enter_error(false);
            }
            break;
    }
}

void Qp::tx_complete(transport::OpResult result) {
    // Completions of an asynchronous transport arrive in posting order (the SQ is ordered).
    InFlight f;
    {
        std::lock_guard lk(pending_mu);
        if (pending.empty()) return;
        f = pending.front();
        pending.pop_front();
    }
    finish_outbound(f, result);
}

void Qp::drop_pending(bool complete) {
    // Only after the transport is detached (or reported everything): nothing can still be
    // writing into the sink buffers these records pin.
    std::deque<InFlight> left;
    {
        std::lock_guard lk(pending_mu);
        left.swap(pending);
    }
    for (InFlight &f : left) {
        put_refs(f.refs, f.nrefs);
        if (complete) complete_sq(f.w, f.wct, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, true);
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
            // Error (and transient) states: accepted and completed as flushed (L4659-4665).
            RecvWqe wqe{w.id, raw(w.flags), w.num_sgls};
            complete_recv(wqe, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_WR_FLUSHED_ERROR, 0, 0, 0, 0);
            ++num;
            continue;
        }
        bool ok = rq.push([&](RecvWqe &h, std::span<ri_data_seg_t> sg) {
            h = {w.id, raw(w.flags), w.num_sgls};
            std::copy_n(w.sg_list, w.num_sgls, sg.begin());
        });
        if (!ok) return RI_RET_QP_CAPACITY_EXCEEDED;
        // A concurrent move to ERROR may have flushed before our push landed: flush again.
        ri_qp_state_t after = state.load(std::memory_order_seq_cst);
        if (after != RI_QP_STATE_IDLE && after != RI_QP_STATE_READY_TO_SEND &&
            !error_pending.load(std::memory_order_acquire))
            flush_rq();
        ++num;
    }
    return RI_RET_SUCCESS;
}

void Qp::complete_recv(const RecvWqe &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                       uint32_t wc_flags, uint32_t inv_rtag, uint32_t imm) {
    if (srq) {
        // Every receive completion of an SRQ QP ends a WQE take_recv() counted; saturate
        // anyway so a miscount can never wrap into a huge outstanding figure.
        uint32_t n = srq_outstanding.load(std::memory_order_relaxed);
        while (n && !srq_outstanding.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel,
                                                           std::memory_order_relaxed)) {
        }
    }
    Cqe e{};
    e.wc.op_type = type;
    e.wc.cq_os_data = rcq->os_data;
    e.wc.qp_os_data = os_data;
    e.wc.id = w.id;
    e.wc.op_status = status;
    e.wc.bytes_transferred = static_cast<uint32_t>(bytes);
    e.wc.invalidated_rtag = inv_rtag;
    e.wc.immediate_data = imm;
    wc_flags |= w.flags & (RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1);
    if (w.flags & RI_WR_LOCAL_SOLICITED_FLAG) wc_flags |= RI_WC_FLAG_LOCAL_SOLICITED;
    e.wc.flags = static_cast<ri_wc_flags_t>(wc_flags);
    e.solicited = status != RI_WC_STATUS_SUCCESS || (wc_flags & RI_WC_FLAG_SOLICITED_EVENT) ||
                  (w.flags & RI_WR_LOCAL_SOLICITED_FLAG);
    e.retire_slot = ~0u;
    e.retire_word = 0;
    if (!rcq->push(e)) {
        raise(RI_EVENT_QP_CQ_RQ_ERROR);
        enter_error(true);
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

// ------------------------------------------------------------------------ error handling

void Qp::raise(ri_async_event_type_t ev) {
    dev->raise(ev, handle, ObjKind::Qp, os_data);
}

void Qp::record_terminate(std::span<const uint8_t> msg, bool local) {
    std::lock_guard lk(term_mu);
    const size_t n = std::min(msg.size(), sizeof term_buf);
    std::memset(term_buf, 0, sizeof term_buf);
    if (n) std::memcpy(term_buf, msg.data(), n);
    term_len = static_cast<uint32_t>(n);
    term_local = local;
}

// The message the transport sends (or would send) for `f`: the engine records what the
// wire says, it does not build it.
void Qp::record_fault(const FaultReport &f, bool local) {
    uint8_t msg[transport::kFaultMessageMax];
    const size_t n =
        chan ? chan->fault_message(f, std::span<uint8_t, transport::kFaultMessageMax>(msg)) : 0;
    record_terminate({msg, n}, local);
}

RxStatus Qp::fail_rx(ri_async_event_type_t ev, const FaultReport &f) {
    ri_qp_state_t expect = RI_QP_STATE_READY_TO_SEND;
    if (state.compare_exchange_strong(expect, RI_QP_STATE_TERMINATE, std::memory_order_acq_rel)) {
        terminate_in_transport.store(true, std::memory_order_release);
        record_fault(f, true);
        raise(ev);
        enter_error(true);
    }
    return RxStatus::fail(f.fault, f.op);
}

RxStatus Qp::fail_remote(MemFault f, bool irrq, FaultReport site) {
    RemoteFaultInfo info = remote_fault(f, irrq);
    site.fault = info.fault;
    return fail_rx(info.event, site);
}

void Qp::fail_local(ri_async_event_type_t, bool send_terminate, RemoteFault fault) {
    ri_qp_state_t st = state.load(std::memory_order_acquire);
    if (st == RI_QP_STATE_ERROR) return;
    if (send_terminate && chan) {
        record_fault({fault}, true);
        state.store(RI_QP_STATE_TERMINATE, std::memory_order_release);
        // terminate() also closes the stream: finish_error must not abort it under the
        // Terminate still being written.
        terminate_in_transport.store(true, std::memory_order_release);
        chan->terminate({fault});
    }
    enter_error(false);
}

void Qp::enter_error(bool inside_rx) {
    ri_qp_state_t prev = state.exchange(RI_QP_STATE_ERROR, std::memory_order_seq_cst);
    if (prev == RI_QP_STATE_ERROR && !inside_rx) {
        flush_rq();  // idempotent: picks up receives that raced in
        return;
    }
    if (inside_rx)
        error_pending.store(true, std::memory_order_release);
    else
        finish_error();
}

void Qp::finish_error() {
    // Wait for arrivals already inside, stop new ones, then flush what is left (L4422-4431).
    // The stream is closed but stays attached: an arrival still in flight on it now finds
    // the QP in Error and fails. Detaching (which waits for those) is for destroy and reset.
    rx_gate.close();
    // After a Terminate the transport that carried it closes the stream itself.
    if (chan && !terminate_in_transport.exchange(false, std::memory_order_acq_rel))
        chan->close(transport::CloseKind::Abortive);
    flush_rq();
    rx_gate.open();
}

// ----------------------------------------------------------------------------- slow path

void Qp::reset_queues() {
    // A device-wide counter, not a per-QP one: a later QP reusing this slot must never
    // get an incarnation whose stale completions could retire its send queue.
    incarnation = dev->incarnation_seed.fetch_add(1, std::memory_order_relaxed);
    sq_head = 0;
    dev->sq_retired[slot].store((incarnation & 0xFFFFFF) << 40, std::memory_order_release);
}

ri_api_return_t Qp::modify(ri_qp_attr_mask_t mask_in, ri_qp_attr_t &a) {
    uint32_t mask = raw(mask_in);
    constexpr uint32_t kIwarpMask = (1u << 10) - 1;
    if (mask & ~kIwarpMask) return RI_RET_INVALID_PARAMETER;  // IB-only bits on iWARP
    ri_qp_state_t cur = state.load(std::memory_order_acquire);
    ri_qp_state_t next = cur;
    if (mask & RI_QP_ATTR_NEXT_STATE) {
        uint32_t want = raw(a.state);
        if (want > RI_QP_STATE_TIMEWAIT) return RI_RET_QP_INVALID_STATE;
        next = static_cast<ri_qp_state_t>(want);
        bool legal = false;
        switch (cur) {
            case RI_QP_STATE_IDLE:
                legal = next == RI_QP_STATE_IDLE || next == RI_QP_STATE_READY_TO_SEND ||
                        next == RI_QP_STATE_ERROR;
                break;
            case RI_QP_STATE_READY_TO_SEND:
                legal = next == RI_QP_STATE_READY_TO_SEND || next == RI_QP_STATE_CLOSING ||
                        next == RI_QP_STATE_TERMINATE || next == RI_QP_STATE_ERROR;
                break;
            case RI_QP_STATE_CLOSING:
            case RI_QP_STATE_TERMINATE:
                legal = next == RI_QP_STATE_ERROR;
                break;
            case RI_QP_STATE_ERROR:
                legal = next == RI_QP_STATE_ERROR || next == RI_QP_STATE_IDLE;
                break;
            default:
                break;
        }
        if (!legal) return RI_RET_QP_INVALID_STATE;
    }
    bool to_rts = cur == RI_QP_STATE_IDLE && next == RI_QP_STATE_READY_TO_SEND;
    const ri_iwarp_qp_attr_t &iw = a.qp_xport.qp_iwarp;
    if ((mask & (RI_QP_ATTR_SQ_SIZE | RI_QP_ATTR_RQ_SIZE))) {
        if ((mask & RI_QP_ATTR_RQ_SIZE) && srq) return RI_RET_QP_ATTRIBUTE_CANT_CHANGE;
        if ((mask & RI_QP_ATTR_SQ_SIZE) && a.sq_size > Limits::kMaxWrsQp)
            return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
        if ((mask & RI_QP_ATTR_RQ_SIZE) && a.rq_size > Limits::kMaxWrsQp)
            return RI_RET_RNIC_WR_LIMIT_EXCEEDED;
        if ((mask & RI_QP_ATTR_SQ_SIZE)) {
            uint64_t retired = dev->sq_retired[slot].load(std::memory_order_acquire) & kPosMask;
            if (a.sq_size < sq_head - retired) return RI_RET_QP_CANNOT_SHRINK;
        }
        if ((mask & RI_QP_ATTR_RQ_SIZE) && a.rq_size < rq.size()) return RI_RET_QP_CANNOT_SHRINK;
        if ((mask & RI_QP_ATTR_RQ_SIZE) && cur != RI_QP_STATE_IDLE && cur != RI_QP_STATE_ERROR)
            return RI_RET_QP_INVALID_STATE;  // the receive ring is live while connected
    }
    if ((mask & RI_QP_ATTR_MAX_RDMA_READ_OUTGOING) || (mask & RI_QP_ATTR_MAX_RDMA_READ_INCOMING)) {
        if ((mask & RI_QP_ATTR_MAX_RDMA_READ_OUTGOING) &&
            a.max_rdma_read_outgoing > Limits::kMaxOrdQp)
            return RI_RET_RNIC_IRD_ORD_EXCEEDED;
        if ((mask & RI_QP_ATTR_MAX_RDMA_READ_INCOMING) &&
            a.max_rdma_read_incoming > Limits::kMaxIrdQp)
            return RI_RET_RNIC_IRD_ORD_EXCEEDED;
    }
    if ((mask & (RI_QP_ATTR_RQ_HIWAT | RI_QP_ATTR_RQ_ARMED)) && !srq)
        return RI_RET_QP_ATTRIBUTE_CANT_CHANGE;
    if (mask & RI_QP_ATTR_MPA_ATTR) {
        if (cur != RI_QP_STATE_IDLE || (next != RI_QP_STATE_IDLE && !to_rts))
            return RI_RET_LL_BAD_STATE;
        if (iw.mpa_attrs.ddp_rdma_version != 1) return RI_RET_INVALID_DDP_RDMAP_VERSION;
        if (iw.mpa_attrs.recv_marker_enabled || iw.mpa_attrs.xmit_marker_enabled)
            return RI_RET_MPA_ATTR_UNSUPPORTED;
    }
    if ((mask & (RI_QP_ATTR_LLQ_STREAM_HANDLE | RI_QP_ATTR_STREAM_MSG_BUFFER)) && !to_rts)
        return RI_RET_LL_BAD_STATE;
    if (to_rts && !(mask & RI_QP_ATTR_LLQ_STREAM_HANDLE)) return RI_RET_INVALID_LL_HANDLE;
    if ((mask & RI_QP_ATTR_STREAM_MSG_BUFFER) && iw.stream_msg_buf_length && !iw.stream_msg_buf)
        return RI_RET_INVALID_PARAMETER;

    // Everything that can fail without side effects has been checked; claim the stream last.
    std::unique_ptr<transport::Channel> new_chan;
    if (to_rts) {
        bool known = false;
        new_chan =
            transport::claim(transport::StreamBinding{iw.llp_stream_handle}, known, dev->progress);
        if (!new_chan) return RI_RET_INVALID_LL_HANDLE;
    }

    // Leaving RTS races with the peer (a Terminate or a close can move the QP at any
    // moment): claim the transition first, so a lost race changes nothing.
    bool was_rts = false;
    if (cur == RI_QP_STATE_READY_TO_SEND && next != cur) {
        ri_qp_state_t expect = RI_QP_STATE_READY_TO_SEND;
        ri_qp_state_t claim = next == RI_QP_STATE_ERROR ? RI_QP_STATE_TERMINATE : next;
        was_rts = state.compare_exchange_strong(expect, claim, std::memory_order_acq_rel);
        if (!was_rts && next != RI_QP_STATE_ERROR) return RI_RET_QP_INVALID_STATE;
    }

    // Apply.
    if (mask & RI_QP_ATTR_SQ_SIZE) sq_size = std::max<uint32_t>(a.sq_size, 1);
    if (mask & RI_QP_ATTR_RQ_SIZE) {
        uint32_t want = std::max<uint32_t>(a.rq_size, 1);
        if (round_up_pow2(want) != rq.capacity()) {
            // No arrival (rx gate) and no flush (rq_mu) may touch the ring while it moves.
            SlotQueue<RecvWqe, ri_data_seg_t> bigger(want, std::max<uint32_t>(rq_max_sges, 1));
            std::lock_guard lk(rq_mu);
            rx_gate.close();
            rq.move_into(bigger);
            rq.swap(bigger);
            rx_gate.open();
        }
        // An arrival that found the gate closed for the resize (the stream's end, a
        // Terminate) moved the QP to Error but could not flush it on its way out: do it here
        // (rq_mu released: the flush takes it).
        if (error_pending.load(std::memory_order_acquire) &&
            error_pending.exchange(false, std::memory_order_acq_rel))
            finish_error();
        rq_size = static_cast<uint32_t>(rq.capacity());
    }
    if (mask & RI_QP_ATTR_MAX_RDMA_READ_OUTGOING) ord = a.max_rdma_read_outgoing;
    if (mask & RI_QP_ATTR_MAX_RDMA_READ_INCOMING) ird = a.max_rdma_read_incoming;
    if (mask & RI_QP_ATTR_RQ_HIWAT) rq_hiwat.store(iw.rq_hiwat, std::memory_order_release);
    if (mask & RI_QP_ATTR_RQ_ARMED) rq_armed.store(iw.rq_armed != 0, std::memory_order_release);
    if (mask & (RI_QP_ATTR_RQ_HIWAT | RI_QP_ATTR_RQ_ARMED)) {
        // Armed with a non-zero mark the QP already holds: the limit is reached now, not at
        // the next take (a consumer lowering the mark below the current count is told at
        // once). Zero keeps its "next WQE taken" meaning.
        uint32_t hiwat = rq_hiwat.load(std::memory_order_acquire);
        if (hiwat && srq_outstanding.load(std::memory_order_acquire) >= hiwat &&
            rq_armed.exchange(false, std::memory_order_acq_rel))
            raise(RI_EVENT_QP_RQ_LIMIT_REACHED);
    }
    if (mask & RI_QP_ATTR_MPA_ATTR) mpa = iw.mpa_attrs;

    if (next != cur) {
        switch (next) {
            case RI_QP_STATE_READY_TO_SEND:
                chan = std::move(new_chan);  // an earlier stream's channel ends here
                // A new connection starts with no error transition of an earlier one pending
                // (release: arrivals on the new stream read it with acquire).
                error_pending.store(false, std::memory_order_release);
                async_chan = chan->asynchronous();
                chan_caps.store(chan->capabilities(), std::memory_order_release);
                llp = iw.llp_stream_handle;
                llp_set = true;
                state.store(RI_QP_STATE_READY_TO_SEND, std::memory_order_release);
                chan->attach(this);
                break;
            case RI_QP_STATE_CLOSING:
                if (rq.size() != 0) {
                    // Outstanding work at close: a bad close, then Error (RDMAC Fig. 6).
                    if (chan) chan->close(transport::CloseKind::Graceful);
                    raise(RI_EVENT_TYPE_BAD_CLOSE);
                    enter_error(false);
                } else {
                    rx_gate.close();
                    if (chan) {
                        chan->close(transport::CloseKind::Graceful);
                        chan->detach();
                    }
                    // An arrival that found the gate closed (a Terminate racing with the
                    // close) may have left an error transition pending: the connection is
                    // over, it must not reach the next one (release, as above).
                    error_pending.store(false, std::memory_order_release);
                    rx_gate.open();
                    state.store(RI_QP_STATE_IDLE, std::memory_order_release);
                    raise(RI_EVENT_QP_LLQ_CLOSE_COMPLETE);
                }
                break;
            case RI_QP_STATE_TERMINATE: {
                const FaultReport f{RemoteFault::Catastrophic};
                record_fault(f, true);
                if (chan) chan->terminate(f);
                enter_error(false);
                break;
            }
            case RI_QP_STATE_ERROR:
                if (chan && was_rts) chan->close(transport::CloseKind::Abortive);
                enter_error(false);
                break;
            case RI_QP_STATE_IDLE: {
                // Error -> Idle: every WR has been flushed synchronously on entry to Error, so
                // there is nothing left to wait for (L3971, L3981-3994).
                rx_gate.close();
                if (chan) chan->detach();
                drop_pending(true);
                flush_rq();
                chan.reset();
                chan_caps.store(transport::Channel::kCapAll, std::memory_order_release);
                async_chan = false;
                llp_set = false;
                llp = 0;
                error_pending.store(false, std::memory_order_release);  // see the RTS case
                terminate_received.store(false, std::memory_order_release);
                terminate_in_transport.store(false, std::memory_order_release);
                {
                    std::lock_guard lk(term_mu);
                    term_len = 0;
                    term_local = false;
                    std::memset(term_buf, 0, sizeof term_buf);
                }
                reset_queues();
                state.store(RI_QP_STATE_IDLE, std::memory_order_release);
                rx_gate.open();
                break;
            }
            default:
                break;
        }
    }
    // Report what is in force now (L3892-3900).
    a.sq_size = sq_size;
    a.rq_size = rq_size;
    a.max_rdma_read_outgoing = ord;
    a.max_rdma_read_incoming = ird;
    return RI_RET_SUCCESS;
}

void Qp::query(ri_qp_attr_t &a) {
    std::memset(&a, 0, sizeof a);
    a.qp_id = qp_id;
    a.scq.scq_os_data = scq->os_data;
    a.rcq.rcq_os_data = rcq->os_data;
    a.srq.srq_os_data = srq ? srq->os_data : nullptr;
    a.pd = pd_handle;
    a.sq_size = sq_size;
    a.rq_size = rq_size;
    a.srq_valid = srq != nullptr;
    a.sq_max_sges = sq_max_sges;
    a.sq_max_sges_rdmaw = sq_max_sges_rdmaw;
    a.rq_max_sges = rq_max_sges;
    a.state = state.load(std::memory_order_acquire);
    a.enable_rdma_read = enable_read;
    a.enable_rdma_write = enable_write;
    a.max_rdma_read_outgoing = ord;
    a.max_rdma_read_incoming = ird;
    a.enable_stag0_fastreg = enable_stag0_fastreg;
    ri_iwarp_qp_attr_t &iw = a.qp_xport.qp_iwarp;
    iw.enable_bind = enable_bind;
    {
        std::lock_guard lk(term_mu);
        std::memcpy(iw.terminate_buffer, term_buf, sizeof term_buf);
        iw.terminate_msg_length = term_len;
        iw.is_terminate_local = term_local;
    }
    iw.llp_stream_handle = llp_set ? llp : 0;
    iw.mpa_attrs = mpa;
    iw.stream_msg_buf = nullptr;  // never returned (L8594)
    iw.stream_msg_buf_length = 0;
    iw.rq_hiwat = rq_hiwat.load(std::memory_order_acquire);
    iw.rq_armed = rq_armed.load(std::memory_order_acquire);
}

void Qp::destroy() {
    cancelling.store(true, std::memory_order_release);
    // Stream first: an arrival being handled finishes normally instead of meeting a QP
    // that is already gone and answering the peer with a Terminate.
    if (chan) {
        chan->close(transport::CloseKind::Abortive);
        chan->detach();
    }
    state.store(RI_QP_STATE_ERROR, std::memory_order_seq_cst);
    rx_gate.shut();
    chan.reset();
    drop_pending(false);  // cancelled without completions (L4033-4043)
    // Narrow windows bound through this QP are invalidated (type 2B-like; documented). Most
    // QPs never bound one: they skip the walk over the whole STag table (which made tearing
    // down a thousand connections take seconds).
    if (!bound_narrow_windows.load(std::memory_order_acquire)) return;
    std::vector<MemEntry *> narrow;
    dev->stags.for_each_live([&](MemEntry &e) {
        if (e.kind() == MemKind::Window2 && e.bound_qp.load(std::memory_order_acquire) == this)
            narrow.push_back(&e);
    });
    for (MemEntry *e : narrow) {
        std::lock_guard change(e->change_mu);
        if (e->kind() != MemKind::Window2 || e->bound_qp.load(std::memory_order_acquire) != this)
            continue;
        e->gate.close();
        withdraw_grants(*e);
        if (e->valid() && e->parent)
            e->parent->bound_windows.fetch_sub(1, std::memory_order_acq_rel);
        e->word.fetch_and(~MemEntry::kValid, std::memory_order_acq_rel);
        e->parent = nullptr;
        e->bound_qp.store(nullptr, std::memory_order_release);
        e->gate.open();
    }
}

}  // namespace softrnic::engine
