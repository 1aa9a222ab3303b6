#include "bench/raw_tcp.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace softrnic::bench {

RawTcpSession::RawTcpSession(Fd sock, bool pingpong, size_t size, bool server,
                             const AbortCheck *abort)
    : sock_(std::move(sock)),
      pingpong_(pingpong),
      size_(size),
      server_(server),
      abort_(abort),
      buf_(std::max<size_t>(size, 1), 0x5A) {
    set_nodelay(sock_.get());
    set_nonblocking(sock_.get(), pingpong_);
}

PhaseResult RawTcpSession::run(Phase phase, uint64_t n) {
    if (!has(phase)) return {};
    return pingpong_ ? pingpong(n) : stream(n);
}

void RawTcpSession::spin_recv(unsigned char *p, size_t len, Spinner &spin) {
    size_t got = 0;
    while (got < len) {
        ssize_t r = ::recv(sock_.get(), p + got, len - got, MSG_DONTWAIT);
        if (r > 0) {
            got += static_cast<size_t>(r);
            spin.progressed();
            continue;
        }
        if (r == 0) throw BenchError("raw TCP peer closed the connection");
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            throw BenchError(std::string("raw TCP recv: ") + std::strerror(errno));
        spin.spin();
    }
}

PhaseResult RawTcpSession::pingpong(uint64_t n) {
    PhaseResult res;
    if (!server_) res.lat_us.reserve(n);
    Spinner spin("a raw TCP ping-pong reply", abort_);
    auto send_msg = [&] {
        size_t off = 0;
        while (off < size_) {
            ssize_t r = ::send(sock_.get(), buf_.data() + off, size_ - off, MSG_NOSIGNAL);
            if (r > 0) {
                off += static_cast<size_t>(r);
                continue;
            }
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                spin.spin();
                continue;
            }
            throw BenchError(std::string("raw TCP send: ") + std::strerror(errno));
        }
    };
    auto t_start = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        if (server_) {
            spin_recv(buf_.data(), size_, spin);
            send_msg();
        } else {
            auto t0 = Clock::now();
            send_msg();
            spin_recv(buf_.data(), size_, spin);
            auto t1 = Clock::now();
            res.lat_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 2);
        }
    }
    res.seconds = seconds_since(t_start);
    res.ops = n;
    res.bytes = n * size_;
    return res;
}

PhaseResult RawTcpSession::stream(uint64_t n) {
    PhaseResult res;
    unsigned char ack = 'A';
    auto t0 = Clock::now();
    if (server_) {
        uint64_t left = n * size_;
        while (left > 0) {
            ssize_t r = ::recv(sock_.get(), buf_.data(), std::min<uint64_t>(left, buf_.size()), 0);
            if (r == 0) throw BenchError("raw TCP peer closed the stream");
            if (r < 0) {
                if (errno == EINTR) continue;
                throw BenchError(std::string("raw TCP recv: ") + std::strerror(errno));
            }
            left -= static_cast<uint64_t>(r);
        }
        send_all(sock_.get(), &ack, 1);
    } else {
        for (uint64_t i = 0; i < n; ++i)
            send_all(sock_.get(), buf_.data(), size_);
        recv_all(sock_.get(), &ack, 1);
    }
    res.seconds = seconds_since(t0);
    res.ops = n;
    res.bytes = n * size_;
    return res;
}

}  // namespace softrnic::bench
