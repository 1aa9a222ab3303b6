// TCP/iWARP transport, rx side: progress, reading and decoding FPDUs, and arrivals
// dispatched by RDMAP opcode to the engine. Design notes in tcp_core.hpp.
#include "base/log.hpp"
#include "base/stats.hpp"
#include "transport/async_channel.hpp"
#include "transport/tcp/tcp_core.hpp"

namespace softrnic::transport::tcp::detail {

// ------------------------------------------------------------------------------ progress

void TcpConnection::progress(uint32_t events) {
    if (!attached_.load(std::memory_order_acquire)) return;
    bool readable = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
    bool writable = events & EPOLLOUT;
    bool hinted =
        hint_.load(std::memory_order_acquire) && hint_.exchange(false, std::memory_order_acq_rel);
    if (hinted) {
        std::lock_guard lk(mu_);
        if (abort_req_) {
            abort_req_ = false;
            close_fd_locked(true);
        }
    }
    bool received = readable && do_read();
    if (!hinted && !received && !writable) return;  // nothing came, nothing queued
    {
        std::lock_guard lk(mu_);
        if (writable || !fpdus_.empty() || !msgs_.empty()) flush_locked();
    }
    release_refs();
    report_ready();
}

bool TcpConnection::do_read() {
    // One receive buffer per thread, not per connection: every byte of it is fed to the
    // decoder (which keeps partial FPDUs itself) before do_read returns, and a thousand
    // connections would otherwise hold 256 MiB.
    thread_local std::unique_ptr<uint8_t[]> rxbuf =
        std::make_unique_for_overwrite<uint8_t[]>(kRxBuf);
    bool got = false;
    for (int iter = 0; iter < 16; ++iter) {
        if (fd_ < 0) return got;  // only progress closes fd_
        ssize_t n = ::recv(fd_, rxbuf.get(), kRxBuf, MSG_DONTWAIT);
        if (n > 0) {
            got = true;
            base::stat_add(base::Stat::TcpBytesReceived, static_cast<uint64_t>(n));
            std::span<const uint8_t> in(rxbuf.get(), static_cast<size_t>(n));
            while (!in.empty() && rx_open_.load(std::memory_order_acquire)) {
                w::FeedResult r = dec_->feed(in);
                in = in.subspan(r.consumed);
                if (r.state == w::FeedState::Segment) {
                    if (!handle_segment(dec_->segment())) break;
                } else if (r.state == w::FeedState::Error) {
                    protocol_error(w::term_code(dec_->error()), {}, false);
                    break;
                }
            }
            // Anything left after the stream stopped delivering is discarded.
            if (static_cast<size_t>(n) < kRxBuf) return true;
            continue;
        }
        if (n == 0) {
            // A FIN inside an FPDU or a message is no orderly close: the peer died or
            // reset mid-transfer, and what was placed of that message is incomplete. Nor
            // is the end of a stream whose send side already failed for want of an answer
            // (a sendmsg() took the socket's error; what is left reads as an end).
            if (dec_->mid_fpdu() || reasm_.in_message() || !last_write_done_ ||
                peer_unreachable(tx_errno_.load(std::memory_order_acquire)))
                stream_lost();
            else
                on_stream_end(CloseKind::Graceful);
            return true;
        }
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EAGAIN || err == EWOULDBLOCK) return got;
        if (peer_unreachable(err)) {
            // No FIN, no RST: the peer stopped answering (apply_liveness bounds how long
            // that takes to show) or its network is gone. That is a lost connection, not a
            // reset (RNICPI's LLQ_CONNECTION_LOST; uDAPL's DAT_CONNECTION_EVENT_BROKEN).
            SOFTRNIC_LOG(Info, Tcp, "socket %d: connection lost: %s", fd_, std::strerror(err));
            stream_lost();
        } else {
            on_stream_end(CloseKind::Abortive);
        }
        return true;
    }
    return got;
}

void TcpConnection::on_stream_end(CloseKind kind) {
    bool tell;
    {
        std::lock_guard lk(mu_);
        tell = !local_closed_;
        local_closed_ = true;
        recs_.begin_rx_ending();
        drop_unwritten_locked();
        fail_all_locked({OpOutcome::Disconnected, {}});
        close_fd_locked(kind == CloseKind::Abortive);
    }
    release_refs();
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) {
        if (recv_open_) {
            ep_->rx_recv_abort(recv_, RI_WC_STATUS_WR_FLUSHED_ERROR);
            recv_open_ = false;
        }
        if (tell) ep_->rx_llp_closed(kind);
    }
    finish_rx_ending();
}

