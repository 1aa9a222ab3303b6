#include "harness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "transport/tcp/tcp_channel.hpp"

#ifndef TWOPROC_PEER_PATH
#error "TWOPROC_PEER_PATH must name the twoproc_peer executable"
#endif

namespace twoproc {

namespace cm = softrnic::cm;
namespace tcp = softrnic::transport::tcp;
using rt::Clock;

std::ostream &operator<<(std::ostream &os, const Reply &r) {
    return os << "peer request \"" << r.cmd << "\" -> "
              << (r.timed_out ? "no reply in time" : r.text);
}

namespace {

std::string peer_path() {
    if (const char *e = std::getenv("TWOPROC_PEER"); e && *e) return e;
    return TWOPROC_PEER_PATH;
}

// Child side of fork(): only async-signal-safe calls until exec.
[[noreturn]] void exec_child(int ctl, pid_t parent, const std::vector<char *> &argv) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the prctl
    if (ctl != 3) {
        if (::dup2(ctl, 3) < 0) ::_exit(127);  // dup2 clears FD_CLOEXEC on the copy
    } else {
        ::fcntl(3, F_SETFD, 0);
    }
    ::close_range(4, ~0u, 0);  // nothing else of the test leaks into the peer
    ::execv(argv[0], argv.data());
    ::_exit(127);
}

int decode_status(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

}  // namespace

std::unique_ptr<PeerProcess> PeerProcess::spawn(const Options &o, std::string *why) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        *why = std::string("socketpair: ") + std::strerror(errno);
        return nullptr;
    }
    std::vector<std::string> args = {peer_path(), "--ctl", "3"};
    if (!o.netns_path.empty()) {
        args.push_back("--netns");
        args.push_back(o.netns_path);
    }
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t parent = ::getpid();
    std::fflush(nullptr);  // no duplicated stdio buffers in the child
    pid_t pid = ::fork();
    if (pid < 0) {
        *why = std::string("fork: ") + std::strerror(errno);
        ::close(sv[0]);
        ::close(sv[1]);
        return nullptr;
    }
    if (pid == 0) exec_child(sv[1], parent, argv);
    ::close(sv[1]);
    std::unique_ptr<PeerProcess> p(new PeerProcess());
    p->pid_ = pid;
    p->ctl_ = sv[0];
    Reply r = p->call("ping", 20s);
    if (!r.ok) {
        *why = "peer " + args[0] + " did not answer: " + r.text;
        return nullptr;  // the destructor kills and reaps it
    }
    return p;
}

PeerProcess::~PeerProcess() {
    kill_now();
    if (ctl_ >= 0) ::close(ctl_);
}

uint64_t PeerProcess::send(const std::string &cmd, std::string *why) {
    if (ctl_ < 0 || pid_ <= 0) {
        *why = "no peer process";
        return 0;
    }
    const uint64_t seq = ++seq_;
    std::string msg = std::to_string(seq) + " " + cmd;
    if (::send(ctl_, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) {
        *why = std::string("control send failed: ") + std::strerror(errno);
        return 0;
    }
    return seq;
}

Reply PeerProcess::call(const std::string &cmd, std::chrono::milliseconds to) {
    Reply r;
    r.cmd = cmd;
    uint64_t seq = send(cmd, &r.text);
    if (seq == 0) return r;
    return wait(seq, cmd, to);
}

Reply PeerProcess::wait(uint64_t seq, const std::string &cmd, std::chrono::milliseconds to) {
    Reply r;
    r.cmd = cmd;
    const auto deadline = Clock::now() + to;
    std::vector<char> buf(kMaxCtlMessage + 1);
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() < 0) left = 0ms;
        pollfd pf{ctl_, POLLIN, 0};
        int pr = ::poll(&pf, 1, static_cast<int>(left.count()));
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) {
            r.timed_out = true;
            r.text = "timeout after " + std::to_string(to.count()) + " ms";
            return r;
        }
        if (pr < 0) {
            r.text = std::string("poll: ") + std::strerror(errno);
            return r;
        }
        ssize_t n = ::recv(ctl_, buf.data(), kMaxCtlMessage, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            r.text = "peer closed the control channel";
            int st = 0;
            if (wait_gone(2s, &st)) r.text += " (exit status " + std::to_string(st) + ")";
            return r;
        }
        std::string line(buf.data(), static_cast<size_t>(n));
        auto toks = split_ws(line);
        if (toks.size() < 2) continue;
        auto got = to_num<uint64_t>(toks[0]);
        if (!got) continue;
        if (*got != 0 && *got < seq) continue;  // late reply to a request that timed out
        r.text = line.substr(line.find(' ') + 1);
        if (*got == 0) return r;  // the peer reporting a start-up failure
        r.ok = toks[1] == "OK";
        r.kv = parse_kv(toks, 2);
        return r;
    }
}

