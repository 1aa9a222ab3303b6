// Internal to src/transport/shm/: what an established shm connection owns between the
// hand-over (Handshake::adopt) and the QP's claim, and afterwards inside the channel.
#pragma once

#include <poll.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include "transport/shm/layout.hpp"

namespace softrnic::transport::shm {

// One shared mapping; unmapped on destruction.
class Mapping {
  public:
    Mapping() = default;
    Mapping(std::byte *p, size_t len) : p_(p), len_(len) {}
    Mapping(Mapping &&o) noexcept : p_(std::exchange(o.p_, nullptr)), len_(o.len_) {}
    Mapping &operator=(Mapping &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
            len_ = o.len_;
        }
        return *this;
    }
    ~Mapping() { reset(); }
    void reset() {
        if (p_) ::munmap(p_, len_);
        p_ = nullptr;
    }
    std::byte *get() const { return p_; }
    size_t size() const { return p_ ? len_ : 0; }
    layout::SegHeader *header() const { return reinterpret_cast<layout::SegHeader *>(p_); }

  private:
    std::byte *p_ = nullptr;
    size_t len_ = 0;
};

struct Counters {
    std::atomic<uint64_t> live_links{0};
    std::atomic<uint64_t> mapped_bytes{0};
    std::atomic<uint64_t> cma_links{0};
    std::atomic<uint64_t> doorbells{0};
    std::atomic<uint64_t> stall_doorbells{0};
};
Counters &counters();

// A pidfd (pidfd_open): readable once the process it names has exited, whatever process
// later gets the same pid.
class PidFd {
  public:
    PidFd() = default;
    explicit PidFd(int fd) : fd_(fd) {}
    PidFd(PidFd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    PidFd &operator=(PidFd &&o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    PidFd(const PidFd &) = delete;
    PidFd &operator=(const PidFd &) = delete;
    ~PidFd() { reset(); }
    bool valid() const { return fd_ >= 0; }
    // False once the process exited. Without a pidfd (kernel before 5.3) there is nothing
    // to check against: true.
    bool alive() const {
        if (fd_ < 0) return true;
        pollfd p{fd_, POLLIN, 0};
        return ::poll(&p, 1, 0) == 0;
    }

  private:
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd_ = -1;
};

// The pidfd of process `pid`, shared by every link to that process: 1,000 connections to
// one peer then hold 1,000 descriptors (their sockets), not 2,000, which kept a process
// under Debian's default limit of 1,024 from making 1,000 shm connections (dtestcm -c 1000).
// A cached pidfd is reused only while its process is alive; once it exited (the pid may
// now name another process) a fresh one is opened. Null when pidfd_open fails.
std::shared_ptr<const PidFd> shared_pidfd(pid_t pid);

// The responder's hello, kept until the stream is handed over (Handshake::start with
// defer_hello): the message bytes and the segment's memfd, which travels with it.
struct DeferredHello {
    std::array<std::byte, 40> bytes{};
    int memfd = -1;
    uint64_t key = 0;

    DeferredHello() = default;
    DeferredHello(const DeferredHello &) = delete;
    DeferredHello &operator=(const DeferredHello &) = delete;
    DeferredHello(DeferredHello &&o) noexcept
        : bytes(o.bytes), memfd(std::exchange(o.memfd, -1)), key(o.key) {}
    DeferredHello &operator=(DeferredHello &&o) noexcept {
        if (this != &o) {
            reset();
            bytes = o.bytes;
            memfd = std::exchange(o.memfd, -1);
            key = o.key;
        }
        return *this;
    }
    ~DeferredHello() { reset(); }
    bool pending() const { return memfd >= 0; }
    void reset() {
        if (memfd >= 0) ::close(memfd);
        memfd = -1;
    }
};

// Sends a pending deferred hello on `sock` (then closes its memfd). False when nothing was
// pending or the send failed.
bool send_hello_now(int sock, DeferredHello &h);

// An established connection: the Unix socket (doorbell + liveness), our segment (what
// flows to us), the peer's (what we send), the peer's pid for CMA.
struct Link {
    int sock = -1;
    Mapping mine;
    Mapping peer;
    pid_t peer_pid = 0;
    std::shared_ptr<const PidFd> peer_pidfd;  // with cma: checked before each process_vm_*
    // False once the peer process exited (true without a pidfd: nothing to check against).
    bool peer_alive() const { return !peer_pidfd || peer_pidfd->alive(); }
    bool cma = false;
    DeferredHello hello;  // the responder's, until the stream is handed over
    // The peer's segment at the peer's own address (from its hello). Only meaningful when
    // both ends share this process; used as ThreadSanitizer's synchronisation key, since
    // each segment is then mapped twice and TSan cannot pair accesses through the two.
    const void *peer_canon = nullptr;

    Link() = default;
    Link(const Link &) = delete;
    Link &operator=(const Link &) = delete;
    ~Link() {
        if (sock >= 0) ::close(sock);
        if (counted) {
            counters().live_links.fetch_sub(1, std::memory_order_relaxed);
            counters().mapped_bytes.fetch_sub(mine.size() + peer.size(), std::memory_order_relaxed);
            if (cma) counters().cma_links.fetch_sub(1, std::memory_order_relaxed);
        }
    }
    void count() {
        counted = true;
        counters().live_links.fetch_add(1, std::memory_order_relaxed);
        counters().mapped_bytes.fetch_add(mine.size() + peer.size(), std::memory_order_relaxed);
        if (cma) counters().cma_links.fetch_add(1, std::memory_order_relaxed);
    }

  private:
    bool counted = false;
};

// Registers an adopted link as an unclaimed LLP handle (its socket fd). Returns the
// handle, or -1 (the link is then destroyed).
int register_unclaimed(std::unique_ptr<Link> link);

}  // namespace softrnic::transport::shm
