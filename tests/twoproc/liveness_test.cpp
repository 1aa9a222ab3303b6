// Failure detection over TCP/iWARP: a peer whose link goes down sends no FIN and no RST,
// so only TCP's own timers can tell (keepalive while idle, TCP_USER_TIMEOUT while data is
// unacknowledged; tcp_channel.hpp, "Failure detection"). The peer runs in one network
// namespace, this process's socket lives in another, each has a veth link to a bridge in a
// third (the switch); then the peer's link is taken down, ours staying up. With
// SOFTRNIC_TCP_TIMEOUT_MS at 2 s, the idle and the busy connection must both break within the bound
// plus a margin, with the QP in Error, RI_EVENT_QP_LLQ_CONNECTION_LOST raised and every outstanding
// WR flushed.
//
// Needs root and `ip netns` (skipped otherwise). The namespaces are deleted on every
// exit path (NetNs's destructor; a run killed outright leaves them to the next run's
// clean-up of stale names).
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "harness.hpp"

using namespace rt;
using namespace twoproc;
namespace cm = softrnic::cm;

namespace {

constexpr uint32_t kBoundMs = 2000;
// The keepalive timer ticks once a second at this bound, so an idle connection breaks up
// to a second late; the rest is for a loaded 2-vCPU machine.
constexpr std::chrono::milliseconds kMargin{3000};
constexpr std::chrono::milliseconds kDetectWithin{kBoundMs + kMargin.count()};

constexpr const char *kPeerAddr = "10.213.0.1";  // the peer's end (namespace A)
constexpr const char *kOurAddr = "10.213.0.2";   // this process's end (namespace B)

// Upper bound, in MiB, of what TCP holds for a peer that acknowledges nothing: the largest
// send buffer (tcp_wmem[2]) plus 2 MiB of slack.
uint64_t send_buffer_mib() {
    uint64_t a = 0, b = 0, c = 0;
    if (FILE *f = std::fopen("/proc/sys/net/ipv4/tcp_wmem", "r")) {
        if (std::fscanf(f, "%lu %lu %lu", &a, &b, &c) != 3) c = 0;
        std::fclose(f);
    }
    return (c ? c : uint64_t{64} << 20) / (1 << 20) + 2;
}

// This thread in another network namespace until destroyed (sockets keep the namespace
// they were created in, so only their creation needs to happen inside).
class ScopedNetns {
  public:
    explicit ScopedNetns(const std::string &path) {
        self_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        entered_ = self_ >= 0 && fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0;
        if (fd >= 0) ::close(fd);
    }
    ~ScopedNetns() {
        if (entered_ && ::setns(self_, CLONE_NEWNET) != 0) std::abort();  // never stay there
        if (self_ >= 0) ::close(self_);
    }
    ScopedNetns(const ScopedNetns &) = delete;
    ScopedNetns &operator=(const ScopedNetns &) = delete;
    bool entered() const { return entered_; }

  private:
    int self_ = -1;
    bool entered_ = false;
};

class TwoProcLiveness : public TwoProcTest {
  protected:
    void SetUp() override {
        // Read by each side when its connection is set up; the peer inherits it.
        ::setenv("SOFTRNIC_TCP_TIMEOUT_MS", std::to_string(kBoundMs).c_str(), 1);
        ASSERT_NO_FATAL_FAILURE(TwoProcTest::SetUp());
        if (IsSkipped()) return;
        std::string why;
        ns_peer_ = NetNs::create(&why);
        if (!ns_peer_) GTEST_SKIP() << why;
        ns_ours_ = NetNs::create(&why);
        if (!ns_ours_) GTEST_SKIP() << why;
        ns_switch_ = NetNs::create(&why);
        if (!ns_switch_) GTEST_SKIP() << why;
        // Each end's link goes to a bridge in the third namespace (the switch): taking the
        // peer's link down leaves ours up, as when a host's cable is pulled.
        const std::string sw = ns_switch_->name();
        if (!ns_switch_->ip({"link", "add", "br0", "type", "bridge"}, &why) ||
            !ns_switch_->ip({"link", "set", "br0", "up"}, &why) ||
            !ns_peer_->ip({"link", "add", "la", "type", "veth", "peer", "name", "pa", "netns", sw},
                          &why) ||
            !ns_ours_->ip({"link", "add", "lb", "type", "veth", "peer", "name", "pb", "netns", sw},
                          &why) ||
            !ns_switch_->ip({"link", "set", "pa", "master", "br0"}, &why) ||
            !ns_switch_->ip({"link", "set", "pb", "master", "br0"}, &why) ||
            !ns_switch_->ip({"link", "set", "pa", "up"}, &why) ||
            !ns_switch_->ip({"link", "set", "pb", "up"}, &why) ||
            !ns_peer_->ip({"addr", "add", std::string(kPeerAddr) + "/24", "dev", "la"}, &why) ||
            !ns_ours_->ip({"addr", "add", std::string(kOurAddr) + "/24", "dev", "lb"}, &why) ||
            !ns_peer_->ip({"link", "set", "la", "up"}, &why) ||
            !ns_ours_->ip({"link", "set", "lb", "up"}, &why) ||
            !ns_peer_->ip({"link", "set", "lo", "up"}, &why) ||
            !ns_ours_->ip({"link", "set", "lo", "up"}, &why))
            GTEST_SKIP() << "cannot join two namespaces through a bridge: " << why;
    }

