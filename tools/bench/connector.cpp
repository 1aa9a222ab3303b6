#include "bench/connector.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <variant>

#include "bench/common.hpp"
#include "bench/net.hpp"
#include "cm/connection_manager.hpp"
#include "transport/tcp/tcp_channel.hpp"

namespace softrnic::bench {

namespace cm = softrnic::cm;

namespace {

// Events from the manager's thread, taken by the benchmark thread.
class EventQueue {
  public:
    cm::Handler handler() {
        return [this](cm::Event &e) {
            std::lock_guard lk(mu_);
            events_.push_back(std::move(e));
            cv_.notify_all();
        };
    }
    // First event satisfying `pick`, removed from the queue; nullopt on timeout.
    template <class Pick>
    std::optional<cm::Event> take(Pick pick, std::chrono::milliseconds timeout) {
        std::unique_lock lk(mu_);
        std::optional<cm::Event> out;
        cv_.wait_for(lk, timeout, [&] {
            for (auto it = events_.begin(); it != events_.end(); ++it)
                if (pick(*it)) {
                    out = std::move(*it);
                    events_.erase(it);
                    return true;
                }
            return false;
        });
        return out;
    }
    ~EventQueue() {
        for (auto &e : events_)
            if (auto *est = std::get_if<cm::Established>(&e)) release_socket(est->llp);
    }
    static void release_socket(ri_llp_stream_handle_t h) {
        if (h >= 0) cm::release_unclaimed(h);  // a TCP socket or an shm link alike
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<cm::Event> events_;
};

cm::ConnId id_of(const cm::Event &e) {
    return std::visit([](const auto &v) { return v.id; }, e);
}

// Connects through the connection manager, forced to one transport: TCP/iWARP, or shared
// memory (same host and network namespace).
class CmConnector final : public Connector {
  public:
    CmConnector(const ConnectorConfig &cfg, cm::Transport t)
        : cfg_(cfg), transport_(t), cm_(events_.handler(), options(t)) {
        if (!cm_.ok()) throw BenchError("the connection manager could not start");
    }

    std::string describe() const override {
        if (transport_ == cm::Transport::Shm) return "shm (shared-memory rings, CMA single copy)";
        return std::string("tcp (TCP/iWARP, MPA v2, CRC ") + (cfg_.crc ? "on" : "off") + ")";
    }

    std::string listen(const std::string &host, uint16_t port) override {
        SockAddr a = resolve(host, port, true);
        // Connection set-up runs (--connections) issue bursts of up to 10,000 connects.
        auto l = cm_.listen(a.get(), a.len, 4096);
        if (!l.ok())
            throw BenchError(std::string("cm listen on ") + to_string(a) + ": " +
                             cm::to_string(l.status) + " " + std::strerror(l.sys_errno));
        auto la = cm_.local_address(l.value);
        if (!la.ok()) throw BenchError("cm local_address failed");
        SockAddr bound;
        bound.storage = la.value.storage;
        bound.len = la.value.len;
        return std::to_string(port_of(bound));
    }

    Link accept(std::span<const uint8_t> mine, std::chrono::milliseconds timeout) override {
        auto ev = events_.take(
            [](const cm::Event &e) { return std::holds_alternative<cm::ConnectRequest>(e); },
            timeout);
        if (!ev) throw BenchError("no connection request arrived");
        auto &req = std::get<cm::ConnectRequest>(*ev);
        cm::ConnParams p = params(mine);
        if (auto st = cm_.accept(req.id, p); st != cm::CmStatus::Ok)
            throw BenchError(std::string("cm accept: ") + cm::to_string(st));
        return finish(req.id, timeout);
    }

    Link connect(const std::string &host, const std::string &endpoint,
                 std::span<const uint8_t> mine, std::chrono::milliseconds timeout) override {
        SockAddr a = resolve(host, parse_port(endpoint), false);
        cm::ConnParams p = params(mine);
        p.timeout = timeout;
        auto c = cm_.connect(a.get(), a.len, p);
        if (!c.ok()) throw BenchError(std::string("cm connect: ") + cm::to_string(c.status));
        return finish(c.value, timeout + std::chrono::seconds(1));
    }

