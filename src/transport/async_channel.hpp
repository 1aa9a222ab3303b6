// The Channel face of an asynchronous transport: the connection's state lives in a
// connection object driven by the transport's progress source, and the Channel the engine
// holds forwards every call to it. Shared by the shm and TCP transports (and meant for the next
// asynchronous one), so that each only adds what differs: its destructor's order and its
// capabilities.
//
// A connection object provides attach, detach, submit, submit_now, terminate and close with
// the Channel's meaning (transport.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>

#include "transport/iwarp/terminate_map.hpp"
#include "transport/transport.hpp"

namespace softrnic::transport {

// Ordered reporting. An asynchronous connection keeps its operation records in submission order
// in `ops` (each with `ready` and `result`) and reports only the head, so an operation
// never completes before an earlier one (Channel::asynchronous). Takes the head when it is
// ready, under `mu`, and counts it in `reporting` until report_done(): while a report is
// under way the connection's fast path must not complete an operation inline.
template <class Ops>
bool take_ready_head(std::mutex &mu, Ops &ops, uint32_t &reporting, OpResult &out) {
    std::lock_guard lk(mu);
    if (ops.empty() || !ops.front().ready) return false;
    out = ops.front().result;
    ops.pop_front();
    ++reporting;
    return true;
}
// The report taken by take_ready_head() went to the endpoint.
inline void report_done(std::mutex &mu, uint32_t &reporting) {
    std::lock_guard lk(mu);
    --reporting;
}

// Fail-all on detach: the records a detaching connection took out of `ops` are each
// reported once, in submission order, with their own result when they had one and as
// Disconnected otherwise (Channel::asynchronous: nothing is left unreported).
template <class Ops>
void report_left(Endpoint &ep, Ops &left) {
    for (auto &o : left)
        ep.tx_complete(o.ready ? o.result : OpResult{OpOutcome::Disconnected, {}});
}

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
