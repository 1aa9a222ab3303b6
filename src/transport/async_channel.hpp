// What every asynchronous transport's connection needs besides its wire, shared by the shm
// and TCP transports and meant for the next one: the gate its progress calls the endpoint
// through, its side of the operation records the engine keeps in order (the order, the
// reporting, fail-all and what is left at detach are the engine's: engine/inflight.hpp), and
// the Channel face: the connection's state lives in a connection object driven by the
// transport's progress source, and the Channel the engine holds forwards every call to it, so
// that each transport only adds what differs (its destructor's order and its capabilities).
//
// A connection object provides attach, detach, submit, submit_now, terminate and close with
// the Channel's meaning (transport.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "base/sync.hpp"

#include "transport/iwarp/terminate_map.hpp"
#include "transport/transport.hpp"

namespace softrnic::transport {

// Calls from a connection's progress into its endpoint. Progress makes each inside a Scope
// (`if (EndpointGate::Scope in(gate); in)`); detach() shuts the gate and waits until none is
// under way, unless it runs inside one itself (from the connection's own progress pass),
// which cannot wait for itself. Shut for good: a connection serves one attachment.
class EndpointGate {
  public:
    class Scope : public base::GateScope {
      public:
        explicit Scope(EndpointGate &g) : base::GateScope(g.gate_) {}
    };
    void shut(const ProgressSource *self) {
        gate_.shut_no_wait();
        if (ProgressEngine::current() != self) gate_.wait_users();
    }

  private:
    base::ScopedGate gate_;
};

// A connection's side of the records the engine lends it (InflightOp): which it still holds,
// whether finished ones wait for a report, and whether submit() finished the record it was
// given (it then returns the result, and the engine completes it at once if it can).
// Everything but report() runs under the connection's lock, the one it finishes records
// under.
class InflightRecords {
  public:
    // The endpoint the records belong to, from attach() until detach (forget()).
    void attach(Endpoint *ep) { ep_ = ep; }
    // submit() was given `rec`: the connection holds it until it finishes it. Until
    // end_submit(), finishing `rec` is the submit's own result rather than a report due.
    void begin_submit(InflightOp &rec) {
        rec.held.store(true, std::memory_order_release);
        held_.fetch_add(1, std::memory_order_relaxed);
        submitted_ = &rec;
        submitted_done_ = false;
    }
    // What submit() returns: the result if it finished its record, else Pending. After a
    // result the record is the engine's: submit must not touch it any more.
    OpResult end_submit() {
        submitted_ = nullptr;
        return submitted_done_ ? submitted_result_ : OpResult{OpOutcome::Pending, {}};
    }
    void finish(InflightOp &rec, OpResult r) {
        held_.fetch_sub(1, std::memory_order_relaxed);
        const bool own = &rec == submitted_;
        if (own) {
            submitted_done_ = true;
            submitted_result_ = r;
        }
        rec.finish(r);
        if (!own) report_due_.store(true, std::memory_order_release);
    }
    // The stream ended: every record held is finished (the oldest with `oldest`) and due
    // for a report, the submit's own too (it then returns Pending).
    void fail_all(OpResult oldest) {
        if (ep_ != nullptr) ep_->tx_fail_all(oldest);
        held_.store(0, std::memory_order_relaxed);
        report_due_.store(true, std::memory_order_release);
    }
    // The receive side is telling the endpoint how the stream ended (a Terminate received,
    // a malformed stream, the peer's close): from before a submit can see the connection
    // closed until that upcall returned. A submit meanwhile holds its record (end_submit()
    // without finishing it): finished at once, it could reach the endpoint ahead of the
    // news, and the engine takes an operation failing on a connected QP for a lost
    // connection, which it then reports instead of the Terminate or the close.
    // end_rx_ending() fails those records as flushed work.
    void begin_rx_ending() { rx_ending_ = true; }
    bool rx_ending() const { return rx_ending_; }
    void end_rx_ending() {
        if (std::exchange(rx_ending_, false)) fail_all({OpOutcome::Disconnected, {}});
    }
    // Detached: the engine completes whatever is left, and is not called again.
    void forget() {
        ep_ = nullptr;
        held_.store(0, std::memory_order_relaxed);
        report_due_.store(false, std::memory_order_relaxed);
    }
    // Records held and not finished (a hint: read without the lock).
    uint32_t held() const { return held_.load(std::memory_order_relaxed); }
    bool report_due() const { return report_due_.load(std::memory_order_acquire); }
    // Progress, inside the endpoint gate, with no lock held: has the finished records
    // completed. One load when nothing is due.
    void report(Endpoint &ep) {
        if (!report_due_.load(std::memory_order_acquire)) return;
        // An RMW: it reads the latest mark, so the records finished before it are seen.
        if (!report_due_.exchange(false, std::memory_order_acq_rel)) return;
        ep.tx_report();
    }

  private:
    Endpoint *ep_ = nullptr;
    std::atomic<uint32_t> held_{0};
    std::atomic<bool> report_due_{false};
    InflightOp *submitted_ = nullptr;
    bool submitted_done_ = false;
    OpResult submitted_result_{};
    bool rx_ending_ = false;
};

template <class Connection>
class ForwardingChannel : public Channel {
  public:
    explicit ForwardingChannel(std::unique_ptr<Connection> core) : core_(std::move(core)) {}
    bool asynchronous() const override { return true; }
    void attach(Endpoint *ep) override { core_->attach(ep); }
    void detach() override { core_->detach(); }
    OpResult submit(const OutboundOp &op) override { return core_->submit(op); }
    bool submit_now(const OutboundOp &op, OpResult &out) override {
        return core_->submit_now(op, out);
    }
    void terminate(const FaultReport &f) override { core_->terminate(f); }
    void close(CloseKind kind) override { core_->close(kind); }

  protected:
    std::unique_ptr<Connection> core_;
};

// An asynchronous transport that speaks iWARP's Terminate for faults (shm, TCP).
template <class Connection>
class IwarpChannel : public ForwardingChannel<Connection> {
  public:
    using ForwardingChannel<Connection>::ForwardingChannel;
    size_t fault_message(const FaultReport &f,
                         std::span<uint8_t, kFaultMessageMax> out) const override {
        return iwarp::terminate_message(f, out);
    }
};

}  // namespace softrnic::transport
