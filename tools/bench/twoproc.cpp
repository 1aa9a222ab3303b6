// Two-process `softrnic bench`: a client and a server process joined by a control TCP
// connection (line-based, see below). For each test the client asks the server to set up
// its side, connects the data path (a softrnic QP through the transport's Connector, or a
// plain TCP socket for the raw references), and runs each phase twice: a warm-up, which
// also sizes the measured run to --time when --iters is not given, then the measured run.
// The whole list of tests is repeated --rounds times, in reverse order every other round,
// so each softrnic figure and the raw reference it is compared with alternate (A B B A).
//
// Control protocol (client -> server; every request is answered):
//   HELLO <protocol> <transport>     -> OK <connector endpoint> <raw TCP port>
//   SETUP rdma <op> <size> <window> <lat wait> <bw wait>   (waits: spin|yield)
//                                    -> OK (server waits for the QP connection) ... READY
//   SETUP rawpp|rawstream <size>     -> OK (server accepts the raw socket) ... READY
//   SETUP conns <n>                  -> OK (server has n QPs, accepts n requests in turn,
//                                       each QP to RTS once established) ... READY
//   PHASE lat|bw <n>                 -> GO, then both sides run n operations ... DONE
//                                       (the server's side of them has ended)
//   TEARDOWN                         -> OK
//   BYE                              -> OK
// A failing server answers ERR <message> (at once, or while the client spins) and exits.
// The client waits for DONE before it tears its QP down or starts the next phase: its own
// side can end first (its last receive is the server's last send), and an abortive close
// then would flush receives the server still has posted while it polls for its own last
// completions.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>

#include "bench/bench.hpp"
#include "bench/cli.hpp"
#include "bench/connector.hpp"
#include "bench/foreign_load.hpp"
#include "bench/net.hpp"
#include "bench/raw_tcp.hpp"
#include "bench/rdma_test.hpp"
#include "bench/report.hpp"

namespace softrnic::bench {

namespace {

constexpr int kProtocol = 2;
constexpr auto kSetupTimeout = std::chrono::seconds(15);
constexpr size_t kRawPingPongSize = 8;
constexpr size_t kRawStreamSize = size_t{1} << 20;
constexpr uint16_t kMaxReadDepth = 128;  // engine limit per QP (IRD and ORD)

enum class Kind : uint8_t { Rdma, RawPingPong, RawStream };

// A connection set-up run of `n` connections holds every one open at once: a socket each
// per process (plus the bench's own). 1,000 just fit Debian's default soft limit of 1,024,
// and the option goes up to 10,000, so the soft limit is raised towards the hard one with
// room to spare; a hard limit too low for the run is an error that says so, not a failed
// connection.
void ensure_descriptors_for(size_t n) {
    const rlim_t need = static_cast<rlim_t>(3 * n + 64);
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need) return;
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max == RLIM_INFINITY ? need : std::min(need, rl.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
    if (rl.rlim_cur < need)
        throw BenchError(std::to_string(n) + " connections need about " + std::to_string(need) +
                         " file descriptors per process; the limit is " +
                         std::to_string(rl.rlim_cur) + " (ulimit -n, hard limit " +
                         std::to_string(rl.rlim_max) + ")");
}

struct Spec {
    Kind kind;
    Op op;
    size_t size;
};

std::string resolved_transport(const Options &o) {
    // auto: shared memory for the two processes this command starts on this host, TCP
    // towards another host (--server/--connect).
    if (o.transport != "auto") return o.transport;
    return o.role == Role::Both ? "shm" : "tcp";
}

ConnectorConfig connector_config(const Options &o) {
    return {o.crc, kMaxReadDepth, kMaxReadDepth};
}

Op parse_op(const std::string &s) {
    if (s == "send") return Op::Send;
    if (s == "write") return Op::Write;
    if (s == "read") return Op::Read;
    throw BenchError("unknown operation '" + s + "'");
}

uint64_t parse_u64(const std::string &s, const char *what) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || !end || *end || errno) throw BenchError(std::string("bad ") + what);
    return v;
}

std::vector<std::string> words_of(const std::string &line, size_t min_words) {
    auto w = split_words(line);
    if (w.size() < min_words) throw BenchError("malformed control message '" + line + "'");
    return w;
}

