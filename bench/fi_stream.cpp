// libfabric RMA streaming bandwidth, the peer figure of bench/compare.sh for softrnic's
// 1 MiB RDMA write/read bandwidth (Debian packages no fabtests, so no fi_rma_bw):
//
//   fi_stream [-p PROVIDER] [-o write|read] [-S SIZE] [-w WINDOW] [-t SECONDS | -n OPS]
//             [--warmup N] [--target-wait spin|yield|sleep] [--src NODE] [-v]
//
// One invocation forks a target process; both open PROVIDER (default shm) with an RDM
// endpoint and FI_RMA. The target registers an ordinary heap buffer of SIZE bytes for
// remote write and read and passes its endpoint name, MR key and buffer address to the
// initiator over a socketpair; the initiator streams fi_write or fi_read of the whole SIZE
// into/out of it with WINDOW operations in flight, after a warm-up, for SECONDS (default
// 0.5) or OPS operations, and prints one line:
//   fi_stream provider=shm op=write size=1048576 window=64 ops=N seconds=S GBps=X
// (GB = 1e9 bytes). It then checks the data once: after writes the target compares its
// buffer with the initiator's pattern; after reads the initiator compares what it read
// with the target's pattern. Any libfabric error or mismatch exits non-zero.
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// A socketpair message that does not arrive within this long means the other process is
// gone or stuck; so does a data loop that completes nothing for this long.
constexpr int kTimeoutSec = 30;

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// The other process closed the socketpair: it exited (and said why, if it could).
struct PeerClosed : Error {
    using Error::Error;
};

[[noreturn]] void fail_fi(const char *what, long rc) {
    throw Error(std::string(what) + ": " + fi_strerror(static_cast<int>(-rc)) + " (" +
                std::to_string(rc) + ")");
}
void check_fi(const char *what, long rc) {
    if (rc != 0) fail_fi(what, rc);
}

// How the target waits while the initiator streams. It has nothing to complete (RMA
// targets get no completions) but must progress its endpoint: shm's initiator copies the
// data itself (process_vm_writev/readv) but also queues a command per operation to the
// target, and stalls with -FI_EAGAIN while that queue is full (a stopped target stops the
// stream); over tcp the target's progress receives and sends the data.
enum class TargetWait : uint8_t {
    Spin,   // progress back to back
    Yield,  // the same, with sched_yield() after each poll
    Sleep,  // progress, then sleep up to 1 ms in poll() on the socketpair
};

struct Options {
    std::string provider = "shm";
    std::string src;  // node passed to fi_getinfo with FI_SOURCE (tcp: 127.0.0.1)
    bool write = true;
    size_t size = size_t{1} << 20;
    unsigned window = 64;
    double seconds = 0.5;
    uint64_t iters = 0;  // 0: run for `seconds`
    uint64_t warmup = 64;
    TargetWait target_wait = TargetWait::Spin;
    bool verbose = false;
};

// ------------------------------------------------------------------ libfabric owners

struct InfoDeleter {
    void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// Owns one fid; fi_close on destruction. Members of Fabric are declared in the order they
// are opened, so they close in reverse: an EP before the CQ/AV bound to it, MRs and those
// before their domain, the domain before its fabric.
template <class T>
class Fid {
  public:
    Fid() = default;
    Fid(const Fid &) = delete;
    Fid &operator=(const Fid &) = delete;
    ~Fid() {
        if (p_) fi_close(&p_->fid);
    }
    T **out() { return &p_; }
    T *get() const { return p_; }

