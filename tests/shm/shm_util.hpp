// Helpers shared by the shm test suites and the shm_peer helper: bringing two QPs up over
// the connection manager with a chosen transport, child processes with RAII, and resource
// counters (descriptors, threads, shm mappings) for leak checks.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "../rnicpi/fixture.hpp"
#include "cm/connection_manager.hpp"
#include "transport/progress.hpp"
#include "transport/shm/shm.hpp"

namespace st {

namespace cm = softrnic::cm;
namespace shm = softrnic::transport::shm;
namespace transport = softrnic::transport;
using namespace rt;

enum class Xport : uint8_t { Loopback, Tcp, Shm, ShmNoCma };
inline const char *xname(Xport x) {
    switch (x) {
        case Xport::Loopback:
            return "Loopback";
        case Xport::Tcp:
            return "Tcp";
        case Xport::Shm:
            return "Shm";
        case Xport::ShmNoCma:
            return "ShmNoCma";
    }
    return "?";
}
inline cm::Options cm_options(Xport x) {
    cm::Options o;
    o.transport = x == Xport::Tcp ? cm::Transport::Tcp : cm::Transport::Shm;
    o.shm_cma = x != Xport::ShmNoCma;
    return o;
}

inline cm::Address loopback4(uint16_t port = 0) {
    cm::Address a;
    auto *s = reinterpret_cast<sockaddr_in *>(&a.storage);
    s->sin_family = AF_INET;
    s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
    return a;
}
inline uint16_t port_of(const cm::Address &a) {
    return ntohs(reinterpret_cast<const sockaddr_in *>(&a.storage)->sin_port);
}

inline ri_api_return_t to_rts(Qp *q, ri_llp_stream_handle_t h) {
    ri_err_data_t e = 0;
    ri_qp_attr_t at{};
    at.state = RI_QP_STATE_READY_TO_SEND;
    at.qp_xport.qp_iwarp.llp_stream_handle = h;
    return ri_qp_modify(q->owner->rnic, q->h,
                        QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
}

// Waits for one value set by another thread.
template <class T>
class Slot {
  public:
    void set(T v) {
        std::lock_guard lk(mu_);
        if (!v_) v_ = std::move(v);
        cv_.notify_all();
    }
    std::optional<T> wait(std::chrono::milliseconds to = kTimeout) {
        std::unique_lock lk(mu_);
        cv_.wait_for(lk, to, [&] { return v_.has_value(); });
        return v_;
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::optional<T> v_;
};

// Connects `a` (initiator) and `b` (responder) through two connection managers with the
// transport `x` (loopback: the in-process pair) and moves both to RTS.
inline void bring_up(Qp *a, Qp *b, Xport x, cm::Established *info = nullptr) {
    if (x == Xport::Loopback) {
        connect(a, b);
        return;
    }
    Slot<cm::Established> srv_est, cli_est;
    Slot<std::string> failure;
    cm::ConnectionManager *srvp = nullptr;
    auto on_fail = [&](cm::Event &e) {
        if (auto *u = std::get_if<cm::Unreachable>(&e))
            failure.set("unreachable errno " + std::to_string(u->sys_errno));
        else if (std::get_if<cm::Rejected>(&e))
            failure.set("rejected");
        else if (std::get_if<cm::TimedOut>(&e))
            failure.set("timed out");
        else if (auto *f = std::get_if<cm::Failed>(&e))
            failure.set("failed errno " + std::to_string(f->sys_errno));
    };
    cm::ConnectionManager srv(
        [&](cm::Event &e) {
            if (auto *r = std::get_if<cm::ConnectRequest>(&e))
                EXPECT_EQ(srvp->accept(r->id, {}), cm::CmStatus::Ok);
            else if (auto *est = std::get_if<cm::Established>(&e))
                srv_est.set(std::move(*est));
            else
                on_fail(e);
        },
        cm_options(x));
    srvp = &srv;
    cm::ConnectionManager cli(
        [&](cm::Event &e) {
            if (auto *est = std::get_if<cm::Established>(&e))
                cli_est.set(std::move(*est));
            else
                on_fail(e);
        },
        cm_options(x));
    ASSERT_TRUE(srv.ok() && cli.ok());
    cm::Address l = loopback4();
    auto lid = srv.listen(l.get(), l.len, 16);
    ASSERT_TRUE(lid.ok());
    auto la = srv.local_address(lid.value);
    ASSERT_TRUE(la.ok());
    ASSERT_TRUE(cli.connect(la.value.get(), la.value.len, {}).ok());
    auto ce = cli_est.wait();
    auto se = srv_est.wait(std::chrono::seconds(5));
    ASSERT_TRUE(ce && se) << "set-up failed: "
                          << failure.wait(std::chrono::milliseconds(1)).value_or("timeout");
    cm::LlpTransport want = x == Xport::Tcp ? cm::LlpTransport::Tcp : cm::LlpTransport::Shm;
    EXPECT_EQ(ce->transport, want);
    EXPECT_EQ(se->transport, want);
    if (x == Xport::Shm) {
        EXPECT_TRUE(ce->shm_cma && se->shm_cma) << "CMA probe failed in-process";
    }
    if (x == Xport::ShmNoCma) {
        EXPECT_FALSE(ce->shm_cma || se->shm_cma);
    }
    ri_api_return_t ra = to_rts(a, ce->llp), rb = to_rts(b, se->llp);
    if (ra != RI_RET_SUCCESS) cm::release_unclaimed(ce->llp);
    if (rb != RI_RET_SUCCESS) cm::release_unclaimed(se->llp);
    ASSERT_EQ(ra, RI_RET_SUCCESS);
    ASSERT_EQ(rb, RI_RET_SUCCESS);
    if (info) *info = *ce;
}

// ---------------------------------------------------------------------------------------
// Memory-polled RDMA Write ping-pong (dtest -W -D style), run by shm_process_test (the
// initiator of each round) and shm_peer pingpong (the responder).
//
// Round k of size L: the initiator fills L-1 bytes with pp_fill(k) and the last byte with
// pp_last(k), RDMA-writes them (signalled) into the responder's region and polls its CQ
// until the write completes; the responder polls the last byte of its region (not its CQ),
// checks every byte, answers with ~pp_fill(k) and pp_last(k) the same way, and the
// initiator checks its region in turn. Consecutive rounds use different bytes, so data
// that is not all there when the last byte shows up is seen as the previous round's.

struct PpRegion {
    uint64_t va;
    uint32_t rtag;
    uint32_t len;
};
inline uint8_t pp_fill(uint32_t k) {
    return static_cast<uint8_t>(k * 37 + 11);
}
inline uint8_t pp_last(uint32_t k) {
    return static_cast<uint8_t>(k % 255 + 1);
}

// The RDMA-target regions are written by this process's progress thread (or by the
// kernel, with CMA) for a write whose order with this thread's earlier accesses goes
// through the other process, which ThreadSanitizer cannot follow: under TSan the fills
// and checks of those buffers are ignored. The data checks themselves prove the order.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
struct CrossProcessAccess {
    CrossProcessAccess() { __tsan_ignore_thread_begin(); }
    ~CrossProcessAccess() { __tsan_ignore_thread_end(); }
    CrossProcessAccess(const CrossProcessAccess &) = delete;
    CrossProcessAccess &operator=(const CrossProcessAccess &) = delete;
};
#else
struct CrossProcessAccess {};
#endif

// Polls the last byte of `rx` (length `len`) until it reads `last`, as a memory-polling
// application does (an acquire load: the transport stores that byte last, with release),
// never calling into the library. False after `to`.
// `yield`: offer the CPU now and then (sched_yield), so that the threads placing the data
// get one on a small, busy machine. Ignored by ThreadSanitizer like the fills and checks:
// the byte may be stored by the peer's process_vm_writev (placement by the initiator),
// which TSan never sees, and a later placement of this process's progress thread over the
// same bytes is ordered after this read only through the other process.
inline bool pp_wait_last(const uint8_t *rx, size_t len, uint8_t last, bool yield = true,
                         std::chrono::milliseconds to = kTimeout) {
    [[maybe_unused]] CrossProcessAccess unordered_for_tsan;
    std::atomic_ref<uint8_t> b(const_cast<uint8_t &>(rx[len - 1]));
    auto end = Clock::now() + to;
    for (uint32_t spins = 0;; ++spins) {
        if (b.load(std::memory_order_acquire) == last) return true;
        if ((spins & 0xFF) != 0) continue;
        if (Clock::now() > end) return false;
        if (yield) std::this_thread::yield();
    }
}
// Offset of the first of the `len - 1` bytes before the last that is not `fill`, or
// SIZE_MAX.
inline size_t pp_check(const uint8_t *rx, size_t len, uint8_t fill) {
    [[maybe_unused]] CrossProcessAccess unordered_for_tsan;
    for (size_t i = 0; i + 1 < len; ++i)
        if (rx[i] != fill) return i;
    return SIZE_MAX;
}
inline void pp_prepare(uint8_t *tx, size_t len, uint8_t fill, uint8_t last) {
    [[maybe_unused]] CrossProcessAccess unordered_for_tsan;
    std::memset(tx, fill, len - 1);
    tx[len - 1] = last;
}

// ---------------------------------------------------------------------------------------
// Resource counters.

inline int count_fds() {
    int n = 0;
    if (DIR *d = ::opendir("/proc/self/fd")) {
        while (dirent *e = ::readdir(d))
            if (e->d_name[0] != '.') ++n;
        ::closedir(d);
        --n;  // the directory stream itself
    }
    return n;
}
inline int count_threads() {
    int n = 0;
    if (DIR *d = ::opendir("/proc/self/task")) {
        while (dirent *e = ::readdir(d))
            if (e->d_name[0] != '.') ++n;
        ::closedir(d);
    }
    return n;
}
// Mappings of shm segments (memfd "softrnic-shm") in this process.
inline int count_shm_maps() {
    std::ifstream f("/proc/self/maps");
    std::string line;
    int n = 0;
    while (std::getline(f, line))
        if (line.find("softrnic-shm") != std::string::npos) ++n;
    return n;
}
// Resident shared-memory bytes of those mappings (smaps Rss).
inline uint64_t shm_rss_bytes() {
    std::ifstream f("/proc/self/smaps");
    std::string line;
    bool in = false;
    uint64_t kb = 0;
    while (std::getline(f, line)) {
        // A mapping's header line starts with "start-end"; field lines with "Name:".
        std::string tok = line.substr(0, line.find(' '));
        if (!tok.empty() && tok.back() != ':' && tok.find('-') != std::string::npos)
            in = line.find("softrnic-shm") != std::string::npos;
        if (in && line.rfind("Rss:", 0) == 0) kb += std::stoull(line.substr(4));
    }
    return kb * 1024;
}
// Entries of /dev/shm other than process counters files (base/stats.hpp): those are no
// segments; this process makes its own at its first count, and a peer killed by SIGKILL
// cannot unlink its one.
inline int count_dev_shm() {
    int n = 0;
    if (DIR *d = ::opendir("/dev/shm")) {
        while (dirent *e = ::readdir(d))
            if (e->d_name[0] != '.' && std::strncmp(e->d_name, "softrnic-stats.", 15) != 0) ++n;
        ::closedir(d);
    }
    return n;
}

// Waits until `pred` holds (polling), bounded.
template <class Fn>
bool eventually(Fn pred, std::chrono::milliseconds to = kTimeout) {
    auto end = Clock::now() + to;
    while (Clock::now() < end) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return pred();
}

// ---------------------------------------------------------------------------------------
// A child process running the shm_peer helper; killed and reaped on destruction.

inline std::string helper_path() {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "shm_peer";
    buf[n] = 0;
    std::string s(buf);
    return s.substr(0, s.rfind('/') + 1) + "shm_peer";
}

class Child {
  public:
    // Starts shm_peer with `args`; its stdout is readable line by line.
    explicit Child(std::vector<std::string> args, std::vector<std::string> env = {}) {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) return;
        std::string path = helper_path();
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(p[1], 1);
            std::vector<char *> argv;
            argv.push_back(const_cast<char *>(path.c_str()));
            for (auto &a : args)
                argv.push_back(const_cast<char *>(a.c_str()));
            argv.push_back(nullptr);
            for (auto &e : env)
                ::putenv(const_cast<char *>(e.c_str()));
            ::execv(path.c_str(), argv.data());
            ::_exit(127);
        }
        ::close(p[1]);
        out_ = p[0];
    }
    ~Child() {
        kill(SIGKILL);
        wait_exit(std::chrono::seconds(10));
        if (out_ >= 0) ::close(out_);
    }
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;

    pid_t pid() const { return pid_; }
    bool ok() const { return pid_ > 0 && out_ >= 0; }
    void kill(int sig) {
        if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
    }
    // Next line of output ("" on timeout or EOF).
    std::string line(std::chrono::milliseconds to = kTimeout) {
        auto end = Clock::now() + to;
        for (;;) {
            if (auto nl = buf_.find('\n'); nl != std::string::npos) {
                std::string l = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return l;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
            if (left.count() <= 0) return "";
            pollfd pf{out_, POLLIN, 0};
            if (::poll(&pf, 1, static_cast<int>(left.count())) <= 0) continue;
            char b[512];
            ssize_t n = ::read(out_, b, sizeof b);
            if (n <= 0) return "";
            buf_.append(b, static_cast<size_t>(n));
        }
    }
    // Waits for the exit (bounded); returns the wait status or -1.
    int wait_exit(std::chrono::milliseconds to) {
        if (pid_ <= 0) return -1;
        if (reaped_) return status_;
        auto end = Clock::now() + to;
        for (;;) {
            int st = 0;
            pid_t r = ::waitpid(pid_, &st, WNOHANG);
            if (r == pid_) {
                reaped_ = true;
                status_ = st;
                return st;
            }
            if (Clock::now() >= end) return -1;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }

  private:
    pid_t pid_ = -1;
    int out_ = -1;
    std::string buf_;
    bool reaped_ = false;
    int status_ = -1;
};

}  // namespace st