void TcpConnection::finish_rx_ending() {
    std::lock_guard lk(mu_);
    recs_.end_rx_ending();
}

// The stream ended in the middle of an FPDU or message: the connection is lost (LLP
// layer, "connection lost"), the QP goes to Error with its work flushed.
void TcpConnection::stream_lost() {
    constexpr w::TermCode kLost{2, 0, 0x01};
    bool tell;
    {
        std::lock_guard lk(mu_);
        tell = !local_closed_;
        local_closed_ = true;
        recs_.begin_rx_ending();
        drop_unwritten_locked();
        fail_all_locked({OpOutcome::Disconnected, {}});
        close_fd_locked(true);
    }
    release_refs();
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) {
        abort_open_recv(RI_WC_STATUS_WR_FLUSHED_ERROR);
        if (tell) {
            std::array<uint8_t, w::kUntaggedHeaderLen + w::kTerminateBodyMax> t{};
            const size_t n = encode_term(kLost, {}, false, t);
            ep_->rx_stream_error(iwarp::fault_of(kLost),
                                 iwarp::message_of(std::span<const uint8_t>(t.data(), n)));
        }
    }
    finish_rx_ending();
}

void TcpConnection::abort_open_recv(ri_wc_status_t st) {
    if (!recv_open_) return;
    recv_open_ = false;
    if (recv_.wqe) ep_->rx_recv_abort(recv_, st);
}

// A violation the engine does not know about (framing, CRC, DDP/RDMAP sequencing): send
// the Terminate and tell the engine the stream is gone. Called inside the endpoint gate.
void TcpConnection::protocol_error(w::TermCode code, std::span<const uint8_t> ulpdu,
                                   bool include_hdr) {
    bool tell;
    {
        std::lock_guard lk(mu_);
        tell = !local_closed_;
        recs_.begin_rx_ending();
        queue_terminate_locked(code, ulpdu, include_hdr);
    }
    // The engine raises the event that matches the code (CRC, bad FPDU, DDP/RDMAP version,
    // queue, MSN...), records it as the local Terminate and moves to Error.
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) {
        abort_open_recv(RI_WC_STATUS_LOCAL_QP_CATASTROPHIC);
        if (tell) {
            // What was queued above, for the engine's record.
            std::array<uint8_t, w::kUntaggedHeaderLen + w::kTerminateBodyMax> t{};
            const size_t n = encode_term(code, ulpdu, include_hdr, t);
            ep_->rx_stream_error(iwarp::fault_of(code),
                                 iwarp::message_of(std::span<const uint8_t>(t.data(), n)));
        }
    }
    finish_rx_ending();
}

// The engine refused an arrival (RxStatus !ok): it already raised its event and moved to
// Error; we send the Terminate it describes and close.
void TcpConnection::engine_failed(const RxStatus &st, std::span<const uint8_t> ulpdu) {
    recv_open_ = recv_open_ && recv_.wqe != nullptr;
    if (EndpointGate::Scope in_ep(ep_gate_); recv_open_ && in_ep) {
        abort_open_recv(RI_WC_STATUS_LOCAL_QP_CATASTROPHIC);
    }
    std::lock_guard lk(mu_);
    queue_terminate_locked(iwarp::terminate_code({st.fault, st.op}), ulpdu, true);
}

bool TcpConnection::handle_segment(std::span<const uint8_t> ulpdu) {
    EndpointGate::Scope in_ep(ep_gate_);
    if (!in_ep) {
        rx_open_.store(false, std::memory_order_release);
        return false;
    }

    w::Segment s;
    w::Status st = w::decode_segment(ulpdu, s, {p_.rfc7306});
    if (st != w::Status::Ok) {
        protocol_error(w::term_code(st), ulpdu, false);
        return false;
    }
    if (rtr_pending_.load(std::memory_order_acquire)) {
        // The first FPDU must be the RTR we agreed on: a zero-length RDMA Write whose STag
        // is not validated (brief 2.4). It ends the hold on our sends.
        if (s.hdr.opcode != w::Opcode::RdmaWrite || !s.hdr.last || !s.payload.empty()) {
            protocol_error(w::term_code(w::Status::MpaNoMatchingRtr), ulpdu, false);
            return false;
        }
        std::lock_guard lk(mu_);
        rtr_pending_.store(false, std::memory_order_release);
        flush_locked();
        return true;
    }
    w::UntaggedReassembler::Result rr;
    if (!s.hdr.tagged()) {
        st = reasm_.accept(s.hdr, static_cast<uint32_t>(s.payload.size()), rr);
        if (st != w::Status::Ok) {
            protocol_error(w::term_code(st), ulpdu, true);
            return false;
        }
    }
    const RxHandler h = kRxByOpcode[static_cast<uint8_t>(s.hdr.opcode) & 0xF];
    return (this->*h)(s, ulpdu, rr);
}

