#include "transport/loopback/loopback.hpp"

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "base/sync.hpp"
#include "transport/iwarp/terminate_map.hpp"
#include "transport/llp_registry.hpp"
#include "transport/local_delivery.hpp"
#include "transport/transport.hpp"

namespace softrnic::transport::loopback {

namespace {

using base::Gate;

struct LoopbackPair {
    struct End {
        std::atomic<Endpoint *> ep{nullptr};
        Gate gate;  // callers into this end's endpoint; shut on detach
    };
    End ends[2];
    std::atomic<bool> terminated{false};
    std::atomic<bool> closed{false};
};

// Handle values sit far above any file descriptor (RLIMIT_NOFILE stays below 2^30), so a
// loopback handle is never mistaken for a socket by the TCP transport.
constexpr int kHandleBase = 1 << 30;

std::mutex g_mu;  // handle numbering
int g_next = kHandleBase;

// Enters the peer end and finds its endpoint; nullptr when the peer is gone.
class PeerCall {
  public:
    PeerCall(LoopbackPair &l, int peer) : end_(l.ends[peer]) {
        in_ = end_.gate.try_enter();
        if (in_) ep_ = end_.ep.load(std::memory_order_acquire);
    }
    ~PeerCall() {
        if (in_) end_.gate.leave();
    }
    Endpoint *ep() const { return ep_; }

  private:
    LoopbackPair::End &end_;
    bool in_ = false;
    Endpoint *ep_ = nullptr;
};

class LoopbackChannel final : public Channel {
  public:
    LoopbackChannel(std::shared_ptr<LoopbackPair> link, int side)
        : link_(std::move(link)), side_(side) {}
    ~LoopbackChannel() override { detach(); }

    void attach(Endpoint *ep) override {
        link_->ends[side_].ep.store(ep, std::memory_order_release);
    }

    void detach() override {
        LoopbackPair::End &me = link_->ends[side_];
        me.ep.store(nullptr, std::memory_order_release);
        me.gate.shut();  // waits for peer threads still inside our endpoint
    }

    OpResult submit(const OutboundOp &op) override {
        if (link_->closed.load(std::memory_order_acquire) ||
            link_->terminated.load(std::memory_order_acquire))
            return {OpOutcome::Disconnected, {}};
        PeerCall call(*link_, 1 - side_);
        Endpoint *p = call.ep();
        if (!p) return {OpOutcome::Disconnected, {}};
        RxStatus st = deliver_local(*p, op);
        if (!st.ok) {
            link_->terminated.store(true, std::memory_order_release);
            return {OpOutcome::Terminated, st.fault, st.op};
        }
        return {OpOutcome::Done, {}};
    }

    void terminate(const FaultReport &f) override {
        if (link_->terminated.exchange(true, std::memory_order_acq_rel)) return;
        uint8_t msg[kFaultMessageMax];
        const size_t n = fault_message(f, msg);
        PeerCall call(*link_, 1 - side_);
        if (Endpoint *p = call.ep()) p->rx_terminate({msg, n});
    }

    // Loopback speaks iWARP's Terminate, as the wire transports do.
    size_t fault_message(const FaultReport &f,
                         std::span<uint8_t, kFaultMessageMax> out) const override {
        return iwarp::terminate_message(f, out);
    }

    void close(CloseKind kind) override {
        if (link_->terminated.load(std::memory_order_acquire)) return;
        if (link_->closed.exchange(true, std::memory_order_acq_rel)) return;
        PeerCall call(*link_, 1 - side_);
        if (Endpoint *p = call.ep()) p->rx_llp_closed(kind);
    }

  private:
    std::shared_ptr<LoopbackPair> link_;
    int side_;
};

// One end of a pair no QP has claimed yet. Releasing it ends the stream for the other end
// (if a QP owns that one, it sees the close).
class UnclaimedEnd final : public llp::UnclaimedStream {
  public:
    UnclaimedEnd(std::shared_ptr<LoopbackPair> link, int side)
        : link_(std::move(link)), side_(side) {}
    ~UnclaimedEnd() override {
        if (link_) link_->closed.store(true, std::memory_order_release);
    }
    std::unique_ptr<Channel> claim(ri_llp_stream_handle_t, ProgressEngine &) override {
        return std::make_unique<LoopbackChannel>(std::move(link_), side_);
    }

  private:
    std::shared_ptr<LoopbackPair> link_;
    int side_;
};

}  // namespace

void ensure_registered() {}

ri_api_return_t make_pair(ri_llp_stream_handle_t &a, ri_llp_stream_handle_t &b) {
    ensure_registered();
    auto link = std::make_shared<LoopbackPair>();
    {
        std::lock_guard lk(g_mu);
        if (g_next > INT32_MAX - 2) return RI_RET_RESOURCE_SHORTAGE;
        a = g_next++;
        b = g_next++;
    }
    llp::publish(a, std::make_unique<UnclaimedEnd>(link, 0));
    llp::publish(b, std::make_unique<UnclaimedEnd>(link, 1));
    return RI_RET_SUCCESS;
}

ri_api_return_t close_unclaimed(ri_llp_stream_handle_t h) {
    if (h < kHandleBase) return RI_RET_INVALID_LL_HANDLE;  // not a loopback handle
    return llp::release(h) ? RI_RET_SUCCESS : RI_RET_INVALID_LL_HANDLE;
}

}  // namespace softrnic::transport::loopback

// Exported by libsoftrnic.so (libsoftrnic.map); everything else is compiled hidden.
#pragma GCC visibility push(default)
extern "C" ri_api_return_t softrnic_loopback_pair(ri_llp_stream_handle_t *a,
                                                  ri_llp_stream_handle_t *b) {
    if (!a || !b) return RI_RET_INVALID_PARAMETER;
    try {
        return softrnic::transport::loopback::make_pair(*a, *b);
    } catch (...) {
        return RI_RET_RESOURCE_SHORTAGE;
    }
}

extern "C" ri_api_return_t softrnic_loopback_close(ri_llp_stream_handle_t h) {
    return softrnic::transport::loopback::close_unclaimed(h);
}
#pragma GCC visibility pop
