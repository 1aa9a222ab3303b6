// The connection manager's core (cm_core.hpp): ids, listeners, the event thread, the
// transport policy and the events; the set-up protocol itself runs in its engine
// (iwarp_engine.cpp).
#include "cm/connection_manager.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/log.hpp"
#include "base/stats.hpp"
#include "cm/cm_core.hpp"
#include "cm/iwarp_engine.hpp"
#include "cm/shm_rendezvous.hpp"
#include "cm/transport_policy.hpp"
#include "transport/llp_registry.hpp"
#include "transport/shm/shm.hpp"
#include "transport/tcp/tcp_channel.hpp"

namespace softrnic::cm {

namespace tcp = transport::tcp;
namespace shm = transport::shm;
using detail::Clock;
using detail::Conn;
using detail::Fd;

const char *to_string(LlpTransport t) {
    return t == LlpTransport::Shm ? "shm" : "tcp";
}

bool release_unclaimed(ri_llp_stream_handle_t h) {
    const bool released = transport::llp::release(h);
    if (released) SOFTRNIC_LOG(Info, Cm, "stream %d torn down: released unclaimed", int(h));
    return released;
}

const char *to_string(FailReason r) {
    switch (r) {
        case FailReason::None:
            return "None";
        case FailReason::Malformed:
            return "Malformed";
        case FailReason::Unsupported:
            return "Unsupported";
        case FailReason::Incompatible:
            return "Incompatible";
        case FailReason::NoReadyToReceive:
            return "NoReadyToReceive";
    }
    return "?";
}

const char *to_string(CmStatus s) {
    switch (s) {
        case CmStatus::Ok:
            return "Ok";
        case CmStatus::InvalidArgument:
            return "InvalidArgument";
        case CmStatus::UnknownId:
            return "UnknownId";
        case CmStatus::WrongState:
            return "WrongState";
        case CmStatus::SystemError:
            return "SystemError";
        case CmStatus::Stopped:
            return "Stopped";
    }
    return "?";
}

namespace {

bool valid_address(const sockaddr *a, socklen_t len) {
    if (a == nullptr) return false;
    if (a->sa_family == AF_INET) return len >= sizeof(sockaddr_in);
    if (a->sa_family == AF_INET6) return len >= sizeof(sockaddr_in6);
    return false;
}

Address copy_address(const sockaddr *a, socklen_t len) {
    Address out;
    out.len = std::min<socklen_t>(len, sizeof out.storage);
    std::memcpy(&out.storage, a, out.len);
    return out;
}

}  // namespace

namespace detail {

AddressText address_text(const Address &a) {
    AddressText out{};
    char ip[INET6_ADDRSTRLEN] = "?";
    if (a.storage.ss_family == AF_INET) {
        const auto *s = reinterpret_cast<const sockaddr_in *>(&a.storage);
        ::inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
        std::snprintf(out.text, sizeof out.text, "%s:%u", ip, unsigned(ntohs(s->sin_port)));
    } else if (a.storage.ss_family == AF_INET6) {
        const auto *s = reinterpret_cast<const sockaddr_in6 *>(&a.storage);
        ::inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip);
        std::snprintf(out.text, sizeof out.text, "[%s]:%u", ip, unsigned(ntohs(s->sin6_port)));
    } else {
        std::snprintf(out.text, sizeof out.text, "(no address)");
    }
    return out;
}

namespace {

// "ECONNREFUSED (Connection refused)"; thread-safe, unlike strerror.
struct ErrnoText {
    char text[96];
};
ErrnoText errno_text(int err) {
    ErrnoText out{};
    const char *name = err ? ::strerrorname_np(err) : nullptr;
    const char *desc = err ? ::strerrordesc_np(err) : nullptr;
    if (name && desc)
        std::snprintf(out.text, sizeof out.text, "%s (%s)", name, desc);
    else
        std::snprintf(out.text, sizeof out.text, "errno %d", err);
    return out;
}

struct LogEvent {
    const Conn &c;
    bool reported;
    const char *who() const { return c.initiator ? "to" : "from"; }