// ------------------------------------------------------------------------------ server

// Which ports a server uses: control on `base`, the connector on base+1 and the raw TCP
// listener on base+2 (predictable for firewalls between two hosts); all ephemeral when
// base is 0.
uint16_t derived_port(uint16_t base, int k) {
    return base ? static_cast<uint16_t>(base + k) : 0;
}

}  // namespace

int run_server(const Options &o) {
    const std::string transport = resolved_transport(o);
    const bool spawned = o.ready_fd >= 0;
    auto fail = [&](const std::string &msg) {
        std::fprintf(stderr, "softrnic bench server: %s\n", msg.c_str());
        return 1;
    };
    std::unique_ptr<Connector> connector;
    Fd lfd, raw_l;
    std::string endpoint;
    uint16_t ctl_port = 0, raw_port = 0;
    try {
        connector = make_connector(transport, connector_config(o));
        uint16_t base = o.port_set || spawned ? o.port : kDefaultPort;
        lfd = tcp_listen(resolve(o.host, base, true));
        ctl_port = local_port(lfd.get());
        endpoint = connector->listen(o.host, derived_port(base, 1));
        raw_l = tcp_listen(resolve(o.host, derived_port(base, 2), true));
        raw_port = local_port(raw_l.get());
    } catch (const BenchError &e) {
        return fail(e.what());
    }
    if (spawned) {
        std::string p = std::to_string(ctl_port) + "\n";
        [[maybe_unused]] ssize_t w = ::write(o.ready_fd, p.data(), p.size());
        ::close(o.ready_fd);
    } else {
        std::printf(
            "softrnic bench server: transport %s, listening on %s port %u "
            "(connection manager %s, raw TCP %u); waiting for one client\n",
            connector->describe().c_str(), o.host.empty() ? "all addresses" : o.host.c_str(),
            ctl_port, endpoint.c_str(), raw_port);
        std::fflush(stdout);
    }

    std::optional<ControlChannel> ctl;
    try {
        ctl.emplace(tcp_accept(lfd.get(), spawned ? std::chrono::milliseconds(30000)
                                                  : std::chrono::milliseconds(INT_MAX)));
    } catch (const BenchError &e) {
        return fail(e.what());
    }
    lfd.reset();  // one client per server run
    AbortCheck abort = [&] {
        if (ctl->pending()) throw BenchError("the client stopped the test");
    };
    std::unique_ptr<Session> session;
    std::unique_ptr<QpSet> conns;  // a connection set-up run's QPs, until TEARDOWN
    try {
        Rnic rnic("bench-server-" + std::to_string(::getpid()));
        // Sessions and connection sets use `rnic`: they end before it does, also when an
        // exception leaves this block (the handler below runs after `rnic` is gone).
        struct EndBeforeRnic {
            std::unique_ptr<Session> &session;
            std::unique_ptr<QpSet> &conns;
            ~EndBeforeRnic() {
                session.reset();
                conns.reset();
            }
        } end_before_rnic{session, conns};
        auto hello = words_of(ctl->recv(std::chrono::seconds(30)), 3);
        if (hello[0] != "HELLO" || hello[1] != std::to_string(kProtocol))
            throw BenchError("the client speaks another protocol version ('" + hello[0] + " " +
                             hello[1] + "')");
        if (hello[2] != transport)
            throw BenchError("the client asked for transport '" + hello[2] +
                             "', this server runs '" + transport + "'");
        ctl->send("OK " + endpoint + " " + std::to_string(raw_port));
        for (;;) {
            std::string line = ctl->recv_or_eof();
            if (line.empty()) break;  // the client is done
            auto w = words_of(line, 1);
            if (w[0] == "SETUP") {
                session.reset();
                conns.reset();
                w = words_of(line, 3);
                if (w[1] == "conns") {
                    size_t n = parse_u64(w[2], "connection count");
                    if (n == 0 || n > 10000) throw BenchError("connection count out of range");
                    ensure_descriptors_for(n);
                    conns = std::make_unique<QpSet>(rnic, n);
                    ctl->send("OK");
                    auto links =
                        connector->accept_many(n, QpSet::private_data(true), kSetupTimeout);
                    for (size_t i = 0; i < links.size(); ++i) {
                        if (!QpSet::peer_data_ok(links[i].peer_data(), false))
                            throw BenchError("connection " + std::to_string(i + 1) +
                                             ": the client's private data is not dtestcm's");
                        conns->start(i, std::move(links[i]));
                    }
                } else if (w[1] == "rdma") {
                    w = words_of(line, 7);
                    size_t size = parse_u64(w[3], "size");
                    auto window = static_cast<unsigned>(parse_u64(w[4], "window"));
                    WaitPolicy wait = WaitPolicy::from_words(w[5], w[6]);
                    auto s = std::make_unique<RdmaSession>(rnic, parse_op(w[2]), size, window, wait,
                                                           true, &abort);
                    ctl->send("OK");
                    s->start(connector->accept(s->private_data(), kSetupTimeout));
                    session = std::move(s);
                } else if (w[1] == "rawpp" || w[1] == "rawstream") {
                    size_t size = parse_u64(w[2], "size");
                    ctl->send("OK");
                    Fd sock = tcp_accept(raw_l.get(), kSetupTimeout);
                    session = std::make_unique<RawTcpSession>(std::move(sock), w[1] == "rawpp",
                                                              size, true, &abort);
                } else {
                    throw BenchError("unknown test kind '" + w[1] + "'");
                }
                ctl->send("READY");
            } else if (w[0] == "PHASE") {
                w = words_of(line, 3);
                Phase ph = w[1] == "lat" ? Phase::Lat : Phase::Bw;
                uint64_t n = parse_u64(w[2], "count");
                if (!session) throw BenchError("PHASE without a test set up");
                ctl->send("GO");
                if (!session->passive(ph)) session->run(ph, n);
                ctl->send("DONE");
            } else if (w[0] == "TEARDOWN") {
                session.reset();
                conns.reset();
                ctl->send("OK");
            } else if (w[0] == "BYE") {
                session.reset();
                conns.reset();
                ctl->send("OK");
                break;
            } else {
                throw BenchError("unknown control message '" + line + "'");
            }
        }
    } catch (const std::exception &e) {
        session.reset();
        conns.reset();
        try {
            ctl->send(std::string("ERR ") + e.what());
        } catch (...) {
        }
        return fail(e.what());
    }
    return 0;
}

