#include "bench/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "bench/common.hpp"

namespace softrnic::bench {

namespace {

[[noreturn]] void sys_fail(const std::string &what) {
    throw BenchError(what + ": " + std::strerror(errno));
}

int poll_ms(std::chrono::milliseconds t) {
    return static_cast<int>(std::min<int64_t>(t.count(), 1 << 30));
}

}  // namespace

void Fd::reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

SockAddr resolve(const std::string &host, uint16_t port, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    addrinfo *res = nullptr;
    std::string svc = std::to_string(port);
    const char *node = host.empty() ? (passive ? nullptr : "127.0.0.1") : host.c_str();
    if (passive && !node) hints.ai_family = AF_INET;  // wildcard: IPv4 any
    int rc = ::getaddrinfo(node, svc.c_str(), &hints, &res);
    if (rc != 0 || !res) throw BenchError("cannot resolve '" + host + "': " + gai_strerror(rc));
    SockAddr a;
    std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
    a.len = static_cast<socklen_t>(res->ai_addrlen);
    ::freeaddrinfo(res);
    return a;
}

std::vector<SockAddr> resolve_all(const std::string &host, uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo *res = nullptr;
    std::string svc = std::to_string(port);
    int rc = ::getaddrinfo(host.empty() ? "127.0.0.1" : host.c_str(), svc.c_str(), &hints, &res);
    if (rc != 0 || !res) throw BenchError("cannot resolve '" + host + "': " + gai_strerror(rc));
    std::vector<SockAddr> out;
    for (addrinfo *ai = res; ai; ai = ai->ai_next) {
        SockAddr a;
        std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
        a.len = static_cast<socklen_t>(ai->ai_addrlen);
        out.push_back(a);
    }
    ::freeaddrinfo(res);
    return out;
}

std::string numeric_host(const SockAddr &a) {
    char host[INET6_ADDRSTRLEN] = "";
    if (a.storage.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(&a.storage)->sin_addr, host,
                    sizeof host);
    else
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(&a.storage)->sin6_addr, host,
                    sizeof host);
    return host;
}

std::string to_string(const SockAddr &a) {
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (a.storage.ss_family == AF_INET) {
        const auto *s = reinterpret_cast<const sockaddr_in *>(&a.storage);
        ::inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    const auto *s = reinterpret_cast<const sockaddr_in6 *>(&a.storage);
    ::inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
    port = ntohs(s->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
}

Fd tcp_listen(const SockAddr &addr, int backlog) {
    Fd s(::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s) sys_fail("socket");
    int one = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.get(), addr.get(), addr.len) != 0) sys_fail("bind " + to_string(addr));
    if (::listen(s.get(), backlog) != 0) sys_fail("listen");
    return s;
}

uint16_t local_port(int fd) {
    sockaddr_storage ss{};
    socklen_t sl = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &sl) != 0) sys_fail("getsockname");
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    return ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
}

Fd tcp_connect(const std::vector<SockAddr> &addrs, std::chrono::milliseconds timeout,
               size_t *which) {
    if (addrs.empty()) throw BenchError("connect: no address");
    auto deadline = Clock::now() + timeout;
    int last_errno = 0;
    for (;;) {
        for (size_t i = 0; i < addrs.size(); ++i) {
            const SockAddr &addr = addrs[i];
            Fd s(::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
            if (!s) sys_fail("socket");
            int rc = ::connect(s.get(), addr.get(), addr.len);
            if (rc != 0 && errno == EINPROGRESS) {
                auto left =
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
                pollfd pf{s.get(), POLLOUT, 0};
                if (::poll(&pf, 1, poll_ms(std::max(left, std::chrono::milliseconds(1)))) != 1)
                    throw BenchError("connect " + to_string(addr) + ": timed out");
                int err = 0;
                socklen_t el = sizeof err;
                ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &el);
                errno = err;
                rc = err ? -1 : 0;
            }
            if (rc == 0) {
                set_nonblocking(s.get(), false);
                if (which) *which = i;
                return s;
            }
            last_errno = errno;
            if (errno != ECONNREFUSED) break;
        }
        // A server that is still starting refuses for a moment: retry until the deadline.
        if (last_errno != ECONNREFUSED || Clock::now() >= deadline) {
            errno = last_errno;
            sys_fail("connect " + to_string(addrs.front()));
        }
        ::usleep(20000);
    }
}

Fd tcp_accept(int listen_fd, std::chrono::milliseconds timeout) {
    if (!wait_readable(listen_fd, timeout)) throw BenchError("accept: no connection arrived");
    Fd s(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!s) sys_fail("accept");
    return s;
}

void set_nodelay(int fd) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void set_nonblocking(int fd, bool on) {
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK)) != 0)
        sys_fail("fcntl");
}

void send_all(int fd, const void *p, size_t n) {
    const auto *b = static_cast<const unsigned char *>(p);
    while (n > 0) {
        ssize_t r = ::send(fd, b, n, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR) continue;
            sys_fail("send");
        }
        b += r;
        n -= static_cast<size_t>(r);
    }
}

void recv_all(int fd, void *p, size_t n) {
    auto *b = static_cast<unsigned char *>(p);
    while (n > 0) {
        ssize_t r = ::recv(fd, b, n, 0);
        if (r == 0) throw BenchError("peer closed the connection");
        if (r < 0) {
            if (errno == EINTR) continue;
            sys_fail("recv");
        }
        b += r;
        n -= static_cast<size_t>(r);
    }
}

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
    pollfd pf{fd, POLLIN, 0};
    for (;;) {
        int r = ::poll(&pf, 1, poll_ms(timeout));
        if (r < 0 && errno == EINTR) continue;
        return r == 1;
    }
}

void ControlChannel::send(const std::string &line) {
    std::string l = line + "\n";
    send_all(fd_.get(), l.data(), l.size());
}

bool ControlChannel::fill(std::chrono::milliseconds timeout) {
    if (eof_) return false;
    if (!wait_readable(fd_.get(), timeout)) return false;
    char tmp[4096];
    ssize_t r;
    do {
        r = ::recv(fd_.get(), tmp, sizeof tmp, 0);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) {
        eof_ = true;
        return false;
    }
    buf_.append(tmp, static_cast<size_t>(r));
    return true;
}

std::string ControlChannel::recv(std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
        size_t nl = buf_.find('\n');
        if (nl != std::string::npos) {
            std::string line = buf_.substr(0, nl);
            buf_.erase(0, nl + 1);
            return line;
        }
        if (eof_) throw BenchError("the peer closed the control connection");
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0 || (!fill(left) && !eof_))
            throw BenchError("timed out waiting for the peer's control message");
    }
}

bool ControlChannel::pending() {
    if (buf_.find('\n') != std::string::npos || eof_) return true;
    return wait_readable(fd_.get(), std::chrono::milliseconds(0));
}

std::string ControlChannel::recv_or_eof() {
    for (;;) {
        size_t nl = buf_.find('\n');
        if (nl != std::string::npos) {
            std::string line = buf_.substr(0, nl);
            buf_.erase(0, nl + 1);
            return line;
        }
        if (eof_) return {};
        fill(std::chrono::hours(24));
    }
}

std::vector<std::string> split_words(const std::string &line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

}  // namespace softrnic::bench