    std::vector<Link> accept_many(size_t n, std::span<const uint8_t> mine,
                                  std::chrono::milliseconds timeout) override {
        std::vector<cm::ConnId> ids;
        ids.reserve(n);
        cm::ConnParams p = params(mine);
        for (size_t i = 0; i < n; ++i) {
            auto ev = events_.take(
                [](const cm::Event &e) { return std::holds_alternative<cm::ConnectRequest>(e); },
                timeout);
            if (!ev)
                throw BenchError("connection request " + std::to_string(i + 1) + " of " +
                                 std::to_string(n) + " did not arrive");
            cm::ConnId id = std::get<cm::ConnectRequest>(*ev).id;
            if (auto st = cm_.accept(id, p); st != cm::CmStatus::Ok)
                throw BenchError(std::string("cm accept: ") + cm::to_string(st));
            ids.push_back(id);
        }
        std::vector<Link> links;
        links.reserve(n);
        for (cm::ConnId id : ids)
            links.push_back(finish(id, timeout));
        return links;
    }

    std::vector<Link> connect_many(const std::string &host, const std::string &endpoint, size_t n,
                                   std::span<const uint8_t> mine,
                                   std::chrono::milliseconds timeout) override {
        SockAddr a = resolve(host, parse_port(endpoint), false);
        cm::ConnParams p = params(mine);
        p.timeout = timeout;
        std::vector<cm::ConnId> ids;
        ids.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            auto c = cm_.connect(a.get(), a.len, p);
            if (!c.ok()) throw BenchError(std::string("cm connect: ") + cm::to_string(c.status));
            ids.push_back(c.value);
        }
        std::vector<Link> links;
        links.reserve(n);
        for (cm::ConnId id : ids)
            links.push_back(finish(id, timeout + std::chrono::seconds(1)));
        return links;
    }

  private:
    static uint16_t parse_port(const std::string &endpoint) {
        unsigned long port = std::strtoul(endpoint.c_str(), nullptr, 10);
        if (port == 0 || port > 65535) throw BenchError("bad tcp endpoint '" + endpoint + "'");
        return static_cast<uint16_t>(port);
    }
    static cm::Options options(cm::Transport t) {
        cm::Options o;
        o.transport = t;
        return o;
    }
    static uint16_t port_of(const SockAddr &a) { return local_port_of(a.storage); }
    static uint16_t local_port_of(const sockaddr_storage &ss) {
        if (ss.ss_family == AF_INET)
            return ntohs(reinterpret_cast<const sockaddr_in *>(&ss)->sin_port);
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port);
    }

    cm::ConnParams params(std::span<const uint8_t> mine) const {
        cm::ConnParams p;
        p.private_data.assign(mine.begin(), mine.end());
        p.ird = cfg_.ird;
        p.ord = cfg_.ord;
        p.crc = cfg_.crc;
        return p;
    }

    // Waits for the outcome of connection `id`.
    Link finish(cm::ConnId id, std::chrono::milliseconds timeout) {
        auto ev = events_.take([id](const cm::Event &e) { return id_of(e) == id; }, timeout);
        if (!ev) throw BenchError("connection set-up timed out");
        if (auto *est = std::get_if<cm::Established>(&*ev)) {
            std::string d = std::string(est->params.crc ? "crc" : "no crc") + ", ird " +
                            std::to_string(est->params.ird) + ", ord " +
                            std::to_string(est->params.ord);
            return Link(est->llp, std::move(est->private_data), &EventQueue::release_socket, d);
        }
        if (std::holds_alternative<cm::Rejected>(*ev))
            throw BenchError("the server rejected the connection");
        if (auto *u = std::get_if<cm::Unreachable>(&*ev))
            throw BenchError(std::string("server unreachable: ") + std::strerror(u->sys_errno));
        if (std::holds_alternative<cm::TimedOut>(*ev))
            throw BenchError("connection set-up timed out (MPA)");
        auto &f = std::get<cm::Failed>(*ev);
        throw BenchError("connection set-up failed (" + std::string(cm::to_string(f.reason)) +
                         ", protocol code " + std::to_string(f.protocol_code) + ", errno " +
                         std::to_string(f.sys_errno) + ")");
    }

    ConnectorConfig cfg_;
    cm::Transport transport_;
    EventQueue events_;  // declared before cm_: outlives the manager's thread
    cm::ConnectionManager cm_;
};

}  // namespace

std::unique_ptr<Connector> make_connector(const std::string &transport,
                                          const ConnectorConfig &cfg) {
    if (transport == "tcp") return std::make_unique<CmConnector>(cfg, cm::Transport::Tcp);
    if (transport == "shm") return std::make_unique<CmConnector>(cfg, cm::Transport::Shm);
    if (transport == "auto") return std::make_unique<CmConnector>(cfg, cm::Transport::Auto);
    if (transport == "loopback")
        throw BenchError("transport 'loopback' is in-process only (no --server/--connect)");
    throw BenchError("unknown transport '" + transport + "' (auto|tcp|loopback|shm)");
}

}  // namespace softrnic::bench