// ------------------------------------------------------------------------------ client

namespace {

// The server process a plain `softrnic bench` starts on this machine: this executable
// again, with --server on 127.0.0.1 and an ephemeral port it reports through a pipe.
class ServerProcess {
  public:
    ServerProcess(const Options &o, const std::string &transport) {
        char exe[PATH_MAX];
        ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0) throw BenchError("cannot find this executable (/proc/self/exe)");
        exe[n] = 0;
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) throw BenchError("pipe failed");
        Fd rd(p[0]), wr(p[1]);
        std::vector<std::string> args = {
            exe, "bench",      "--server",           "127.0.0.1",   "--port",
            "0", "--ready-fd", std::to_string(p[1]), "--transport", transport};
        if (o.crc) args.push_back("--crc");
        std::vector<char *> argv;
        for (auto &a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ < 0) throw BenchError("fork failed");
        if (pid_ == 0) {
            // Only async-signal-safe calls between fork and exec.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            ::fcntl(p[1], F_SETFD, 0);
            ::execv(exe, argv.data());
            ::_exit(127);
        }
        wr.reset();
        std::string line;
        char c;
        while (wait_readable(rd.get(), std::chrono::seconds(15)) && ::read(rd.get(), &c, 1) == 1 &&
               c != '\n')
            line += c;
        unsigned long port = std::strtoul(line.c_str(), nullptr, 10);
        if (line.empty() || port == 0 || port > 65535) {
            stop();
            throw BenchError("the server process did not start (see its message above)");
        }
        port_ = static_cast<uint16_t>(port);
    }
    ~ServerProcess() { stop(); }
    ServerProcess(const ServerProcess &) = delete;
    ServerProcess &operator=(const ServerProcess &) = delete;

    uint16_t port() const { return port_; }

    // Waits for the server to exit (it does once the control connection closes); kills it
    // after `grace`. True when it exited with status 0.
    bool stop(std::chrono::milliseconds grace = std::chrono::seconds(5)) {
        return reap_child(pid_, grace);
    }

  private:
    pid_t pid_ = -1;
    uint16_t port_ = 0;
};

