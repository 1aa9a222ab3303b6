// TCP/iWARP transport: the socket options that bound how long a connection to a vanished
// peer lives (tcp_channel.hpp, "Failure detection").
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/config.hpp"
#include "base/log.hpp"
#include "transport/tcp/tcp_channel.hpp"

namespace softrnic::transport::tcp {

LivenessParams liveness_params(uint32_t bound_ms) {
    bound_ms = std::clamp(bound_ms, kMinLivenessMs, kMaxLivenessMs);
    LivenessParams p;
    // The first probe at half the bound, then one every tenth of it (at least a second):
    // the kernel aborts at the first keepalive tick at or past the user timeout, so an idle
    // connection breaks at most one interval late, and a peer that is only slow has several
    // probes to answer.
    p.keepidle_s = std::max(1, static_cast<int>(bound_ms / 2000));
    p.keepintvl_s = std::max(1, static_cast<int>(bound_ms / 10000));
    const int rest_s = std::max(1, static_cast<int>(bound_ms / 1000) - p.keepidle_s);
    p.keepcnt = std::clamp((rest_s + p.keepintvl_s - 1) / p.keepintvl_s, 1, 127);
    p.user_timeout_ms = bound_ms;
    return p;
}

uint32_t liveness_bound_ms() {
    const char *v = base::env_value(base::EnvVar::TcpTimeoutMs);
    if (v == nullptr || *v == 0) return kDefaultLivenessMs;
    char *end = nullptr;
    errno = 0;
    const unsigned long long ms = std::strtoull(v, &end, 10);
    const bool digits = *v >= '0' && *v <= '9';
    if (digits && *end == 0 && errno == 0 &&
        (ms == 0 || (ms >= kMinLivenessMs && ms <= kMaxLivenessMs)))
        return static_cast<uint32_t>(ms);
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true, std::memory_order_relaxed))
        SOFTRNIC_LOG(Warn, Tcp,
                     "SOFTRNIC_TCP_TIMEOUT_MS=%s ignored (0, or %u to %u milliseconds): using %u",
                     v, kMinLivenessMs, kMaxLivenessMs, kDefaultLivenessMs);
    return kDefaultLivenessMs;
}

bool apply_liveness(int fd, uint32_t bound_ms) {
    if (bound_ms == 0) return true;
    const LivenessParams p = liveness_params(bound_ms);
    const int one = 1;
    bool ok = ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) == 0;
    ok = ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &p.keepidle_s, sizeof p.keepidle_s) == 0 && ok;
    ok = ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &p.keepintvl_s, sizeof p.keepintvl_s) == 0 &&
         ok;
    ok = ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &p.keepcnt, sizeof p.keepcnt) == 0 && ok;
    ok = ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &p.user_timeout_ms,
                      sizeof p.user_timeout_ms) == 0 &&
         ok;
    if (!ok)
        SOFTRNIC_LOG(Warn, Tcp, "socket %d: failure detection options refused: %s", fd,
                     std::strerror(errno));
    return ok;
}

}  // namespace softrnic::transport::tcp