// RFC 7306 Atomic Request at the responder: executed in arrival order (after the Read
// Requests before it were queued), answered on queue 3. Inside the endpoint gate.
bool TcpConnection::handle_atomic_request(const w::AtomicRequestBody &b,
                                          std::span<const uint8_t> ulpdu) {
    bool add = b.op == w::AtomicOp::FetchAdd;
    // Masked forms (RFC 7306 4.1/4.2) are not offered by the engine: only plain add and CAS.
    if ((add && b.add_swap_mask != 0) ||
        (!add && (b.add_swap_mask != ~uint64_t{0} || b.compare_mask != ~uint64_t{0}))) {
        protocol_error(w::term_code(w::Status::RdmapBadAtomicOpcode), ulpdu, true);
        return false;
    }
    bool over;
    {
        std::lock_guard lk(mu_);
        over = inflight_read_resps_ >= ird_;  // atomics share the IRD with reads
    }
    if (over) {
        protocol_error(kTermIrdExceeded, ulpdu, true);
        return false;
    }
    uint64_t original = 0;
    RxStatus rs = ep_->rx_atomic(add ? OpKind::FetchAdd : OpKind::CompareSwap, b.stag,
                                 b.to == kAtomicBaseTo ? kAtomicAtBase : b.to,
                                 add ? b.add_swap : b.compare, add ? 0 : b.add_swap, original);
    if (!rs.ok) {
        engine_failed(rs, ulpdu);
        return false;
    }
    TxMsg m;
    m.fixed = true;
    w::DdpHeader h{};
    h.opcode = w::Opcode::AtomicResponse;
    h.qn = static_cast<uint32_t>(w::Queue::AtomicResponse);
    std::lock_guard lk(mu_);
    if (tx_ != TxState::Open || local_closed_) return false;
    h.msn = atomic_resp_msn_++;
    m.hdr_len = w::encode_atomic_response(h, {b.request_id, original}, m.hdr);
    m.read_resp = true;
    ++inflight_read_resps_;
    msgs_.push_back(m);
    flush_locked();
    return true;
}

void TcpConnection::release_refs() {
    // Taken off the list only inside the gate: once detached, detach() releases them.
    EndpointGate::Scope in_ep(ep_gate_);
    if (!in_ep) return;
    {
        std::lock_guard lk(mu_);
        releasing_.swap(pending_release_);  // both keep their capacity: no allocation
    }
    for (void *r : releasing_)
        ep_->rx_tagged_release(r);
    releasing_.clear();
}

void TcpConnection::report_ready() {
    if (!recs_.report_due()) return;
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) recs_.report(*ep_);
}

// Arrivals by RDMAP opcode (RFC 5040 4.2, RFC 7306): index = opcode.
const TcpConnection::RxHandler TcpConnection::kRxByOpcode[16] = {
    &TcpConnection::rx_write,            // RdmaWrite
    &TcpConnection::rx_read_request,     // ReadRequest
    &TcpConnection::rx_read_response,    // ReadResponse
    &TcpConnection::rx_send,             // Send
    &TcpConnection::rx_send,             // SendInvalidate
    &TcpConnection::rx_send,             // SendSe
    &TcpConnection::rx_send,             // SendSeInvalidate
    &TcpConnection::rx_terminate,        // Terminate
    &TcpConnection::rx_immediate,        // ImmediateData
    &TcpConnection::rx_immediate,        // ImmediateDataSe
    &TcpConnection::rx_atomic_request,   // AtomicRequest
    &TcpConnection::rx_atomic_response,  // AtomicResponse
    &TcpConnection::rx_unexpected,
    &TcpConnection::rx_unexpected,
    &TcpConnection::rx_unexpected,
    &TcpConnection::rx_unexpected,
};

