// What the QP's sources (qp.cpp, qp_send.cpp, qp_recv.cpp, qp_iwarp_state.cpp) share:
// the seam types they name, the WR flag sets, the status mappings and the arrival scope.
#pragma once

#include <cstdint>

#include "base/stats.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

using transport::FaultedOp;
using transport::FaultReport;
using transport::IoSpan;
using transport::OpKind;
using transport::OpOutcome;
using transport::RemoteFault;
using transport::RxStatus;

namespace qp_detail {

inline constexpr uint32_t kWrFlagsKnown =
    RI_WR_SIGNALED_FLAG | RI_WR_LOCAL_SOLICITED_FLAG | RI_WR_SOLICITED_EVENT_FLAG |
    RI_WR_READ_FENCE_FLAG | RI_WR_LOCAL_FENCE_FLAG | RI_WR_COALESCE_FLAG | RI_WR_INLINE_OK_FLAG |
    RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1;
inline constexpr uint32_t kRecvFlagsKnown =
    RI_WR_LOCAL_SOLICITED_FLAG | RI_WR_COALESCE_FLAG | RI_WR_CONSUMER_FLAG0 | RI_WR_CONSUMER_FLAG1;
inline constexpr uint64_t kPosMask = (uint64_t{1} << 40) - 1;

inline ri_wc_status_t invalidate_status(InvalidateFault f) {
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

inline ri_wc_status_t fault_status(MemFault f) {
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

inline RemoteFaultInfo remote_fault(MemFault f, bool irrq) {
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

inline bool is_send_type(ri_wr_type_t t) {
    return t == RI_WR_TYPE_SEND || t == RI_WR_TYPE_SEND_INVALIDATE ||
           t == RI_WR_TYPE_SEND_IMMEDIATE;
}

inline ri_wc_type_t wc_type_of(ri_wr_type_t t) {
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

// Every work completion, signalled or not, in the process's counters (base/stats.hpp): by
// operation with its bytes when it succeeded, by outcome when it did not.
inline void count_completion(ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes) {
    using base::Stat;
    if (status != RI_WC_STATUS_SUCCESS) [[unlikely]] {
        base::stat_add(Stat::CompletionsInError);
        if (status == RI_WC_STATUS_WR_FLUSHED_ERROR) base::stat_add(Stat::CompletionsFlushed);
        return;
    }
    switch (type) {
        case RI_WC_TYPE_SEND:
            base::stat_add(Stat::SendsCompleted);
            base::stat_add(Stat::SendBytes, bytes);
            break;
        case RI_WC_TYPE_RDMA_WRITE:
            base::stat_add(Stat::WritesCompleted);
            base::stat_add(Stat::WriteBytes, bytes);
            break;
        case RI_WC_TYPE_RDMA_READ:
        case RI_WC_TYPE_RDMA_READ_LOCAL_INVALIDATE:
            base::stat_add(Stat::ReadsCompleted);
            base::stat_add(Stat::ReadBytes, bytes);
            break;
        case RI_WC_TYPE_COMPARE_AND_SWAP:
        case RI_WC_TYPE_FETCH_AND_ADD:
            base::stat_add(Stat::AtomicsCompleted);
            break;
        case RI_WC_TYPE_DATA_RECEIVED:
        case RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED:
            base::stat_add(Stat::RecvsCompleted);
            base::stat_add(Stat::RecvBytes, bytes);
            break;
        default:
            base::stat_add(Stat::OtherWrsCompleted);
            break;
    }
}

// IBA 1.2 ch. 10 (partitioning): the same partition (low 15 bits, not the invalid 0), and at
// least one side a full member (bit 15).
inline bool pkeys_match(ri_pkey_t a, ri_pkey_t b) {
    return (a & 0x7FFF) != 0 && (a & 0x7FFF) == (b & 0x7FFF) && ((a | b) & 0x8000);
}

}  // namespace qp_detail
using namespace qp_detail;

// complete_recv's completion (qp_recv.cpp), shared with UD receives (qp_datagram.cpp).
inline void Qp::recv_cqe(const RecvWqe &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                         uint32_t wc_flags, uint32_t inv_rtag, uint32_t imm, Cqe &e) {
    count_completion(type, status, bytes);
    if (srq) {
        // Every receive completion of an SRQ QP ends a WQE take_recv() counted; saturate
        // anyway so a miscount can never wrap into a huge outstanding figure.
        uint32_t n = srq_outstanding.load(std::memory_order_relaxed);
        while (n && !srq_outstanding.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel,
                                                           std::memory_order_relaxed)) {
        }
    }
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
}

// complete_sq's completion (qp_send.cpp), shared with the UD send queue (qp_datagram.cpp);
// inline so that complete_sq stays one function on the data path.
inline bool Qp::sq_cqe(const WrInfo &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                       bool force, Cqe &e) {
    count_completion(type, status, bytes);
    uint32_t flags = w.flags;
    bool signaled = flags & RI_WR_SIGNALED_FLAG;
    if (status == RI_WC_STATUS_SUCCESS && !signaled && !force) return false;
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
    return true;
}

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
    // Arrivals are taken in RTS, and on an IB RC QP also in RTR and SQD (kIbReceiving:
    // tested only once RTS failed, so an iWARP QP in RTS pays nothing for it).
    explicit operator bool() const {
        if (!in_) return false;
        const ri_qp_state_t s = qp_.state.load(std::memory_order_acquire);
        return s == RI_QP_STATE_READY_TO_SEND || s == kIbReceiving;
    }
    // False when the gate was closed: whoever closed it (a flush, a graceful close, a reset
    // or a receive-queue resize) is moving the QP right now.
    bool entered() const { return in_; }

  private:
    Qp &qp_;
    GateScope entry_;
    bool in_;
};

}  // namespace softrnic::engine