    void operator()(const Established &e) const {
        SOFTRNIC_LOG(Info, Cm,
                     "connection %llu %s %s established over %s%s (%s; ird %u, ord %u%s%s)",
                     static_cast<unsigned long long>(e.id), who(), address_text(c.peer).text,
                     to_string(e.transport),
                     e.transport == LlpTransport::Shm ? (e.shm_cma ? " with CMA"
                                                                   : " with bounce "
                                                                     "buffers")
                                                      : "",
                     e.initiator ? "initiator" : "responder", e.params.ird, e.params.ord,
                     e.params.crc ? ", CRC" : "", e.params.rfc7306 ? ", RFC 7306" : "");
    }
    void operator()(const ConnectRequest &r) const {
        SOFTRNIC_LOG(Info, Cm, "connection %llu: request from %s on listener %llu (ird %u, ord %u)",
                     static_cast<unsigned long long>(r.id), address_text(r.peer).text,
                     static_cast<unsigned long long>(r.listener), r.ird, r.ord);
    }
    void operator()(const Rejected &r) const {
        SOFTRNIC_LOG(Info, Cm, "connection %llu to %s refused: rejected by the peer",
                     static_cast<unsigned long long>(r.id), address_text(c.peer).text);
    }
    void operator()(const Unreachable &u) const {
        SOFTRNIC_LOG(Warn, Cm, "connection %llu to %s failed: unreachable, %s",
                     static_cast<unsigned long long>(u.id), address_text(c.peer).text,
                     errno_text(u.sys_errno).text);
    }
    void operator()(const TimedOut &t) const {
        SOFTRNIC_LOG(Warn, Cm, "connection %llu to %s failed: timed out in set-up",
                     static_cast<unsigned long long>(t.id), address_text(c.peer).text);
    }
    void operator()(const Failed &f) const {
        // An outcome nobody hears of (a responder's set-up that ended before the consumer
        // saw a request, or after it rejected one) was logged where it was decided.
        if (reported)
            log<base::LogLevel::Warn>(f);
        else
            log<base::LogLevel::Debug>(f);
    }
    template <base::LogLevel L>
    void log(const Failed &f) const {
        if (!base::log_on(L, base::LogSubsys::Cm)) return;
        if (f.reason == FailReason::None)
            softrnic_log_write(static_cast<uint8_t>(L), static_cast<uint8_t>(base::LogSubsys::Cm),
                               "connection %llu %s %s failed in set-up: %s",
                               static_cast<unsigned long long>(f.id), who(),
                               address_text(c.peer).text,
                               f.sys_errno ? errno_text(f.sys_errno).text : "closed");
        else
            softrnic_log_write(static_cast<uint8_t>(L), static_cast<uint8_t>(base::LogSubsys::Cm),
                               "connection %llu %s %s failed in set-up: %s (protocol code %u)",
                               static_cast<unsigned long long>(f.id), who(),
                               address_text(c.peer).text, to_string(f.reason),
                               unsigned(f.protocol_code));
    }
};

}  // namespace

void log_event(const Conn &c, const Event &ev, bool reported) {
    std::visit(LogEvent{c, reported}, ev);
}

void count_event(const Event &ev) {
    if (const auto *e = std::get_if<Established>(&ev))
        base::stat_add(e->transport == LlpTransport::Shm ? base::Stat::CmConnectsShm
                                                         : base::Stat::CmConnectsTcp);
    else if (std::holds_alternative<Rejected>(ev) || std::holds_alternative<Unreachable>(ev) ||
             std::holds_alternative<TimedOut>(ev) || std::holds_alternative<Failed>(ev))
        base::stat_add(base::Stat::CmConnectFailures);
}

void Fd::reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void ManagerCore::poke() {
    uint64_t one = 1;
    // A full counter (never in practice) still leaves the fd readable: ignore.
    [[maybe_unused]] ssize_t r = ::write(wake.get(), &one, sizeof one);
}

bool ManagerCore::arm(Conn &c, uint32_t events, bool add) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    if (::epoll_ctl(ep.get(), add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd.get(), &ev) != 0)
        return false;
    c.armed = events;
    return true;
}

void ManagerCore::disarm(Conn &c) {
    ::epoll_ctl(ep.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
}

}  // namespace detail

