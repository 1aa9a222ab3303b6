// The RDMAC iWARP QP state machine (Idle, RTS, Closing, Terminate, Error) behind
// ri_qp_modify: the iWARP personality's modify entry (iwarp_personality.cpp), and the queue
// resizes both personalities share. The IB state machine (Reset, Init, RTR, RTS, SQD, SQE,
// Error) is qp_ib_state.cpp.
#include "engine/qp.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "engine/abi.hpp"
#include "engine/qp_internal.hpp"

namespace softrnic::engine {

// ----------------------------------------------------------------------------- slow path

ri_api_return_t Qp::check_resize(uint32_t mask, const ri_qp_attr_t &a) {
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
    return RI_RET_SUCCESS;
}

void Qp::apply_resize(uint32_t mask, const ri_qp_attr_t &a) {
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
}

ri_api_return_t Qp::modify(uint32_t mask, ri_qp_attr_t &a) {
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
        if (ri_api_return_t r = check_resize(mask, a); r != RI_RET_SUCCESS) return r;
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
    apply_resize(mask, a);
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
                        complete_inflight();
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
                complete_inflight();
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

}  // namespace softrnic::engine
