#include "transport/ib/rc_channel.hpp"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <mutex>
#include <shared_mutex>

#include "transport/async_channel.hpp"
#include "transport/ib/datagram_fabric.hpp"
#include "transport/ib_port.hpp"
#include "transport/local_delivery.hpp"

namespace softrnic::transport::ib {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::nanoseconds;

// IBA 1.2 ch. 9 (the RNR NAK's timer field): the wait each encoding asks for, in
// microseconds; 0 is the longest.
constexpr std::array<uint32_t, 32> kRnrWaitUs = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};

// How often a requester that hears nothing tries its responder again, within its timeout.
constexpr microseconds kSilenceRetry{1000};

// What one try of an operation met.
enum class Try : uint8_t { Done, Nak, Silence, Rnr };
struct TryResult {
    Try what = Try::Done;
    RxStatus status{};
    uint8_t rnr_timer = 0;
};

// An operation the channel holds (OutboundOp::inflight), with its gather/scatter list
// copied: the engine's list lives on the poster's stack.
struct Held {
    InflightOp *rec = nullptr;
    OutboundOp op{};
    std::array<IoSpan, 16> spans{};
    uint32_t rnr_used = 0;
    Clock::time_point next_try{};
    Clock::time_point silent_since{};
    bool silent = false;
};

void copy_op(Held &h, const OutboundOp &op) {
    h.op = op;
    const size_t n = std::min(op.local.size(), h.spans.size());
    std::copy_n(op.local.begin(), n, h.spans.begin());
    h.op.local = std::span<const IoSpan>(h.spans.data(), n);
}

// An RC QP's requester side (docs/ib-personality.md 4.3, 7.1, 7.2). An operation is tried
// at once in the poster's thread (submit_now): done, or NAKed, it completes there. When
// the responder is silent (not there, not paired) or has no receive (RNR), the engine gives
// the operation a record and the channel holds it, with every later one behind it, and
// tries it again from the instance's progress thread, woken by a timer: after the
// responder's RNR timer, up to rnr_retry times (7: without limit), or every millisecond
// until the ACK timeout times (retry_count + 1) has passed (ACK timeout 0: never).
class RcChannel final : public Channel, public ProgressSource {
  public:
    RcChannel(const IbPathBinding &b, ProgressEngine &progress)
        : b_(b), slid_(b.hca->lid(b.port)), progress_(progress) {
        if (b.ack_timeout != 0)
            silence_limit_ = nanoseconds(uint64_t{4096} << b.ack_timeout) * (b.retry_count + 1);
        tfd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        tok_ = progress_.add(this);
        if (tok_.valid() && tfd_ >= 0) progress_.watch(tok_, tfd_, EPOLLIN, true);
    }
    ~RcChannel() override {
        detach();
        if (tok_.valid()) {
            progress_.unwatch(tok_);
            progress_.remove(tok_);
        }
        if (tfd_ >= 0) ::close(tfd_);
    }

    bool asynchronous() const override { return true; }

    void attach(Endpoint *ep) override {
        std::lock_guard lk(mu_);
        ep_ = ep;
        recs_.attach(ep);
    }

    void detach() override {
        {
            std::lock_guard lk(mu_);
            if (!ep_) return;
            ended_ = true;
            ++gen_;
            held_.clear();
            recs_.forget();
            ep_ = nullptr;
        }
        gate_.shut(this);
    }

    bool submit_now(const OutboundOp &op, OpResult &out) override {
        {
            std::lock_guard lk(mu_);
            if (ended_) {
                out = {OpOutcome::Disconnected, RemoteFault::ConnectionLost};
                return true;
            }
            if (!held_.empty()) return false;
        }
        const TryResult r = attempt(op);
        switch (r.what) {
            case Try::Done:
                out = {OpOutcome::Done, {}};
                return true;
            case Try::Nak:
                out = {OpOutcome::Terminated, r.status.fault, r.status.op};
                return true;
            case Try::Silence:
            case Try::Rnr:
                break;
        }
        // Held from now on: submit() follows with a record and takes this try into account.
        std::lock_guard lk(mu_);
        first_ = r;
        first_valid_ = true;
        return false;
    }

    OpResult submit(const OutboundOp &op) override {
        std::unique_lock lk(mu_);
        InflightOp &rec = *op.inflight;
        recs_.begin_submit(rec);
        if (ended_) {
            recs_.finish(rec, {OpOutcome::Disconnected, RemoteFault::ConnectionLost});
            return recs_.end_submit();
        }
        Held &h = held_.emplace_back();
        h.rec = &rec;
        copy_op(h, op);
        const Clock::time_point now = Clock::now();
        h.next_try = now;
        if (std::exchange(first_valid_, false) && held_.size() == 1) {
            // submit_now's try counts: an RNR used one try and waits its timer, silence
            // started its clock.
            if (first_.what == Try::Rnr) {
                h.rnr_used = 1;
                h.next_try = now + microseconds(kRnrWaitUs[first_.rnr_timer & 31]);
                if (b_.rnr_retry == 0) {
                    // No retry allowed: it completes now, and nothing else is held.
                    recs_.finish(rec, {OpOutcome::Terminated, RemoteFault::NoReceiveBuffer,
                                       first_.status.op});
                    held_.clear();
                    ended_ = true;
                    ++gen_;
                    return recs_.end_submit();
                }
            } else {
                h.silent = true;
                h.silent_since = now;
                h.next_try = now + kSilenceRetry;
            }
        }
        const bool head = held_.size() == 1;
        OpResult res = recs_.end_submit();
        if (head) schedule_locked(h.next_try, now);
        return res;
    }