class Client {
  public:
    Client(const Options &o, const std::string &transport)
        : o_(o), transport_(transport), window_(o.window) {}

    Report run();

  private:
    std::vector<std::string> expect(const std::string &word) {
        std::string line = ctl_->recv();
        auto w = split_words(line);
        if (!w.empty() && w[0] == "ERR")
            throw BenchError("server: " + line.substr(std::min<size_t>(4, line.size())));
        if (w.empty() || w[0] != word)
            throw BenchError("unexpected control message '" + line + "' (wanted " + word + ")");
        return w;
    }
    Measurement run_spec(const Spec &s);
    // Connection set-up mode: one round of o_.connections connections.
    Measurement run_connections();
    Report connections_report();
    // A report with this run's header fields filled in.
    Report new_report() const;
    // Ends the run: BYE, the spawned server reaped, other processes' CPU use recorded (and
    // warned about when it makes the figures noisy).
    void finish(Report &rep, const ForeignLoad &load);
    PhaseResult run_phase(Session &s, Phase ph, uint64_t n) {
        ctl_->send(std::string("PHASE ") + (ph == Phase::Lat ? "lat " : "bw ") + std::to_string(n));
        expect("GO");
        server_done_ = false;
        PhaseResult r = s.run(ph, n);
        if (!server_done_) expect("DONE");  // else it came while we spun (abort_)
        return r;
    }
    uint64_t warm_count(Phase ph, size_t size) const;
    uint64_t sized_count(Phase ph, size_t size, const PhaseResult &warm) const;

    const Options &o_;
    std::string transport_;
    unsigned window_;
    std::string host_;
    uint16_t port_ = 0;
    std::string endpoint_;
    uint16_t raw_port_ = 0;
    std::unique_ptr<Connector> connector_;
    std::unique_ptr<Rnic> rnic_;
    // Destroyed in reverse: the control connection closes first, so the server process
    // ends before it is waited for.
    std::optional<ServerProcess> child_;
    std::optional<ControlChannel> ctl_;
    AbortCheck abort_;
    bool server_done_ = false;  // the server's DONE of the phase under way arrived
};

uint64_t Client::warm_count(Phase ph, size_t size) const {
    if (o_.iters) return std::clamp<uint64_t>(o_.iters / 10, 1, 1000);
    if (ph == Phase::Lat) return size >= (size_t{1} << 20) ? 20 : size >= 65536 ? 50 : 200;
    uint64_t k = size >= (size_t{1} << 20) ? 64 : size >= 65536 ? 256 : 2000;
    return std::max<uint64_t>(k, 2ull * window_);
}

uint64_t Client::sized_count(Phase ph, size_t size, const PhaseResult &warm) const {
    uint64_t lo = ph == Phase::Lat ? 100 : 4ull * window_;
    uint64_t hi = std::max(lo, default_iters(size));
    if (warm.ops == 0 || warm.seconds <= 0) return lo;
    double per_op = warm.seconds / static_cast<double>(warm.ops);
    double n = o_.seconds / per_op;
    return std::clamp<uint64_t>(static_cast<uint64_t>(n), lo, hi);
}