    void TearDown() override {
        TwoProcTest::TearDown();  // the peer exits before its namespace goes
        ns_peer_.reset();
        ns_ours_.reset();
        ns_switch_.reset();
        ::unsetenv("SOFTRNIC_TCP_TIMEOUT_MS");
    }

    // The peer (in its namespace) listens on its link's address; this process connects from
    // the other namespace; both QPs go to RTS.
    void connect_through_switch() {
        ASSERT_NO_FATAL_FAILURE(start_peer({ns_peer_->path()}));
        ASSERT_NO_FATAL_FAILURE(open_both());
        const std::string pd = to_hex(bytes_of("liveness responder"));
        Reply l = pc(std::string("listen ") + kPeerAddr + " 0 " + (crc() ? "1" : "0") + " " + pd +
                     " accept");
        ASSERT_TRUE(l.ok) << l;
        auto dst = parse_address(kPeerAddr, static_cast<uint16_t>(l.u64("port")));
        ASSERT_TRUE(dst);
        cm::ConnParams cp;
        cp.private_data = bytes_of("liveness initiator");
        cp.crc = crc();
        cm::CmResult<cm::ConnId> c{};
        {
            ScopedNetns in_ours(ns_ours_->path());
            ASSERT_TRUE(in_ours.entered()) << "setns: " << std::strerror(errno);
            c = cm_->connect(dst->get(), dst->len, cp);
        }
        ASSERT_TRUE(c.ok()) << cm::to_string(c.status);
        auto est = log_.take<cm::Established>(c.value);
        ASSERT_TRUE(est) << "no Established event for the connection to the peer";
        ri_api_return_t r = to_rts(qp_, est->llp);
        if (r != RI_RET_SUCCESS) cm::release_unclaimed(est->llp);
        ASSERT_EQ(r, RI_RET_SUCCESS);
        Reply w = pc("wait_conn 20000");
        ASSERT_TRUE(w.ok) << w;
        ASSERT_EQ(w.str("event"), "established") << w;
    }

    // The peer's end goes down: nothing it sent or would send reaches us, and nothing of
    // ours reaches it. No FIN, no RST.
    Clock::time_point link_down() {
        std::string why;
        EXPECT_TRUE(ns_peer_->ip({"link", "set", "la", "down"}, &why)) << why;
        return Clock::now();
    }

