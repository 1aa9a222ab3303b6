// Plain socket helpers for `softrnic bench`: an owning fd, TCP listen/connect/accept with
// timeouts, and the line-based control channel between the client and the server process.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace softrnic::bench {

class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1);

  private:
    int fd_ = -1;
};

// Resolves host:port (numeric or name; "" = the wildcard address when `passive`).
struct SockAddr {
    sockaddr_storage storage{};
    socklen_t len = 0;
    const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&storage); }
};
SockAddr resolve(const std::string &host, uint16_t port, bool passive);
std::vector<SockAddr> resolve_all(const std::string &host, uint16_t port);
std::string to_string(const SockAddr &a);
std::string numeric_host(const SockAddr &a);  // the address alone, for resolve()

Fd tcp_listen(const SockAddr &addr, int backlog = 8);
uint16_t local_port(int fd);
// Connects to the first of `addrs` that accepts, retrying refusals (a server still
// starting) until `timeout`. `*which` receives the index of the address used.
Fd tcp_connect(const std::vector<SockAddr> &addrs, std::chrono::milliseconds timeout,
               size_t *which = nullptr);
inline Fd tcp_connect(const SockAddr &addr, std::chrono::milliseconds timeout) {
    return tcp_connect(std::vector<SockAddr>{addr}, timeout);
}
Fd tcp_accept(int listen_fd, std::chrono::milliseconds timeout);

void set_nodelay(int fd);
void set_nonblocking(int fd, bool on);
void send_all(int fd, const void *p, size_t n);
void recv_all(int fd, void *p, size_t n);  // blocking socket; throws on EOF

// Waits until `fd` is readable; false on timeout.
bool wait_readable(int fd, std::chrono::milliseconds timeout);

// Line-based control messages ("WORD arg arg...\n"), both directions.
class ControlChannel {
  public:
    explicit ControlChannel(Fd fd) : fd_(std::move(fd)) {}
    void send(const std::string &line);
    // Next line (without the newline); throws BenchError on EOF or timeout.
    std::string recv(std::chrono::milliseconds timeout = std::chrono::minutes(10));
    // True when a line or EOF is waiting (never blocks).
    bool pending();
    // Next line, or "" on EOF (a server's normal end of session).
    std::string recv_or_eof();
    int fd() const { return fd_.get(); }

  private:
    bool fill(std::chrono::milliseconds timeout);
    Fd fd_;
    std::string buf_;
    bool eof_ = false;
};

std::vector<std::string> split_words(const std::string &line);

}  // namespace softrnic::bench