struct ConnectionManager::Impl {
    struct Listener {
        Fd fd;
        Fd unix_fd;          // shm rendezvous (may be absent)
        ConnId unix_id = 0;  // its epoll id
        Address addr;
    };

    detail::ManagerCore core;
    // Every connection today speaks iWARP (MPA); the IB CM would be a second engine here,
    // chosen per listener and per connect() (see cm_core.hpp).
    detail::IwarpEngine iwarp{core};
    std::unordered_map<ConnId, ConnId> unix_listeners;  // unix_id -> listener
    std::thread thread;
    std::atomic<bool> stop{false};
    std::unordered_map<ConnId, Listener> listeners;  // guarded by core.mu

    void on_listen(ConnId lid, int lfd, bool unix_side) {
        for (;;) {
            sockaddr_storage ss{};
            socklen_t sl = sizeof ss;
            int fd = ::accept4(lfd, reinterpret_cast<sockaddr *>(&ss), &sl,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                // EAGAIN: done. EMFILE and friends: the connection stays queued and the
                // level-triggered listener fires again; nothing better to do here.
                return;
            }
            if (unix_side && !detail::admit_rendezvous(fd)) {
                // Another user: close before reading a byte (no MPA, no segment). Abstract
                // sockets have no permissions; this is what keeps other users out.
                ::close(fd);
                SOFTRNIC_LOG(Warn, Cm,
                             "listener %llu: shm connection from another user refused (a "
                             "listener's segments go to its own user only)",
                             static_cast<unsigned long long>(lid));
                continue;
            }
            // A peer that vanishes while the ULP decides (no deadline then) is found by
            // the same bound as an established connection.
            if (!unix_side) tcp::apply_liveness(fd, tcp::liveness_bound_ms());
            std::unique_ptr<Conn> c = iwarp.new_responder(unix_side);
            c->id = core.next_id++;
            c->fd = Fd(fd);
            c->peer = unix_side ? detail::rendezvous_peer_address(listeners.at(lid).addr)
                                : copy_address(reinterpret_cast<sockaddr *>(&ss), sl);
            c->listener = lid;
            if (core.opts.request_timeout.count() > 0)
                c->deadline = Clock::now() + core.opts.request_timeout;
            if (!core.arm(*c, EPOLLIN, true)) continue;  // `c` closes its fd
            SOFTRNIC_LOG(Debug, Cm, "connection %llu: accepted from %s over %s on listener %llu",
                         static_cast<unsigned long long>(c->id), detail::address_text(c->peer).text,
                         unix_side ? "shm" : "tcp", static_cast<unsigned long long>(lid));
            core.conns.emplace(c->id, std::move(c));
        }
    }

    void on_event(ConnId id, uint32_t events) {
        if (auto l = listeners.find(id); l != listeners.end()) {
            on_listen(id, l->second.fd.get(), false);
            return;
        }
        if (auto u = unix_listeners.find(id); u != unix_listeners.end()) {
            on_listen(u->second, listeners.at(u->second).unix_fd.get(), true);
            return;
        }
        auto it = core.conns.find(id);
        if (it == core.conns.end()) return;  // finished earlier in this batch
        Conn &c = *it->second;
        c.engine->on_ready(c, events);
    }

    void expire(Clock::time_point now) {
        std::vector<ConnId> dead;
        for (auto &[id, c] : core.conns)
            if (c->deadline <= now) dead.push_back(id);
        for (ConnId id : dead) {
            Conn &c = *core.conns.at(id);
            c.engine->on_deadline(c);
        }
    }

    int wait_ms(Clock::time_point now) const {
        auto next = Clock::time_point::max();
        for (auto &[id, c] : core.conns)
            next = std::min(next, c->deadline);
        if (next == Clock::time_point::max()) return -1;  // idle: sleep until woken
        if (next <= now) return 0;
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
        return static_cast<int>(std::min<int64_t>(ms, 60000));
    }
};

