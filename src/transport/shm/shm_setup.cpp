// Rendezvous helpers and the post-MPA hello of the shm transport (see shm.hpp).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/memfd.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/config.hpp"
#include "transport/shm/hello.hpp"
#include "transport/shm/link.hpp"
#include "transport/shm/shm.hpp"

namespace softrnic::transport::shm {

namespace L = layout;

Counters &counters() {
    static Counters c;
    return c;
}

Stats stats() {
    Counters &c = counters();
    return {c.live_links.load(std::memory_order_relaxed),
            c.mapped_bytes.load(std::memory_order_relaxed),
            c.cma_links.load(std::memory_order_relaxed),
            c.doorbells.load(std::memory_order_relaxed),
            c.stall_doorbells.load(std::memory_order_relaxed),
            c.direct_writes.load(std::memory_order_relaxed)};
}

bool cma_allowed_by_env() {
    const char *v = base::env_value(base::EnvVar::ShmCma);
    return !(v && std::strcmp(v, "0") == 0);
}

bool is_any_address(const sockaddr *a) {
    if (a->sa_family == AF_INET)
        return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr);
    return false;
}

bool rendezvous_name(const sockaddr *a, bool wildcard, UnixName &out) {
    char ip[INET6_ADDRSTRLEN] = "*";
    unsigned port = 0;
    int fam = 0;
    if (a->sa_family == AF_INET) {
        const auto *s = reinterpret_cast<const sockaddr_in *>(a);
        if (!wildcard && !::inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip)) return false;
        port = ntohs(s->sin_port);
        fam = 4;
    } else if (a->sa_family == AF_INET6) {
        const auto *s = reinterpret_cast<const sockaddr_in6 *>(a);
        if (!wildcard && !::inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip)) return false;
        port = ntohs(s->sin6_port);
        fam = 6;
    } else {
        return false;
    }
    out = {};
    out.sa.sun_family = AF_UNIX;
    // Abstract namespace (leading NUL): per network namespace, no file, gone with the
    // socket. The name is not NUL-terminated; its length is part of the address.
    int n = std::snprintf(out.sa.sun_path + 1, sizeof out.sa.sun_path - 1, "softrnic/v%u/%d/%s/%u",
                          L::kVersion, fam, ip, port);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof out.sa.sun_path - 1) return false;
    out.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
    return true;
}

bool is_local_address(const sockaddr *a) {
    // Binding to an address succeeds exactly when it is configured in this netns.
    int s = ::socket(a->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return false;
    sockaddr_storage ss{};
    socklen_t len = a->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&ss, a, len);
    if (a->sa_family == AF_INET)
        reinterpret_cast<sockaddr_in *>(&ss)->sin_port = 0;
    else
        reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port = 0;
    bool ok = ::bind(s, reinterpret_cast<sockaddr *>(&ss), len) == 0;
    ::close(s);
    return ok;
}

bool same_user(int sock, pid_t *peer_pid) {
    ucred cr{};
    socklen_t len = sizeof cr;
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr)
        return false;
    if (peer_pid) *peer_pid = cr.pid;
    return cr.uid == ::geteuid();
}

