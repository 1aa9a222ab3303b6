// The queue pair: what every personality shares (errors, reset, query, destroy). Posting
// is in qp_send.cpp, arrivals in qp_recv.cpp, the iWARP state machine in qp_iwarp_state.cpp
// and the InfiniBand one in qp_ib_state.cpp (chosen through the personality table).
#include "engine/qp.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "engine/abi.hpp"
#include "engine/qp_internal.hpp"

namespace softrnic::engine {

Qp::~Qp() {
    // A QP freed without ri_qp_destroy (its instance destroyed under it) must not stay
    // reachable through the datagram fabric. The Device's ports outlive its QP table.
    ib_unbind_datagram();
}

// ------------------------------------------------------------------------ error handling

namespace {

// The affiliated event an IB RC responder raises for the fault it NAKs (IBA 1.2 ch. 11).
ri_async_event_type_t ib_responder_event(RemoteFault f) {
    switch (f) {
        case RemoteFault::InvalidStag:
        case RemoteFault::Bounds:
        case RemoteFault::Access:
        case RemoteFault::NotAssociated:
        case RemoteFault::Wrap:
        case RemoteFault::CannotInvalidate:
            return RI_EVENT_QP_LOCAL_ACCESS_VIOLATION_WQ_ERROR;
        case RemoteFault::UnexpectedOpcode:
        case RemoteFault::MessageTooLong:
            return RI_EVENT_QP_INVALID_REQ_LOCAL_WQ_ERROR;
        default:
            return RI_EVENT_QP_LOCAL_WQ_CATASTROPHIC_ERROR;
    }
}

}  // namespace

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
    if (ib) {
        // IB RC (docs/ib-personality.md 7.1): a missing receive is an RNR NAK, which leaves
        // the responder as it is; the other faults are NAKs that take it to Error with the
        // IB event of their kind.
        if (f.fault == RemoteFault::NoReceiveBuffer) return RxStatus::fail(f.fault, f.op);
        ev = ib_responder_event(f.fault);
    }
    ri_qp_state_t expect = state.load(std::memory_order_acquire);
    if ((expect == RI_QP_STATE_READY_TO_SEND || expect == kIbReceiving) &&
        state.compare_exchange_strong(expect, RI_QP_STATE_TERMINATE, std::memory_order_acq_rel)) {
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
    // An IB QP's own state follows (a CQ overflow, a failed local operation).
    if (ib) ib->state.store(IbQpState::Error, std::memory_order_release);
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
    if (ib) {
        ib_query(a);
        return;
    }
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
    ib_unbind_datagram();  // IB UD: no datagram reaches the QP once this returns
    // Stream first: an arrival being handled finishes normally instead of meeting a QP
    // that is already gone and answering the peer with a Terminate.
    if (chan) {
        chan->close(transport::CloseKind::Abortive);
        chan->detach();
    }
    state.store(RI_QP_STATE_ERROR, std::memory_order_seq_cst);
    rx_gate.shut();
    chan.reset();
    complete_inflight();  // cancelled without completions (RNICPI L4033-4043)
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
