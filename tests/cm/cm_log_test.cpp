// What the connection manager logs (SOFTRNIC_LOG, SOFTRNIC_LOG_SUBSYS): a refused or
// failed set-up names its reason at the default level, the transport choice and a peer's
// rejection show at info, and the level and subsystem filters silence them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "../base/log_capture.hpp"
#include "cm/connection_manager.hpp"

namespace cm = softrnic::cm;
using logtest::Capture;

namespace {

constexpr auto kTimeout = std::chrono::seconds(10);

// The events of one manager, waited on from the test thread; `react` runs on the event
// thread first.
class Events {
  public:
    std::function<void(cm::Event &)> react;
    cm::Handler handler() {
        return [this](cm::Event &e) {
            if (react) react(e);
            std::lock_guard lk(mu_);
            events_.push_back(std::move(e));
            cv_.notify_all();
        };
    }
    template <class T>
    std::optional<T> take() {
        std::unique_lock lk(mu_);
        std::optional<T> out;
        cv_.wait_for(lk, kTimeout, [&] {
            for (auto it = events_.begin(); it != events_.end(); ++it)
                if (auto *t = std::get_if<T>(&*it)) {
                    out = *t;
                    events_.erase(it);
                    return true;
                }
            return false;
        });
        return out;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<cm::Event> events_;
};

// A TCP port on 127.0.0.1 that is bound (so nobody else takes it) but not listening: a
// connection to it is refused.
struct DeadPort {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    DeadPort() {
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
        EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len), 0);
    }
    ~DeadPort() { ::close(fd); }
    std::string text() const { return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)); }
};

// Connects to a port nobody listens on and waits for Unreachable; returns the id.
cm::ConnId connect_refused(const DeadPort &port) {
    Events ev;
    cm::ConnectionManager m(ev.handler());
    auto r = m.connect(reinterpret_cast<const sockaddr *>(&port.addr), sizeof port.addr, {});
    EXPECT_TRUE(r.ok());
    auto u = ev.take<cm::Unreachable>();
    EXPECT_TRUE(u.has_value());
    if (u) {
        EXPECT_EQ(u->sys_errno, ECONNREFUSED);
    }
    return r.value;
}

TEST(CmLog, RefusedConnectionNamesTheReasonAtTheDefaultLevel) {
    DeadPort port;
    Capture cap(nullptr);
    const cm::ConnId id = connect_refused(port);
    const std::string expect = "WARN cm: connection " + std::to_string(id) + " to " + port.text() +
                               " failed: unreachable, ECONNREFUSED";
    EXPECT_EQ(cap.count(expect), 1u) << cap.text();
    EXPECT_EQ(cap.count("INFO"), 0u) << cap.text();
}

TEST(CmLog, RefusedConnectionAtInfoAlsoSaysWhichTransportAndWhy) {
    DeadPort port;
    Capture cap("info");
    const cm::ConnId id = connect_refused(port);
    const std::string prefix = "connection " + std::to_string(id) + " to " + port.text() + ": ";
    // No listener at all: never shm. Either the policy said TCP or no shm listener answered.
    EXPECT_EQ(cap.count(prefix + "tcp ("), 1u) << cap.text();
    EXPECT_EQ(cap.count("failed: unreachable, ECONNREFUSED (Connection refused)"), 1u)
        << cap.text();
}

TEST(CmLog, ErrorLevelPrintsNothingForARefusedConnection) {
    DeadPort port;
    Capture cap("error");
    connect_refused(port);
    EXPECT_EQ(cap.text(), "");
}

TEST(CmLog, OtherSubsystemsOnlySilenceTheManager) {
    DeadPort port;
    Capture cap("trace", "shm");
    connect_refused(port);
    EXPECT_EQ(cap.count(" cm: "), 0u) << cap.text();
}

TEST(CmLog, PeerRejectionIsLoggedOnBothSidesAtInfo) {
    Capture cap("info");
    Events server_ev, client_ev;
    cm::ConnectionManager server(server_ev.handler());
    cm::ConnectionManager *srv = &server;
    server_ev.react = [srv](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) srv->reject(r->id);
    };
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    auto l = server.listen(reinterpret_cast<sockaddr *>(&a), sizeof a, 8);
    ASSERT_TRUE(l.ok());
    auto bound = server.local_address(l.value);
    ASSERT_TRUE(bound.ok());
    cm::ConnectionManager client(client_ev.handler());
    auto c = client.connect(bound.value.get(), bound.value.len, {});
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(client_ev.take<cm::Rejected>().has_value());
    EXPECT_EQ(cap.count("connection " + std::to_string(c.value) + " to 127.0.0.1:" +
                        std::to_string(ntohs(
                            reinterpret_cast<const sockaddr_in *>(bound.value.get())->sin_port)) +
                        " refused: rejected by the peer"),
              1u)
        << cap.text();
    EXPECT_EQ(cap.count("refused: rejected by the consumer"), 1u) << cap.text();
    EXPECT_EQ(cap.count(" WARN "), 0u) << cap.text();
}

// A peer that answers the MPA Request with something else: Failed(Malformed), a warning.
TEST(CmLog, MalformedReplyNamesTheFailReasonAtTheDefaultLevel) {
    Capture cap(nullptr);
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(lfd, 1), 0);
    ASSERT_EQ(::getsockname(lfd, reinterpret_cast<sockaddr *>(&a), &len), 0);
    Events ev;
    {
        cm::Options tcp_only;  // the fake peer speaks TCP only
        tcp_only.transport = cm::Transport::Tcp;
        cm::ConnectionManager m(ev.handler(), tcp_only);
        auto c = m.connect(reinterpret_cast<sockaddr *>(&a), sizeof a, {});
        ASSERT_TRUE(c.ok());
        int peer = ::accept(lfd, nullptr, nullptr);
        ASSERT_GE(peer, 0);
        const char junk[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        ASSERT_EQ(::send(peer, junk, sizeof junk - 1, MSG_NOSIGNAL), ssize_t(sizeof junk - 1));
        auto f = ev.take<cm::Failed>();
        ::close(peer);
        ASSERT_TRUE(f.has_value());
        EXPECT_EQ(f->reason, cm::FailReason::Malformed);
        EXPECT_EQ(cap.count("WARN cm: connection " + std::to_string(c.value) +
                            " to 127.0.0.1:" + std::to_string(ntohs(a.sin_port)) +
                            " failed in set-up: Malformed (protocol code"),
                  1u)
            << cap.text();
    }
    ::close(lfd);
}

}  // namespace