    Mr *local_reg(Buf &b, unsigned access = kLocalRW) {
        Mr *m = rnic_->reg(b, access);
        EXPECT_NE(m, nullptr);
        return m;
    }
    void post_local_receive(uint64_t id) {
        Buf &b = buf(64, 0x11);
        Mr *m = local_reg(b);
        ASSERT_NE(m, nullptr);
        ri_data_seg_t s = sge(b.data(), 64, m->ltag);
        ASSERT_EQ(post_recv(qp_, id, &s, 1), RI_RET_SUCCESS);
    }
    void expect_local_receive_flushed(uint64_t id) {
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->rcq, &wc, 2s)) << "receive " << id << " never completed";
        EXPECT_EQ(wc.id, id);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    }

    // Waits (bounded by kDetectWithin from `t0`) for the lost-connection event; returns the
    // time it took, or a negative duration when it never came.
    std::chrono::milliseconds await_lost(Clock::time_point t0) {
        const auto left = kDetectWithin -
                          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
        const bool seen =
            wait_event(*rnic_, RI_EVENT_QP_LLQ_CONNECTION_LOST, qp_->os(),
                       std::max(left, std::chrono::milliseconds(0)) + std::chrono::milliseconds(1));
        if (!seen) return std::chrono::milliseconds(-1);
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    }

    // After the break: the QP is in Error, the event was the lost connection (not a reset
    // or a close: nothing came from the peer), and new work is flushed.
    void expect_broken(ri_data_seg_t s, const RemoteBuf &wb) {
        EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR, 2s)) << "QP state " << state_of(qp_);
        EXPECT_EQ(rnic_->rec.count_events(RI_EVENT_QP_LLQ_CONNECTION_LOST, qp_->os()), 1u)
            << rnic_->rec.describe_events();
        EXPECT_EQ(rnic_->rec.count_events(RI_EVENT_QP_LLQ_CONNECTION_RESET, qp_->os()), 0u);
        EXPECT_EQ(rnic_->rec.count_events(RI_EVENT_TYPE_BAD_CLOSE, qp_->os()), 0u);
        EXPECT_EQ(rnic_->rec.count_events(RI_EVENT_QP_LLQ_CLOSE_COMPLETE, qp_->os()), 0u);
        ASSERT_EQ(post_write(qp_, kSig, 0xABC, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc, 2s));
        EXPECT_EQ(wc.id, 0xABCu);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    }

    std::unique_ptr<NetNs> ns_peer_;
    std::unique_ptr<NetNs> ns_ours_;
    std::unique_ptr<NetNs> ns_switch_;
};

