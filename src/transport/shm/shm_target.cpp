// shm transport, target side: the peer's requests (inline, pulled with CMA, or through the
// bounce chunks), delivered to the engine, and the Terminate when it refuses one.
#include "transport/shm/shm_core.hpp"

namespace softrnic::transport::shm::detail {

// ------------------------------------------------------------------------ rx helpers

// The engine refused an arrival (it raised its event and moved to Terminate): send the
// Terminate it describes and stop delivering.
void ShmConnection::target_failed(const RxStatus &st, uint32_t stag, uint64_t to) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    push_ctl(terminate_ctl({st.fault, st.op, stag, to}));
}

// The peer's entries make no sense: a stream error, as TCP reports a framing error.
void ShmConnection::protocol_error() {
    if (!rx_open_.exchange(false, std::memory_order_acq_rel)) return;
    revoke_grants();
    {
        std::lock_guard lk(mu_);
        recs_.begin_rx_ending();
        closed_.store(true, std::memory_order_release);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    if (cur_.recv_open) {
        ep_->rx_recv_abort(cur_.recv, RI_WC_STATUS_LOCAL_QP_CATASTROPHIC);
        cur_.recv_open = false;
    }
    const Ctl c = terminate_ctl({RemoteFault::UnexpectedOpcode, FaultedOp::Send});
    push_ctl(c);
    ep_->rx_stream_error(RemoteFault::UnexpectedOpcode, {c.payload, c.len});
    finish_rx_ending();
}

// A cross-memory copy failed: the peer process is gone (ESRCH) or lied about its memory.
// Either way the connection cannot continue.
void ShmConnection::cma_failed() {
    peer_gone_.store(true, std::memory_order_release);
    ::shutdown(link_->sock, SHUT_RDWR);
}

// ------------------------------------------------------------------------- target side

void ShmConnection::release_target() {
    if (cur_.ref) ep_->rx_tagged_release(cur_.ref);
    cur_.ref = nullptr;
    if (cur_.recv_open) ep_->rx_recv_abort(cur_.recv, RI_WC_STATUS_WR_FLUSHED_ERROR);
    cur_.recv_open = false;
    cur_.active = false;
}

void ShmConnection::finish_target() {
    // Pull path: every byte is placed.
    TargetOp &t = cur_;
    bool se = t.flags & L::kFlagSolicited;
    RxStatus st = RxStatus::success();
    if (t.type == L::Type::SendRemote) {
        OpKind kind = t.flags & L::kFlagInvalidate  ? OpKind::SendInvalidate
                      : t.flags & L::kFlagImmediate ? OpKind::SendImmediate
                                                    : OpKind::Send;
        t.recv_open = false;
        st = ep_->rx_recv_end(t.recv, kind, t.length, se, t.stag, t.imm);
    } else {
        if (t.ref) ep_->rx_tagged_release(t.ref);
        t.ref = nullptr;
        if (t.flags & L::kFlagImmediate) st = ep_->rx_write_immediate(t.length, t.imm, se);
    }
    t.active = false;
    if (!st.ok) {
        target_failed(st, 0, 0);
        return;
    }
    Ctl c;
    c.type = L::Type::Ack;
    c.seq = t.seq;
    push_ctl(c);
}

bool ShmConnection::handle_req(const L::EntryHdr &h, const std::byte *payload) {
    bool se = h.flags & L::kFlagSolicited;
    std::array<iovec, L::kMaxIov> iov;
    uint32_t niov = 0;
    // The entry's shape (entry.hpp); what follows checks it against our memory and state.
    if (!check_req(h, payload, iov, niov)) return protocol_error(), false;
    switch (h.type) {
        case L::Type::SendInline: {
            OpKind kind = h.flags & L::kFlagInvalidate  ? OpKind::SendInvalidate
                          : h.flags & L::kFlagImmediate ? OpKind::SendImmediate
                                                        : OpKind::Send;
            IoSpan p{const_cast<std::byte *>(payload), h.len};
            RxStatus st = ep_->rx_send(kind, {&p, h.len ? 1u : 0u}, h.len, se, h.stag, h.imm);
            if (!st.ok) return target_failed(st, 0, 0), false;
            return true;
        }
        case L::Type::WriteInline: {
            if (h.len > 0) {
                // With CMA the peer may place its next writes to this STag itself.
                const bool may_grant = grants_possible() && !(h.flags & L::kFlagImmediate);
                const uint64_t gen = may_grant ? grant_generation() : 0;
                IoSpan dst{};
                void *ref = nullptr;
                RxStatus st = ep_->rx_tagged_acquire(h.stag, h.a, h.len, false, dst, ref);
                if (!st.ok) return target_failed(st, h.stag, h.a), false;
                place_last_byte_last(dst.ptr, payload, h.len);
                if (may_grant) grant(h.stag, ref, gen);
                ep_->rx_tagged_release(ref);
            }
            if (h.flags & L::kFlagImmediate) {
                RxStatus st = ep_->rx_write_immediate(h.len, h.imm, se);
                if (!st.ok) return target_failed(st, 0, 0), false;
            }
            return true;
        }
        case L::Type::SendRemote:
        case L::Type::WriteRemote: {
            TargetOp &t = cur_;
            t = TargetOp{};
            t.type = h.type;
            t.flags = h.flags;
            t.seq = h.seq;
            t.stag = h.stag;
            t.imm = h.imm;
            t.to = h.a;
            t.length = h.b;
            bool send = h.type == L::Type::SendRemote;
            if (send) {
                RxStatus st = ep_->rx_recv_begin(t.recv);
                if (!st.ok) return target_failed(st, 0, 0), false;
                t.recv_open = true;
            } else {
                // As for WriteInline: the peer may place its next writes here itself.
                const bool may_grant = grants_possible() && !(h.flags & L::kFlagImmediate);
                const uint64_t gen = may_grant ? grant_generation() : 0;
                RxStatus st = ep_->rx_tagged_acquire(h.stag, h.a, h.b, false, t.mem, t.ref);
                if (!st.ok) return target_failed(st, h.stag, h.a), false;
                if (may_grant) grant(h.stag, t.ref, gen);
            }
            t.active = true;
            if (!link_->cma) {
                pump_target();
                return true;
            }
            // Single copy from the initiator's memory into ours.
            std::array<iovec, L::kMaxIov> local;
            std::array<void *, L::kMaxIov> refs{};
            size_t nlocal = 0;
            bool staged = false;
            std::byte last{};
            if (send) {
                std::array<IoSpan, L::kMaxIov> spans;
                RxStatus st = ep_->rx_recv_map(t.recv, 0, t.length, spans, refs, nlocal);
                if (!st.ok) {
                    t.recv_open = false;  // the engine completed the WQE with the fault
                    t.active = false;
                    return target_failed(st, 0, 0), false;
                }
                staged = nlocal == 0;
                for (size_t i = 0; i < nlocal; ++i)
                    local[i] = {spans[i].ptr, static_cast<size_t>(spans[i].len)};
            } else {
                // The last byte goes to `last` and is stored by us after the rest: the
                // kernel's copy (rep movsb) does not store in address order, and an
                // application polling the buffer's final byte (dtest -W) would otherwise
                // see it before some of the bytes ahead of it.
                if (t.length > 1) local[nlocal++] = {t.mem.ptr, static_cast<size_t>(t.length - 1)};
                local[nlocal++] = {&last, 1};
            }
            bool ok = true;
            if (!link_->peer_alive()) {
                ok = false;  // the peer exited: its pid may already name another process
            } else if (!staged) {
                ok = cma_copy(link_->peer_pid, CmaDir::Read, {local.data(), nlocal},
                              {iov.data(), niov}, t.length);
                // Release: whoever reads this byte (acquire) sees every byte before it. The
                // kernel stored them before the call returned (on x86 with string stores,
                // which are ordered before a later separate store: Intel SDM 8.2.4.2), for
                // this thread or for the copy helper, whose half this thread acquired
                // (release/acquire is cumulative).
                if (ok && !send)
                    std::atomic_ref<std::byte>(t.mem.ptr[t.length - 1])
                        .store(last, std::memory_order_release);
            } else {
                // The endpoint cannot map its receive buffer: stage through our bounce
                // area (two copies) and place.
                uint64_t off = 0;
                while (ok && off < t.length) {
                    uint64_t n = std::min<uint64_t>(kCmaStage, t.length - off);
                    // Remote iovecs for [off, off + n).
                    std::array<iovec, L::kMaxIov> part;
                    uint32_t np = 0;
                    uint64_t base = 0;
                    for (uint32_t i = 0; i < niov; ++i) {
                        uint64_t s = base, e = base + iov[i].iov_len;
                        uint64_t lo = std::max(s, off), hi = std::min(e, off + n);
                        if (lo < hi)
                            part[np++] = {static_cast<char *>(iov[i].iov_base) + (lo - s),
                                          static_cast<size_t>(hi - lo)};
                        base = e;
                    }
                    iovec l{my_bounce_, static_cast<size_t>(n)};
                    ok = link_->peer_alive() &&
                         ::process_vm_readv(link_->peer_pid, &l, 1, part.data(), np, 0) ==
                             static_cast<ssize_t>(n);
                    if (ok) {
                        RxStatus st =
                            ep_->rx_recv_place(t.recv, off, {my_bounce_, static_cast<size_t>(n)});
                        if (!st.ok) {
                            t.recv_open = false;
                            t.active = false;
                            return target_failed(st, 0, 0), false;
                        }
                    }
                    off += n;
                }
            }
            if (send)
                for (size_t i = 0; i < nlocal; ++i)
                    ep_->rx_tagged_release(refs[i]);
            if (!ok) {
                release_target();
                cma_failed();
                return false;
            }
            t.done = t.length;
            finish_target();
            return true;
        }
        case L::Type::ReadReq: {
            if (h.b == 0) {
                Ctl c;
                c.type = L::Type::Ack;
                c.seq = h.seq;
                push_ctl(c);
                return true;
            }
            IoSpan src{};
            void *ref = nullptr;
            RxStatus st = ep_->rx_tagged_acquire(h.stag, h.a, h.b, true, src, ref);
            if (!st.ok) return target_failed(st, h.stag, h.a), false;
            if (h.b <= L::kInlineMax) {
                bool sent;
                {
                    std::lock_guard lk(ctl_mu_);
                    sent = !close_sent_ && ctl_n_ == 0 &&
                           emit_direct_locked(L::Type::ReadRespInline, h.seq, src.ptr,
                                              static_cast<uint32_t>(h.b));
                }
                ep_->rx_tagged_release(ref);
                return sent;  // no room: handled again on a later pass (no side effects)
            }
            if (!link_->cma) {
                TargetOp &t = cur_;
                t = TargetOp{};
                t.type = h.type;
                t.seq = h.seq;
                t.length = h.b;
                t.mem = src;
                t.ref = ref;
                t.active = true;
                pump_target();
                return true;
            }
            iovec l{src.ptr, static_cast<size_t>(h.b)};
            bool put = link_->peer_alive() &&
                       cma_copy(link_->peer_pid, CmaDir::Write, {&l, 1}, {iov.data(), niov}, h.b);
            ep_->rx_tagged_release(ref);
            if (!put) {
                cma_failed();
                return false;
            }
            Ctl c;
            c.type = L::Type::Ack;
            c.seq = h.seq;
            push_ctl(c);
            return true;
        }
        case L::Type::Atomic: {
            uint64_t op1, op2, orig = 0;
            std::memcpy(&op1, payload, 8);
            std::memcpy(&op2, payload + 8, 8);
            OpKind kind = h.flags & L::kFlagCmpSwap ? OpKind::CompareSwap : OpKind::FetchAdd;
            RxStatus st = ep_->rx_atomic(kind, h.stag, h.a, op1, op2, orig);
            if (!st.ok) return target_failed(st, h.stag, h.a), false;
            Ctl c;
            c.type = L::Type::AtomicResp;
            c.seq = h.seq;
            c.a = orig;
            push_ctl(c);
            return true;
        }
        default:
            protocol_error();
            return false;
    }
}

bool ShmConnection::process_req() {
    bool any = false;
    req_stalled_ = false;
    while (rx_open_.load(std::memory_order_acquire) && !cur_.active) {
        if (kCtlCap - ctl_pending_.load(std::memory_order_acquire) < kCtlRoomForReq) {
            req_stalled_ = true;
            break;
        }
        L::EntryHdr h;
        const std::byte *payload = nullptr;
        Consumer::Peek pk = req_rx_.peek(h, payload);
        if (pk == Consumer::Peek::Empty) break;
        if (pk == Consumer::Peek::Bad) {
            protocol_error();
            break;
        }
        bool stall = h.type == L::Type::ReadReq && h.b != 0 && h.b <= L::kInlineMax;
        bool done = handle_req(h, payload);
        if (!done && stall && rx_open_.load(std::memory_order_acquire) &&
            !peer_gone_.load(std::memory_order_acquire)) {
            req_stalled_ = true;  // inline read response waits for room; entry stays
            break;
        }
        req_rx_.pop(h);
        any = true;
        if (!done) break;
    }
    return any;
}

}  // namespace softrnic::transport::shm::detail
