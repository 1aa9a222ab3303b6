// A queue pair: the RDMAC iWARP state machine, the send and receive queues, and the
// responder side of every operation the transport delivers.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "engine/ah.hpp"
#include "engine/device.hpp"
#include "engine/ib_qp_context.hpp"
#include "engine/inflight.hpp"
#include "engine/object.hpp"
#include "transport/transport.hpp"

namespace softrnic::engine {

class Qp final : public transport::Endpoint, public Object {
  public:
    // What a send-queue completion needs of its WR, kept while the WR is outstanding.
    struct WrInfo {
        ri_wr_id_t id = 0;
        uint32_t flags = 0;
        ri_wr_type_t type = RI_WR_TYPE_SEND;
        uint32_t send_rtag = 0;
        uint64_t pos = 0;  // send-queue position after this WR
    };
    // An outbound operation handed to the transport, with the local memory it pins.
    struct InFlight {
        InFlight() {}  // leaves `refs` unset, see there
        WrInfo w;
        ri_wc_type_t wct = RI_WC_TYPE_SEND;
        uint64_t bytes = 0;
        uint32_t nrefs = 0;
        // Only refs[0, nrefs) is meaningful: resolve_local sets each one it hands out. The
        // anonymous union keeps the array from being zeroed on every posted WR (nine
        // MemRefs, 42 instructions of an 8-byte send's post).
        union {
            MemRef refs[Limits::kMaxSge + 1];
        };
        std::byte *atomic_dst = nullptr;
        uint64_t atomic_value = 0;
        uint32_t li_stag = 0;  // read with local invalidate: the sink STag
    };

    uint32_t slot = 0;
    uint32_t qp_id = 0;
    Use<Pd> pd;
    void *pd_handle = nullptr;
    Use<Cq> scq;
    Use<Cq> rcq;
    Use<Srq> srq;

    uint32_t sq_size = 0, rq_size = 0;
    uint32_t sq_max_sges = 0, sq_max_sges_rdmaw = 0, rq_max_sges = 0;
    uint32_t ord = 0, ird = 0;
    bool enable_read = false, enable_write = false, enable_stag0_fastreg = false;
    bool enable_bind = false;
    ri_mpa_attr_t mpa{};
    std::atomic<uint32_t> rq_hiwat{0};
    std::atomic<bool> rq_armed{false};
    // SRQ WQEs this QP has taken and not completed yet: what rq_hiwat is compared with
    // (RNICPI L8597, "allocated for the QP from the associated SRQ and are outstanding").
    std::atomic<uint32_t> srq_outstanding{0};

    // The state the data path acts on. On an IB QP: RTS (RC in RTS), kIbReceiving,
    // kIbParked or Error, the IB state being ib->state (ib_qp_context.hpp).
    std::atomic<ri_qp_state_t> state{RI_QP_STATE_IDLE};
    // InfiniBand QPs only (docs/ib-personality.md section 3.1); null on iWARP.
    std::unique_ptr<IbQpContext> ib;
    // Or-ed into every send WR's flags: RI_WR_SIGNALED_FLAG on an IB RC QP created with
    // signal_completions (RNICPI L8606), 0 otherwise (a mask, not a branch, on the post).
    uint32_t sq_sig_all = 0;

    // Terminate message sent or received (ri_qp_query, L8473-8486).
    std::mutex term_mu;
    uint8_t term_buf[52] = {};
    uint32_t term_len = 0;
    bool term_local = false;

    std::unique_ptr<transport::Channel> chan;
    bool async_chan = false;  // the transport completes operations later (tx_complete)
    // Optional operations the stream carries (Channel::capabilities), set at RTS.
    std::atomic<uint32_t> chan_caps{transport::Channel::kCapAll};
    std::atomic<bool> bound_narrow_windows{false};  // a type 2 window was bound through us
    std::atomic<bool> cancelling{false};            // being destroyed: outstanding WRs just vanish
    InflightList<InFlight> inflight;                // used only with asynchronous transports
    ri_llp_stream_handle_t llp = 0;
    bool llp_set = false;

    // Send queue: positions only; a WR's slot is free again once a polled completion
    // at or after it has been reaped (Device::sq_retired).
    uint64_t sq_head = 0;
    uint64_t incarnation = 0;

