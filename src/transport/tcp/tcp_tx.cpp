// TCP/iWARP transport, tx side: posting operations as FPDUs, the send queue and window,
// ordered reporting and failing of operation records. Design notes in tcp_core.hpp.
#include "base/stats.hpp"
#include "transport/tcp/tcp_core.hpp"

namespace softrnic::transport::tcp::detail {

// ------------------------------------------------------------------------------- tx side

OpResult TcpConnection::finish_submit_locked(InflightOp &rec, OpResult r) {
    recs_.finish(rec, r);
    return recs_.end_submit();
}

OpResult TcpConnection::submit(const OutboundOp &op) {
    std::lock_guard lk(mu_);
    InflightOp &rec = *op.inflight;
    recs_.begin_submit(rec);
    auto finish_now = [&](OpResult r) -> OpResult { return finish_submit_locked(rec, r); };
    if (recs_.rx_ending() ||
        (tx_ == TxState::Dead && !local_closed_ && !detached_.load(std::memory_order_acquire))) {
        // The receive side is telling the engine how the stream ended (rx_ending()), or the
        // send side broke and the receive side has not read to the end yet (see
        // flush_locked): the record waits, so that what ended the stream (a Terminate the
        // peer sent first, say) is what the engine reports, not this operation's failure.
        wake();
        return recs_.end_submit();
    }
    if (tx_ != TxState::Open || local_closed_ || detached_.load(std::memory_order_acquire))
        return finish_now({OpOutcome::Disconnected, {}});
    if (op.local.size() > kMaxLocal)
        return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});

    TxMsg m;
    m.nsrc = static_cast<uint32_t>(op.local.size());
    std::copy(op.local.begin(), op.local.end(), m.src.begin());
    m.length = op.length;
    switch (op.kind) {
        case OpKind::Send:
        case OpKind::SendInvalidate: {
            bool inv = op.kind == OpKind::SendInvalidate;
            m.first.opcode =
                inv ? (op.solicited ? w::Opcode::SendSeInvalidate : w::Opcode::SendInvalidate)
                    : (op.solicited ? w::Opcode::SendSe : w::Opcode::Send);
            m.first.inv_stag = inv ? op.remote_stag : 0;
            m.first.qn = static_cast<uint32_t>(w::Queue::Send);
            m.first.msn = send_msn_;
            break;
        }
        case OpKind::RdmaWrite:
        case OpKind::RdmaWriteImmediate:
            if (op.kind == OpKind::RdmaWriteImmediate && !p_.rfc7306)
                return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
            m.first.opcode = w::Opcode::RdmaWrite;
            m.first.stag = op.remote_stag;
            m.first.to = op.remote_to;
            break;
        case OpKind::FetchAdd:
        case OpKind::CompareSwap: {
            if (!p_.rfc7306)
                return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
            w::DdpHeader h{};
            h.opcode = w::Opcode::AtomicRequest;
            h.qn = static_cast<uint32_t>(w::Queue::ReadRequest);  // shared with reads
            h.msn = read_msn_++;
            w::AtomicRequestBody b{};
            bool add = op.kind == OpKind::FetchAdd;
            b.op = add ? w::AtomicOp::FetchAdd : w::AtomicOp::CmpSwap;
            b.request_id = next_atomic_id_++;
            b.stag = op.remote_stag;
            b.to = op.remote_to == kAtomicAtBase ? kAtomicBaseTo : op.remote_to;
            if (add) {
                b.add_swap = op.operand1;  // Add Mask 0: a plain 64-bit add
            } else {
                b.add_swap = op.operand2;
                b.add_swap_mask = ~uint64_t{0};
                b.compare = op.operand1;
                b.compare_mask = ~uint64_t{0};
            }
            m.fixed = true;
            m.hdr_len = w::encode_atomic_request(h, b, m.hdr);
            TcpOp &t = rec.make_state<TcpOp>();
            t.atomic = true;
            t.atomic_id = b.request_id;
            t.atomic_result = op.atomic_result;
            m.read_op = &rec;
            m.nsrc = 0;
            msgs_.push_back(m);
            flush_locked();
            return end_submit_locked();
        }
        case OpKind::RdmaRead: {
            if (op.length > 0xFFFFFFFFu)
                return finish_now(
                    {OpOutcome::Terminated, RemoteFault::Bounds, FaultedOp::ReadResponse});
            w::DdpHeader h{};
            h.opcode = w::Opcode::ReadRequest;
            h.qn = static_cast<uint32_t>(w::Queue::ReadRequest);
            h.msn = read_msn_++;
            w::ReadRequestBody b{};
            uint32_t sink = next_sink_stag_++;
            if (next_sink_stag_ == 0) next_sink_stag_ = 1;
            b.sink_stag = sink;
            b.sink_to = 0;
            b.size = static_cast<uint32_t>(op.length);
            b.src_stag = op.remote_stag;
            b.src_to = op.remote_to;
            m.fixed = true;
            m.hdr_len = w::encode_read_request(h, b, m.hdr);
            TcpOp &t = rec.make_state<TcpOp>();
            t.nsink = m.nsrc;
            t.sink = m.src;
            t.length = op.length;
            t.sink_stag = sink;
            m.read_op = &rec;
            m.nsrc = 0;
            msgs_.push_back(m);
            flush_locked();
            return end_submit_locked();
        }
        default:
            // Send with immediate: no RFC 7306 form (see the file comment).
            return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
    }
    w::Segmenter check;
    if (w::Status s = check.start(m.first, m.length, mulpdu_); s != w::Status::Ok)
        return finish_now({OpOutcome::Terminated, iwarp::fault_of(w::term_code(s))});
    if (!w::is_tagged(m.first.opcode)) ++send_msn_;
    rec.make_state<TcpOp>();
    if (op.kind == OpKind::RdmaWriteImmediate) {
        // The Write carries no completion; the Immediate Data message behind it does.
        msgs_.push_back(m);
        TxMsg im;
        im.fixed = true;
        w::DdpHeader h{};
        h.opcode = op.solicited ? w::Opcode::ImmediateDataSe : w::Opcode::ImmediateData;
        h.qn = static_cast<uint32_t>(w::Queue::Send);
        h.msn = send_msn_++;
        im.hdr_len = w::encode_immediate(h, op.immediate, im.hdr);
        im.op = &rec;
        msgs_.push_back(im);
    } else {
        m.op = &rec;
        msgs_.push_back(m);
    }
    flush_locked();
    return end_submit_locked();
}