ConnectionManager::ConnectionManager(Handler handler, Options opts)
    : impl_(std::make_unique<Impl>()) {
    detail::ManagerCore &core = impl_->core;
    core.handler = std::move(handler);
    if (!core.handler) return;  // nobody to deliver to: refuse to start
    core.opts = opts;
    core.policy = detail::policy_from_env(opts);
    core.ep = Fd(::epoll_create1(EPOLL_CLOEXEC));
    core.wake = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (core.ep.get() < 0 || core.wake.get() < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;  // id 0: the wake-up eventfd
    if (::epoll_ctl(core.ep.get(), EPOLL_CTL_ADD, core.wake.get(), &ev) != 0) return;
    // std::thread throws on failure; keep it inside so nothing escapes.
    try {
        impl_->thread = std::thread([this] { run(); });
    } catch (...) {
        return;
    }
    ep_ = core.ep.get();
}

ConnectionManager::~ConnectionManager() {
    if (impl_->thread.joinable()) {
        impl_->stop.store(true, std::memory_order_release);
        impl_->core.poke();
        impl_->thread.join();
    }
    // Sockets handed over in Established events nobody received are still ours to close.
    for (Event &e : impl_->core.pending)
        if (auto *est = std::get_if<Established>(&e)) release_unclaimed(est->llp);
    if (!impl_->core.conns.empty() || !impl_->listeners.empty())
        SOFTRNIC_LOG(Info, Cm,
                     "manager torn down: %zu connection(s) still in set-up and %zu listener(s) "
                     "closed",
                     impl_->core.conns.size(), impl_->listeners.size());
    // Listeners, connections, epoll and eventfd close through their Fd members.
}

void ConnectionManager::run() {
    Impl &m = *impl_;
    detail::ManagerCore &core = m.core;
    std::array<epoll_event, 64> evs;
    std::vector<Event> batch;
    while (!m.stop.load(std::memory_order_acquire)) {
        int timeout;
        {
            std::lock_guard lk(core.mu);
            timeout = m.wait_ms(Clock::now());
        }
        int n = ::epoll_wait(core.ep.get(), evs.data(), static_cast<int>(evs.size()), timeout);
        if (m.stop.load(std::memory_order_acquire)) break;
        {
            std::lock_guard lk(core.mu);
            for (int i = 0; i < n; ++i) {
                if (evs[i].data.u64 == 0) {
                    uint64_t v;
                    [[maybe_unused]] ssize_t r = ::read(core.wake.get(), &v, sizeof v);
                    continue;
                }
                m.on_event(evs[i].data.u64, evs[i].events);
            }
            m.expire(Clock::now());
            batch.swap(core.pending);
        }
        // Outside the lock so the handler can call accept()/reject()/connect().
        for (Event &e : batch) {
            // The handler may move the event's fields: keep what the hand-over needs.
            const auto *est = std::get_if<Established>(&e);
            const uint64_t key = est ? est->handover_key : 0;
            const ri_llp_stream_handle_t llp = est ? est->llp : -1;
            const LlpTransport xport = est ? est->transport : LlpTransport::Tcp;
            // A throwing handler must not take the event thread (and the process) down;
            // the event counts as delivered (an Established socket is the consumer's).
            try {
                core.handler(e);
            } catch (...) {
            }
            // The consumer has handled Established: let the initiator see the connection
            // (a no-op when a QP claimed the stream in the handler; it sent the message).
            if (key != 0) m.iwarp.hand_over(llp, xport, key);
        }
        batch.clear();
    }
}

CmResult<ConnId> ConnectionManager::listen(const sockaddr *addr, socklen_t len, int backlog) {
    CmResult<ConnId> res;
    if (!ok()) return {CmStatus::Stopped, 0, 0};
    if (!valid_address(addr, len) || backlog < 0) return {CmStatus::InvalidArgument, 0, 0};
    Fd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return {CmStatus::SystemError, errno, 0};
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->sa_family == AF_INET6)  // ::1 means IPv6 only; no surprise v4-mapped peers
        ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), backlog) != 0)
        return {CmStatus::SystemError, errno, 0};
    Impl::Listener l;
    l.addr.len = sizeof l.addr.storage;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&l.addr.storage), &l.addr.len) != 0)
        return {CmStatus::SystemError, errno, 0};
    // The shm rendezvous, named after the bound address and port. Best effort: if the
    // name is taken (another listener on the same address and port, e.g. SO_REUSEPORT)
    // this listener is reachable over TCP only.
    if (impl_->core.policy.offers_shm()) l.unix_fd = detail::bind_rendezvous(l.addr, backlog);
    l.fd = std::move(fd);
    std::lock_guard lk(impl_->core.mu);
    ConnId id = impl_->core.next_id++;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, l.fd.get(), &ev) != 0)
        return {CmStatus::SystemError, errno, 0};
    if (l.unix_fd.get() >= 0) {
        l.unix_id = impl_->core.next_id++;
        ev.data.u64 = l.unix_id;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, l.unix_fd.get(), &ev) != 0) {
            ::epoll_ctl(ep_, EPOLL_CTL_DEL, l.fd.get(), nullptr);
            return {CmStatus::SystemError, errno, 0};
        }
        impl_->unix_listeners.emplace(l.unix_id, id);
    }
    SOFTRNIC_LOG(Info, Cm, "listener %llu on %s (%s)", static_cast<unsigned long long>(id),
                 detail::address_text(l.addr).text,
                 l.unix_fd.get() >= 0 ? "tcp and shm"
                 : impl_->core.policy.offers_shm()
                     ? "tcp only: the shm rendezvous name is taken"
                     : "tcp only: SOFTRNIC_TRANSPORT or Options::transport is tcp");
    impl_->listeners.emplace(id, std::move(l));
    res.value = id;
    return res;
}