    SlotQueue<RecvWqe, ri_data_seg_t> rq;
    std::mutex rq_mu;    // flush vs. resize of `rq` (never taken on the data path)
    ScopedGate rx_gate;  // arrivals from the transport; closed to flush or to detach
    // An arrival moved the QP to Error; the flush waits until it leaves the rx gate
    // (RxScope). One connection's: cleared when the QP goes back to Idle or gets a stream.
    std::atomic<bool> error_pending{false};
    std::atomic<bool> terminate_in_transport{false};
    // A peer Terminate arrived through rx_terminate: the next WR the transport reports as
    // Terminated is the one it failed (it completes REMOTE_TERMINATION, no second event).
    std::atomic<bool> terminate_received{false};

    ~Qp() override;

    // Fast path.
    ri_api_return_t post_sq(const ri_wr_t *wrs, uint32_t &num);
    ri_api_return_t post_rq(const ri_wr_recv_t *wrs, uint32_t &num);

    // Slow path.
    ri_api_return_t modify(uint32_t mask, ri_qp_attr_t &attrs);     // iWARP
    ri_api_return_t ib_modify(uint32_t mask, ri_qp_attr_t &attrs);  // qp_ib_state.cpp
    void query(ri_qp_attr_t &attrs);
    void destroy();  // detaches the stream; no completions for outstanding WRs (L4033-4043)
    void reset_queues();

    // Endpoint (responder side and stream events).
    transport::RxStatus rx_tagged_acquire(uint32_t stag, uint64_t to, uint64_t len, bool for_read,
                                          transport::IoSpan &out, void *&ref) override;
    void rx_tagged_release(void *ref) override;
    bool rx_tagged_grant(void *ref, uint64_t &to, uint64_t &len, std::byte *&host) override;
    transport::RxStatus rx_recv_begin(transport::RxRecv &r) override;
    transport::RxStatus rx_recv_place(transport::RxRecv &r, uint64_t offset,
                                      std::span<const std::byte> data) override;
    transport::RxStatus rx_recv_end(transport::RxRecv &r, transport::OpKind kind,
                                    uint64_t total_len, bool solicited, uint32_t invalidate_stag,
                                    uint32_t immediate) override;
    transport::RxStatus rx_recv_map(transport::RxRecv &r, uint64_t offset, uint64_t len,
                                    std::span<transport::IoSpan> out, std::span<void *> refs,
                                    size_t &n) override;
    void rx_recv_abort(transport::RxRecv &r, ri_wc_status_t status) override;
    transport::RxStatus rx_send(transport::OpKind kind, std::span<const transport::IoSpan> payload,
                                uint64_t total_len, bool solicited, uint32_t invalidate_stag,
                                uint32_t immediate) override;
    transport::RxStatus rx_atomic(transport::OpKind kind, uint32_t stag, uint64_t to, uint64_t op1,
                                  uint64_t op2, uint64_t &original) override;
    transport::RxStatus rx_write_immediate(uint64_t length, uint32_t immediate,
                                           bool solicited) override;
    void rx_terminate(std::span<const uint8_t> msg) override;
    void rx_stream_error(transport::RemoteFault fault, std::span<const uint8_t> msg) override;
    void rx_llp_closed(transport::CloseKind kind) override;
    transport::DatagramVerdict rx_datagram(const transport::DatagramArrival &a) override;
    // IB UD (qp_datagram.cpp): receive what the instance's port `port` gets for this QPN,
    // or no longer (waits out deliveries in progress). The caller serialises these (modify,
    // destroy).
    void ib_bind_datagram(uint8_t port);
    void ib_unbind_datagram();
    // IB RC (qp_ib_state.cpp): whether this QP is the responder paired with that requester.
    bool rx_rc_accepts(ri_lid_t slid, uint32_t src_qpn, ri_pkey_t pkey,
                       uint8_t &rnr_timer) override;
    transport::InflightOp *tx_record(uint32_t seq) override;
    void tx_fail_all(transport::OpResult oldest) override;
    void tx_report() override;

