#include "cm/shm_rendezvous.hpp"

#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "transport/shm/shm.hpp"

namespace softrnic::cm::detail {

namespace shm = transport::shm;

Fd bind_rendezvous(const Address &bound, int backlog) {
    shm::UnixName name;
    Fd u(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (u.get() >= 0 && shm::rendezvous_name(bound.get(), shm::is_any_address(bound.get()), name) &&
        ::bind(u.get(), reinterpret_cast<const sockaddr *>(&name.sa), name.len) == 0 &&
        ::listen(u.get(), std::max(backlog, SOMAXCONN)) == 0)
        return u;
    return Fd();
}

int connect_rendezvous(const sockaddr *addr, int &err) {
    err = ECONNREFUSED;
    for (int pass = 0; pass < 2; ++pass) {
        bool wildcard = pass == 1;
        if (wildcard && (shm::is_any_address(addr) || !shm::is_local_address(addr))) break;
        shm::UnixName name;
        if (!shm::rendezvous_name(addr, wildcard, name)) continue;
        Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) {
            err = errno;
            return -1;
        }
        int rc = -1;
        // A full backlog answers EAGAIN (non-blocking): the event thread accepts quickly,
        // so retry briefly rather than give up on shm.
        for (int attempt = 0; attempt < 200; ++attempt) {
            rc = ::connect(fd.get(), reinterpret_cast<const sockaddr *>(&name.sa), name.len);
            if (rc == 0 || (errno != EAGAIN && errno != EINTR)) break;
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        if (rc != 0) {
            if (errno != ECONNREFUSED && errno != ENOENT) err = errno;
            continue;
        }
        // Abstract names have no permissions: anyone may bind one. Only a listener run by
        // our own user gets our segments.
        if (!shm::same_user(fd.get())) {
            err = EACCES;
            continue;
        }
        return fd.release();
    }
    return -1;
}

bool admit_rendezvous(int fd) {
    return shm::same_user(fd);
}

Address rendezvous_peer_address(const Address &listener) {
    Address a = listener;
    if (a.storage.ss_family == AF_INET) {
        auto *s = reinterpret_cast<sockaddr_in *>(&a.storage);
        if (shm::is_any_address(a.get())) s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s->sin_port = 0;
    } else if (a.storage.ss_family == AF_INET6) {
        auto *s = reinterpret_cast<sockaddr_in6 *>(&a.storage);
        if (shm::is_any_address(a.get())) s->sin6_addr = in6addr_loopback;
        s->sin6_port = 0;
    }
    return a;
}

}  // namespace softrnic::cm::detail
