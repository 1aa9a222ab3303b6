// 1,000 concurrent connections between two processes over 127.0.0.1: the connection
// manager sets them all up (MPA v2 + P2P RTR), each gets a QP in RTS on both sides (one
// progress engine per RNIC instance serves them all), and every connection carries one
// message. Prints the set-up time and rate; asserts only correctness.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "../rnicpi/fixture.hpp"
#include "cm/connection_manager.hpp"
#include "transport/tcp/tcp_channel.hpp"

using namespace rt;
namespace cm = softrnic::cm;
namespace tcp = softrnic::transport::tcp;

namespace {

constexpr int kConns = 1000;
constexpr auto kDeadline = std::chrono::seconds(60);

ri_api_return_t to_rts(Qp *q, ri_llp_stream_handle_t h) {
    ri_err_data_t e = 0;
    ri_qp_attr_t at{};
    at.state = RI_QP_STATE_READY_TO_SEND;
    at.qp_xport.qp_iwarp.llp_stream_handle = h;
    return ri_qp_modify(q->owner->rnic, q->h,
                        QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
}

// Kills and reaps the child on every path out of the test.
struct Child {
    pid_t pid = -1;
    ~Child() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
    int wait_exit() {
        int st = 0;
        if (::waitpid(pid, &st, 0) != pid) return -1;
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
};

bool read_full(int fd, void *p, size_t n, int timeout_ms) {
    auto *b = static_cast<uint8_t *>(p);
    while (n) {
        pollfd pf{fd, POLLIN, 0};
        if (::poll(&pf, 1, timeout_ms) != 1) return false;
        ssize_t r = ::read(fd, b, n);
        if (r <= 0) return false;
        b += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

// The responder process: accepts every request with a fresh QP (receive posted first),
// reports its port, then counts arrivals. Exit code 0 when all kConns messages came.
int run_responder(int ctl) {
    Rnic rb{"scale-srv"};
    if (!rb.ok()) return 10;
    Cq *scq = rb.new_cq(4 * kConns);
    Cq *rcq = rb.new_cq(4 * kConns);
    if (!scq || !rcq) return 11;
    Buf inbox(8 * kConns, 0);
    Mr *mi = rb.reg(inbox, kLocalRW);
    if (!mi) return 12;
    std::mutex mu;
    std::map<cm::ConnId, Qp *> qps;  // CM thread only
    int slot = 0, bad = 0;
    cm::ConnectionManager *mgr = nullptr;
    cm::ConnectionManager srv_cm([&](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            QpOpts o;
            o.scq = scq;
            o.rcq = rcq;
            o.sq = o.rq = 4;
            Qp *q = rb.new_qp(o);
            ri_data_seg_t s = sge(inbox.data() + 8 * (slot % kConns), 8, mi->ltag);
            if (!q || post_recv(q, static_cast<uint64_t>(slot), &s, 1) != RI_RET_SUCCESS ||
                mgr->accept(r->id, {}) != cm::CmStatus::Ok) {
                ++bad;
                return;
            }
            ++slot;
            qps[r->id] = q;
        } else if (auto *est = std::get_if<cm::Established>(&e)) {
            auto it = qps.find(est->id);
            if (it == qps.end() || to_rts(it->second, est->llp) != RI_RET_SUCCESS) ++bad;
        } else {
            ++bad;
        }
    });
    mgr = &srv_cm;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    auto l = srv_cm.listen(reinterpret_cast<sockaddr *>(&a), sizeof a, 4096);
    if (!l.ok()) return 13;
    auto la = srv_cm.local_address(l.value);
    if (!la.ok()) return 14;
    uint16_t port = ntohs(reinterpret_cast<const sockaddr_in *>(&la.value.storage)->sin_port);
    if (::write(ctl, &port, sizeof port) != sizeof port) return 15;
    int got = 0;
    auto end = Clock::now() + kDeadline;
    std::vector<ri_wc_t> wcs(256);
    while (got < kConns && Clock::now() < end) {
        uint_t n = static_cast<uint_t>(wcs.size());
        if (poll_raw(rb, rcq, wcs.data(), &n) == RI_RET_SUCCESS) {
            for (uint_t i = 0; i < n; ++i)
                if (wcs[i].rc_wc.op_status == RI_WC_STATUS_SUCCESS &&
                    wcs[i].rc_wc.bytes_transferred == 8)
                    ++got;
                else
                    ++bad;
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    int32_t report[2] = {got, bad};
    if (::write(ctl, report, sizeof report) != sizeof report) return 16;
    // Stay up until the initiator has seen the report (EOF on the control pipe).
    char c;
    read_full(ctl, &c, 1, 30000);
    return got == kConns && bad == 0 ? 0 : 1;
}

TEST(CmScale, ThousandConnectionsBetweenTwoProcesses) {
    if (!raise_fd_limit(4 * kConns))
        GTEST_SKIP() << "the hard descriptor limit is below " << 4 * kConns;
    int ctl[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl), 0);
    Child child;
    child.pid = ::fork();
    ASSERT_GE(child.pid, 0);
    if (child.pid == 0) {
        ::close(ctl[0]);
        ::_exit(run_responder(ctl[1]));
    }
    ::close(ctl[1]);
    uint16_t port = 0;
    ASSERT_TRUE(read_full(ctl[0], &port, sizeof port, 30000)) << "responder did not start";

    std::vector<std::unique_ptr<Buf>> keep;
    Rnic ra{"scale-cli"};
    ASSERT_TRUE(ra.ok());
    Cq *scq = ra.new_cq(4 * kConns);
    Cq *rcq = ra.new_cq(4 * kConns);
    ASSERT_TRUE(scq && rcq);
    keep.push_back(std::make_unique<Buf>(8 * kConns));
    Buf &outbox = *keep.back();
    outbox.fill(5);
    Mr *mo = ra.reg(outbox, kLocalRW);
    ASSERT_TRUE(mo);

    std::mutex mu;
    std::condition_variable cv;
    std::vector<cm::Established> established;
    int failures = 0;
    cm::ConnectionManager cli_cm([&](cm::Event &e) {
        std::lock_guard lk(mu);
        if (auto *est = std::get_if<cm::Established>(&e))
            established.push_back(std::move(*est));
        else
            ++failures;
        cv.notify_all();
    });
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    dst.sin_port = htons(port);
    cm::ConnParams p;
    p.timeout = std::chrono::seconds(30);

    auto t0 = Clock::now();
    std::map<cm::ConnId, int> index;
    for (int i = 0; i < kConns; ++i) {
        auto c = cli_cm.connect(reinterpret_cast<sockaddr *>(&dst), sizeof dst, p);
        ASSERT_TRUE(c.ok()) << "connect " << i << ": " << cm::to_string(c.status) << " errno "
                            << c.sys_errno;
        std::lock_guard lk(mu);
        index[c.value] = i;
    }
    {
        std::unique_lock lk(mu);
        ASSERT_TRUE(cv.wait_for(lk, kDeadline, [&] {
            return static_cast<int>(established.size()) + failures >= kConns;
        }));
        ASSERT_EQ(failures, 0);
    }
    auto t_cm = Clock::now();
    std::vector<Qp *> qps;
    for (auto &est : established) {
        QpOpts o;
        o.scq = scq;
        o.rcq = rcq;
        o.sq = o.rq = 4;
        Qp *q = ra.new_qp(o);
        ASSERT_TRUE(q);
        ASSERT_EQ(to_rts(q, est.llp), RI_RET_SUCCESS);
        qps.push_back(q);
    }
    auto t_rts = Clock::now();
    for (size_t i = 0; i < qps.size(); ++i) {
        ri_data_seg_t s = sge(outbox.data() + 8 * i, 8, mo->ltag);
        ASSERT_EQ(post_send(qps[i], RI_WR_TYPE_SEND, kSig, i, &s, 1), RI_RET_SUCCESS);
    }
    auto sent = poll_n(ra, scq, kConns, kDeadline);
    ASSERT_EQ(sent.size(), static_cast<size_t>(kConns));
    for (auto &w : sent)
        ASSERT_EQ(w.op_status, RI_WC_STATUS_SUCCESS);
    int32_t report[2] = {-1, -1};
    ASSERT_TRUE(read_full(ctl[0], report, sizeof report, 70000)) << "no report from responder";
    auto t_done = Clock::now();
    ::close(ctl[0]);  // lets the responder exit
    EXPECT_EQ(child.wait_exit(), 0);
    EXPECT_EQ(report[0], kConns);
    EXPECT_EQ(report[1], 0);

    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::printf(
        "[ cm scale ] %d connections, two processes, 127.0.0.1: MPA+RTR set-up %.1f ms "
        "(%.0f conn/s, %.1f us each), QPs to RTS %.1f ms, one message on each %.1f ms\n",
        kConns, ms(t_cm - t0), kConns / (ms(t_cm - t0) / 1000.0), 1000.0 * ms(t_cm - t0) / kConns,
        ms(t_rts - t_cm), ms(t_done - t_rts));
}

}  // namespace