  private:
    // ri_qp_modify's queue resizes (both personalities): the checks, then the change.
    ri_api_return_t check_resize(uint32_t mask, const ri_qp_attr_t &a);
    void apply_resize(uint32_t mask, const ri_qp_attr_t &a);
    // IB (qp_ib_state.cpp): the IB part of ri_qp_query; the value checks of a modify;
    // what an SQ post meets in the IB state (RI_RET_SUCCESS: it completes flushed).
    void ib_query(ri_qp_attr_t &attrs) const;
    ri_api_return_t ib_check_values(uint32_t mask, const ri_qp_attr_t &a, IbQpState from,
                                    IbQpState to) const;
    ri_api_return_t ib_sq_post_state() const;
    // IB UD (qp_datagram.cpp): the send queue of a UD QP, and its receive completions.
    ri_api_return_t post_sq_datagram(const ri_wr_t *wrs, uint32_t &num);
    void send_datagram(const ri_wr_datagram_t &wr, const ResolvedAv &av, const WrInfo &info);
    void complete_recv_datagram(const RecvWqe &w, ri_wc_status_t status, uint64_t bytes,
                                uint32_t wc_flags, uint32_t imm,
                                const transport::DatagramSource &src);
    void discard_rq();  // empties the receive queue without completions (Reset)
    ri_api_return_t validate_sq_wr(const ri_wr_t &wr) const;
    void execute_sq_wr(const ri_wr_t &wr, const WrInfo &info);
    void finish_outbound(InFlight &f, transport::OpResult res);
    // IB RC: an operation the responder NAKed or never answered completes with the IB
    // status, and the QP goes to Error (docs/ib-personality.md 7.1, 7.2).
    void ib_fail_outbound(const InFlight &f, transport::OpResult res);
    void complete_sq(const WrInfo &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                     bool force);
    // complete_sq's completion, built into `e`; false when there is none to queue (an
    // unsignalled success).
    bool sq_cqe(const WrInfo &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                bool force, Cqe &e);
    // complete_sq for a UD QP: the completion carries the QPN (ri_gen_wc_t).
    void complete_sq_datagram(const WrInfo &w, ri_wc_status_t status, uint64_t bytes, bool force);
    // After Channel::detach: completes the operations still in flight (flushed), or on
    // destroy only releases their memory.
    void complete_inflight();
    void flush_rq();
    void complete_recv(const RecvWqe &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                       uint32_t wc_flags, uint32_t inv_rtag, uint32_t imm);
    // The receive completion of both (complete_recv, complete_recv_datagram), built into
    // `e`, with the SRQ's outstanding count taken down.
    void recv_cqe(const RecvWqe &w, ri_wc_type_t type, ri_wc_status_t status, uint64_t bytes,
                  uint32_t wc_flags, uint32_t inv_rtag, uint32_t imm, Cqe &e);
    // Resolves a local SGE list; returns a WC status (SUCCESS when all resolved).
    ri_wc_status_t resolve_local(const ri_data_seg_t *sg, uint32_t n, uint32_t need,
                                 transport::IoSpan *spans, MemRef *refs, uint64_t &total);
    void put_refs(MemRef *refs, uint32_t n);
    ri_wc_status_t local_bind(const ri_wr_bind_t &w);
    ri_wc_status_t local_fmr(const ri_wr_fmr_t &w);
    ri_wc_status_t local_invalidate(const ri_wr_local_invalidate_t &w);
    // Error handling.
    void fail_local(ri_async_event_type_t ev, bool send_terminate, transport::RemoteFault fault);
    transport::RxStatus fail_remote(MemFault f, bool irrq, transport::FaultReport site);
    transport::RxStatus fail_rx(ri_async_event_type_t ev, const transport::FaultReport &f);
    void record_terminate(std::span<const uint8_t> msg, bool local);
    void record_fault(const transport::FaultReport &f, bool local);
    void enter_error(bool inside_rx);
    void finish_error();
    void raise(ri_async_event_type_t ev);
    bool take_recv(RecvWqe &w, ri_data_seg_t *sges);
    // Untagged arrival steps; the caller is inside the rx gate.
    transport::RxStatus recv_begin(transport::RxRecv &r);
    transport::RxStatus recv_place(transport::RxRecv &r, uint64_t offset,
                                   std::span<const std::byte> data);
    transport::RxStatus recv_end(transport::RxRecv &r, transport::OpKind kind, uint64_t total_len,
                                 bool solicited, uint32_t invalidate_stag, uint32_t immediate);
    ri_wc_status_t check_recv_sges(const ri_data_seg_t *sg, uint32_t n) const;
    friend class RxScope;
    // Pending receive of an in-progress untagged arrival (one at a time per QP).
    RecvWqe rx_wqe_{};
    ri_data_seg_t rx_sges_[Limits::kMaxSge] = {};
};

}  // namespace softrnic::engine