Measurement Client::run_spec(const Spec &s) {
    std::unique_ptr<Session> session;
    if (s.kind == Kind::Rdma) {
        ctl_->send(std::string("SETUP rdma ") + op_name(s.op) + " " + std::to_string(s.size) + " " +
                   std::to_string(window_) + " " + o_.wait.lat_word() +
                   (o_.wait.bw_yield ? " yield" : " spin"));
        expect("OK");
        auto rs =
            std::make_unique<RdmaSession>(*rnic_, s.op, s.size, window_, o_.wait, false, &abort_);
        rs->start(connector_->connect(host_, endpoint_, rs->private_data(), kSetupTimeout));
        session = std::move(rs);
    } else {
        bool pp = s.kind == Kind::RawPingPong;
        ctl_->send(std::string("SETUP ") + (pp ? "rawpp " : "rawstream ") + std::to_string(s.size));
        expect("OK");
        Fd sock = tcp_connect(resolve(host_, raw_port_, false), kSetupTimeout);
        session = std::make_unique<RawTcpSession>(std::move(sock), pp, s.size, false, &abort_);
    }
    expect("READY");
    Measurement m;
    for (Phase ph : {Phase::Lat, Phase::Bw}) {
        if (!session->has(ph)) continue;
        PhaseResult warm = run_phase(*session, ph, warm_count(ph, s.size));
        uint64_t n = o_.iters ? o_.iters : sized_count(ph, s.size, warm);
        PhaseResult r = run_phase(*session, ph, n);
        if (ph == Phase::Lat) {
            m.has_lat = true;
            m.mean_us = mean(r.lat_us);
            m.p50_us = percentile(r.lat_us, 0.5);
            m.p99_us = percentile(r.lat_us, 0.99);
            m.lat_iters = n;
        } else {
            m.has_bw = true;
            m.gbps = static_cast<double>(r.bytes) / r.seconds / 1e9;
            m.mops = static_cast<double>(r.ops) / r.seconds / 1e6;
            m.bw_iters = n;
        }
    }
    session.reset();
    ctl_->send("TEARDOWN");
    expect("OK");
    return m;
}

Measurement Client::run_connections() {
    const size_t n = o_.connections;
    ensure_descriptors_for(n);
    QpSet qps(*rnic_, n);  // created before the clock starts, as dtestcm's endpoints are
    ctl_->send("SETUP conns " + std::to_string(n));
    expect("OK");
    const auto mine = QpSet::private_data(false);
    auto t0 = Clock::now();
    for (size_t done = 0; done < n;) {
        size_t b = std::min<size_t>(o_.burst, n - done);
        auto links = connector_->connect_many(host_, endpoint_, b, mine, kSetupTimeout);
        for (auto &link : links) {
            if (!QpSet::peer_data_ok(link.peer_data(), true))
                throw BenchError("connection " + std::to_string(done + 1) +
                                 ": the server's private data is not dtestcm's answer");
            qps.start(done++, std::move(link));
        }
    }
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    expect("READY");  // the server has every QP in RTS too
    ctl_->send("TEARDOWN");
    expect("OK");
    Measurement m;
    m.has_lat = m.has_bw = true;
    m.p50_us = m.p99_us = m.mean_us = secs * 1e6 / static_cast<double>(n);
    m.mops = static_cast<double>(n) / secs / 1e6;
    m.lat_iters = m.bw_iters = n;
    return m;
}

Report Client::new_report() const {
    Report rep;
    rep.transport = transport_;
    rep.describe = connector_->describe();
    rep.where = o_.role == Role::Both
                    ? "client and server processes on 127.0.0.1 (server started by this command)"
                    : "client of the server at " + host_ + " port " + std::to_string(port_);
    rep.rounds = o_.rounds ? o_.rounds : 3;
    return rep;
}

void Client::finish(Report &rep, const ForeignLoad &load) {
    ctl_->send("BYE");
    expect("OK");
    ctl_.reset();
    if (child_ && !child_->stop())
        std::fprintf(stderr, "softrnic: warning: the server process did not exit cleanly\n");
    if (!child_) return;
    rep.foreign_cpus = load.cpus();
    if (rep.foreign_cpus >= 0.2) {
        char b[200];
        std::snprintf(b, sizeof b,
                      "WARNING:   other processes kept %.1f CPUs busy on average during this run:"
                      " the figures are noisy.",
                      rep.foreign_cpus);
        rep.notes.push_back(b);
        rep.warnings.push_back(b);
    }
}

Report Client::connections_report() {
    Report rep = new_report();
    rep.sizing = "connection set-up: " + std::to_string(o_.connections) +
                 " connections per round in bursts of " + std::to_string(o_.burst);
    Row row;
    row.name = "connect";
    row.label = "connect";
    row.size = o_.connections;
    row.lat_kind = "per connection";
    row.no_bytes = true;
    Progress bar(rep.rounds, o_.progress);
    for (unsigned r = 0; r < rep.rounds; ++r) {
        bar.step("connect round " + std::to_string(r + 1));
        row.rounds.push_back(run_connections());
    }
    bar.finish();
    rep.rows.push_back(std::move(row));
    rep.notes = {
        "connect: the client's time from its first connect to its last QP in RTS, divided by",
        "         the connections (bytes column: how many; p50 = p99: the round's mean);",
        "         Mmsg/s: million connections per second. dtestcm's pattern: connects in",
        "         bursts, each burst waited for; the server accepts each request in turn; every",
        "         QP created beforehand; 48 bytes of private data each way, checked."};
    return rep;
}