    // IB has no Terminate: a responder fault is the NAK of the operation that met it; a QP
    // leaving RTS tells its peer nothing (the peer hears silence). Its own held operations
    // end here (reported flushed: the QP is in Error).
    void terminate(const FaultReport &) override { close(CloseKind::Abortive); }
    void close(CloseKind) override {
        std::lock_guard lk(mu_);
        if (ended_ || !ep_) return;
        ended_ = true;
        ++gen_;
        if (!held_.empty()) {
            recs_.fail_all({OpOutcome::Disconnected, RemoteFault::ConnectionLost});
            held_.clear();
            progress_.wake(tok_);
        }
    }

    void progress(uint32_t events) override {
        if (events && tfd_ >= 0) {
            uint64_t expirations = 0;
            (void)!::read(tfd_, &expirations, sizeof expirations);
        }
        std::unique_lock lk(mu_);
        while (!held_.empty() && !ended_) {
            const Clock::time_point now = Clock::now();
            Held &head = held_.front();
            if (head.next_try > now) {
                schedule_locked(head.next_try, now);
                break;
            }
            // Tried with the lock released: the responder may be this very QP, whose error
            // path closes this channel.
            Held h = head;
            h.op.local = std::span<const IoSpan>(h.spans.data(), head.op.local.size());
            const uint64_t gen = gen_;
            lk.unlock();
            const TryResult r = attempt(h.op);
            lk.lock();
            if (gen != gen_) break;  // closed or detached meanwhile: the records are gone
            Held &cur = held_.front();
            const Clock::time_point after = Clock::now();
            if (r.what == Try::Done) {
                recs_.finish(*cur.rec, {OpOutcome::Done, {}});
                held_.pop_front();
                if (!held_.empty()) held_.front().next_try = after;
                continue;
            }
            if (r.what == Try::Nak) {
                fail_locked({OpOutcome::Terminated, r.status.fault, r.status.op});
                break;
            }
            if (r.what == Try::Rnr) {
                cur.silent = false;
                if (b_.rnr_retry != 7 && cur.rnr_used >= b_.rnr_retry) {
                    fail_locked({OpOutcome::Terminated, RemoteFault::NoReceiveBuffer, r.status.op});
                    break;
                }
                ++cur.rnr_used;
                cur.next_try = after + microseconds(kRnrWaitUs[r.rnr_timer & 31]);
                continue;
            }
            // Silence: the retry clock runs from the start of the silence.
            if (!cur.silent) {
                cur.silent = true;
                cur.silent_since = after;
            }
            if (silence_limit_ != nanoseconds::zero() &&
                after - cur.silent_since >= silence_limit_) {
                fail_locked({OpOutcome::Disconnected, RemoteFault::ConnectionLost});
                break;
            }
            cur.next_try = after + kSilenceRetry;
            if (silence_limit_ != nanoseconds::zero())
                cur.next_try = std::min(cur.next_try, cur.silent_since + silence_limit_);
        }
        Endpoint *ep = ep_;
        lk.unlock();
        if (ep == nullptr) return;
        if (EndpointGate::Scope in(gate_); in) recs_.report(*ep);
    }

  private:
    // One try against whatever is at (DLID, destination QPN) now.
    TryResult attempt(const OutboundOp &op) {
        TryResult r;
        std::shared_lock fl(fabric::lock());
        Hca *to = nullptr;
        uint8_t to_port = 0;
        Endpoint *peer = fabric::find(b_.hca->subnet(), b_.dlid, b_.remote_qpn, to, to_port);
        if (!peer || !peer->rx_rc_accepts(slid_, b_.local_qpn, b_.pkey, r.rnr_timer)) {
            r.what = Try::Silence;
            return r;
        }
        r.status = deliver_local(*peer, op);
        if (r.status.ok)
            r.what = Try::Done;
        else if (r.status.fault == RemoteFault::NoReceiveBuffer)
            r.what = Try::Rnr;
        else
            r.what = Try::Nak;
        return r;
    }

    // The head failed with `oldest`: it completes with it, the later ones flushed, and the
    // channel carries nothing more (the QP goes to Error once the report reaches it).
    void fail_locked(OpResult oldest) {
        recs_.fail_all(oldest);
        held_.clear();
        ended_ = true;
        ++gen_;
    }

    void schedule_locked(Clock::time_point when, Clock::time_point now) {
        if (when <= now || tfd_ < 0) {
            progress_.wake(tok_);
            return;
        }
        const auto d = std::chrono::duration_cast<nanoseconds>(when - now).count();
        itimerspec ts{};
        ts.it_value.tv_sec = static_cast<time_t>(d / 1000000000);
        ts.it_value.tv_nsec = static_cast<long>(d % 1000000000);
        ::timerfd_settime(tfd_, 0, &ts, nullptr);
    }

    const IbPathBinding b_;
    const ri_lid_t slid_;
    ProgressEngine &progress_;
    ProgressEngine::Token tok_{};
    int tfd_ = -1;
    nanoseconds silence_limit_{0};  // 0: wait forever (ACK timeout 0)

    std::mutex mu_;  // everything below; records are finished under it
    Endpoint *ep_ = nullptr;
    InflightRecords recs_;
    EndpointGate gate_;
    std::deque<Held> held_;
    bool ended_ = false;
    uint64_t gen_ = 0;
    TryResult first_{};
    bool first_valid_ = false;
};

}  // namespace

std::unique_ptr<Channel> claim_path(const IbPathBinding &b, ProgressEngine &progress) {
    if (!b.hca) return nullptr;
    return std::make_unique<RcChannel>(b, progress);
}

}  // namespace softrnic::transport::ib
