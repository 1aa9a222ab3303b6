// The connection manager's core as its protocol engines see it (internal to src/cm/).
//
// The core (connection_manager.cpp) owns what every connection set-up protocol shares:
// ids, the epoll event thread and its lock, the listeners, the transport policy
// (transport_policy.hpp) and the streams it chooses (a TCP socket, or the shm rendezvous
// socket of shm_rendezvous.hpp), deadlines, and the events delivered to the handler. A
// protocol engine speaks one set-up protocol on those streams and ends each connection in
// an event: iwarp_engine.cpp runs MPA v2 (with the RFC 6581 RTR) over TCP or over the
// rendezvous socket followed by the shm hello.
//
// The InfiniBand CM (REQ/REP/RTU over MADs) plugs in as a second ProtocolEngine: its
// connections carry it in Conn::engine, so the core's loop, deadlines, ids and events
// serve it unchanged; what it adds is its own stream (a MAD QP rather than a socket) and
// the policy that picks it for an IB device.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cm/connection_manager.hpp"
#include "cm/transport_policy.hpp"

namespace softrnic::cm::detail {

using Clock = std::chrono::steady_clock;

// Owns one descriptor; closes it unless released.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~Fd() { reset(); }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }
    void reset();

  private:
    int fd_ = -1;
};

class ProtocolEngine;

// One connection in set-up. The core keeps these fields; an engine derives its own
// connection type from it for the protocol's state.
struct Conn {
    virtual ~Conn() = default;
    ConnId id = 0;
    ConnId listener = 0;  // responder: where it arrived
    bool initiator = false;
    Fd fd;
    Address peer;
    Clock::time_point deadline = Clock::time_point::max();
    uint32_t armed = 0;  // epoll interest currently registered
    ProtocolEngine *engine = nullptr;
};

// "127.0.0.1:4791", "[::1]:4791": an address as log lines show it.
struct AddressText {
    char text[64];
};
AddressText address_text(const Address &a);

// Logs an event of `c` as it is queued (`reported`: the consumer will receive it; an
// outcome nobody hears of is logged at debug only). SOFTRNIC_LOG_SUBSYS name: cm.
void log_event(const Conn &c, const Event &ev, bool reported);
// Counts connections established (by transport) and set-ups that failed, for
// `softrnic stats` (base/stats.hpp).
void count_event(const Event &ev);

// State shared by the core and its engines. Everything below `mu` is guarded by it; an
// engine is only ever called with it held.
struct ManagerCore {
    Handler handler;
    Options opts;
    TransportPolicy policy;
    Fd ep, wake;

    mutable std::mutex mu;
    ConnId next_id = 1;
    std::unordered_map<ConnId, std::unique_ptr<Conn>> conns;
    std::vector<Event> pending;  // delivered by the event thread, outside `mu`

    // Wakes the event thread (new deadline, events to deliver).
    void poke();
    bool arm(Conn &c, uint32_t events, bool add);
    void disarm(Conn &c);
    // Queues an event of `c` (one of Event's alternatives).
    template <class Ev>
    void deliver(const Conn &c, Ev &&ev) {
        const Event &e = pending.emplace_back(std::forward<Ev>(ev));
        log_event(c, e, true);
        count_event(e);
    }
    // Ends a connection the manager still owns; reports it when someone is waiting for it.
    template <class Ev>
    void finish(Conn &c, Ev ev, bool report) {
        disarm(c);
        Event e{std::move(ev)};
        log_event(c, e, report);
        count_event(e);
        if (report) pending.push_back(std::move(e));
        conns.erase(c.id);  // closes the fd; `c` is gone
    }
    // Forgets a connection whose stream was handed over (its fd released); `c` is gone.
    void forget(Conn &c) { conns.erase(c.id); }
};

// One connection set-up protocol. Called with ManagerCore::mu held, from the event thread or a
// public call; never calls the handler (it queues events with ManagerCore::deliver).
class ProtocolEngine {
  public:
    virtual ~ProtocolEngine() = default;

    // ConnParams within the protocol's limits (private data, IRD/ORD).
    virtual bool valid(const ConnParams &p) const = 0;
    // Initiator: a connection to start on a stream that is connecting (TCP) or connected
    // (`over_shm`: the rendezvous socket). Null when the parameters cannot be encoded. The
    // core fills in the id, descriptor, peer and deadline, then arms EPOLLOUT.
    virtual std::unique_ptr<Conn> new_initiator(const ConnParams &p, bool over_shm) = 0;
    // Responder: a stream just accepted on a listener (`over_shm`: on its rendezvous). The
    // core fills in the same fields, then arms EPOLLIN.
    virtual std::unique_ptr<Conn> new_responder(bool over_shm) = 0;

    // Readiness of the connection's descriptor.
    virtual void on_ready(Conn &c, uint32_t events) = 0;
    // The connection's deadline passed.
    virtual void on_deadline(Conn &c) = 0;
    // The consumer's answer to a ConnectRequest.
    virtual CmStatus accept(Conn &c, const ConnParams &p) = 0;
    virtual CmStatus reject(Conn &c, std::span<const uint8_t> private_data) = 0;

    // Called without the lock, once the handler returned from an Established with a
    // hand-over key: lets the peer see the connection (Established::handover_key).
    virtual void hand_over(ri_llp_stream_handle_t llp, LlpTransport t, uint64_t key) = 0;
};

}  // namespace softrnic::cm::detail
