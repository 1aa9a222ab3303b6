// shm transport, channel lifecycle: progress, the engine's calls (terminate, close,
// detach), the Channel, and handles published in the LLP registry until claimed.
// The design is described in shm_core.hpp.
#include "transport/async_channel.hpp"
#include "transport/llp_registry.hpp"
#include "transport/shm/shm_core.hpp"

namespace softrnic::transport::shm {

namespace detail {

// ---------------------------------------------------------------------------- progress

// True when progress() has something it can act on now. It must not be true for work
// that waits on the peer (a stalled ring head, a pull in flight, a full ring), or the
// progress thread would spin instead of sleeping.
bool ShmConnection::quick_check(uint32_t events) const {
    if (events != 0 || work_.load(std::memory_order_acquire)) return true;
    // Consumption an inline pass left unpublished (see progress()).
    if (req_rx_.uncommitted() != 0 || resp_rx_.uncommitted() != 0) return true;
    if (rx_open_.load(std::memory_order_acquire)) {
        if (!peer_close_seen_ && resp_rx_.ready()) return true;
        if (!cur_.active && req_rx_.ready() &&
            (!req_stalled_ || resp_tx_.space_returned() ||
             kCtlCap - ctl_pending_.load(std::memory_order_acquire) >= kCtlRoomForReq))
            return true;
    }
    if (peer_close_seen_ && !told_closed_) return true;
    if (peer_gone_.load(std::memory_order_acquire) && !socket_done_) return true;
    return (unsent_.load(std::memory_order_acquire) != 0 && req_tx_.space_returned()) ||
           (ctl_pending_.load(std::memory_order_acquire) != 0 && resp_tx_.space_returned());
}

void ShmConnection::progress(uint32_t events) {
    if (!attached_.load(std::memory_order_acquire)) return;
    if (peer_stalled()) ring_stalled_peer();
    // An application polling its CQ again, while the peer places its writes itself. Not
    // one waiting for its own operation's completion (it goes back to polling memory
    // then: dtest -W waits so for each signalled write, which the peer's ring path acks).
    if (hint_ != 0 && ProgressEngine::inline_poll_context() && recs_.held() == 0 &&
        ++idle_polls_ >= kPollsBeforeRingHint)
        set_hint(0);
    // Inline pollers call this on every empty CQ poll: a few loads when idle.
    if (!quick_check(events)) return;
    pe_.note_work();
    work_.store(false, std::memory_order_release);
    if (events && !socket_done_) {
        // Doorbell bytes, or the end of the peer.
        char buf[256];
        for (;;) {
            ssize_t n = ::recv(link_->sock, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) continue;
            if (n < 0 && errno == EINTR) continue;
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
                peer_gone_.store(true, std::memory_order_release);
            break;
        }
    }
    bool took = false;
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) {
        // Responses first (they free our records and chunks), then requests in order.
        took |= process_resp();
        const bool took_req = process_req();
        took |= took_req;
        // Who serves our req ring tells the peer whether to place its writes itself: our
        // progress thread (the application polls memory, or nothing), or an application
        // polling its CQ, which would find the ring entries at once.
        if (took_req && link_->cma) set_hint(ProgressEngine::inline_poll_context() ? 0 : 1);
        if (peer_close_seen_ && !told_closed_) {
            // Graceful close: deliver what was sent before it. An operation the target
            // was pulling can no longer complete (the peer flushed it when it closed).
            for (int guard = 0; guard < 4096; ++guard) {
                if (cur_.active || cur_.recv_open) release_target();
                if (!process_req()) break;
            }
            if (cur_.active || cur_.recv_open) release_target();
            told_closed_ = true;
            rx_open_.store(false, std::memory_order_release);
            revoke_grants();  // what we granted the peer ends with delivery
            {
                std::lock_guard lk(mu_);
                recs_.begin_rx_ending();
                closed_.store(true, std::memory_order_release);
                fail_all_locked({OpOutcome::Disconnected, {}});
            }
            ep_->rx_llp_closed(CloseKind::Graceful);
            finish_rx_ending();
        }
    }
    // The locks only when there is something queued behind them: a poller that consumed
    // one inline send takes none (no locks on the poll path). A record or control entry
    // queued after these loads is flushed by whoever queued it (submit, push_ctl).
    bool tell_peer = false;
    if (unsent_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(mu_);
        tell_peer |= flush_unsent_locked();
    }
    if (ctl_pending_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(ctl_mu_);
        tell_peer |= flush_ctl_locked();
    }
    // What we consumed is published (our ring indices, then notify_peer()'s RMW on the
    // peer's need_wake) on the next pass of an inline poller, not on the pass that took
    // the entries: that pass ends in the completion the application is waiting for, and
    // the RMW there (which also waits for the index store) was on the path of every
    // small message's one-way latency. The next pass comes within nanoseconds while the
    // application polls; when it stops, its progress thread publishes once its park ends
    // or the producer's stall doorbell wakes it (quick_check reports uncommitted
    // consumption as work, for both). A large backlog is published at once so
    // a streaming producer never waits on it, and so is everything when the peer must be
    // told anyway (we just produced into its rings).
    const bool defer = took && !tell_peer && ProgressEngine::inline_poll_context() &&
                       req_rx_.uncommitted() < kLazyReqSlots &&
                       resp_rx_.uncommitted() < kLazyRespSlots &&
                       !closed_.load(std::memory_order_acquire);
    if (!defer) {
        tell_peer |= req_rx_.commit();
        tell_peer |= resp_rx_.commit();
    }
    if (tell_peer) notify_peer();
    if (peer_gone_.load(std::memory_order_acquire) && !socket_done_) {
        socket_done_ = true;
        pe_.unwatch(token_);  // level-triggered EOF would fire for ever
        stream_end(CloseKind::Abortive);
    }
    report_ready();
}

void ShmConnection::stream_end(CloseKind kind) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    {
        std::lock_guard lk(mu_);
        recs_.begin_rx_ending();
        closed_.store(true, std::memory_order_release);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) {
        if (cur_.active || cur_.recv_open) release_target();
        if (!told_closed_) {
            told_closed_ = true;
            ep_->rx_llp_closed(kind);
        }
    }
    finish_rx_ending();
}