const char *op_label(Op op) {
    switch (op) {
        case Op::Send:
            return "send/recv";
        case Op::Write:
            return "RDMA write";
        default:
            return "RDMA read";
    }
}

Report Client::run() {
    connector_ = make_connector(transport_, connector_config(o_));
    if (o_.role == Role::Both) {
        child_.emplace(o_, transport_);
        host_ = "127.0.0.1";
        port_ = child_->port();
    } else {
        host_ = o_.host;
        port_ = o_.port_set ? o_.port : kDefaultPort;
    }
    {
        // Dial every address of the host (a name may resolve to ::1 first while the server
        // listens on IPv4 only), then stick to the one that answered for the data paths.
        auto addrs = resolve_all(host_, port_);
        size_t used = 0;
        ctl_.emplace(tcp_connect(addrs, std::chrono::seconds(15), &used));
        host_ = numeric_host(addrs[used]);
    }
    abort_ = [this] {
        if (!ctl_->pending()) return;
        std::string msg = "closed the control connection";
        try {
            msg = ctl_->recv(std::chrono::milliseconds(200));
            // The server's side of the phase ended before ours: run_phase needs no more.
            if (msg == "DONE" && !server_done_) {
                server_done_ = true;
                return;
            }
            if (msg.rfind("ERR ", 0) == 0) msg = msg.substr(4);
        } catch (const BenchError &) {
        }
        throw BenchError("server: " + msg);
    };
    ctl_->send("HELLO " + std::to_string(kProtocol) + " " + transport_);
    auto hello = expect("OK");
    if (hello.size() < 3) throw BenchError("malformed HELLO answer");
    endpoint_ = hello[1];
    raw_port_ = static_cast<uint16_t>(parse_u64(hello[2], "raw port"));
    rnic_ = std::make_unique<Rnic>("bench-client-" + std::to_string(::getpid()));
    if (o_.connections) {
        ForeignLoad load;
        Report rep = connections_report();
        finish(rep, load);
        return rep;
    }

    // The report's rows: softrnic first, references after; the run order (`plan`) puts
    // each reference next to the softrnic row it is compared with.
    Report rep = new_report();
    rep.window = window_;
    rep.sizing = o_.iters ? std::to_string(o_.iters) +
                                " operations per measurement, after a "
                                "warm-up"
                          : "each measurement sized to ~" +
                                std::to_string(o_.seconds).substr(0, 4) + " s by its warm-up";
    std::vector<Spec> plan;
    std::vector<size_t> row_of;
    std::optional<size_t> send8, write1m, rawpp, rawstream;
    for (Op op : o_.ops)
        for (size_t size : o_.sizes) {
            Row row;
            row.name = op_name(op);
            row.label = op_label(op);
            row.size = size;
            row.lat_kind = op == Op::Read ? "round-trip" : "one-way";
            if (op == Op::Send && size == kRawPingPongSize) send8 = rep.rows.size();
            if (op == Op::Write && size == kRawStreamSize) write1m = rep.rows.size();
            plan.push_back({Kind::Rdma, op, size});
            row_of.push_back(rep.rows.size());
            rep.rows.push_back(row);
        }
    // The raw references belong to the transport: TCP sockets for tcp. (A shm transport
    // would bring a raw shared-memory ping-pong and memcpy here.)
    const bool refs = o_.refs && transport_ == "tcp";
    if (refs) {
        Row pp;
        pp.name = "raw_tcp_pingpong";
        pp.label = "raw TCP ping-pong";
        pp.size = kRawPingPongSize;
        pp.lat_kind = "one-way";
        pp.reference = true;
        rawpp = rep.rows.size();
        rep.rows.push_back(pp);
        Row st;
        st.name = "raw_tcp_stream";
        st.label = "raw TCP stream";
        st.size = kRawStreamSize;
        st.reference = true;
        rawstream = rep.rows.size();
        rep.rows.push_back(st);
        // Raw ping-pong right before the 8 B send row, raw stream right after the 1 MiB
        // write row (or at the ends of the list when those rows are not measured).
        size_t at = 0;
        if (send8)
            at = static_cast<size_t>(std::find(row_of.begin(), row_of.end(), *send8) -
                                     row_of.begin());
        plan.insert(plan.begin() + static_cast<long>(at),
                    {Kind::RawPingPong, Op::Send, kRawPingPongSize});
        row_of.insert(row_of.begin() + static_cast<long>(at), *rawpp);
        at = plan.size();
        if (write1m)
            at = static_cast<size_t>(std::find(row_of.begin(), row_of.end(), *write1m) -
                                     row_of.begin()) +
                 1;
        plan.insert(plan.begin() + static_cast<long>(at),
                    {Kind::RawStream, Op::Write, kRawStreamSize});
        row_of.insert(row_of.begin() + static_cast<long>(at), *rawstream);
    }

    ForeignLoad load;
    Progress progress(rep.rounds * plan.size(), o_.progress);
    for (unsigned r = 0; r < rep.rounds; ++r) {
        for (size_t k = 0; k < plan.size(); ++k) {
            size_t i = r % 2 ? plan.size() - 1 - k : k;
            const Spec &s = plan[i];
            Row &row = rep.rows[row_of[i]];
            progress.step("round " + std::to_string(r + 1) + ": " + row.label + " " +
                          format_size(s.size));
            row.rounds.push_back(run_spec(s));
        }
    }
    progress.finish();

    auto paired = [&](std::optional<size_t> a, std::optional<size_t> b, bool lat) {
        std::optional<Spread> out;
        if (!a || !b) return out;
        std::vector<double> v;
        for (unsigned r = 0; r < rep.rounds; ++r) {
            const Measurement &x = rep.rows[*a].rounds[r], &y = rep.rows[*b].rounds[r];
            double den = lat ? y.p50_us : y.gbps;
            if (den > 0) v.push_back((lat ? x.p50_us : x.gbps) / den);
        }
        if (!v.empty()) out = spread(v);
        return out;
    };
    if (refs) {
        rep.ratios.push_back({"latency",
                              "softrnic 8 B send ping-pong / raw TCP ping-pong (one-way p50)",
                              paired(send8, rawpp, true), 1.3, true});
        rep.ratios.push_back({"bandwidth", "softrnic 1 MiB RDMA write / raw TCP stream (GB/s)",
                              paired(write1m, rawstream, false), 0.85, false});
    }
    const std::string w = std::to_string(window_);
    rep.notes = {
        "latency:   one-way = round trip / 2 of a ping-pong whose waiting side busy-polls: its",
        "           CQ (ri_cq_poll) for send/recv; the last byte of its buffer (plus ri_cq_poll)",
        "           for RDMA write, like ib_write_lat; recv(MSG_DONTWAIT) for raw TCP.",
        "           round-trip = one RDMA read, post to completion, busy-polled (not halved).",
        "bandwidth: GB/s = 1e9 B/s, " + w + " operations in flight, timed by the client until",
        "           the data is known placed: send = the server's last credit (it reposts each",
        "           receive and credits every " + w + "), write = a 1-byte RDMA read behind the",
        "           writes, read = the completions. The server is passive for write/read",
        std::string("           streams. Waiting: ") +
            (o_.wait.bw_yield ? "busy-poll, sched_yield() on an empty CQ (--bw-wait)."
                              : "busy-poll only (--bw-wait spin).") +
            " Mmsg/s: same run.",
        "raw TCP:   8 B ping-pong, TCP_NODELAY, busy-poll recv on both sides; 1 MiB stream of",
        "           blocking send()s acknowledged once at the end. Same processes, same rounds."};
    if (o_.wait.lat_yield)
        rep.notes.push_back(
            "NOTE:      --lat-wait yield: softrnic's latency loops yield the CPU when their poll "
            "is empty; the raw TCP ping-pong still spins, so the latency ratio is not a like "
            "for like comparison.");
    finish(rep, load);
    return rep;
}

}  // namespace

int run_client(const Options &o) {
    Client c(o, resolved_transport(o));
    Report rep = c.run();
    if (o.json)
        print_json(rep);
    else
        print_table(rep);
    return 0;
}

}  // namespace softrnic::bench