bool PeerProcess::wait_gone(std::chrono::milliseconds to, int *status) {
    if (pid_ <= 0) return true;
    const auto deadline = Clock::now() + to;
    for (;;) {
        int st = 0;
        pid_t w = ::waitpid(pid_, &st, WNOHANG);
        if (w == pid_ || (w < 0 && errno == ECHILD)) {
            if (status) *status = w == pid_ ? decode_status(st) : -1;
            pid_ = -1;
            return true;
        }
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
}

uint64_t PeerProcess::begin_exit() {
    std::string why;
    return send("exit", &why);
}

int PeerProcess::finish_exit(uint64_t seq, std::chrono::milliseconds to) {
    if (pid_ <= 0) return -1;
    const auto t0 = Clock::now();
    if (seq != 0) wait(seq, "exit", to);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(to - (Clock::now() - t0));
    int st = -1;
    if (wait_gone(std::max(left, std::chrono::milliseconds(1000)), &st)) return st;
    kill_now();
    return -1;
}

int PeerProcess::exit_and_wait(std::chrono::milliseconds to) {
    if (pid_ <= 0) return -1;
    return finish_exit(begin_exit(), to);
}

bool PeerProcess::kill_now() {
    if (pid_ <= 0) return false;
    ::kill(pid_, SIGKILL);
    int st = 0;
    // SIGKILL cannot be caught: the wait ends as soon as the kernel has torn it down.
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return true;
}

int run_command(const std::vector<std::string> &args, std::chrono::milliseconds to,
                std::string *out) {
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) return -1;
    std::vector<std::string> a = args;
    std::vector<char *> argv;
    for (auto &s : a)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(pipefd[0]);
        ::close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        ::dup2(pipefd[1], 1);
        ::dup2(pipefd[1], 2);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::close_range(3, ~0u, 0);
        ::execvp(argv[0], argv.data());
        ::_exit(127);
    }
    ::close(pipefd[1]);
    std::string text;
    const auto deadline = Clock::now() + to;
    bool timed_out = false;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd pf{pipefd[0], POLLIN, 0};
        int pr = ::poll(&pf, 1, static_cast<int>(left.count()));
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        char b[4096];
        ssize_t n = ::read(pipefd[0], b, sizeof b);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // EOF: the command is done (or closed its output)
        text.append(b, static_cast<size_t>(n));
    }
    ::close(pipefd[0]);
    int st = 0;
    if (timed_out) ::kill(pid, SIGKILL);
    // After EOF the child is exiting; bound the wait anyway, then kill.
    const auto reap_deadline = Clock::now() + 5s;
    pid_t w;
    while ((w = ::waitpid(pid, &st, WNOHANG)) == 0 && Clock::now() < reap_deadline)
        std::this_thread::sleep_for(2ms);
    if (w == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
        timed_out = true;
    }
    if (out) *out = text;
    if (timed_out) return -1;
    return decode_status(st);
}

// ------------------------------------------------------------------------ namespaces

namespace {
constexpr const char *kNsPrefix = "softrnic-twoproc-";

void remove_stale_namespaces() {
    std::error_code ec;
    for (auto &e : std::filesystem::directory_iterator("/run/netns", ec)) {
        std::string n = e.path().filename().string();
        if (n.rfind(kNsPrefix, 0) != 0) continue;
        std::string rest = n.substr(std::strlen(kNsPrefix));
        auto pid = to_num<pid_t>(rest.substr(0, rest.find('-')));
        if (!pid || *pid == ::getpid()) continue;
        if (::kill(*pid, 0) == 0 || errno != ESRCH) continue;  // its creator still runs
        run_command({"ip", "netns", "del", n}, 10s);
    }
}
}  // namespace

std::unique_ptr<NetNs> NetNs::create(std::string *why) {
    if (::geteuid() != 0) {
        *why = "not root: cannot create a network namespace";
        return nullptr;
    }
    std::string out;
    if (run_command({"ip", "netns", "list"}, 10s, &out) != 0) {
        *why = "`ip netns` is not available: " + out;
        return nullptr;
    }
    remove_stale_namespaces();
    static int counter = 0;
    std::unique_ptr<NetNs> ns(new NetNs());
    std::string name = kNsPrefix + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    if (run_command({"ip", "netns", "add", name}, 10s, &out) != 0) {
        *why = "ip netns add " + name + " failed: " + out;
        return nullptr;
    }
    ns->name_ = name;  // from here on the destructor deletes it
    return ns;
}