void ShmConnection::finish_rx_ending() {
    std::lock_guard lk(mu_);
    recs_.end_rx_ending();
}

void ShmConnection::report_ready() {
    // One load when nothing was finished since the last report.
    if (!recs_.report_due()) return;
    if (EndpointGate::Scope in_ep(ep_gate_); in_ep) recs_.report(*ep_);
}

bool ShmConnection::arm_wakeup() {
    if (!attached_.load(std::memory_order_acquire)) return false;
    // The sleeper's half of the pair in notify_peer(): announce, then re-check. Anything a
    // producer published before its RMW on need_wake is visible to the checks below.
    std::atomic_ref<uint32_t>(me_->need_wake).exchange(1, std::memory_order_acq_rel);
    sync_acquire(my_key_);
    return quick_check(0);
}

// ------------------------------------------------------------------------ engine calls

void ShmConnection::terminate(const FaultReport &f) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    push_ctl(terminate_ctl(f));
    notify_peer();
    wake();
}

void ShmConnection::close(CloseKind kind) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    if (kind == CloseKind::Graceful) {
        Ctl c;
        c.type = L::Type::Close;
        push_ctl(c);
        notify_peer();
    } else {
        // Like a TCP RST: the peer sees the socket end at once.
        ::shutdown(link_->sock, SHUT_RDWR);
    }
    wake();
}

void ShmConnection::detach() {
    detached_.store(true, std::memory_order_release);
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    // Endpoint calls are short (one copy at most).
    ep_gate_.shut(this);
    {
        std::lock_guard lk(mu_);
        // The engine completes the records left: none is ours any more.
        recs_.forget();
        unsent_.store(0, std::memory_order_release);
    }
    if (ep_ && (cur_.active || cur_.recv_open)) release_target();
    wake();
}

namespace {

// ---------------------------------------------------------------------------- channel

class ShmChannel final : public IwarpChannel<ShmConnection> {
  public:
    using IwarpChannel::IwarpChannel;
    ~ShmChannel() override {
        core_->shutdown_owner();
        std::unique_ptr<Link> link = core_->take_link();
        core_.reset();  // unregistered: nothing runs any more; then unmap and close
    }
};

// An adopted connection no QP has claimed: owns the socket and both mappings (Link) until
// then; destroying it closes the socket (the peer sees the connection end) and unmaps.
class UnclaimedLink final : public llp::UnclaimedStream {
  public:
    explicit UnclaimedLink(std::unique_ptr<Link> link) : link_(std::move(link)) {}
    std::unique_ptr<Channel> claim(ri_llp_stream_handle_t, ProgressEngine &pe) override {
        // The responder's deferred hello goes before anything the channel may write on the
        // socket (doorbells); a failure means the peer is gone, which the channel then
        // finds. Our segment is made with the hello: without it there is no channel (the
        // handle is consumed; the link closes here and the peer sees the socket close).
        if (link_->hello.pending) send_hello_now(*link_);
        if (!link_->mine.get()) return nullptr;
        auto core = std::make_unique<ShmConnection>(std::move(link_), pe);
        if (!core->ok()) return nullptr;  // the handle is consumed; the link closes with it
        return std::make_unique<ShmChannel>(std::move(core));
    }
    bool send_deferred(ri_llp_stream_handle_t, uint64_t key) override {
        if (key == 0 || link_->hello.key != key) return false;
        return send_hello_now(*link_);
    }

  private:
    std::unique_ptr<Link> link_;
};

}  // namespace

}  // namespace detail

using detail::revoke_all_grants;
using detail::UnclaimedLink;

void ensure_registered() {
    register_placement_revoker(&revoke_all_grants);
}

int register_unclaimed(std::unique_ptr<Link> link) {
    ensure_registered();
    int h = link->sock;
    if (h < 0 || h >= (1 << 30)) {  // loopback handles live above 2^30
        link->sock = -1;            // still the caller's
        return -1;
    }
    if (!llp::publish(h, std::make_unique<UnclaimedLink>(std::move(link)))) return -1;
    return h;
}

}  // namespace softrnic::transport::shm