  private:
    T *p_ = nullptr;
};

struct Fabric {
    InfoPtr info;
    Fid<fid_fabric> fabric;
    Fid<fid_domain> domain;
    Fid<fid_cq> cq;
    Fid<fid_av> av;
    Fid<fid_mr> mr;
    Fid<fid_ep> ep;
    uint64_t mr_mode = 0;
};

// Both processes call this after the fork: libfabric state must not cross a fork, and the
// shm provider names its endpoint after the process.
void open_fabric(Fabric &f, const Options &o) {
    InfoPtr hints(fi_allocinfo());
    if (!hints) throw Error("fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA;
    // Each operation gets its own fi_context2, so either context mode is fine.
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    // Every registration mode this program honours; the provider keeps those it needs.
    // FI_MR_ENDPOINT is left out: the MRs are never bound to the endpoint.
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_LOCAL;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    // No tx msg_order requested: shm takes its single-copy RMA path (the initiator copies
    // with process_vm_writev/readv) only when RMA ordering is not asked for.
    hints->fabric_attr->prov_name = strdup(o.provider.c_str());
    fi_info *info = nullptr;
    const char *node = o.src.empty() ? nullptr : o.src.c_str();
    long rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, nullptr,
                         node ? FI_SOURCE : 0, hints.get(), &info);
    if (rc != 0) fail_fi(("fi_getinfo(provider " + o.provider + ")").c_str(), rc);
    f.info.reset(info);
    f.mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
    if (o.verbose)
        std::fprintf(stderr, "fi_stream[%d]: provider %s, domain %s, mr_mode %s\n", getpid(),
                     info->fabric_attr->prov_name, info->domain_attr->name,
                     fi_tostr(&info->domain_attr->mr_mode, FI_TYPE_MR_MODE));

    check_fi("fi_fabric", fi_fabric(info->fabric_attr, f.fabric.out(), nullptr));
    check_fi("fi_domain", fi_domain(f.fabric.get(), info, f.domain.out(), nullptr));
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.wait_obj = FI_WAIT_NONE;  // busy-polled
    cq_attr.size = std::max<size_t>(2 * o.window, 128);
    check_fi("fi_cq_open", fi_cq_open(f.domain.get(), &cq_attr, f.cq.out(), nullptr));
    fi_av_attr av_attr{};
    av_attr.type =
        info->domain_attr->av_type != FI_AV_UNSPEC ? info->domain_attr->av_type : FI_AV_MAP;
    av_attr.count = 4;
    check_fi("fi_av_open", fi_av_open(f.domain.get(), &av_attr, f.av.out(), nullptr));
    check_fi("fi_endpoint", fi_endpoint(f.domain.get(), info, f.ep.out(), nullptr));
    check_fi("fi_ep_bind(av)", fi_ep_bind(f.ep.get(), &f.av.get()->fid, 0));
    check_fi("fi_ep_bind(cq)", fi_ep_bind(f.ep.get(), &f.cq.get()->fid, FI_TRANSMIT | FI_RECV));
    check_fi("fi_enable", fi_enable(f.ep.get()));
}

void register_mr(Fabric &f, void *buf, size_t len, uint64_t access, uint64_t key) {
    check_fi("fi_mr_reg",
             fi_mr_reg(f.domain.get(), buf, len, access, 0, key, 0, f.mr.out(), nullptr));
}

// Reads completions until the CQ is empty; returns how many. Each fi_cq_read also drives
// the provider's progress, on the target too (see TargetWait).
template <class OnDone>
size_t drain_cq(fid_cq *cq, OnDone &&on_done) {
    fi_cq_entry e[16];
    size_t n = 0;
    for (;;) {
        ssize_t rc = fi_cq_read(cq, e, 16);
        if (rc == -FI_EAGAIN) return n;
        if (rc == -FI_EAVAIL) {
            fi_cq_err_entry err{};
            fi_cq_readerr(cq, &err, 0);
            char buf[256];
            const char *s = fi_cq_strerror(cq, err.prov_errno, err.err_data, buf, sizeof buf);
            throw Error(std::string("completion error: ") + fi_strerror(err.err) + " (" +
                        (s ? s : "?") + ")");
        }
        if (rc < 0) fail_fi("fi_cq_read", rc);
        for (ssize_t i = 0; i < rc; ++i)
            on_done(e[i].op_context);
        n += static_cast<size_t>(rc);
    }
}

// ---------------------------------------------------------------- the socketpair

class Fd {
  public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }

