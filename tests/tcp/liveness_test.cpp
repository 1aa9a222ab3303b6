// Failure detection's settings (tcp_channel.hpp, "Failure detection"): the socket options
// derived from a bound, SOFTRNIC_TCP_TIMEOUT_MS and its validation, and the options on the
// sockets the transport adopts. The detection itself, with a link taken down between two
// network namespaces, is tests/twoproc/liveness_test.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "../base/log_capture.hpp"
#include "loopback_socket_pair.hpp"
#include "transport/llp_registry.hpp"
#include "transport/tcp/tcp_channel.hpp"

namespace tcp = softrnic::transport::tcp;
namespace llp = softrnic::transport::llp;

namespace {

constexpr const char *kVar = "SOFTRNIC_TCP_TIMEOUT_MS";

// Sets the variable (nullptr: unsets it) until destroyed.
class EnvSetting {
  public:
    explicit EnvSetting(const char *value) {
        if (value)
            ::setenv(kVar, value, 1);
        else
            ::unsetenv(kVar);
    }
    ~EnvSetting() { ::unsetenv(kVar); }
    EnvSetting(const EnvSetting &) = delete;
    EnvSetting &operator=(const EnvSetting &) = delete;
};

// A connected TCP socket pair over 127.0.0.1; both -1 when it cannot be made.
struct SocketPair {
    int a = -1, b = -1;
    SocketPair() { rt_tcp::loopback_socket_pair(a, b); }
    ~SocketPair() {
        if (a >= 0) ::close(a);
        if (b >= 0) ::close(b);
    }
    SocketPair(const SocketPair &) = delete;
    SocketPair &operator=(const SocketPair &) = delete;
};

int opt(int fd, int level, int name) {
    int v = -1;
    socklen_t sl = sizeof v;
    if (::getsockopt(fd, level, name, &v, &sl) != 0) return -2;
    return v;
}

}  // namespace

TEST(TcpLiveness, ParamsForTheDefaultAndAShortBound) {
    tcp::LivenessParams p = tcp::liveness_params(tcp::kDefaultLivenessMs);
    EXPECT_EQ(p.keepidle_s, 5);
    EXPECT_EQ(p.keepintvl_s, 1);
    EXPECT_EQ(p.keepcnt, 5);
    EXPECT_EQ(p.user_timeout_ms, 10000u);
    p = tcp::liveness_params(2000);
    EXPECT_EQ(p.keepidle_s, 1);
    EXPECT_EQ(p.keepintvl_s, 1);
    EXPECT_EQ(p.keepcnt, 1);
    EXPECT_EQ(p.user_timeout_ms, 2000u);
}

// For every bound: the first probe goes out no later than the bound (from 2 s on, where a
// whole second fits before it), the kernel's limits hold, and without the user timeout the
// probes alone would not give up before the bound either.
TEST(TcpLiveness, ParamsStayWithinTheBoundAndTheKernelsLimits) {
    for (uint32_t ms = tcp::kMinLivenessMs; ms <= tcp::kMaxLivenessMs;
         ms += ms < 20000 ? 250 : 9973) {
        const tcp::LivenessParams p = tcp::liveness_params(ms);
        SCOPED_TRACE(ms);
        EXPECT_EQ(p.user_timeout_ms, ms);
        EXPECT_GE(p.keepidle_s, 1);
        EXPECT_LE(p.keepidle_s, 32767);
        EXPECT_GE(p.keepintvl_s, 1);
        EXPECT_LE(p.keepintvl_s, 32767);
        EXPECT_GE(p.keepcnt, 1);
        EXPECT_LE(p.keepcnt, 127);
        if (ms >= 2000) {
            EXPECT_LE(uint64_t(p.keepidle_s) * 1000, ms);
        }
        EXPECT_GE(uint64_t(p.keepidle_s + p.keepcnt * p.keepintvl_s) * 1000 + 999, ms);
        // One interval late at most: the abort comes at a keepalive tick.
        EXPECT_LE(uint64_t(p.keepintvl_s) * 1000, std::max<uint64_t>(1000, ms / 10));
    }
}

