// TCP/iWARP transport, channel lifecycle: close, Terminate and detach, the Channel, and
// adopted sockets published in the LLP registry until a QP claims them.
#include "transport/async_channel.hpp"
#include "transport/tcp/tcp_core.hpp"

namespace softrnic::transport::tcp {

namespace detail {

void TcpConnection::close_fd_locked(bool abortive) {
    if (fd_ < 0) return;
    if (abortive) {
        linger lg{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    pe_.unwatch(token_);
    ::close(fd_);
    fd_ = -1;
    tx_ = TxState::Dead;
    rx_open_.store(false, std::memory_order_release);
    fpdus_.clear();  // only owned bytes or Terminates can be left: drop_unwritten ran
    msgs_.clear();
    queued_bytes_ = 0;
}

void TcpConnection::terminate(const FaultReport &f) {
    std::lock_guard lk(mu_);
    queue_terminate_locked(iwarp::terminate_code(f), {}, false);
    wake();
}

void TcpConnection::close(CloseKind kind) {
    std::lock_guard lk(mu_);
    local_closed_ = true;
    rx_open_.store(false, std::memory_order_release);
    drop_unwritten_locked();
    fail_all_locked({OpOutcome::Disconnected, {}});
    if (kind == CloseKind::Abortive && !terminate_queued_ && tx_ == TxState::Closing) {
        // A graceful close came first (RTS -> Closing with receives outstanding, which the
        // engine ends in Error; uDAPL's disconnect does this). Sends whose completions
        // were reported are in the kernel's send buffer or, for the tail of a partly
        // written FPDU, in ours: a reset would throw them away while a peer slow to read
        // has not got them yet, so the consumer would have been told a message went that
        // never arrives. The close stays graceful: what is queued goes out, then FIN.
        // Only the work not yet written was dropped (and flushed) above.
        flush_locked();
    } else if (kind == CloseKind::Abortive && !terminate_queued_) {
        abort_req_ = true;  // progress closes the fd (it alone reads it)
    } else if (tx_ == TxState::Open) {
        tx_ = TxState::Closing;
        flush_locked();
    }
    wake();
}

void TcpConnection::detach() {
    detached_.store(true, std::memory_order_seq_cst);
    rx_open_.store(false, std::memory_order_release);
    // Endpoint calls are short (a copy of at most one receive buffer).
    ep_gate_.shut(this);
    std::vector<void *> refs;
    {
        std::lock_guard lk(mu_);
        local_closed_ = true;
        drop_unwritten_locked();
        // The engine completes the records left: none is ours any more.
        recs_.forget();
        reads_.clear();
        outstanding_reads_ = 0;
        refs.swap(pending_release_);
        if (tx_ == TxState::Open) {
            tx_ = TxState::Closing;
            flush_locked();
        }
    }
    if (ep_) {
        for (void *r : refs)
            ep_->rx_tagged_release(r);
        if (recv_open_) {
            ep_->rx_recv_abort(recv_, RI_WC_STATUS_WR_FLUSHED_ERROR);
            recv_open_ = false;
        }
    }
    wake();
}

namespace {

// ---------------------------------------------------------------------------- channel

class TcpChannel final : public IwarpChannel<TcpConnection> {
  public:
    using IwarpChannel::IwarpChannel;
    ~TcpChannel() override { core_->shutdown_owner(); }
    uint32_t capabilities() const override {
        return core_->rfc7306() ? (kCapAtomics | kCapWriteImmediate) : 0;
    }
};

// An adopted socket no QP has claimed: owns the descriptor until then.
class UnclaimedSocket final : public llp::UnclaimedStream {
  public:
    UnclaimedSocket(int fd, StreamParams p) : fd_(fd), p_(std::move(p)) {}
    ~UnclaimedSocket() override {
        if (fd_ >= 0) ::close(fd_);
    }
    std::unique_ptr<Channel> claim(ri_llp_stream_handle_t h, ProgressEngine &pe) override {
        const int fd = std::exchange(fd_, -1);  // the channel owns it now
        auto core = std::make_unique<TcpConnection>(h, p_, pe);
        if (!core->ok()) {
            // Nothing claimed it: the handle is consumed but the fd stays the caller's.
            core->disown_fd();
            (void)fd;
            return nullptr;
        }
        return std::make_unique<TcpChannel>(std::move(core));
    }
    bool send_deferred(ri_llp_stream_handle_t h, uint64_t key) override;

  private:
    int fd_;
    StreamParams p_;
};

bool UnclaimedSocket::send_deferred(ri_llp_stream_handle_t h, uint64_t key) {
    if (key == 0 || p_.preamble_key != key) return false;
    std::vector<uint8_t> &pre = p_.preamble;
    size_t off = 0;
    bool failed = false;
    while (off < pre.size()) {
        ssize_t n = ::send(h, pre.data() + off, pre.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            // EAGAIN on a fresh socket with a sub-kilobyte Reply does not happen; if it
            // did, the claiming channel writes the rest. Anything else: the peer is gone,
            // and the channel's first read reports it.
            failed = !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
            break;
        }
    }
    if (failed) off = pre.size();
    pre.erase(pre.begin(), pre.begin() + static_cast<std::ptrdiff_t>(off));
    return off > 0 && pre.empty() && !failed;
}

}  // namespace

}  // namespace detail

using detail::TcpConnection;
using detail::UnclaimedSocket;

void ensure_registered() {}

ri_llp_stream_handle_t adopt_socket(int fd, const StreamParams &params) {
    if (fd < 0 || fd >= (1 << 30)) return -1;  // loopback handles live above 2^30
    int type = 0;
    socklen_t sl = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl) != 0 || type != SOCK_STREAM) return -1;
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -1;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // FPDUs are latency-bound
    // The connection manager set these when the connection came up; a socket made by
    // another ULP gets them here, unless that ULP chose its own keepalive (uDAPL L6766:
    // options such as KEEPALIVE are kept as they are on a converted socket).
    int keepalive = 0;
    sl = sizeof keepalive;
    if (::getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &keepalive, &sl) != 0 || keepalive == 0)
        apply_liveness(fd, liveness_bound_ms());
    ensure_registered();
    if (!llp::publish(fd, std::make_unique<UnclaimedSocket>(fd, params))) return -1;
    return fd;
}

}  // namespace softrnic::transport::tcp