  private:
    int fd_;
};

// Messages are fixed-size structs: both ends are this binary on this machine.
enum class Msg : uint32_t { Hello = 1, Check, CheckResult, Done };

struct Packet {
    Msg type;
    uint32_t status;  // CheckResult: 0 = data as expected
    uint64_t addr;    // Hello: target buffer address; CheckResult: first bad offset
    uint64_t key;     // Hello: MR key
    uint64_t name_len;
    char name[512];  // Hello: fi_getname of the target endpoint
};

void send_packet(int fd, const Packet &p) {
    const char *b = reinterpret_cast<const char *>(&p);
    size_t off = 0;
    while (off < sizeof p) {
        ssize_t n = send(fd, b + off, sizeof p - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(std::string("socketpair send: ") + std::strerror(errno));
        off += static_cast<size_t>(n);
    }
}

// False when no message starts within `timeout_ms`; a message cut short, or the other
// process gone, throws.
bool try_recv_packet(int fd, Packet &p, int timeout_ms) {
    char *b = reinterpret_cast<char *>(&p);
    size_t off = 0;
    while (off < sizeof p) {
        pollfd pfd{fd, POLLIN, 0};
        int r = poll(&pfd, 1, off == 0 ? timeout_ms : kTimeoutSec * 1000);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw Error(std::string("poll: ") + std::strerror(errno));
        if (r == 0) {
            if (off == 0) return false;
            throw Error("a message from the other process stopped half-way");
        }
        ssize_t n = recv(fd, b + off, sizeof p - off, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(std::string("socketpair recv: ") + std::strerror(errno));
        if (n == 0) throw PeerClosed("the other process closed the socketpair (it exited)");
        off += static_cast<size_t>(n);
    }
    return true;
}
void recv_packet(int fd, Packet &p) {
    if (!try_recv_packet(fd, p, kTimeoutSec * 1000))
        throw Error("no message from the other process for " + std::to_string(kTimeoutSec) + " s");
}

// ---------------------------------------------------------------------- data

// A byte pattern that differs between nearby offsets and between 256-byte blocks, so a
// misplaced or short transfer shows up.
uint8_t pattern(size_t i) {
    return static_cast<uint8_t>((i * 0x9E3779B97F4A7C15ull) >> 56);
}
void fill(std::vector<uint8_t> &b) {
    for (size_t i = 0; i < b.size(); ++i)
        b[i] = pattern(i);
}
// The first offset that does not hold the pattern, or SIZE_MAX.
size_t first_mismatch(const std::vector<uint8_t> &b) {
    for (size_t i = 0; i < b.size(); ++i)
        if (b[i] != pattern(i)) return i;
    return SIZE_MAX;
}

// ---------------------------------------------------------------------- target

int run_target(int sock, const Options &o) {
    Fabric f;
    open_fabric(f, o);
    // Zeroed, so a write that never landed fails the check; the pattern for reads.
    std::vector<uint8_t> buf(o.size);
    if (!o.write) fill(buf);
    register_mr(f, buf.data(), buf.size(), FI_REMOTE_WRITE | FI_REMOTE_READ, 1);

    Packet hello{};
    hello.type = Msg::Hello;
    hello.addr = reinterpret_cast<uintptr_t>(buf.data());
    hello.key = fi_mr_key(f.mr.get());
    size_t len = sizeof hello.name;
    check_fi("fi_getname", fi_getname(&f.ep.get()->fid, hello.name, &len));
    hello.name_len = len;
    send_packet(sock, hello);

    // Progress the endpoint until the initiator is done. Spinning, look at the socketpair
    // only every few hundred polls (a system call each time would slow the progress down).
    // An initiator that dies closes the socketpair, which ends this loop with an error.
    auto noop = [](void *) {};
    for (unsigned spin = 0;; ++spin) {
        drain_cq(f.cq.get(), noop);
        if (o.target_wait == TargetWait::Yield) sched_yield();
        if (o.target_wait != TargetWait::Sleep && spin % 256 != 0) continue;
        Packet p{};
        if (!try_recv_packet(sock, p, o.target_wait == TargetWait::Sleep ? 1 : 0)) continue;
        if (p.type == Msg::Done) return 0;
        if (p.type != Msg::Check) throw Error("target: unexpected message");
        Packet r{};
        r.type = Msg::CheckResult;
        size_t bad = o.write ? first_mismatch(buf) : SIZE_MAX;
        r.status = bad == SIZE_MAX ? 0 : 1;
        r.addr = bad;
        send_packet(sock, r);
    }
}

// ------------------------------------------------------------------- initiator

struct Result {
    uint64_t ops = 0;
    double seconds = 0;
};

class Streamer {
  public:
    Streamer(Fabric &f, const Options &o, fi_addr_t peer, uint64_t raddr, uint64_t rkey,
             std::vector<uint8_t> &local)
        : f_(f),
          o_(o),
          peer_(peer),
          raddr_(raddr),
          rkey_(rkey),
          local_(local),
          desc_(fi_mr_desc(f.mr.get())),
          ctx_(o.window) {
        for (unsigned i = 0; i < o.window; ++i)
            free_.push_back(&ctx_[i]);
    }

    // Posts `count` operations (or, with count 0, as many as fit in `seconds`), WINDOW at
    // a time, and waits for all of them. `delivery`: each is a write that completes only
    // once its data is visible in the target's buffer (FI_DELIVERY_COMPLETE); a default
    // completion (FI_TRANSMIT_COMPLETE) does not promise that.
    Result run(uint64_t count, double seconds, bool delivery = false) {
        Result r;
        uint64_t posted = 0, done = 0;
        auto t0 = Clock::now();
        auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(seconds));
        bool more = true;
        auto last_progress = t0;
        for (;;) {
            while (more && !free_.empty()) {
                if (!post(delivery)) break;  // -FI_EAGAIN: progress the CQ, then try again
                ++posted;
                if (count && posted == count) more = false;
            }
            size_t n = drain_cq(
                f_.cq.get(), [&](void *ctx) { free_.push_back(static_cast<fi_context2 *>(ctx)); });
            done += n;
            // Checked on every pass, including those where posting stalled (-FI_EAGAIN)
            // and nothing completed: a target that stops progressing must not hang us.
            auto now = Clock::now();
            if (n != 0) last_progress = now;
            if (!count && more && now >= deadline) more = false;
            if (!more && done == posted) {
                r.seconds = std::chrono::duration<double>(now - t0).count();
                break;
            }
            if (now - last_progress > std::chrono::seconds(kTimeoutSec))
                throw Error("no completion for " + std::to_string(kTimeoutSec) + " s");
        }
        r.ops = done;
        return r;
    }

  private:
    bool post(bool delivery) {
        fi_context2 *ctx = free_.back();
        ssize_t rc;
        if (delivery) {
            iovec iov{local_.data(), local_.size()};
            fi_rma_iov riov{raddr_, local_.size(), rkey_};
            fi_msg_rma m{};
            m.msg_iov = &iov;
            m.desc = &desc_;
            m.iov_count = 1;
            m.addr = peer_;
            m.rma_iov = &riov;
            m.rma_iov_count = 1;
            m.context = ctx;
            rc = fi_writemsg(f_.ep.get(), &m, FI_COMPLETION | FI_DELIVERY_COMPLETE);
        } else if (o_.write) {
            rc = fi_write(f_.ep.get(), local_.data(), local_.size(), desc_, peer_, raddr_, rkey_,
                          ctx);
        } else {
            rc = fi_read(f_.ep.get(), local_.data(), local_.size(), desc_, peer_, raddr_, rkey_,
                         ctx);
        }
        if (rc == -FI_EAGAIN) return false;
        if (rc != 0) fail_fi(delivery ? "fi_writemsg" : o_.write ? "fi_write" : "fi_read", rc);
        free_.pop_back();
        return true;
    }

    Fabric &f_;
    const Options &o_;
    fi_addr_t peer_;
    uint64_t raddr_, rkey_;
    std::vector<uint8_t> &local_;
    void *desc_;
    std::vector<fi_context2> ctx_;  // one per operation in flight, owned until completion
    std::vector<fi_context2 *> free_;
};

// Returns the result line, printed once the target has exited cleanly too.
std::string run_initiator(int sock, const Options &o) {
    Fabric f;
    open_fabric(f, o);
    // The pattern for writes; zeroed for reads, so a read that never landed fails the check.
    std::vector<uint8_t> local(o.size);
    if (o.write) fill(local);
    register_mr(f, local.data(), local.size(), FI_WRITE | FI_READ, 2);

    Packet hello{};
    recv_packet(sock, hello);
    if (hello.type != Msg::Hello || hello.name_len > sizeof hello.name)
        throw Error("bad hello from the target");
    fi_addr_t peer = FI_ADDR_UNSPEC;
    int n = fi_av_insert(f.av.get(), hello.name, 1, &peer, 0, nullptr);
    if (n != 1) fail_fi("fi_av_insert", n < 0 ? n : -FI_EINVAL);
    // Without FI_MR_VIRT_ADDR the remote address is an offset into the region.
    uint64_t raddr = (f.mr_mode & FI_MR_VIRT_ADDR) ? hello.addr : 0;

    Streamer s(f, o, peer, raddr, hello.key, local);
    if (o.warmup) s.run(o.warmup, 0);
    Result r = s.run(o.iters, o.seconds);

    // Verify once, after the timed run. The last write completes only once it has landed,
    // so the target's buffer is final when it looks.
    if (o.write) {
        s.run(1, 0, true);
        Packet c{};
        c.type = Msg::Check;
        send_packet(sock, c);
        Packet res{};
        recv_packet(sock, res);
        if (res.type != Msg::CheckResult) throw Error("bad check result from the target");
        if (res.status != 0)
            throw Error(
                "data mismatch: the target's buffer differs from the written pattern "
                "at offset " +
                std::to_string(res.addr));
    } else if (size_t bad = first_mismatch(local); bad != SIZE_MAX) {
        throw Error("data mismatch: the read buffer differs from the target's pattern at offset " +
                    std::to_string(bad));
    }
    Packet done{};
    done.type = Msg::Done;
    send_packet(sock, done);

    double gbps = static_cast<double>(r.ops) * static_cast<double>(o.size) / r.seconds / 1e9;
    char line[512];
    std::snprintf(line, sizeof line,
                  "fi_stream provider=%s op=%s size=%zu window=%u ops=%llu seconds=%.4f "
                  "GBps=%.4f\n",
                  f.info->fabric_attr->prov_name, o.write ? "write" : "read", o.size, o.window,
                  static_cast<unsigned long long>(r.ops), r.seconds, gbps);
    return line;
}

// Reaps the target on every path out of the parent. After a failure the target sees the
// socketpair close and exits; one stuck inside libfabric is killed after a grace period.
class Child {
  public:
    explicit Child(pid_t pid) : pid_(pid) {}
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;
    ~Child() {
        if (pid_ > 0) wait(5);
    }
    // The child's exit status (as from waitpid), killing it after `grace_sec`.
    int wait(int grace_sec) {
        int st = 0;
        auto until = Clock::now() + std::chrono::seconds(grace_sec);
        for (;;) {
            pid_t r = waitpid(pid_, &st, WNOHANG);
            if (r == pid_ || (r < 0 && errno != EINTR)) break;
            if (Clock::now() > until) {
                kill(pid_, SIGKILL);
                waitpid(pid_, &st, 0);
                break;
            }
            usleep(1000);
        }
        pid_ = -1;
        return st;
    }

  private:
    pid_t pid_;
};

int usage() {
    std::fprintf(stderr,
                 "usage: fi_stream [-p PROVIDER] [-o write|read] [-S SIZE] [-w WINDOW]\n"
                 "                 [-t SECONDS | -n OPS] [--warmup N] [--target-wait W]\n"
                 "                 [--src NODE] [-v]\n"
                 "  -p   libfabric provider (default shm)\n"
                 "  -o   RMA operation (default write)\n"
                 "  -S   bytes per operation and buffer size (default 1048576)\n"
                 "  -w   operations in flight (default 64)\n"
                 "  -t   seconds timed (default 0.5); -n: operations timed instead\n"
                 "  --warmup N  untimed operations first (default 64)\n"
                 "  --target-wait W  how the target progresses its endpoint meanwhile: spin\n"
                 "              (default), yield (sched_yield() after each poll) or sleep\n"
                 "              (up to 1 ms between polls)\n"
                 "  --src NODE  source node for fi_getinfo (default: none for shm,\n"
                 "              127.0.0.1 for other providers)\n"
                 "  -v   print the provider's fi_info choices on stderr\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    bool src_set = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "fi_stream: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-p")
            o.provider = val();
        else if (a == "-o") {
            std::string op = val();
            if (op != "write" && op != "read") return usage();
            o.write = op == "write";
        } else if (a == "-S")
            o.size = std::strtoull(val(), nullptr, 10);
        else if (a == "-w")
            o.window = static_cast<unsigned>(std::strtoul(val(), nullptr, 10));
        else if (a == "-t")
            o.seconds = std::strtod(val(), nullptr);
        else if (a == "-n")
            o.iters = std::strtoull(val(), nullptr, 10);
        else if (a == "--warmup")
            o.warmup = std::strtoull(val(), nullptr, 10);
        else if (a == "--target-wait") {
            std::string w = val();
            if (w == "spin")
                o.target_wait = TargetWait::Spin;
            else if (w == "yield")
                o.target_wait = TargetWait::Yield;
            else if (w == "sleep")
                o.target_wait = TargetWait::Sleep;
            else
                return usage();
        } else if (a == "--src") {
            o.src = val();
            src_set = true;
        } else if (a == "-v")
            o.verbose = true;
        else
            return usage();
    }
    if (o.size == 0 || o.window == 0 || o.window > 4096 || !(o.seconds > 0)) return usage();
    // Providers other than shm listen on an IP address; fi_getinfo without a node may pick
    // an interface the other process cannot reach the same way, so default to loopback.
    if (!src_set && o.provider != "shm") o.src = "127.0.0.1";

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        std::perror("fi_stream: socketpair");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        std::perror("fi_stream: fork");
        return 1;
    }
    if (pid == 0) {
        close(sv[0]);
        // A parent killed outright takes the target with it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() == 1) _exit(1);
        int rc = 1;
        try {
            rc = run_target(sv[1], o);
        } catch (const PeerClosed &) {
            // The initiator failed first and has reported it; exiting is all that is left.
        } catch (const std::exception &e) {
            std::fprintf(stderr, "fi_stream target: %s\n", e.what());
        }
        close(sv[1]);
        std::fflush(stderr);
        _exit(rc);  // not exit(): the parent's atexit handlers and buffers are not ours
    }
    close(sv[1]);
    Fd sock(sv[0]);
    Child child(pid);
    int rc = 1;
    std::string line;
    try {
        line = run_initiator(sock.get(), o);
        rc = 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fi_stream: %s\n", e.what());
    }
    sock.reset();  // the target exits on EOF if it has not been told Done
    int st = child.wait(rc == 0 ? kTimeoutSec : 5);
    // After a failure here the target fails too (the socketpair closed): nothing to add.
    if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
        if (WIFSIGNALED(st))
            std::fprintf(stderr, "fi_stream: the target died of signal %d\n", WTERMSIG(st));
        else
            std::fprintf(stderr, "fi_stream: the target exited with status %d\n", WEXITSTATUS(st));
        rc = 1;
    }
    if (rc == 0) std::fputs(line.c_str(), stdout);
    return rc;
}