TEST(TcpLiveness, BoundFromTheEnvironment) {
    {
        EnvSetting e(nullptr);
        EXPECT_EQ(tcp::liveness_bound_ms(), tcp::kDefaultLivenessMs);
    }
    {
        EnvSetting e("");
        EXPECT_EQ(tcp::liveness_bound_ms(), tcp::kDefaultLivenessMs);
    }
    {
        EnvSetting e("2000");
        EXPECT_EQ(tcp::liveness_bound_ms(), 2000u);
    }
    {
        EnvSetting e("1000");
        EXPECT_EQ(tcp::liveness_bound_ms(), 1000u);
    }
    {
        EnvSetting e("3600000");
        EXPECT_EQ(tcp::liveness_bound_ms(), 3600000u);
    }
    {
        EnvSetting e("0");  // off: the kernel's own timers
        EXPECT_EQ(tcp::liveness_bound_ms(), 0u);
    }
}

// Bad values are ignored (the default applies) and said so once, through SOFTRNIC_LOG.
TEST(TcpLiveness, BadValuesMeanTheDefaultWithOneWarning) {
    logtest::Capture cap("warn", "tcp");
    for (const char *bad : {"abc", "999", "3600001", "-5", "+2000", " 2000", "2000ms", "1e4",
                            "99999999999999999999999"}) {
        EnvSetting e(bad);
        EXPECT_EQ(tcp::liveness_bound_ms(), tcp::kDefaultLivenessMs) << bad;
    }
    EXPECT_EQ(cap.count("SOFTRNIC_TCP_TIMEOUT_MS=abc ignored"), 1u) << cap.text();
    EXPECT_EQ(cap.count("SOFTRNIC_TCP_TIMEOUT_MS"), 1u) << cap.text();
}

TEST(TcpLiveness, OptionsOnASocket) {
    SocketPair sp;
    ASSERT_GE(sp.b, 0);
    ASSERT_TRUE(tcp::apply_liveness(sp.a, 2000));
    EXPECT_EQ(opt(sp.a, SOL_SOCKET, SO_KEEPALIVE), 1);
    EXPECT_EQ(opt(sp.a, IPPROTO_TCP, TCP_KEEPIDLE), 1);
    EXPECT_EQ(opt(sp.a, IPPROTO_TCP, TCP_KEEPINTVL), 1);
    EXPECT_EQ(opt(sp.a, IPPROTO_TCP, TCP_KEEPCNT), 1);
    EXPECT_EQ(opt(sp.a, IPPROTO_TCP, TCP_USER_TIMEOUT), 2000);
    // 0: the socket is left as it was.
    ASSERT_TRUE(tcp::apply_liveness(sp.b, 0));
    EXPECT_EQ(opt(sp.b, SOL_SOCKET, SO_KEEPALIVE), 0);
    EXPECT_EQ(opt(sp.b, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
}

// A socket handed to the transport gets the options of the bound in force.
TEST(TcpLiveness, AdoptedSocketGetsTheBound) {
    EnvSetting e("3000");
    SocketPair sp;
    ASSERT_GE(sp.b, 0);
    const int fd = sp.a;
    ri_llp_stream_handle_t h = tcp::adopt_socket(fd, tcp::StreamParams{});
    ASSERT_EQ(h, fd);
    sp.a = -1;  // the registry owns it now
    EXPECT_EQ(opt(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
    EXPECT_EQ(opt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 1);
    EXPECT_EQ(opt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 3000);
    EXPECT_TRUE(llp::release(h));
}

// A socket whose ULP turned keepalive on itself keeps its own settings (uDAPL L6766:
// options such as KEEPALIVE are used as they are on a converted socket).
TEST(TcpLiveness, AdoptedSocketKeepsTheUlpsOwnKeepalive) {
    EnvSetting e("3000");
    SocketPair sp;
    ASSERT_GE(sp.b, 0);
    const int one = 1, idle = 77;
    ASSERT_EQ(::setsockopt(sp.a, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one), 0);
    ASSERT_EQ(::setsockopt(sp.a, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle), 0);
    const int fd = sp.a;
    ri_llp_stream_handle_t h = tcp::adopt_socket(fd, tcp::StreamParams{});
    ASSERT_EQ(h, fd);
    sp.a = -1;
    EXPECT_EQ(opt(fd, IPPROTO_TCP, TCP_KEEPIDLE), idle);
    EXPECT_EQ(opt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 0);
    EXPECT_TRUE(llp::release(h));
}