CmStatus ConnectionManager::stop_listen(ConnId listener) {
    if (!ok()) return CmStatus::Stopped;
    std::lock_guard lk(impl_->core.mu);
    auto it = impl_->listeners.find(listener);
    if (it == impl_->listeners.end()) return CmStatus::UnknownId;
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    if (it->second.unix_fd.get() >= 0) {
        ::epoll_ctl(ep_, EPOLL_CTL_DEL, it->second.unix_fd.get(), nullptr);
        impl_->unix_listeners.erase(it->second.unix_id);
    }
    impl_->listeners.erase(it);  // connections already accepted on it carry on
    SOFTRNIC_LOG(Info, Cm, "listener %llu closed", static_cast<unsigned long long>(listener));
    return CmStatus::Ok;
}

CmResult<Address> ConnectionManager::local_address(ConnId id) const {
    if (!ok()) return {CmStatus::Stopped, 0, {}};
    std::lock_guard lk(impl_->core.mu);
    int fd = -1;
    if (auto l = impl_->listeners.find(id); l != impl_->listeners.end())
        fd = l->second.fd.get();
    else if (auto c = impl_->core.conns.find(id); c != impl_->core.conns.end())
        fd = c->second->fd.get();
    else
        return {CmStatus::UnknownId, 0, {}};
    CmResult<Address> res;
    res.value.len = sizeof res.value.storage;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&res.value.storage), &res.value.len) != 0)
        return {CmStatus::SystemError, errno, {}};
    return res;
}