// RdmaWrite (RDMAP opcode)
bool TcpConnection::rx_write(const w::Segment &s, std::span<const uint8_t> ulpdu,
                             const w::UntaggedReassembler::Result & /*rr*/) {
    const auto *payload = reinterpret_cast<const std::byte *>(s.payload.data());
    if (last_write_done_) last_write_len_ = 0;
    last_write_len_ += s.payload.size();
    last_write_done_ = s.hdr.last;
    if (s.payload.empty()) return true;
    IoSpan dst{};
    void *ref = nullptr;
    RxStatus rs = ep_->rx_tagged_acquire(s.hdr.stag, s.hdr.to, s.payload.size(), false, dst, ref);
    if (!rs.ok) {
        engine_failed(rs, ulpdu);
        return false;
    }
    // The last byte goes last, with release ordering: consumers poll the final
    // byte of an RDMA-written buffer to learn that the rest arrived (dtest -W,
    // perftest-style ping-pong), and memcpy may store its tail first.
    const size_t len = s.payload.size();
    if (len > 1) std::memcpy(dst.ptr, payload, len - 1);
    std::atomic_ref<std::byte>(dst.ptr[len - 1]).store(payload[len - 1], std::memory_order_release);
    ep_->rx_tagged_release(ref);
    return true;
}

// Send, SendSe, SendInvalidate, SendSeInvalidate (RDMAP opcode)
bool TcpConnection::rx_send(const w::Segment &s, std::span<const uint8_t> ulpdu,
                            const w::UntaggedReassembler::Result &rr) {
    const auto *payload = reinterpret_cast<const std::byte *>(s.payload.data());
    if (rr.msg_offset == 0) {
        recv_ = {};
        RxStatus rs = ep_->rx_recv_begin(recv_);
        if (!rs.ok) {
            engine_failed(rs, ulpdu);
            return false;
        }
        recv_open_ = true;
    }
    if (!s.payload.empty()) {
        RxStatus rs = ep_->rx_recv_place(recv_, rr.msg_offset, {payload, s.payload.size()});
        if (!rs.ok) {
            engine_failed(rs, ulpdu);
            return false;
        }
    }
    if (rr.complete) {
        recv_open_ = false;
        bool inv = w::carries_invalidate(s.hdr.opcode);
        bool se = s.hdr.opcode == w::Opcode::SendSe || s.hdr.opcode == w::Opcode::SendSeInvalidate;
        RxStatus rs = ep_->rx_recv_end(recv_, inv ? OpKind::SendInvalidate : OpKind::Send,
                                       rr.msg_length, se, s.hdr.inv_stag, 0);
        if (!rs.ok) {
            engine_failed(rs, ulpdu);
            return false;
        }
    }
    return true;
}

// ReadRequest (RDMAP opcode)
bool TcpConnection::rx_read_request(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                    const w::UntaggedReassembler::Result & /*rr*/) {
    const w::ReadRequestBody &b = s.read;
    bool over;
    {
        std::lock_guard lk(mu_);
        over = inflight_read_resps_ >= ird_;
    }
    if (over) {
        protocol_error(kTermIrdExceeded, ulpdu, true);
        return false;
    }
    w::DdpHeader first{};
    first.opcode = w::Opcode::ReadResponse;
    first.stag = b.sink_stag;
    first.to = b.sink_to;
    w::Segmenter check;
    if (w::Status cs = check.start(first, b.size, mulpdu_); cs != w::Status::Ok) {
        protocol_error(w::term_code(cs), ulpdu, true);
        return false;
    }
    TxMsg m;
    m.first = first;
    m.length = b.size;
    m.read_resp = true;
    if (b.size > 0) {
        IoSpan src{};
        void *ref = nullptr;
        RxStatus rs = ep_->rx_tagged_acquire(b.src_stag, b.src_to, b.size, true, src, ref);
        if (!rs.ok) {
            engine_failed(rs, ulpdu);
            return false;
        }
        m.src[0] = src;
        m.nsrc = 1;
        m.release_ref = ref;
    }
    std::lock_guard lk(mu_);
    if (tx_ != TxState::Open || local_closed_) {
        if (m.release_ref) pending_release_.push_back(m.release_ref);
        return false;
    }
    ++inflight_read_resps_;
    msgs_.push_back(m);
    flush_locked();
    return true;
}

