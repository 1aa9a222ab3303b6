// How a two-process benchmark gets a connected LLP stream for its QPs. This is the only
// place where the transport choice matters: the TCP connector drives the connection
// manager (TCP + MPA v2); a shared-memory connector will produce its own handles the
// same way, and the sessions in rdma_test.hpp will not change.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rnicpi/rnicpi.h"

namespace softrnic::bench {

// A connected LLP stream handle not yet claimed by a QP, plus the peer's private data.
// Released (closed) on destruction unless claimed().
class Link {
  public:
    Link() = default;
    Link(ri_llp_stream_handle_t h, std::vector<uint8_t> peer,
         std::function<void(ri_llp_stream_handle_t)> release, std::string describe)
        : llp_(h), peer_(std::move(peer)), release_(std::move(release)), describe_(describe) {}
    ~Link() {
        if (release_) release_(llp_);
    }
    Link(Link &&o) noexcept { *this = std::move(o); }
    Link &operator=(Link &&o) noexcept {
        if (this != &o) {
            if (release_) release_(llp_);
            llp_ = o.llp_;
            peer_ = std::move(o.peer_);
            release_ = std::move(o.release_);
            describe_ = std::move(o.describe_);
            o.release_ = nullptr;
        }
        return *this;
    }
    Link(const Link &) = delete;
    Link &operator=(const Link &) = delete;

    ri_llp_stream_handle_t llp() const { return llp_; }
    const std::vector<uint8_t> &peer_data() const { return peer_; }
    const std::string &describe() const { return describe_; }
    // The QP took the handle (ri_qp_modify to RTS succeeded): nothing left to release.
    void claimed() { release_ = nullptr; }

  private:
    ri_llp_stream_handle_t llp_ = -1;
    std::vector<uint8_t> peer_;
    std::function<void(ri_llp_stream_handle_t)> release_;
    std::string describe_;
};

struct ConnectorConfig {
    bool crc = false;   // ask for MPA CRC32c
    uint16_t ird = 16;  // inbound RDMA Reads the QP accepts outstanding
    uint16_t ord = 16;  // outbound RDMA Reads it may have outstanding
};

class Connector {
  public:
    virtual ~Connector() = default;
    // Human-readable description of the transport, for table headers.
    virtual std::string describe() const = 0;
    // Server: starts accepting on `host` (empty: any address) and `port` (0: ephemeral).
    // Returns the endpoint string a client passes to connect() with the same host.
    virtual std::string listen(const std::string &host, uint16_t port) = 0;
    // Server: the next connection, answered with `mine` as private data.
    virtual Link accept(std::span<const uint8_t> mine, std::chrono::milliseconds timeout) = 0;
    // Client.
    virtual Link connect(const std::string &host, const std::string &endpoint,
                         std::span<const uint8_t> mine, std::chrono::milliseconds timeout) = 0;
    // Server: accepts the next `n` requests as they arrive, none waiting for an earlier one
    // to be established, then returns the n links in arrival order. `timeout` bounds each
    // wait for a request and for an outcome.
    virtual std::vector<Link> accept_many(size_t n, std::span<const uint8_t> mine,
                                          std::chrono::milliseconds timeout) = 0;
    // Client: `n` connects issued at once, then the n links in the order issued.
    virtual std::vector<Link> connect_many(const std::string &host, const std::string &endpoint,
                                           size_t n, std::span<const uint8_t> mine,
                                           std::chrono::milliseconds timeout) = 0;
};

// "tcp" (TCP/iWARP through the connection manager). Throws BenchError with the reason for
// a transport that cannot make two-process connections (loopback: in-process only; shm:
// not built yet).
std::unique_ptr<Connector> make_connector(const std::string &transport, const ConnectorConfig &cfg);

}  // namespace softrnic::bench
