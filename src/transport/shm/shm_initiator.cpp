// shm transport, initiator side: posting requests into the peer's req ring, the operation
// records and their ordered reporting, the control queue, and the responses the peer sends.
#include "base/stats.hpp"
#include "transport/shm/shm_core.hpp"

namespace softrnic::transport::shm::detail {

// ----------------------------------------------------------------------------- tx side

void ShmConnection::notify_peer() {
    // Dekker pair with arm_wakeup(), through RMWs on the sleeper's need_wake (no fences:
    // an RMW reads the latest value in the word's modification order). If the sleeper's
    // exchange(1) came first, ours reads 1 and we ring; if ours came first, the sleeper's
    // acquire RMW reads from our release RMW, so it sees everything we published before
    // (the entry or the consumed index) when it re-checks, and does not sleep.
    std::atomic_ref<uint32_t> w(peer_->need_wake);
    sync_release(peer_key_);
    if (w.exchange(0, std::memory_order_acq_rel) == 0) return;
    char b = 0;
    // Non-blocking: a full socket buffer means a wake-up is already pending there.
    [[maybe_unused]] ssize_t r = ::send(link_->sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    counters().doorbells.fetch_add(1, std::memory_order_relaxed);
    base::stat_add(base::Stat::ShmDoorbells);
}

// True when entries we published into the peer's rings have waited kPeerStallNs with the
// peer consuming none of them, once per such stall. The peer's progress thread parks while
// its application polls its CQ (the pollers run the rings) and is not armed then, so we do
// not ring; if that application went on to poll memory instead (dtest -W and perftest poll
// the last byte of an RDMA-written buffer after their own write completed), nobody would
// run the peer's rings until its park window ended. A parked thread still listens to the
// doorbell. We are typically polling our CQ for the very operation that waits there.
// Progress context only; cheap (two relaxed loads) while nothing of ours is outstanding.
// Inline pollers call it on every empty CQ poll, and in a ping-pong our last entry is
// outstanding during every one of them: there the peer's indices and the clock are read
// on every 16th call only, so a peer that consumes within 15 polls costs neither. (The
// clock was a quarter of the shm 8 B ping-pong's cycles; and an index read on every poll
// kept a copy of the peer's index line here, which the peer's next store of that index
// had to take back across cores, on the peer's path to its reply.) The progress thread
// reads both on every call.
bool ShmConnection::peer_stalled() {
    uint64_t req = req_tx_.published(), resp = resp_tx_.published();
    if (req <= seen_req_cons_ && resp <= seen_resp_cons_) {
        stall_since_ns_ = 0;
        stall_calls_ = 0;
        return false;
    }
    if (socket_done_ || peer_gone_.load(std::memory_order_acquire)) return false;
    if (ProgressEngine::inline_poll_context() && (++stall_calls_ & 15) != 0) return false;
    uint64_t req_cons = req_tx_.consumed(), resp_cons = resp_tx_.consumed();
    if (req_cons != seen_req_cons_ || resp_cons != seen_resp_cons_) {
        // The peer moved: a new wait, if any, starts here.
        seen_req_cons_ = req_cons;
        seen_resp_cons_ = resp_cons;
        stall_since_ns_ = 0;
        stall_calls_ = 0;
        stall_rung_ = false;
        return false;
    }
    if (stall_rung_) return false;
    int64_t now = base::mono_ns();
    if (stall_since_ns_ == 0) {
        stall_since_ns_ = now;
        return false;
    }
    if (now - stall_since_ns_ < kPeerStallNs) return false;
    stall_rung_ = true;
    return true;
}

void ShmConnection::ring_stalled_peer() {
    char b = 0;
    // Non-blocking: a full socket buffer means a wake-up is already pending there.
    [[maybe_unused]] ssize_t r = ::send(link_->sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    counters().doorbells.fetch_add(1, std::memory_order_relaxed);
    counters().stall_doorbells.fetch_add(1, std::memory_order_relaxed);
    base::stat_add(base::Stat::ShmDoorbells);
    base::stat_add(base::Stat::ShmStallDoorbells);
}

bool ShmConnection::emit_request(const EntryFields &r, std::span<const IoSpan> local, uint32_t seq,
                                 bool &broken) {
    L::Type type;
    uint8_t flags = r.solicited ? L::kFlagSolicited : 0;
    uint32_t payload = 0;
    bool remote_iov = false;
    switch (r.kind) {
        case OpKind::Send:
        case OpKind::SendInvalidate:
        case OpKind::SendImmediate:
            if (r.kind == OpKind::SendInvalidate) flags |= L::kFlagInvalidate;
            if (r.kind == OpKind::SendImmediate) flags |= L::kFlagImmediate;
            remote_iov = !r.inline_data;
            type = r.inline_data ? L::Type::SendInline : L::Type::SendRemote;
            break;
        case OpKind::RdmaWrite:
        case OpKind::RdmaWriteImmediate:
            if (r.kind == OpKind::RdmaWriteImmediate) flags |= L::kFlagImmediate;
            remote_iov = !r.inline_data;
            type = r.inline_data ? L::Type::WriteInline : L::Type::WriteRemote;
            break;
        case OpKind::RdmaRead:
            remote_iov = true;
            type = L::Type::ReadReq;
            break;
        case OpKind::FetchAdd:
        case OpKind::CompareSwap:
            if (r.kind == OpKind::CompareSwap) flags |= L::kFlagCmpSwap;
            type = L::Type::Atomic;
            payload = 16;
            break;
        default:
            return false;
    }
    uint32_t niov = 0;
    if (remote_iov) {
        for (const IoSpan &l : local)
            niov += l.len != 0;
        payload = niov * sizeof(L::Iov);
    } else if (r.inline_data) {
        payload = static_cast<uint32_t>(r.length);
    }
    uint32_t k = L::slots_for(payload);
    L::EntryHdr *e = req_tx_.reserve(k, broken);
    if (!e) return false;
    e->type = type;
    e->flags = flags;
    e->stag = r.remote_stag;
    e->a = r.remote_to;
    e->b = r.length;
    e->seq = seq;
    e->imm = r.immediate;
    e->len = static_cast<uint16_t>(payload);
    auto *out = reinterpret_cast<std::byte *>(e) + L::kHdrBytes;
    if (type == L::Type::Atomic) {
        std::memcpy(out, &r.op1, 8);
        std::memcpy(out + 8, &r.op2, 8);
    } else if (remote_iov) {
        for (const IoSpan &l : local) {
            if (!l.len) continue;
            L::Iov v{reinterpret_cast<uintptr_t>(l.ptr), l.len};
            std::memcpy(out, &v, sizeof v);
            out += sizeof v;
        }
    } else {
        gather(local.data(), static_cast<uint32_t>(local.size()), 0, out, r.length);
    }
    req_tx_.publish(e, k);
    return true;
}

namespace {
bool is_small_inline(const OutboundOp &op) {
    return (op.kind == OpKind::Send || op.kind == OpKind::SendInvalidate ||
            op.kind == OpKind::SendImmediate || op.kind == OpKind::RdmaWrite ||
            op.kind == OpKind::RdmaWriteImmediate) &&
           op.length <= L::kInlineMax;
}
}  // namespace

bool ShmConnection::submit_now(const OutboundOp &op, OpResult &out) {
    // The engine calls this only with nothing in flight. A small Send or Write goes straight
    // into the peer's ring and completes now; a larger Write may be placed by us. unsent_ == 0
    // also means nobody else produces into the req ring (the last flush released it to us).
    if (op.local.size() > L::kMaxIov || unsent_.load(std::memory_order_acquire) != 0 ||
        closed_.load(std::memory_order_acquire))
        return false;
    if (!is_small_inline(op)) {
        if (op.kind != OpKind::RdmaWrite || !try_direct_write(op)) return false;
        out = {OpOutcome::Done, {}};
        return true;
    }
    if (try_direct_write(op)) {
        out = {OpOutcome::Done, {}};
        return true;
    }
    bool broken = false;
    if (emit_request(fields_of(op, true), op.local, 0, broken)) {
        notify_peer();
        out = {OpOutcome::Done, {}};
        return true;
    }
    if (broken) protocol_error();
    return false;  // no room in the ring (or it broke): the queued path sorts it out
}

OpResult ShmConnection::submit(const OutboundOp &op) {
    InflightOp &rec = *op.inflight;
    std::unique_lock lk(mu_);
    recs_.begin_submit(rec);
    if (recs_.rx_ending()) return recs_.end_submit();  // finished once the engine knows why
    if (closed_.load(std::memory_order_acquire) || detached_.load(std::memory_order_acquire)) {
        recs_.finish(rec, {OpOutcome::Disconnected, {}});
        return recs_.end_submit();
    }
    if (op.local.size() > L::kMaxIov) {
        recs_.finish(rec, {OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
        return recs_.end_submit();
    }
    ShmOp &r = rec.make_state<ShmOp>();
    static_cast<EntryFields &>(r) = fields_of(op, is_small_inline(op));
    std::copy(op.local.begin(), op.local.end(), r.local.begin());
    r.nlocal = static_cast<uint32_t>(op.local.size());
    r.atomic_result = op.atomic_result;
    // Records are numbered consecutively: the unsent ones are the newest.
    if (unsent_.load(std::memory_order_relaxed) == 0) first_unsent_ = rec.seq;
    unsent_.fetch_add(1, std::memory_order_acq_rel);
    flush_unsent_locked();
    const bool queued = unsent_.load(std::memory_order_relaxed) != 0;
    const OpResult res = recs_.end_submit();
    lk.unlock();
    notify_peer();
    if (queued) wake();  // progress retries once the peer made room
    return res;
}

bool ShmConnection::flush_unsent_locked() {
    if (unsent_.load(std::memory_order_relaxed) == 0) return false;
    bool broken = false;
    bool emitted = false;
    while (unsent_.load(std::memory_order_relaxed) != 0) {
        if (closed_.load(std::memory_order_acquire)) break;
        InflightOp *rec = ep_ ? ep_->tx_record(first_unsent_) : nullptr;
        if (!rec) {  // cannot happen: unsent records are unfinished and listed
            unsent_.store(0, std::memory_order_release);
            break;
        }
        ShmOp &r = rec->state_as<ShmOp>();
        if (!emit_request(r, {r.local.data(), r.nlocal}, rec->seq, broken)) break;
        r.sent = true;
        emitted = true;
        ++first_unsent_;
        // Release: a poster that reads 0 here may produce into the ring itself.
        unsent_.fetch_sub(1, std::memory_order_acq_rel);
        if (r.inline_data) {  // handed over: done, like a Send in the kernel's buffer
            recs_.finish(*rec, {OpOutcome::Done, {}});
            work_.store(true, std::memory_order_release);
        }
    }
    if (broken) {
        closed_.store(true, std::memory_order_release);
        peer_gone_.store(true, std::memory_order_release);
        work_.store(true, std::memory_order_release);
    }
    return emitted;
}

void ShmConnection::fail_all_locked(OpResult first) {
    recs_.fail_all(first);
    unsent_.store(0, std::memory_order_release);
    work_.store(true, std::memory_order_release);
}

InflightOp *ShmConnection::find_locked(uint32_t seq) {
    InflightOp *rec = ep_ ? ep_->tx_record(seq) : nullptr;
    return rec && rec->state_as<ShmOp>().sent ? rec : nullptr;
}

// --------------------------------------------------------------------------- control

bool ShmConnection::emit_direct_locked(L::Type type, uint32_t seq, const std::byte *data,
                                       uint32_t len) {
    uint32_t k = L::slots_for(len);
    bool broken = false;
    L::EntryHdr *e = resp_tx_.reserve(k, broken);
    if (!e) return false;
    e->type = type;
    e->flags = 0;
    e->stag = 0;
    e->a = e->b = 0;
    e->seq = seq;
    e->imm = 0;
    e->len = static_cast<uint16_t>(len);
    std::memcpy(reinterpret_cast<std::byte *>(e) + L::kHdrBytes, data, len);
    resp_tx_.publish(e, k);
    return true;
}

bool ShmConnection::flush_ctl_locked() {
    bool any = false;
    while (ctl_n_ > 0) {
        const Ctl &c = ctl_[ctl_head_];
        uint32_t k = L::slots_for(c.len);
        bool broken = false;
        L::EntryHdr *e = resp_tx_.reserve(k, broken);
        if (!e) break;
        e->type = c.type;
        e->flags = c.flags;
        e->stag = c.stag;
        e->a = c.a;
        e->b = c.b;
        e->seq = c.seq;
        e->imm = 0;
        e->len = c.len;
        std::memcpy(reinterpret_cast<std::byte *>(e) + L::kHdrBytes, c.payload, c.len);
        resp_tx_.publish(e, k);
        ctl_head_ = (ctl_head_ + 1) % kCtlCap;
        --ctl_n_;
        any = true;
    }
    ctl_pending_.store(ctl_n_, std::memory_order_release);
    return any;
}

bool ShmConnection::push_ctl(const Ctl &c) {
    std::lock_guard lk(ctl_mu_);
    if (close_sent_) return false;        // nothing follows a Close or Terminate
    if (ctl_n_ == kCtlCap) return false;  // cannot happen: consumption is gated on room
    ctl_[(ctl_head_ + ctl_n_) % kCtlCap] = c;
    ++ctl_n_;
    if (c.type == L::Type::Close || c.type == L::Type::Terminate) close_sent_ = true;
    flush_ctl_locked();
    return true;
}

// ---------------------------------------------------------------------- initiator side

bool ShmConnection::handle_resp(const L::EntryHdr &h, const std::byte *payload) {
    // The entry's shape (entry.hpp); what follows checks it against the operation it names.
    if (!check_resp(h)) return false;
    switch (h.type) {
        case L::Type::Ack:
        case L::Type::ReadRespInline:
        case L::Type::AtomicResp: {
            std::lock_guard lk(mu_);
            InflightOp *rec = find_locked(h.seq);
            if (!rec) return false;
            ShmOp *r = &rec->state_as<ShmOp>();
            if (h.type == L::Type::Ack) {
                if (r->inline_data || r->kind == OpKind::FetchAdd || r->kind == OpKind::CompareSwap)
                    return false;
                if (r->kind == OpKind::RdmaRead && r->placed != 0) return false;
            } else if (h.type == L::Type::ReadRespInline) {
                if (r->kind != OpKind::RdmaRead || h.len != r->length) return false;
                scatter(r->local.data(), r->nlocal, 0, payload, h.len);
            } else {
                if (r->kind != OpKind::FetchAdd && r->kind != OpKind::CompareSwap) return false;
                if (r->atomic_result) *r->atomic_result = h.a;
            }
            recs_.finish(*rec, {OpOutcome::Done, {}});
            return true;
        }
        case L::Type::Pull:
        case L::Type::ReadChunk:
        case L::Type::PullDone:
        case L::Type::ChunkFree:
            return handle_bounce(h);
        case L::Type::Terminate: {
            const RemoteFault fault =
                iwarp::fault_of({static_cast<uint8_t>(h.stag >> 16),
                                 static_cast<uint8_t>(h.stag >> 8), static_cast<uint8_t>(h.stag)});
            rx_open_.store(false, std::memory_order_release);
            revoke_grants();  // what we granted the peer ends with delivery
            {
                std::lock_guard lk(mu_);
                recs_.begin_rx_ending();
                closed_.store(true, std::memory_order_release);
                // The oldest unfinished op is the one the peer failed (in-order stream).
                fail_all_locked({OpOutcome::Terminated, fault});
            }
            if (cur_.active || cur_.recv_open) release_target();
            {
                std::lock_guard lk(ctl_mu_);
                close_sent_ = true;  // the peer stopped listening
            }
            // The Terminate goes first; the outstanding ops are reported afterwards.
            told_closed_ = true;
            ep_->rx_terminate({reinterpret_cast<const uint8_t *>(payload), h.len});
            finish_rx_ending();
            return true;
        }
        case L::Type::Close:
            peer_close_seen_ = true;
            return true;
        default:
            return false;
    }
}

bool ShmConnection::process_resp() {
    bool any = false;
    while (rx_open_.load(std::memory_order_acquire) && !peer_close_seen_) {
        L::EntryHdr h;
        const std::byte *payload = nullptr;
        Consumer::Peek pk = resp_rx_.peek(h, payload);
        if (pk == Consumer::Peek::Empty) break;
        if (pk == Consumer::Peek::Bad) {
            protocol_error();
            break;
        }
        resp_rx_.pop(h);
        any = true;
        if (!handle_resp(h, payload)) {
            protocol_error();
            break;
        }
    }
    return any;
}

}  // namespace softrnic::transport::shm::detail