// The end of a submit that queued its op: Done when the kernel already took all of it
// (the engine completes it at once when nothing is ahead), else Pending. Earlier records
// this submit's writing finished are due for a report by progress.
OpResult TcpConnection::end_submit_locked() {
    const OpResult r = recs_.end_submit();
    if (recs_.report_due()) wake();
    return r;
}

// The latency path: a Send or Write that fits one FPDU, with nothing queued or being
// reported ahead of it, goes to the kernel from here with no queue record. If the kernel
// takes only part of it, the rest is copied (at most one FPDU) and written by progress, so
// the op is still complete (its memory free) when this returns.
bool TcpConnection::submit_now(const OutboundOp &op, OpResult &out) {
    bool send = op.kind == OpKind::Send || op.kind == OpKind::SendInvalidate;
    if ((!send && op.kind != OpKind::RdmaWrite) || op.local.size() > kMaxLocal ||
        op.length >= mulpdu_)
        return false;
    std::lock_guard lk(mu_);
    if (fd_ < 0 || tx_ != TxState::Open || local_closed_ ||
        detached_.load(std::memory_order_acquire) || rtr_pending_.load(std::memory_order_relaxed) ||
        !msgs_.empty() || !fpdus_.empty())
        return false;
    w::DdpHeader first{};
    if (send) {
        bool inv = op.kind == OpKind::SendInvalidate;
        first.opcode =
            inv ? (op.solicited ? w::Opcode::SendSeInvalidate : w::Opcode::SendInvalidate)
                : (op.solicited ? w::Opcode::SendSe : w::Opcode::Send);
        first.inv_stag = inv ? op.remote_stag : 0;
        first.qn = static_cast<uint32_t>(w::Queue::Send);
        first.msn = send_msn_;
    } else {
        first.opcode = w::Opcode::RdmaWrite;
        first.stag = op.remote_stag;
        first.to = op.remote_to;
    }
    w::Segmenter seg;
    w::SegmentPlan plan;
    if (seg.start(first, op.length, mulpdu_) != w::Status::Ok || !seg.next(plan) || !plan.hdr.last)
        return false;
    uint8_t hdr[w::kMaxHeaderLen];
    size_t hl = w::encode_ddp_header(plan.hdr, hdr);
    std::array<std::span<const uint8_t>, kMaxPieces> pieces;
    size_t npieces = 0;
    for (const IoSpan &sp : op.local)
        if (sp.len) pieces[npieces++] = {reinterpret_cast<const uint8_t *>(sp.ptr), sp.len};
    w::FpduFrame frame;
    if (w::build_fpdu_frame({hdr, hl}, {pieces.data(), npieces}, crc_, frame) != w::Status::Ok)
        return false;
    std::array<struct iovec, kMaxPieces + 2> iov;
    size_t n = w::fpdu_iovecs(frame, {pieces.data(), npieces}, iov);
    if (n == 0) return false;
    msghdr mh{};
    mh.msg_iov = iov.data();
    mh.msg_iovlen = n;
    ssize_t wr = ::sendmsg(fd_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    // Nothing written (full socket, signal, broken stream): the queued path deals with it.
    if (wr <= 0) return false;
    base::stat_add(base::Stat::TcpBytesSent, static_cast<uint64_t>(wr));
    if (send) ++send_msn_;
    size_t total = frame.total() + static_cast<size_t>(op.length);
    if (static_cast<size_t>(wr) < total) {
        Fpdu &f = fpdus_.emplace_back();
        f.owned.reserve(total - static_cast<size_t>(wr));
        size_t skip = static_cast<size_t>(wr);
        for (size_t i = 0; i < n; ++i) {
            auto *b = static_cast<const uint8_t *>(iov[i].iov_base);
            size_t len = iov[i].iov_len;
            size_t k = std::min(skip, len);
            skip -= k;
            f.owned.insert(f.owned.end(), b + k, b + len);
        }
        f.total = f.owned.size();
        queued_bytes_ += f.total;
        update_out_locked();  // progress writes the rest when the socket has room
    }
    out = {OpOutcome::Done, {}};
    return true;
}

void TcpConnection::refill_locked() {
    while (!msgs_.empty() && fpdus_.size() < kTxWindowFpdus && queued_bytes_ < kTxWindowBytes) {
        TxMsg &m = msgs_.front();
        Fpdu &f = fpdus_.emplace_back();
        if (m.fixed) {
            if (m.read_op) {
                if (outstanding_reads_ >= ord_) {
                    fpdus_.pop_back();  // ORD reached: hold it and what follows
                    return;
                }
                ++outstanding_reads_;
                reads_.push_back(m.read_op);
            }
            w::build_fpdu_frame({m.hdr.data(), m.hdr_len}, {}, crc_, f.frame);
            f.total = f.frame.total();
            f.terminate = m.terminate;
            f.op = m.op;                // Immediate Data closing a Write with immediate
            f.read_resp = m.read_resp;  // Atomic Response: frees an IRD credit
            queued_bytes_ += f.total;
            msgs_.pop_front();
            continue;
        }
        if (!m.started) {
            m.seg.start(m.first, m.length, mulpdu_);  // checked when queued
            m.started = true;
        }
        w::SegmentPlan plan;
        if (!m.seg.next(plan)) {  // cannot happen: the last segment pops the message
            fpdus_.pop_back();
            msgs_.pop_front();
            continue;
        }
        uint8_t hdr[w::kMaxHeaderLen];
        size_t hl = w::encode_ddp_header(plan.hdr, hdr);
        uint64_t need = plan.length;
        while (need > 0 && m.piece < m.nsrc && f.npieces < kMaxPieces) {
            const IoSpan &s = m.src[m.piece];
            uint64_t n = std::min<uint64_t>(need, s.len - m.piece_off);
            if (n > 0)
                f.pieces[f.npieces++] = {reinterpret_cast<const uint8_t *>(s.ptr) + m.piece_off,
                                         static_cast<size_t>(n)};
            m.piece_off += n;
            need -= n;
            if (m.piece_off == s.len) {
                ++m.piece;
                m.piece_off = 0;
            }
        }
        w::build_fpdu_frame({hdr, hl}, {f.pieces.data(), f.npieces}, crc_, f.frame);
        f.total = f.frame.total() + plan.length;
        queued_bytes_ += f.total;
        if (plan.hdr.last) {
            f.op = m.op;
            f.release_ref = m.release_ref;
            f.read_resp = m.read_resp;
            msgs_.pop_front();
        }
    }
}

void TcpConnection::retire_fpdu_locked(Fpdu &f) {
    if (f.op || f.release_ref) hint();
    if (f.op) recs_.finish(*f.op, {OpOutcome::Done, {}});
    if (f.release_ref) pending_release_.push_back(f.release_ref);
    if (f.read_resp) --inflight_read_resps_;
    queued_bytes_ -= f.total;
}

void TcpConnection::flush_locked() {
    // Before the initiator's RTR nothing may go out but the MPA Reply (the preamble),
    // except when tearing down (a Terminate or the close itself).
    bool held = rtr_pending_.load(std::memory_order_relaxed) && tx_ == TxState::Open;
    if (held && (fpdus_.empty() || !fpdus_.front().preamble)) return;
    while (fd_ >= 0 && tx_ != TxState::Dead) {
        if (held && (fpdus_.empty() || !fpdus_.front().preamble)) break;
        if (!held) refill_locked();
        if (fpdus_.empty()) break;
        std::array<struct iovec, kIovMax> iov;
        size_t n = 0;
        for (const Fpdu &f : fpdus_) {
            if (held && !f.preamble) break;
            if (n + kMaxPieces + 2 > iov.size()) break;
            n += f.iov(&iov[n]);
        }
        msghdr mh{};
        mh.msg_iov = iov.data();
        mh.msg_iovlen = n;
        ssize_t wr = ::sendmsg(fd_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (wr > 0) base::stat_add(base::Stat::TcpBytesSent, static_cast<uint64_t>(wr));
        if (wr < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            // The stream broke: the receive side sees it too and ends the stream (as lost
            // when this error says the peer stopped answering: it is consumed here). The
            // operations are failed then (on_stream_end, stream_lost), not now: what the
            // peer sent before it closed is read first, and a Terminate among it decides
            // how they end. Failed here, the engine took the QP to Error as a lost
            // connection and the Terminate waiting to be read was never reported.
            tx_errno_.store(errno, std::memory_order_release);
            tx_ = TxState::Dead;
            drop_unwritten_locked();
            fpdus_.clear();
            queued_bytes_ = 0;
            wake();
            break;
        }
        size_t left = static_cast<size_t>(wr);
        while (left > 0 && !fpdus_.empty()) {
            Fpdu &f = fpdus_.front();
            size_t take = std::min(left, f.total - f.done);
            f.done += take;
            left -= take;
            if (f.done == f.total) {
                retire_fpdu_locked(f);
                fpdus_.pop_front();
            }
        }
    }
    if (fd_ >= 0 && tx_ == TxState::Closing && fpdus_.empty() && msgs_.empty() && !shut_wr_) {
        ::shutdown(fd_, SHUT_WR);
        shut_wr_ = true;
    }
    update_out_locked();
}

void TcpConnection::update_out_locked() {
    if (fd_ < 0 || !attached_.load(std::memory_order_acquire)) return;
    bool want = !fpdus_.empty();
    if (want || !msgs_.empty()) hint();  // inline polls retry while anything is queued
    if (want == out_armed_) return;
    if (pe_.watch(token_, fd_, EPOLLIN | EPOLLRDHUP | (want ? uint32_t{EPOLLOUT} : 0u)))
        out_armed_ = want;
}

void TcpConnection::own_partial_head_locked() {
    if (fpdus_.empty()) return;
    Fpdu &f = fpdus_.front();
    if (f.done == 0 || f.done == f.total || !f.owned.empty()) return;
    std::array<struct iovec, kMaxPieces + 2> iov;
    size_t n = f.iov(iov.data());
    std::vector<uint8_t> rest;
    rest.reserve(f.total - f.done);
    for (size_t i = 0; i < n; ++i) {
        auto *b = static_cast<const uint8_t *>(iov[i].iov_base);
        rest.insert(rest.end(), b, b + iov[i].iov_len);
    }
    if (f.release_ref) pending_release_.push_back(f.release_ref);
    if (f.read_resp) --inflight_read_resps_;
    queued_bytes_ -= f.total;
    f.release_ref = nullptr;
    f.read_resp = false;
    f.op = nullptr;
    f.npieces = 0;
    f.owned = std::move(rest);
    f.total = f.owned.size();
    f.done = 0;
    queued_bytes_ += f.total;
}

void TcpConnection::drop_unwritten_locked() {
    own_partial_head_locked();
    std::deque<Fpdu> keep;
    for (Fpdu &f : fpdus_) {
        if (!f.owned.empty() || f.terminate) {
            keep.push_back(std::move(f));
            continue;
        }
        if (f.release_ref) pending_release_.push_back(f.release_ref);
        if (f.read_resp) --inflight_read_resps_;
        queued_bytes_ -= f.total;
    }
    fpdus_.swap(keep);
    std::deque<TxMsg> keep_msgs;
    for (TxMsg &m : msgs_) {
        if (m.terminate) {
            keep_msgs.push_back(m);
            continue;
        }
        if (m.release_ref) pending_release_.push_back(m.release_ref);
        if (m.read_resp) --inflight_read_resps_;
    }
    msgs_.swap(keep_msgs);
}

void TcpConnection::fail_all_locked(OpResult r) {
    // Nothing of ours refers to a record any more: drop_unwritten_locked() ran.
    recs_.fail_all(r);
    reads_.clear();
    outstanding_reads_ = 0;
}

void TcpConnection::queue_terminate_locked(w::TermCode code, std::span<const uint8_t> offending,
                                           bool include_hdr) {
    local_closed_ = true;
    rx_open_.store(false, std::memory_order_release);
    drop_unwritten_locked();
    fail_all_locked({OpOutcome::Disconnected, {}});
    if (tx_ != TxState::Open || fd_ < 0 || terminate_queued_) {
        if (tx_ == TxState::Open) tx_ = TxState::Closing;
        flush_locked();
        return;
    }
    TxMsg m;
    m.fixed = true;
    m.terminate = true;
    m.hdr_len = encode_term(code, offending, include_hdr, m.hdr);
    msgs_.push_back(m);
    terminate_queued_ = true;
    tx_ = TxState::Closing;
    flush_locked();
}

}  // namespace softrnic::transport::tcp::detail