// An idle connection (receives posted, nothing in flight) to a peer whose link went down
// breaks through the keepalive probes within the bound.
TEST_P(TwoProcLiveness, IdleConnectionBreaksWithinBound) {
    ASSERT_NO_FATAL_FAILURE(connect_through_switch());
    constexpr size_t kLen = 4096;
    RemoteBuf wb =
        peer_buf("wb", kLen, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ);
    Buf &src = buf(kLen, 3);
    Mr *ms = local_reg(src);
    ASSERT_NE(ms, nullptr);
    ri_data_seg_t s = sge(src.data(), kLen, ms->ltag);
    // The link works: a write, then a read behind it that only completes once the peer
    // placed the write.
    ASSERT_EQ(post_write(qp_, kSig, 1, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
    ASSERT_EQ(post_read(qp_, kSig, 2, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
    for (uint64_t id = 1; id <= 2; ++id) {
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc, 10s));
        EXPECT_EQ(wc.id, id);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    }
    ASSERT_NO_FATAL_FAILURE(post_local_receive(70));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(71));

    const auto t0 = link_down();
    const auto took = await_lost(t0);
    ASSERT_GE(took.count(), 0) << "no LLQ_CONNECTION_LOST within " << kDetectWithin.count()
                               << " ms of the link going down; events: "
                               << rnic_->rec.describe_events() << " QP state " << state_of(qp_);
    // Not before the peer had a chance to answer: half the bound (the first probe) at least.
    EXPECT_GE(took.count(), kBoundMs / 2);
    expect_local_receive_flushed(70);
    expect_local_receive_flushed(71);
    expect_broken(s, wb);
    std::printf("[ twoproc  ] idle connection, link down: lost after %lld ms (bound %u ms)\n",
                static_cast<long long>(took.count()), kBoundMs);
}

// This process streams 1 MiB RDMA Writes to the peer (32 in flight) when the peer's link
// goes down: data stays unacknowledged, TCP_USER_TIMEOUT ends the retransmissions within
// the bound. Every outstanding WR completes, in order (no success after a failure), those
// the kernel never took flushed.
TEST_P(TwoProcLiveness, BusyConnectionBreaksWithinBound) {
    ASSERT_NO_FATAL_FAILURE(connect_through_switch());
    constexpr size_t kLen = size_t{1} << 20;
    constexpr uint64_t kDepth = 32;
    RemoteBuf wb = peer_buf("wb", kLen, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_FALSE(HasFailure());
    ASSERT_NO_FATAL_FAILURE(post_local_receive(70));
    Buf &src = buf(kLen, 9);
    Mr *ms = local_reg(src);
    ASSERT_NE(ms, nullptr);
    ri_data_seg_t s = sge(src.data(), kLen, ms->ltag);

    uint64_t next = 1, done = 0;
    const auto until = Clock::now() + 300ms;
    while (Clock::now() < until) {
        while (next - 1 - done < kDepth) {
            ASSERT_EQ(post_write(qp_, kSig, next, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
            ++next;
        }
        ri_rc_wc_t wc{};
        if (!poll_one(*rnic_, qp_->scq, &wc, 20ms)) continue;
        ++done;
        ASSERT_EQ(wc.id, done);
        ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    }
    ASSERT_GT(done, 0u) << "nothing completed over the link";
    // The link goes down while the writes keep flowing.
    std::atomic<bool> down{false};
    Clock::time_point t0{};
    std::thread cut([&] {
        t0 = link_down();
        down.store(true, std::memory_order_release);
    });
    while (!down.load(std::memory_order_acquire)) {
        while (next - 1 - done < kDepth) {
            EXPECT_EQ(post_write(qp_, kSig, next, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
            ++next;
        }
        ri_rc_wc_t wc{};
        if (!poll_one(*rnic_, qp_->scq, &wc, 1ms)) continue;
        ++done;
        EXPECT_EQ(wc.id, done);
        if (wc.op_status != RI_WC_STATUS_SUCCESS) {
            ADD_FAILURE() << "WR " << wc.id << " failed (" << wc.op_status
                          << ") before the link went down";
            break;
        }
    }
    cut.join();
    ASSERT_FALSE(HasFailure());
    // What went to the kernel before the link went down completes as it should; the
    // progress context may still be reporting it (on 2 vCPUs `ip` took the CPU meanwhile).
    // Take those completions, then fill the queue again: the kernel's send buffer, full of
    // unacknowledged data, takes at most what it holds of the new writes.
    for (const auto settle = Clock::now() + 300ms; Clock::now() < settle;) {
        ri_rc_wc_t wc{};
        if (!poll_one(*rnic_, qp_->scq, &wc, 10ms)) continue;
        ++done;
        ASSERT_EQ(wc.id, done);
        ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS) << "WR " << wc.id;
    }
    while (next - 1 - done < kDepth) {
        ASSERT_EQ(post_write(qp_, kSig, next, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
        ++next;
    }
    const uint64_t outstanding = next - 1 - done;
    uint64_t failed = 0;
    for (uint64_t i = 0; i < outstanding; ++i) {
        ri_rc_wc_t wc{};
        const auto left = kDetectWithin - (Clock::now() - t0);
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc,
                             std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left),
                                      std::chrono::milliseconds(1))))
            << "WR " << done + 1 << " not completed within " << kDetectWithin.count()
            << " ms of the link going down; events: " << rnic_->rec.describe_events();
        ++done;
        EXPECT_EQ(wc.id, done);
        if (failed) {
            EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR)
                << "WR " << wc.id << " after the first failed one";
        } else if (wc.op_status != RI_WC_STATUS_SUCCESS) {
            EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
        }
        if (wc.op_status != RI_WC_STATUS_SUCCESS) ++failed;
    }
    const auto took = await_lost(t0);
    ASSERT_GE(took.count(), 0) << "no LLQ_CONNECTION_LOST within " << kDetectWithin.count()
                               << " ms; events: " << rnic_->rec.describe_events();
    const uint64_t kernel_mib = send_buffer_mib();
    EXPECT_GE(failed + kernel_mib, outstanding)
        << outstanding << " MiB in flight, the kernel holds at most " << kernel_mib << " MiB";
    expect_local_receive_flushed(70);
    expect_broken(s, wb);
    std::printf(
        "[ twoproc  ] busy connection (%llu x 1 MiB writes in flight), link down: lost after "
        "%lld ms (bound %u ms), %llu completed, %llu flushed\n",
        static_cast<unsigned long long>(outstanding), static_cast<long long>(took.count()),
        kBoundMs, static_cast<unsigned long long>(outstanding - failed),
        static_cast<unsigned long long>(failed));
}

// The peer streams RDMA Writes into this process (a passive target: nothing of ours is
// unacknowledged, so the keepalive probes find the loss) when its link goes down.
TEST_P(TwoProcLiveness, PassiveTargetOfBusyPeerBreaksWithinBound) {
    ASSERT_NO_FATAL_FAILURE(connect_through_switch());
    constexpr size_t kLen = size_t{1} << 20;
    Buf &target = buf(kLen);
    Mr *mt = local_reg(target, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_NE(mt, nullptr);
    ASSERT_NO_FATAL_FAILURE(post_local_receive(80));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(81));
    peer_buf("src", kLen, kLocalRW);
    Reply r = pc("stream src " + std::to_string(kLen) + " " + std::to_string(target.va()) + " " +
                 std::to_string(mt->rtag));
    ASSERT_TRUE(r.ok) << r;
    std::this_thread::sleep_for(100ms);

    const auto t0 = link_down();
    const auto took = await_lost(t0);
    ASSERT_GE(took.count(), 0) << "no LLQ_CONNECTION_LOST within " << kDetectWithin.count()
                               << " ms of the link going down; events: "
                               << rnic_->rec.describe_events() << " QP state " << state_of(qp_);
    expect_local_receive_flushed(80);
    expect_local_receive_flushed(81);
    EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR, 2s)) << "QP state " << state_of(qp_);
    EXPECT_EQ(rnic_->rec.count_events(RI_EVENT_QP_LLQ_CONNECTION_RESET, qp_->os()), 0u);
    EXPECT_TRUE(target.guards_intact());
    std::printf(
        "[ twoproc  ] passive target of a streaming peer, link down: lost after %lld ms "
        "(bound %u ms)\n",
        static_cast<long long>(took.count()), kBoundMs);
}