// ReadResponse (RDMAP opcode)
bool TcpConnection::rx_read_response(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                     const w::UntaggedReassembler::Result & /*rr*/) {
    const auto *payload = reinterpret_cast<const std::byte *>(s.payload.data());
    InflightOp *rec = nullptr;
    {
        std::lock_guard lk(mu_);
        if (!reads_.empty()) rec = reads_.front();
    }
    // Ours until we finish it: a close that fails it meanwhile leaves it to be reported by
    // this progress context, after we are done with its sink.
    TcpOp *rd = rec ? &rec->state_as<TcpOp>() : nullptr;
    if (!rd || rd->atomic || s.hdr.stag != rd->sink_stag) {
        protocol_error(kTermBadSinkStag, ulpdu, true);
        return false;
    }
    uint64_t n = s.payload.size();
    if (s.hdr.to != rd->placed || n > rd->length - rd->placed ||
        (s.hdr.last && rd->placed + n != rd->length)) {
        protocol_error(kTermSinkBounds, ulpdu, true);
        return false;
    }
    // Scatter into the sink list at offset `placed`.
    uint64_t off = rd->placed, done = 0, base = 0;
    for (uint32_t i = 0; i < rd->nsink && done < n; ++i) {
        const IoSpan &sp = rd->sink[i];
        if (off + done < base + sp.len) {
            uint64_t in = off + done - base;
            uint64_t k = std::min<uint64_t>(sp.len - in, n - done);
            std::memcpy(sp.ptr + in, payload + done, k);
            done += k;
        }
        base += sp.len;
    }
    rd->placed += n;
    if (s.hdr.last) {
        std::lock_guard lk(mu_);
        if (!reads_.empty() && reads_.front() == rec) {
            reads_.pop_front();
            --outstanding_reads_;
            recs_.finish(*rec, {OpOutcome::Done, {}});
            flush_locked();  // a held Read Request may go now
        }
    }
    return true;
}

// Terminate (RDMAP opcode)
bool TcpConnection::rx_terminate(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                 const w::UntaggedReassembler::Result & /*rr*/) {
    const RemoteFault fault = iwarp::fault_of(s.term.code);
    {
        std::lock_guard lk(mu_);
        local_closed_ = true;
        recs_.begin_rx_ending();
        rx_open_.store(false, std::memory_order_release);
        drop_unwritten_locked();
        // The oldest unfinished op is the one the peer failed (in-order stream).
        fail_all_locked({OpOutcome::Terminated, fault});
        if (tx_ == TxState::Open) tx_ = TxState::Closing;
        flush_locked();
    }
    abort_open_recv(RI_WC_STATUS_WR_FLUSHED_ERROR);
    // The Terminate itself (with its bytes) goes first; the outstanding ops are
    // reported afterwards as Terminated: the engine completes the oldest with
    // REMOTE_TERMINATION and flushes the rest, raising the event once.
    ep_->rx_terminate(ulpdu.subspan(w::kUntaggedHeaderLen));
    finish_rx_ending();
    return false;
}

// AtomicRequest (RDMAP opcode)
bool TcpConnection::rx_atomic_request(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                      const w::UntaggedReassembler::Result & /*rr*/) {
    return handle_atomic_request(s.atomic_req, ulpdu);
}

// AtomicResponse (RDMAP opcode)
bool TcpConnection::rx_atomic_response(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                       const w::UntaggedReassembler::Result & /*rr*/) {
    InflightOp *rec = nullptr;
    {
        std::lock_guard lk(mu_);
        if (!reads_.empty()) rec = reads_.front();
    }
    TcpOp *at = rec ? &rec->state_as<TcpOp>() : nullptr;
    if (!at || !at->atomic || at->atomic_id != s.atomic_resp.request_id) {
        protocol_error(kTermUnexpectedResponse, ulpdu, true);
        return false;
    }
    if (at->atomic_result) *at->atomic_result = s.atomic_resp.original;
    std::lock_guard lk(mu_);
    if (reads_.empty() || reads_.front() != rec) return true;  // failed meanwhile
    reads_.pop_front();
    --outstanding_reads_;
    recs_.finish(*rec, {OpOutcome::Done, {}});
    flush_locked();  // a held Read/Atomic Request may go now
    return true;
}

// ImmediateData, ImmediateDataSe (RDMAP opcode)
bool TcpConnection::rx_immediate(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                 const w::UntaggedReassembler::Result & /*rr*/) {
    // The 32-bit immediate of a Write with immediate travels in the low half.
    uint64_t len = last_write_done_ ? last_write_len_ : 0;
    last_write_len_ = 0;
    last_write_done_ = true;
    RxStatus rs = ep_->rx_write_immediate(len, static_cast<uint32_t>(s.immediate),
                                          s.hdr.opcode == w::Opcode::ImmediateDataSe);
    if (!rs.ok) {
        engine_failed(rs, ulpdu);
        return false;
    }
    return true;
}

// Opcodes the decoder let through that nothing here handles.
bool TcpConnection::rx_unexpected(const w::Segment & /*s*/, std::span<const uint8_t> ulpdu,
                                  const w::UntaggedReassembler::Result & /*rr*/) {
    protocol_error(w::term_code(w::Status::RdmapUnexpectedOpcode), ulpdu, false);
    return false;
}

}  // namespace softrnic::transport::tcp::detail