CmResult<ConnId> ConnectionManager::connect(const sockaddr *addr, socklen_t len,
                                            const ConnParams &params) {
    if (!ok()) return {CmStatus::Stopped, 0, 0};
    detail::ManagerCore &core = impl_->core;
    detail::ProtocolEngine &engine = impl_->iwarp;
    if (!valid_address(addr, len) || !engine.valid(params))
        return {CmStatus::InvalidArgument, 0, 0};
    // Same host and netns (the abstract name answers): shm. Otherwise TCP, unless the
    // policy insists on shm.
    bool use_shm = false;
    int shm_err = 0;
    Fd fd;
    if (core.policy.tries_shm()) {
        fd = Fd(detail::connect_rendezvous(addr, shm_err));
        use_shm = fd.get() >= 0;
    }
    bool shm_only_failed = !use_shm && !core.policy.falls_back_to_tcp();
    if (!use_shm && !shm_only_failed) {
        fd = Fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) return {CmStatus::SystemError, errno, 0};
    }

    std::unique_ptr<Conn> c = engine.new_initiator(params, use_shm);
    if (!c) return {CmStatus::InvalidArgument, 0, 0};
    c->peer = copy_address(addr, len);
    if (params.timeout.count() > 0) c->deadline = Clock::now() + params.timeout;

    if (shm_only_failed) {
        std::lock_guard lk(core.mu);
        c->id = core.next_id++;
        SOFTRNIC_LOG(Info, Cm,
                     "connection %llu to %s: shm only (SOFTRNIC_TRANSPORT or Options::transport "
                     "is shm), and no shm listener of this user answers there",
                     static_cast<unsigned long long>(c->id), detail::address_text(c->peer).text);
        core.deliver(*c, Unreachable{c->id, shm_err});
        core.poke();
        return {CmStatus::Ok, 0, c->id};
    }
    // A Unix connect() has already completed; Connecting then just checks SO_ERROR (0)
    // on the first EPOLLOUT and sends the Request, as for TCP.
    int rc = use_shm ? 0 : ::connect(fd.get(), addr, len);
    int err = rc == 0 ? 0 : errno;
    if (rc != 0 && err != EINPROGRESS && err != EINTR) {
        // Local misuse fails now; a peer that cannot be reached is an event like any other.
        if (err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH && err != ETIMEDOUT &&
            err != ECONNRESET)
            return {CmStatus::SystemError, err, 0};
    }
    std::lock_guard lk(core.mu);
    c->id = core.next_id++;
    ConnId id = c->id;
    c->fd = std::move(fd);
    if (use_shm)
        SOFTRNIC_LOG(Info, Cm,
                     "connection %llu to %s: shm (the peer listens on this host, in this netns, "
                     "as this user)",
                     static_cast<unsigned long long>(id), detail::address_text(c->peer).text);
    else if (core.policy.tries_shm())
        SOFTRNIC_LOG(Info, Cm,
                     "connection %llu to %s: tcp (no shm listener of this user there: %s)",
                     static_cast<unsigned long long>(id), detail::address_text(c->peer).text,
                     detail::errno_text(shm_err).text);
    else
        SOFTRNIC_LOG(Info, Cm,
                     "connection %llu to %s: tcp (SOFTRNIC_TRANSPORT or Options::transport is tcp)",
                     static_cast<unsigned long long>(id), detail::address_text(c->peer).text);
    if (rc != 0 && err != EINPROGRESS && err != EINTR) {
        core.deliver(*c, Unreachable{id, err});
        core.poke();
        return {CmStatus::Ok, 0, id};
    }
    // Connecting: EPOLLOUT says done (success or not, SO_ERROR tells).
    if (!core.arm(*c, EPOLLOUT, true)) return {CmStatus::SystemError, errno, 0};
    core.conns.emplace(id, std::move(c));
    core.poke();  // the deadline may be the earliest now
    return {CmStatus::Ok, 0, id};
}

Transport ConnectionManager::transport() const {
    return impl_->core.policy.mode;
}

CmStatus ConnectionManager::accept(ConnId id, const ConnParams &params) {
    if (!ok()) return CmStatus::Stopped;
    if (!impl_->iwarp.valid(params)) return CmStatus::InvalidArgument;
    detail::ManagerCore &core = impl_->core;
    std::lock_guard lk(core.mu);
    auto it = core.conns.find(id);
    if (it == core.conns.end()) return CmStatus::UnknownId;
    Conn &c = *it->second;
    CmStatus s = c.engine->accept(c, params);
    if (s == CmStatus::Ok) core.poke();  // deliver Established (or Failed) from the event thread
    return s;
}

CmStatus ConnectionManager::reject(ConnId id, std::span<const uint8_t> private_data) {
    if (!ok()) return CmStatus::Stopped;
    if (private_data.size() > kMaxPrivateData) return CmStatus::InvalidArgument;
    detail::ManagerCore &core = impl_->core;
    std::lock_guard lk(core.mu);
    auto it = core.conns.find(id);
    if (it == core.conns.end()) return CmStatus::UnknownId;
    Conn &c = *it->second;
    CmStatus s = c.engine->reject(c, private_data);
    if (s == CmStatus::Ok) core.poke();
    return s;
}

}  // namespace softrnic::cm
