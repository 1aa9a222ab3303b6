// A connected TCP socket pair over 127.0.0.1 (listen on an ephemeral port, connect,
// accept), for tests that hand one end to the TCP transport and play the peer with the
// other. Shared by tests/tcp and tests/transport.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rt_tcp {

// False (and any end made closed again, both -1) when the pair cannot be made.
inline bool loopback_socket_pair(int &a, int &b) {
    a = b = -1;
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0) return false;
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (::bind(l, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0 && ::listen(l, 1) == 0 &&
        ::getsockname(l, reinterpret_cast<sockaddr *>(&sa), &sl) == 0) {
        a = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (a >= 0 && ::connect(a, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0)
            b = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    }
    ::close(l);
    if (b < 0 && a >= 0) {
        ::close(a);
        a = -1;
    }
    return b >= 0;
}

}  // namespace rt_tcp