// A connection still being set up: the peer's request arrived and the ULP (this test) has
// not answered it, so the connection manager holds the socket with no deadline of its own.
// The peer's link goes down: the manager reports the connection failed within the bound,
// with the socket's error (the peer timed out), not a reset.
TEST_P(TwoProcLiveness, UnansweredRequestFailsWithinBound) {
    ASSERT_NO_FATAL_FAILURE(start_peer({ns_peer_->path()}));
    auto a = parse_address(kOurAddr, 0);
    ASSERT_TRUE(a);
    cm::CmResult<cm::ConnId> l{};
    {
        ScopedNetns in_ours(ns_ours_->path());
        ASSERT_TRUE(in_ours.entered()) << "setns: " << std::strerror(errno);
        l = cm_->listen(a->get(), a->len, 16);
    }
    ASSERT_TRUE(l.ok()) << cm::to_string(l.status);
    auto la = cm_->local_address(l.value);
    ASSERT_TRUE(la.ok());
    // The peer's own connect deadline is longer than the bound, so whatever it sees, it
    // answers its command by then.
    std::string why;
    const std::string cmd = std::string("connect ") + kOurAddr + " " +
                            std::to_string(port_of(la.value)) + " " + (crc() ? "1" : "0") + " " +
                            to_hex(bytes_of("left unanswered")) + " 8000";
    const uint64_t seq = peer_->send(cmd, &why);
    ASSERT_NE(seq, 0u) << why;
    auto req = log_.take<cm::ConnectRequest>(0, 10s);
    ASSERT_TRUE(req) << "no ConnectRequest from the peer";

    const auto t0 = link_down();
    auto f = log_.take<cm::Failed>(req->id, kDetectWithin);
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    ASSERT_TRUE(f) << "no Failed event within " << kDetectWithin.count()
                   << " ms of the link going down";
    EXPECT_TRUE(f->sys_errno == ETIMEDOUT || f->sys_errno == EHOSTUNREACH)
        << "errno " << f->sys_errno << " (" << std::strerror(f->sys_errno) << ")";
    EXPECT_GE(took, kBoundMs / 2);
    Reply r = peer_->wait(seq, cmd, 20s);
    EXPECT_TRUE(r.ok) << r;
    EXPECT_NE(r.str("event"), "established") << r;
    EXPECT_EQ(cm_->stop_listen(l.value), cm::CmStatus::Ok);
    std::printf(
        "[ twoproc  ] connect request left unanswered, link down: failed after %lld ms (%s)\n",
        static_cast<long long>(took), std::strerror(f->sys_errno));
}

INSTANTIATE_TEST_SUITE_P(Tcp, TwoProcLiveness, ::testing::Values(Mode{AF_INET, true}), mode_name);

}  // namespace