NetNs::~NetNs() {
    if (!name_.empty()) run_command({"ip", "netns", "del", name_}, 10s);
}

bool NetNs::ip(const std::vector<std::string> &args, std::string *why) {
    std::vector<std::string> a = {"ip", "-n", name_};
    a.insert(a.end(), args.begin(), args.end());
    std::string out;
    if (run_command(a, 10s, &out) == 0) return true;
    std::string cmd;
    for (auto &s : a)
        cmd += (cmd.empty() ? "" : " ") + s;
    *why = cmd + " failed: " + out;
    return false;
}

int count_open_fds() {
    int n = 0;
    DIR *d = ::opendir("/proc/self/fd");
    if (!d) return -1;
    while (dirent *e = ::readdir(d))
        if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    return n - 1;  // the directory stream's own descriptor
}

// ------------------------------------------------------------------------ CM log

cm::Handler CmLog::handler() {
    return [this](cm::Event &e) {
        if (react) react(e);
        std::lock_guard lk(mu_);
        events_.push_back(std::move(e));
        cv_.notify_all();
    };
}

void CmLog::clear() {
    std::lock_guard lk(mu_);
    for (auto &e : events_)
        if (auto *est = std::get_if<cm::Established>(&e)) cm::release_unclaimed(est->llp);
    events_.clear();
}

// ------------------------------------------------------------------------ fixture

std::string mode_name(const ::testing::TestParamInfo<Mode> &i) {
    return std::string(i.param.family == AF_INET ? "IPv4" : "IPv6") +
           (i.param.crc ? "_Crc" : "_NoCrc");
}

bool have_family(int family) {
    int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return false;
    cm::Address a = loopback(family);
    bool ok = ::bind(s, a.get(), a.len) == 0;
    ::close(s);
    return ok;
}