namespace {

int make_segment(Mapping &out) {
    int fd = static_cast<int>(
        ::syscall(SYS_memfd_create, "softrnic-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (fd < 0) return -1;
    // Owner-only permissions (a memfd is not reachable by path, but be explicit), fixed
    // size, sealed so the peer can never shrink it under our mapping (SIGBUS).
    ::fchmod(fd, 0600);
    if (::ftruncate(fd, static_cast<off_t>(L::kSegmentBytes)) != 0 ||
        ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    void *p = ::mmap(nullptr, L::kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        ::close(fd);
        errno = e;
        return -1;
    }
    out = Mapping(static_cast<std::byte *>(p), L::kSegmentBytes);
    return fd;
}

}  // namespace

struct Handshake::State {
    Mapping mine, peer;
    uint64_t peer_canon = 0;
    pid_t peer_pid = 0;
    std::shared_ptr<const PidFd> peer_pidfd;
    bool allow_cma = true;
    bool cma = false;
    DeferredHello hello;
};

Handshake::Handshake() : st_(std::make_unique<State>()) {}
Handshake::~Handshake() = default;

bool Handshake::cma() const {
    return st_->cma;
}

namespace {

// One sendmsg of the hello with the segment's fd; closes the fd (the peer holds its own
// reference once the message is queued, or never will).
bool send_hello(int sock, const void *hello, int &memfd) {
    iovec iov{const_cast<void *>(hello), sizeof(Hello)};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &memfd, sizeof memfd);
    ssize_t n;
    do {
        n = ::sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    int e = errno;
    ::close(memfd);
    memfd = -1;
    if (n != static_cast<ssize_t>(sizeof(Hello))) {
        errno = n < 0 ? e : EPROTO;  // a fresh socket always takes the 40 bytes in one go
        return false;
    }
    return true;
}

// A random probe value (never 0), from the kernel's generator: no descriptor opened.
uint64_t random_probe() {
    uint64_t v = 0;
    if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
        // Only before the pool is initialised at boot: any value works (the probe proves
        // the reader can see our memory, not a secret), as long as it is not the default.
        v = static_cast<uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull;
    }
    return v | 1;
}

// Makes and maps our segment, fills its header, and sends the hello with the segment's
// memfd (closed after). On success `mine` holds the mapping.
bool make_and_send_hello(int sock, bool cma_wanted, Mapping &mine) {
    int fd = make_segment(mine);
    if (fd < 0) return false;
    const uint64_t probe = random_probe();
    L::SegHeader *h = mine.header();
    h->magic = L::kMagic;
    h->version = L::kVersion;
    h->size = static_cast<uint32_t>(L::kSegmentBytes);
    std::atomic_ref<uint64_t>(h->probe).store(probe, std::memory_order_release);

    const Hello hello = make_hello(reinterpret_cast<uintptr_t>(&h->probe), probe, cma_wanted);
    return send_hello(sock, &hello, fd);
}

}  // namespace

bool send_hello_now(Link &link) {
    if (!link.hello.pending) return false;
    link.hello.pending = false;
    Mapping mine;
    bool sent = make_and_send_hello(link.sock, link.hello.cma_wanted, mine);
    if (mine.get()) link.set_mine(std::move(mine));
    return sent;
}

bool Handshake::start(int sock, bool allow_cma, bool defer_hello) {
    State &s = *st_;
    s.allow_cma = allow_cma;
    if (!same_user(sock, &s.peer_pid)) {
        errno = EACCES;
        return false;
    }
    if (defer_hello) {
        s.hello.pending = true;
        s.hello.cma_wanted = allow_cma;
        return true;
    }
    return make_and_send_hello(sock, allow_cma, s.mine);
}

Handshake::Step Handshake::receive(int sock) {
    State &s = *st_;
    std::byte buf[sizeof(Hello)];
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    ssize_t n;
    do {
        n = ::recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Step::NeedMore;
    // Collect every descriptor that came, so none leaks whatever happens next.
    int fds[4];
    int nfds = 0;
    for (cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && nfds < 4; ++i)
            std::memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    struct CloseAll {
        int *f;
        int &n;
        ~CloseAll() {
            for (int i = 0; i < n; ++i)
                ::close(f[i]);
        }
    } closer{fds, nfds};
    if (n == 0) {
        errno = ECONNRESET;
        return Step::Failed;
    }
    if (n < 0) return Step::Failed;
    Hello hello;
    if (!parse_hello({buf, static_cast<size_t>(n)}, static_cast<size_t>(nfds),
                     (mh.msg_flags & MSG_CTRUNC) != 0, hello)) {
        errno = EPROTO;
        return Step::Failed;
    }
    // The segment must be what we expect: a regular file of the right size that can no
    // longer shrink or grow (otherwise the peer could make our accesses fault).
    struct stat stt {};
    int seals = ::fcntl(fds[0], F_GET_SEALS);
    if (::fstat(fds[0], &stt) != 0 || !S_ISREG(stt.st_mode) ||
        stt.st_size != static_cast<off_t>(L::kSegmentBytes) || seals < 0 ||
        (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
        errno = EPROTO;
        return Step::Failed;
    }
    void *p = ::mmap(nullptr, L::kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    if (p == MAP_FAILED) return Step::Failed;
    s.peer = Mapping(static_cast<std::byte *>(p), L::kSegmentBytes);
    s.peer_canon = hello.probe_addr - offsetof(L::SegHeader, probe);
    if (s.peer.header()->magic != L::kMagic) {
        errno = EPROTO;
        return Step::Failed;
    }
    // CMA probe: read the peer's probe word from its address space. Works when ptrace
    // policy (Yama, seccomp, containers) lets us attach to the peer.
    s.cma = false;
    if (s.allow_cma && cma_allowed_by_env() && s.peer_pid > 0) {
        // Pin the process first, then prove it is the peer (it holds the random probe
        // value): CMA by pid is then checked against this pidfd before every use, so a
        // recycled pid never gets our reads or writes.
        s.peer_pidfd = shared_pidfd(s.peer_pid);
        uint64_t v = 0;
        iovec l{&v, sizeof v};
        iovec r{reinterpret_cast<void *>(static_cast<uintptr_t>(hello.probe_addr)), sizeof v};
        s.cma =
            ::process_vm_readv(s.peer_pid, &l, 1, &r, 1, 0) == sizeof v && v == hello.probe_value;
    }
    return Step::Done;
}

std::shared_ptr<const PidFd> shared_pidfd(pid_t pid) {
    // Never destroyed: links may outlive static destruction order (they only hold their own
    // shared_ptr; the map holds weak ones).
    static auto *mu = new std::mutex;
    static auto *cache = new std::unordered_map<pid_t, std::weak_ptr<const PidFd>>;
    std::lock_guard lk(*mu);
    auto it = cache->find(pid);
    if (it != cache->end())
        if (auto p = it->second.lock(); p && p->valid() && p->alive()) return p;
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) return nullptr;
    auto p = std::make_shared<const PidFd>(fd);
    if (cache->size() >= 64)
        std::erase_if(*cache, [](const auto &kv) { return kv.second.expired(); });
    (*cache)[pid] = p;
    return p;
}

ri_llp_stream_handle_t Handshake::adopt(int sock, uint64_t key) {
    State &s = *st_;
    // A deferred hello makes our segment when it goes.
    if ((!s.mine.get() && !s.hello.pending) || !s.peer.get()) return -1;
    int fl = ::fcntl(sock, F_GETFL);
    if (fl < 0 || ::fcntl(sock, F_SETFL, fl | O_NONBLOCK) != 0) return -1;
    auto link = std::make_unique<Link>();
    link->mine = std::move(s.mine);
    link->peer = std::move(s.peer);
    link->peer_pid = s.peer_pid;
    link->cma = s.cma;
    link->hello = s.hello;
    link->hello.key = key;
    if (s.cma) link->peer_pidfd = std::move(s.peer_pidfd);
    if (s.peer_pid == ::getpid())
        link->peer_canon = reinterpret_cast<const void *>(static_cast<uintptr_t>(s.peer_canon));
    link->sock = sock;
    link->count();
    int h = register_unclaimed(std::move(link));
    return h;
}

}  // namespace softrnic::transport::shm
