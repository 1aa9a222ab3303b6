// Internal to src/transport/shm/: what an established shm connection owns between the
// hand-over (Handshake::adopt) and the QP's claim, and afterwards inside the channel.
#pragma once

#include <poll.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

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
    std::atomic<uint64_t> direct_writes{0};
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

// The responder's hello, owed until the stream is handed over (Handshake::start with
// defer_hello). Nothing of it exists yet: the segment and its memfd are made when the hello
// goes (send_hello_now). A memfd kept open per accepted-but-unclaimed connection cost a
// server taking 1,000 connections ~75 descriptors at its peak, which put dtestcm -c 1000
// over Debian's default limit of 1,024.
struct DeferredHello {
    bool pending = false;
    bool cma_wanted = false;
    uint64_t key = 0;
};

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
    DeferredHello hello;  // the responder's, until the stream is handed over (`mine` is
                          // empty until then)
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
    // Our segment, made late (a deferred hello): counted like one made before count().
    void set_mine(Mapping m) {
        if (counted) counters().mapped_bytes.fetch_add(m.size(), std::memory_order_relaxed);
        mine = std::move(m);
    }

  private:
    bool counted = false;
};

// Sends the link's pending deferred hello on its socket: makes and maps our segment
// (link.mine), sends its memfd with the hello, then closes the memfd. False when nothing
// was pending or the segment or the send failed (link.mine stays empty when the segment
// could not be made).
bool send_hello_now(Link &link);

// Registers an adopted link as an unclaimed LLP handle (its socket fd). Returns the
// handle, or -1 (the link is then destroyed).
int register_unclaimed(std::unique_ptr<Link> link);

}  // namespace softrnic::transport::shm