ri_api_return_t to_rts(rt::Qp *q, ri_llp_stream_handle_t h) {
    ri_err_data_t e = 0;
    ri_qp_attr_t at{};
    at.state = RI_QP_STATE_READY_TO_SEND;
    at.qp_xport.qp_iwarp.llp_stream_handle = h;
    return ri_qp_modify(q->owner->rnic, q->h,
                        rt::QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
}

void TwoProcTest::SetUp() {
    if (!have_family(family())) GTEST_SKIP() << "no loopback address for this family";
    fds_before_ = count_open_fds();
    cm_ = std::make_unique<cm::ConnectionManager>(log_.handler());
    ASSERT_TRUE(cm_->ok());
}

void TwoProcTest::open_local() {
    if (rnic_) return;
    rnic_ = std::make_unique<rt::Rnic>("tp");
    ASSERT_TRUE(rnic_->ok());
    rt::QpOpts o;
    o.sq = 256;
    o.rq = 256;
    o.scq = rnic_->new_cq(1024);
    o.rcq = rnic_->new_cq(1024);
    qp_ = rnic_->new_qp(o);
    ASSERT_NE(qp_, nullptr);
}

void TwoProcTest::open_both() {
    if (!peer_) {
        ASSERT_NO_FATAL_FAILURE(start_peer());
    }
    // The peer opens its instance while this process opens its own.
    std::string why;
    const uint64_t seq = peer_->send("open", &why);
    ASSERT_NE(seq, 0u) << why;
    ASSERT_NO_FATAL_FAILURE(open_local());
    Reply r = peer_->wait(seq, "open");
    ASSERT_TRUE(r.ok) << r;
}

void TwoProcTest::start_peer(const PeerProcess::Options &o) {
    peer_.reset();
    std::string why;
    peer_ = PeerProcess::spawn(o, &why);
    ASSERT_NE(peer_, nullptr) << why;
}

Reply TwoProcTest::pc(const std::string &cmd, std::chrono::milliseconds to) {
    if (!peer_) {
        Reply r;
        r.cmd = cmd;
        r.text = "no peer";
        return r;
    }
    return peer_->call(cmd, to);
}

void TwoProcTest::TearDown() {
    // Both ends tear down at the same time: the peer on "exit", this process meanwhile.
    const bool peer_running = peer_ && peer_->running();
    const uint64_t exit_seq = peer_running ? peer_->begin_exit() : 0;
    cm_.reset();
    log_.clear();
    if (rnic_) rnic_->teardown();
    rnic_.reset();
    qp_ = nullptr;
    log_.react = nullptr;
    bufs_.clear();
    if (peer_running) {
        int st = peer_->finish_exit(exit_seq);
        EXPECT_EQ(st, 0) << "the peer's exit status (1: its teardown checks failed, -1: it "
                            "did not exit and was killed)";
    }
    peer_.reset();
    if (fds_before_ >= 0) {
        // Channel progress threads close their socket as they finish: allow them a moment.
        int now = count_open_fds();
        const auto deadline = Clock::now() + 5s;
        while (now != fds_before_ && Clock::now() < deadline) {
            std::this_thread::sleep_for(10ms);
            now = count_open_fds();
        }
        EXPECT_EQ(now, fds_before_) << "descriptors leaked by the test";
    }
}

rt::Buf &TwoProcTest::buf(size_t len, uint8_t fill) {
    bufs_.push_back(std::make_unique<rt::Buf>(len, fill));
    return *bufs_.back();
}

RemoteBuf TwoProcTest::peer_buf(const std::string &id, size_t len, unsigned access) {
    RemoteBuf b;
    b.id = id;
    b.len = len;
    Reply r = pc("buf " + id + " " + std::to_string(len) + " " + std::to_string(access));
    EXPECT_TRUE(r.ok) << r;
    b.va = r.u64("va");
    b.rtag = static_cast<ri_rtag_t>(r.u64("rtag"));
    return b;
}

void TwoProcTest::connect_to_peer(const std::string &req_pd, const std::string &rep_pd,
                                  uint16_t port) {
    ASSERT_NO_FATAL_FAILURE(open_both());
    Reply l = pc(std::string("listen ") + fam_token(family()) + " " + std::to_string(port) + " " +
                 (crc() ? "1" : "0") + " " + to_hex(bytes_of(rep_pd)) + " accept");
    ASSERT_TRUE(l.ok) << l;
    cm::Address dst = loopback(family(), static_cast<uint16_t>(l.u64("port")));
    cm::ConnParams cp;
    cp.private_data = bytes_of(req_pd);
    cp.crc = crc();
    auto c = cm_->connect(dst.get(), dst.len, cp);
    ASSERT_TRUE(c.ok()) << cm::to_string(c.status);
    auto est = log_.take<cm::Established>(c.value);
    ASSERT_TRUE(est) << "no Established event for the connection to the peer";
    EXPECT_EQ(est->private_data, bytes_of(rep_pd));
    EXPECT_EQ(est->params.crc, crc());
    ri_api_return_t r = to_rts(qp_, est->llp);
    if (r != RI_RET_SUCCESS) cm::release_unclaimed(est->llp);
    ASSERT_EQ(r, RI_RET_SUCCESS);
    Reply w = pc("wait_conn 20000");
    ASSERT_TRUE(w.ok) << w;
    ASSERT_EQ(w.str("event"), "established") << w;
    EXPECT_EQ(w.str("pd"), to_hex(bytes_of(req_pd)));
    EXPECT_EQ(w.str("crc"), crc() ? "1" : "0");
}

void TwoProcTest::peer_connects(const std::string &req_pd, const std::string &rep_pd) {
    ASSERT_NO_FATAL_FAILURE(open_both());
    cm::ConnParams sp;
    sp.private_data = bytes_of(rep_pd);
    sp.crc = crc();
    log_.react = [this, sp](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) cm_->accept(r->id, sp);
    };
    cm::Address a = loopback(family());
    auto l = cm_->listen(a.get(), a.len, 16);
    ASSERT_TRUE(l.ok()) << cm::to_string(l.status);
    auto la = cm_->local_address(l.value);
    ASSERT_TRUE(la.ok());
    Reply c =
        pc(std::string("connect ") + fam_token(family()) + " " + std::to_string(port_of(la.value)) +
           " " + (crc() ? "1" : "0") + " " + to_hex(bytes_of(req_pd)) + " 10000");
    ASSERT_TRUE(c.ok) << c;
    ASSERT_EQ(c.str("event"), "established") << c;
    EXPECT_EQ(c.str("pd"), to_hex(bytes_of(rep_pd)));
    EXPECT_EQ(c.str("crc"), crc() ? "1" : "0");
    auto est = log_.take<cm::Established>();
    ASSERT_TRUE(est) << "no Established event for the peer's connection";
    EXPECT_FALSE(est->initiator);
    EXPECT_EQ(est->private_data, bytes_of(req_pd));
    ri_api_return_t r = to_rts(qp_, est->llp);
    if (r != RI_RET_SUCCESS) cm::release_unclaimed(est->llp);
    ASSERT_EQ(r, RI_RET_SUCCESS);
    EXPECT_EQ(cm_->stop_listen(l.value), cm::CmStatus::Ok);
}

}  // namespace twoproc
