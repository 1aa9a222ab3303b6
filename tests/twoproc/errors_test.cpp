// Error paths across the wire between two processes (127.0.0.1 and ::1, CRC on and off):
// protection faults detected by the remote responder (bad STag, out of bounds, no remote
// read right, no receive posted) and the Terminate they produce, a Terminate received out
// of the blue, MPA reject with private data in both directions, refused and timed-out
// connects, and a peer process killed with SIGKILL in the middle of a transfer.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "harness.hpp"

using namespace rt;
using namespace twoproc;
namespace cm = softrnic::cm;

namespace {

constexpr size_t kTarget = 4096;
constexpr uint64_t kTargetSeed = 77;

// Upper bound, in MiB, of what TCP can hold between a writer and a reader that stopped
// reading: the largest send buffer (tcp_wmem[2]) plus the largest receive buffer
// (tcp_rmem[2]), plus 2 MiB of slack.
uint64_t kernel_buffer_mib() {
    auto third = [](const char *path) -> uint64_t {
        uint64_t a = 0, b = 0, c = 0;
        if (FILE *f = std::fopen(path, "r")) {
            if (std::fscanf(f, "%lu %lu %lu", &a, &b, &c) != 3) c = 0;
            std::fclose(f);
        }
        return c ? c : uint64_t{64} << 20;  // unknown: assume large
    };
    return (third("/proc/sys/net/ipv4/tcp_wmem") + third("/proc/sys/net/ipv4/tcp_rmem")) /
               (1 << 20) +
           2;
}

bool is_broken_connection_event(ri_async_event_type_t t) {
    return t == RI_EVENT_QP_LLQ_CONNECTION_RESET || t == RI_EVENT_TYPE_BAD_CLOSE ||
           t == RI_EVENT_QP_LLQ_CONNECTION_LOST;
}

class TwoProcErrors : public TwoProcTest {
  protected:
    // The peer's guarded 4 KiB target (`access`), filled with a known pattern, plus a
    // small receive buffer for posting receives later.
    void peer_target(unsigned access) {
        target_ = peer_buf("t", kTarget, access);
        ASSERT_NE(target_.rtag, 0u);
        Reply r = pc("fill t " + std::to_string(kTargetSeed) + " -1 1 0 4096");
        ASSERT_TRUE(r.ok) << r;
        peer_buf("rb", 64, kLocalRW);
        ASSERT_FALSE(HasFailure());
    }
    void expect_target_untouched() {
        Reply r = pc("check t " + std::to_string(kTargetSeed) + " -1 1 0 4096");
        EXPECT_TRUE(r.ok) << "the peer's target changed: " << r;
    }
    Mr *local_reg(Buf &b, unsigned access = kLocalRW) {
        Mr *m = rnic_->reg(b, access);
        EXPECT_NE(m, nullptr);
        return m;
    }

    // The initiator side of a remote fault: the Terminate arrived (event, QP in Error, the
    // message recorded as remote with the expected layer/etype and error code).
    void expect_local_terminated(uint8_t layer_etype, uint8_t ecode) {
        EXPECT_TRUE(wait_event(*rnic_, RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, qp_->os()))
            << "local events: " << rnic_->rec.describe_events();
        EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR));
        ri_qp_attr_t a = local_query();
        const auto &iw = a.qp_xport.qp_iwarp;
        EXPECT_EQ(iw.is_terminate_local, 0);
        EXPECT_GE(iw.terminate_msg_length, 4u);
        EXPECT_EQ(static_cast<uint8_t>(iw.terminate_buffer[0]), layer_etype)
            << "Terminate layer/etype";
        EXPECT_EQ(static_cast<uint8_t>(iw.terminate_buffer[1]), ecode) << "Terminate error code";
    }
    // The responder side: its async event, Error, the Terminate it sent recorded as local.
    void expect_peer_terminated(ri_async_event_type_t ev, uint8_t layer_etype, uint8_t ecode) {
        Reply r = pc("event " + std::to_string(ev) + " 20000");
        EXPECT_TRUE(r.ok) << r;
        r = pc("wait_state " + std::to_string(RI_QP_STATE_ERROR) + " 20000");
        EXPECT_TRUE(r.ok) << r;
        r = pc("qp");
        ASSERT_TRUE(r.ok) << r;
        EXPECT_EQ(r.u64("tlocal"), 1u) << r;
        EXPECT_EQ(r.u64("t0"), layer_etype) << r;
        EXPECT_EQ(r.u64("t1"), ecode) << r;
    }
    // Both QPs are in Error: new work is flushed on both sides.
    void expect_both_flush() {
        Buf &b = buf(16);
        Mr *m = local_reg(b);
        ASSERT_NE(m, nullptr);
        ri_data_seg_t s = sge(b.data(), 16, m->ltag);
        ASSERT_EQ(post_send(qp_, RI_WR_TYPE_SEND, kSig, 0xF1, &s, 1), RI_RET_SUCCESS);
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc));
        EXPECT_EQ(wc.id, 0xF1u);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
        Reply r = pc("recv rb 241 1 0 16");
        ASSERT_TRUE(r.ok) << r;
        r = pc("poll r 20000");
        ASSERT_TRUE(r.ok) << r;
        EXPECT_EQ(r.u64("id"), 241u) << r;
        EXPECT_EQ(r.u64("status"), uint64_t{RI_WC_STATUS_WR_FLUSHED_ERROR}) << r;
    }
    // A receive the test posts before the fault, to see it flushed afterwards.
    void post_local_receive(uint64_t id) {
        Buf &b = buf(64, 0x11);
        Mr *m = local_reg(b);
        ASSERT_NE(m, nullptr);
        ri_data_seg_t s = sge(b.data(), 64, m->ltag);
        ASSERT_EQ(post_recv(qp_, id, &s, 1), RI_RET_SUCCESS);
    }
    void expect_local_receive_flushed(uint64_t id) {
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->rcq, &wc)) << "receive " << id << " never completed";
        EXPECT_EQ(wc.id, id);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    }

    // An RDMA Write the responder refuses, with a signalled Read posted right behind it in
    // the same call. Over TCP the Write completes once its bytes are in the kernel
    // (iWARP writes are unacknowledged); the Read is outstanding when the Terminate
    // arrives and completes with it — or, if the Terminate beat the Read's post, flushed.
    void faulting_write(uint64_t raddr, ri_rtag_t rtag, uint32_t len) {
        Buf &src = buf(kTarget);
        Buf &sink = buf(64, 0x22);
        src.fill(5);
        Mr *ms = local_reg(src), *mk = local_reg(sink);
        ASSERT_TRUE(ms && mk);
        ri_data_seg_t s = sge(src.data(), len, ms->ltag);
        ri_data_seg_t k = sge(sink.data(), 8, mk->ltag);
        ri_wr_t w[2] = {write_wr(RI_WR_TYPE_RDMA_WRITE, kSig, 1, &s, 1, raddr, rtag),
                        read_wr(RI_WR_TYPE_RDMA_READ, kSig, 2, &k, 1, target_.va, target_.rtag)};
        uint_t posted = 0;
        ASSERT_EQ(post_wr(qp_, w, 2, &posted), RI_RET_SUCCESS);
        ASSERT_EQ(posted, 2u);
        ri_rc_wc_t w1{}, w2{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &w1));
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &w2));
        EXPECT_EQ(w1.id, 1u);
        EXPECT_EQ(w1.op_type, RI_WC_TYPE_RDMA_WRITE);
        EXPECT_TRUE(w1.op_status == RI_WC_STATUS_SUCCESS ||
                    w1.op_status == RI_WC_STATUS_REMOTE_TERMINATION_ERROR)
            << "write status " << w1.op_status;
        EXPECT_EQ(w2.id, 2u);
        EXPECT_EQ(w2.op_type, RI_WC_TYPE_RDMA_READ);
        EXPECT_TRUE(w2.op_status == RI_WC_STATUS_REMOTE_TERMINATION_ERROR ||
                    w2.op_status == RI_WC_STATUS_WR_FLUSHED_ERROR)
            << "read status " << w2.op_status;
        for (size_t i = 0; i < 64; ++i)
            ASSERT_EQ(sink.data()[i], 0x22) << "the failed read placed data";
        EXPECT_TRUE(sink.guards_intact());
    }

    void stream_then_kill(bool freeze);

    RemoteBuf target_;
};

}  // namespace

// RDMA Write to an STag the peer never issued: DDP tagged "invalid STag" (1/1/0x00).
TEST_P(TwoProcErrors, WriteToBadStag) {
    ASSERT_NO_FATAL_FAILURE(connect_to_peer());
    ASSERT_NO_FATAL_FAILURE(peer_target(kAllRemote));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(50));
    ASSERT_NO_FATAL_FAILURE(faulting_write(target_.va, target_.rtag ^ 0x5500u, 256));
    expect_local_terminated(0x11, 0x00);
    expect_peer_terminated(RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH, 0x11, 0x00);
    expect_local_receive_flushed(50);
    expect_target_untouched();
    expect_both_flush();
}

// RDMA Write one byte past the end of a valid region: DDP tagged "base or bounds" (1/1/0x01).
TEST_P(TwoProcErrors, OutOfBoundsWrite) {
    ASSERT_NO_FATAL_FAILURE(connect_to_peer());
    ASSERT_NO_FATAL_FAILURE(peer_target(kAllRemote));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(51));
    ASSERT_NO_FATAL_FAILURE(faulting_write(target_.va + kTarget - 63, target_.rtag, 64));
    expect_local_terminated(0x11, 0x01);
    expect_peer_terminated(RI_EVENT_QP_PROTECTION_ERROR_BOUNDS_VIOLATION, 0x11, 0x01);
    expect_local_receive_flushed(51);
    expect_target_untouched();
    expect_both_flush();
}

// RDMA Read of a region registered without remote read: the Read completes
// REMOTE_TERMINATION_ERROR; RDMAP remote protection "access rights" (0/1/0x02).
TEST_P(TwoProcErrors, ReadWithoutRemoteReadRight) {
    ASSERT_NO_FATAL_FAILURE(connect_to_peer());
    ASSERT_NO_FATAL_FAILURE(peer_target(kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE));
    Buf &sink = buf(kTarget, 0x33);
    Mr *mk = local_reg(sink);
    ASSERT_NE(mk, nullptr);
    ri_data_seg_t k = sge(sink.data(), kTarget, mk->ltag);
    ASSERT_EQ(post_read(qp_, kSig, 7, &k, 1, target_.va, target_.rtag), RI_RET_SUCCESS);
    ri_rc_wc_t wc{};
    ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc));
    EXPECT_EQ(wc.id, 7u);
    EXPECT_EQ(wc.op_type, RI_WC_TYPE_RDMA_READ);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_REMOTE_TERMINATION_ERROR);
    EXPECT_EQ(wc.qp_os_data, qp_->os());
    for (size_t i = 0; i < kTarget; ++i)
        ASSERT_EQ(sink.data()[i], 0x33) << "the refused read placed data at " << i;
    EXPECT_TRUE(sink.guards_intact());
    expect_local_terminated(0x01, 0x02);
    expect_peer_terminated(RI_EVENT_QP_IRRQ_PROTECTION_ERROR_ACCESS_VIOLATION, 0x01, 0x02);
    expect_target_untouched();
    expect_both_flush();
}

// A Send when the peer has no receive posted: DDP untagged "no buffer" (1/2/0x02).
TEST_P(TwoProcErrors, SendWithoutReceive) {
    ASSERT_NO_FATAL_FAILURE(connect_to_peer());
    ASSERT_NO_FATAL_FAILURE(peer_target(kAllRemote));
    Buf &src = buf(32);
    Buf &sink = buf(8, 0x44);
    src.fill(3);
    Mr *ms = local_reg(src), *mk = local_reg(sink);
    ASSERT_TRUE(ms && mk);
    ri_data_seg_t s = sge(src.data(), 32, ms->ltag);
    ri_data_seg_t k = sge(sink.data(), 8, mk->ltag);
    ri_wr_t w[2] = {send_wr(RI_WR_TYPE_SEND, kSig, 1, &s, 1),
                    read_wr(RI_WR_TYPE_RDMA_READ, kSig, 2, &k, 1, target_.va, target_.rtag)};
    uint_t posted = 0;
    ASSERT_EQ(post_wr(qp_, w, 2, &posted), RI_RET_SUCCESS);
    ri_rc_wc_t w1{}, w2{};
    ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &w1));
    ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &w2));
    EXPECT_EQ(w1.id, 1u);
    EXPECT_EQ(w1.op_type, RI_WC_TYPE_SEND);
    EXPECT_TRUE(w1.op_status == RI_WC_STATUS_SUCCESS ||
                w1.op_status == RI_WC_STATUS_REMOTE_TERMINATION_ERROR)
        << w1.op_status;
    EXPECT_EQ(w2.id, 2u);
    EXPECT_TRUE(w2.op_status == RI_WC_STATUS_REMOTE_TERMINATION_ERROR ||
                w2.op_status == RI_WC_STATUS_WR_FLUSHED_ERROR)
        << w2.op_status;
    expect_local_terminated(0x12, 0x02);
    expect_peer_terminated(RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN, 0x12, 0x02);
    expect_both_flush();
}

// The peer (here the connection's initiator) moves its QP to TERMINATE: the test receives
// the Terminate (RDMAP, local catastrophic: 0/0/0x00), its receives flush, its QP errors.
TEST_P(TwoProcErrors, TerminateReceived) {
    ASSERT_NO_FATAL_FAILURE(peer_connects());
    peer_buf("rb", 64, kLocalRW);
    ASSERT_NO_FATAL_FAILURE(post_local_receive(60));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(61));
    Reply r = pc("modify " + std::to_string(RI_QP_STATE_TERMINATE));
    ASSERT_TRUE(r.ok) << r;
    EXPECT_EQ(r.u64("ret"), uint64_t{RI_RET_SUCCESS}) << r;
    expect_local_terminated(0x00, 0x00);
    expect_local_receive_flushed(60);
    expect_local_receive_flushed(61);
    r = pc("wait_state " + std::to_string(RI_QP_STATE_ERROR) + " 20000");
    EXPECT_TRUE(r.ok) << r;
    r = pc("qp");
    ASSERT_TRUE(r.ok) << r;
    EXPECT_EQ(r.u64("tlocal"), 1u) << r;
    EXPECT_EQ(r.u64("t0"), 0u) << r;
    expect_both_flush();
}

// MPA Reply with the Reject flag and private data, in both directions.
TEST_P(TwoProcErrors, MpaRejectWithPrivateData) {
    ASSERT_NO_FATAL_FAILURE(start_peer());
    const auto test_why = bytes_of("no room at the inn (the test says)");
    const auto peer_why = bytes_of("\x01\x02 go away (the peer says) \xFF");
    // The test rejects; the peer, initiator, sees the reject and its private data.
    log_.react = [this, test_why](cm::Event &e) {
        if (auto *r = std::get_if<cm::ConnectRequest>(&e)) {
            EXPECT_EQ(cm_->reject(r->id, test_why), cm::CmStatus::Ok);
        }
    };
    cm::Address a = loopback(family());
    auto l = cm_->listen(a.get(), a.len, 4);
    ASSERT_TRUE(l.ok());
    auto la = cm_->local_address(l.value);
    ASSERT_TRUE(la.ok());
    Reply r =
        pc(std::string("connect ") + fam_token(family()) + " " + std::to_string(port_of(la.value)) +
           " " + (crc() ? "1" : "0") + " " + to_hex(bytes_of("may I?")) + " 10000");
    ASSERT_TRUE(r.ok) << r;
    EXPECT_EQ(r.str("event"), "rejected") << r;
    EXPECT_EQ(r.str("pd"), to_hex(test_why)) << r;
    auto req = log_.take<cm::ConnectRequest>(0, 1s);
    ASSERT_TRUE(req);
    EXPECT_EQ(req->private_data, bytes_of("may I?"));
    EXPECT_EQ(req->crc, crc());
    EXPECT_FALSE(log_.take<cm::Established>(0, 50ms));

    // The peer rejects; the test, initiator, sees the reject and the peer's private data.
    r = pc(std::string("listen ") + fam_token(family()) + " 0 " + (crc() ? "1" : "0") + " " +
           to_hex(peer_why) + " reject");
    ASSERT_TRUE(r.ok) << r;
    cm::Address dst = loopback(family(), static_cast<uint16_t>(r.u64("port")));
    cm::ConnParams cp;
    cp.private_data = bytes_of("and may I?");
    cp.crc = crc();
    auto c = cm_->connect(dst.get(), dst.len, cp);
    ASSERT_TRUE(c.ok());
    auto rej = log_.take<cm::Rejected>(c.value);
    ASSERT_TRUE(rej) << "no Rejected event";
    EXPECT_EQ(rej->private_data, peer_why);
    EXPECT_FALSE(log_.take<cm::Established>(0, 50ms));
}

// Connects to ports nobody listens on: Unreachable with ECONNREFUSED, both directions.
TEST_P(TwoProcErrors, ConnectToClosedPort) {
    ASSERT_NO_FATAL_FAILURE(start_peer());
    // The peer dials a port the test bound and closed again.
    int s = ::socket(family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(s, 0);
    cm::Address a = loopback(family());
    socklen_t sl = sizeof a.storage;
    ASSERT_EQ(::bind(s, a.get(), a.len), 0);
    ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr *>(&a.storage), &sl), 0);
    ::close(s);
    Reply r = pc(std::string("connect ") + fam_token(family()) + " " + std::to_string(port_of(a)) +
                 " " + (crc() ? "1" : "0") + " - 10000");
    ASSERT_TRUE(r.ok) << r;
    EXPECT_EQ(r.str("event"), "unreachable") << r;
    EXPECT_EQ(r.i64("errno"), ECONNREFUSED) << r;

    // The test dials a port the peer listened on and then closed.
    r = pc(std::string("listen ") + fam_token(family()) + " 0 0 - accept");
    ASSERT_TRUE(r.ok) << r;
    const auto port = static_cast<uint16_t>(r.u64("port"));
    r = pc("stop_listen");
    ASSERT_TRUE(r.ok) << r;
    cm::Address dst = loopback(family(), port);
    cm::ConnParams cp;
    cp.crc = crc();
    auto c = cm_->connect(dst.get(), dst.len, cp);
    ASSERT_TRUE(c.ok());
    auto u = log_.take<cm::Unreachable>(c.value);
    ASSERT_TRUE(u) << "no Unreachable event";
    EXPECT_EQ(u->sys_errno, ECONNREFUSED);
}

// A connect whose SYNs are silently dropped ends in TimedOut after the CM timeout. The peer
// runs inside a network namespace (ip netns add + setns) where the destination's route
// leads to a veth whose other end is down: every packet is dropped at the device, nothing
// is ever transmitted and no error comes back. (`ip route add blackhole` cannot be used:
// locally generated packets to a blackhole route fail at once with EINVAL.)
TEST_P(TwoProcErrors, ConnectTimeout) {
    std::string why;
    auto ns = NetNs::create(&why);
    if (!ns) GTEST_SKIP() << why;
    const std::string ns_path = ns->path();
    const bool v4 = family() == AF_INET;
    const std::string dst = v4 ? "192.0.2.1" : "2001:db8::1";  // documentation ranges
    if (!ns->ip({"link", "set", "lo", "up"}, &why) ||
        !ns->ip({"link", "add", "tp0", "type", "veth", "peer", "name", "tp1"}, &why) ||
        !ns->ip({"link", "set", "tp0", "up"}, &why) ||
        !(v4 ? ns->ip({"addr", "add", "192.0.2.2/24", "dev", "tp0"}, &why)
             : ns->ip({"-6", "addr", "add", "2001:db8::2/64", "dev", "tp0", "nodad"}, &why)) ||
        !ns->ip({v4 ? "-4" : "-6", "neigh", "add", dst, "lladdr", "02:00:00:00:00:01", "dev", "tp0",
                 "nud", "permanent"},
                &why))
        GTEST_SKIP() << "cannot build a dropping route in the namespace: " << why;

    ASSERT_NO_FATAL_FAILURE(start_peer({ns_path}));
    constexpr int kTimeoutMs = 600;
    Reply r = pc("connect " + dst + " 4791 " + (crc() ? "1" : "0") + " " +
                     to_hex(bytes_of("anyone there?")) + " " + std::to_string(kTimeoutMs),
                 30s);
    ASSERT_TRUE(r.ok) << r;
    EXPECT_EQ(r.str("event"), "timedout") << r;
    EXPECT_GE(r.i64("ms"), kTimeoutMs) << r;
    // Bounded, with room for a loaded 2-vCPU machine.
    EXPECT_LT(r.i64("ms"), kTimeoutMs + 5000) << r;
    // The peer exits before the namespace goes (TearDown would do it after).
    EXPECT_EQ(peer_->exit_and_wait(), 0);
    ns.reset();
    EXPECT_FALSE(std::filesystem::exists(ns_path)) << "namespace not removed";
}

// The test streams 1 MiB Sends and RDMA Writes to the peer (32 in flight) and the peer is
// SIGKILLed. With `freeze`, the peer is stopped (SIGSTOP) first and the test tops its queue
// up to max(96, kernel_buffer_mib() + 32) MiB in flight: more than the kernel can hold for
// a peer that no longer reads, so those WRs are certain to be flushed. Without it the peer dies
// while reading at full speed: it may have drained everything it was sent (then its kernel sends a
// FIN, not an RST), and every outstanding WR may legitimately have been handed to TCP (iWARP
// completes a Send or Write once the LLP has it) — only the ordering rule is checked then. Either
// way: within 10 s every outstanding WR completes, in order (no success after a failure), the test
// sees a broken-connection event, its QP is in Error, its receives flush and new work is flushed.
void TwoProcErrors::stream_then_kill(bool freeze) {
    ASSERT_NO_FATAL_FAILURE(connect_to_peer());
    constexpr size_t kLen = size_t{1} << 20;
    constexpr int kSends = 24, kDepth = 32;
    const uint64_t kernel_mib = kernel_buffer_mib();
    const uint64_t frozen_depth = std::max<uint64_t>(96, kernel_mib + 32);
    ASSERT_LT(frozen_depth, 250u) << "the SQ holds 256";
    peer_buf("rb", kLen, kLocalRW);
    RemoteBuf wb = peer_buf("wb", kLen, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_FALSE(HasFailure());
    for (int i = 0; i < kSends; ++i) {
        Reply r = pc("recv rb " + std::to_string(1000 + i) + " 1 0 " + std::to_string(kLen));
        ASSERT_TRUE(r.ok) << r;
    }
    ASSERT_NO_FATAL_FAILURE(post_local_receive(70));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(71));
    Buf &src = buf(kLen);
    src.fill(9);
    Mr *ms = local_reg(src);
    ASSERT_NE(ms, nullptr);
    ri_data_seg_t s = sge(src.data(), kLen, ms->ltag);

    uint64_t next = 1, done = 0;
    int sends = 0;
    auto post_one = [&] {
        ri_api_return_t r = sends < kSends
                                ? (++sends, post_send(qp_, RI_WR_TYPE_SEND, kSig, next, &s, 1))
                                : post_write(qp_, kSig, next, &s, 1, wb.va, wb.rtag);
        if (r == RI_RET_SUCCESS) ++next;
        return r;
    };
    // Stream for a while (and, frozen, until the kernel takes no more): all succeeds.
    auto stream_for = [&](std::chrono::milliseconds d) {
        const auto until = Clock::now() + d;
        while (Clock::now() < until) {
            while (next - 1 - done < kDepth)
                ASSERT_EQ(post_one(), RI_RET_SUCCESS);
            ri_rc_wc_t wc{};
            if (!poll_one(*rnic_, qp_->scq, &wc, 20ms)) continue;
            ++done;
            ASSERT_EQ(wc.id, done);
            ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        }
    };
    ASSERT_NO_FATAL_FAILURE(stream_for(300ms));
    if (freeze) {
        ASSERT_EQ(::kill(peer_->pid(), SIGSTOP), 0);
        ASSERT_NO_FATAL_FAILURE(stream_for(300ms));
        while (next - 1 - done < frozen_depth)
            ASSERT_EQ(post_one(), RI_RET_SUCCESS);
    } else {
        while (next - 1 - done < kDepth)
            ASSERT_EQ(post_one(), RI_RET_SUCCESS);
    }
    const uint64_t outstanding = next - 1 - done;

    const auto t0 = Clock::now();
    ASSERT_TRUE(peer_->kill_now());
    uint64_t failed = 0;
    for (uint64_t i = 0; i < outstanding; ++i) {
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc, 10s))
            << "WR " << done + 1 << " never completed after the peer died";
        ++done;
        EXPECT_EQ(wc.id, done);
        if (failed) {
            EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR)
                << "WR " << wc.id << " after the first failed one";
        }
        if (wc.op_status != RI_WC_STATUS_SUCCESS) ++failed;
    }
    const auto t_wrs = Clock::now() - t0;
    if (freeze) {
        EXPECT_GE(failed, outstanding - kernel_mib)
            << outstanding << " MiB in flight to a frozen peer, the kernel holds at most "
            << kernel_mib << " MiB";
    }
    EXPECT_TRUE(wait_for(
        *rnic_,
        [&] {
            for (auto &e : rnic_->rec.events())
                if (e.os_data == qp_->os() && is_broken_connection_event(e.type)) return true;
            return false;
        },
        10s))
        << "no broken-connection event; events: " << rnic_->rec.describe_events();
    EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR, 10s));
    expect_local_receive_flushed(70);
    expect_local_receive_flushed(71);
    EXPECT_LT(Clock::now() - t0, 10s);
    std::printf(
        "[ twoproc  ] peer%s killed with %llu x 1 MiB in flight: %llu completed, %llu "
        "flushed within %.1f ms; events: %s\n",
        freeze ? " (frozen)" : "", static_cast<unsigned long long>(outstanding),
        static_cast<unsigned long long>(outstanding - failed),
        static_cast<unsigned long long>(failed),
        std::chrono::duration<double, std::milli>(t_wrs).count(),
        rnic_->rec.describe_events().c_str());
    // New work is flushed.
    ASSERT_EQ(post_write(qp_, kSig, 0xABC, &s, 1, wb.va, wb.rtag), RI_RET_SUCCESS);
    ri_rc_wc_t wc{};
    ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc));
    EXPECT_EQ(wc.id, 0xABCu);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
}

TEST_P(TwoProcErrors, PeerKilledWhileWeSend) {
    stream_then_kill(false);
}

TEST_P(TwoProcErrors, PeerFrozenThenKilledWhileWeSend) {
    stream_then_kill(true);
}

// The peer (initiator of the connection here) streams 1 MiB RDMA Writes into the test's
// memory and is SIGKILLed: the test, passive target with receives posted, sees the broken
// connection, its receives flush, its memory outside the target is untouched.
TEST_P(TwoProcErrors, PeerKilledWhileItSends) {
    ASSERT_NO_FATAL_FAILURE(peer_connects());
    constexpr size_t kLen = size_t{1} << 20;
    Buf &target = buf(kLen);
    Mr *mt = local_reg(target, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_NE(mt, nullptr);
    ASSERT_NO_FATAL_FAILURE(post_local_receive(80));
    ASSERT_NO_FATAL_FAILURE(post_local_receive(81));
    peer_buf("src", kLen, kLocalRW);
    Reply r = pc("fill src 5 -1 1 0 " + std::to_string(kLen));
    ASSERT_TRUE(r.ok) << r;
    r = pc("stream src " + std::to_string(kLen) + " " + std::to_string(target.va()) + " " +
           std::to_string(mt->rtag));
    ASSERT_TRUE(r.ok) << r;
    std::this_thread::sleep_for(100ms);
    const auto t0 = Clock::now();
    ASSERT_TRUE(peer_->kill_now());
    EXPECT_TRUE(wait_for(
        *rnic_,
        [&] {
            for (auto &e : rnic_->rec.events())
                if (e.os_data == qp_->os() && is_broken_connection_event(e.type)) return true;
            return false;
        },
        10s))
        << "no broken-connection event; events: " << rnic_->rec.describe_events();
    EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR, 10s));
    expect_local_receive_flushed(80);
    expect_local_receive_flushed(81);
    EXPECT_LT(Clock::now() - t0, 10s);
    std::printf(
        "[ twoproc  ] streaming peer killed: broken connection seen after %.1f ms; "
        "events: %s\n",
        std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
        rnic_->rec.describe_events().c_str());
    EXPECT_TRUE(target.guards_intact());
}

// Same, with no receive posted at the test. When the peer dies in the middle of an RDMA
// Write the stream ends inside an FPDU or a DDP message: a lost connection, so the test
// sees a broken-connection event and its QP in Error. A kill can also land exactly between
// two messages (the kernel then sends a FIN after a whole message, which on the wire is an
// orderly close: LLQ_CLOSE_COMPLETE and Idle are correct); under a slow preset (TSan) that
// happens. Either way the survivor must leave RTS within a bounded time, and its memory
// outside the target stays untouched. The mid-FPDU and mid-message cases are pinned down
// deterministically by tests/tcp (TcpErrors.FinInside*).
TEST_P(TwoProcErrors, PeerKilledWhileItSendsNoReceives) {
    ASSERT_NO_FATAL_FAILURE(peer_connects());
    constexpr size_t kLen = size_t{1} << 20;
    Buf &target = buf(kLen);
    Mr *mt = local_reg(target, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_NE(mt, nullptr);
    peer_buf("src", kLen, kLocalRW);
    Reply r = pc("stream src " + std::to_string(kLen) + " " + std::to_string(target.va()) + " " +
                 std::to_string(mt->rtag));
    ASSERT_TRUE(r.ok) << r;
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(peer_->kill_now());
    auto any_close_event = [&] {
        for (auto &e : rnic_->rec.events())
            if (e.os_data == qp_->os() &&
                (is_broken_connection_event(e.type) || e.type == RI_EVENT_QP_LLQ_CLOSE_COMPLETE))
                return true;
        return false;
    };
    ASSERT_TRUE(wait_for(*rnic_, any_close_event, 10s))
        << "no event at all; events: " << rnic_->rec.describe_events();
    if (rnic_->rec.count_events(RI_EVENT_QP_LLQ_CLOSE_COMPLETE, qp_->os()) != 0) {
        EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_IDLE, 500ms)) << "QP state " << state_of(qp_);
        std::printf("[ twoproc  ] the kill landed between two messages: orderly close\n");
    } else {
        EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR, 500ms))
            << "QP state " << state_of(qp_) << " after the peer died mid-stream";
    }
    EXPECT_TRUE(target.guards_intact());
}

INSTANTIATE_TEST_SUITE_P(Tcp, TwoProcErrors, all_modes(), mode_name);

// ---------------------------------------------------------------------------------------
// The harness itself: a peer that stops answering is detected by the bounded wait, then
// killed and reaped; a clean exit reports status 0; no descriptor is left behind.

TEST(TwoProcHarness, HungPeerIsKilledAndReaped) {
    const int fds = count_open_fds();
    std::string why;
    auto p = PeerProcess::spawn({}, &why);
    ASSERT_NE(p, nullptr) << why;
    const pid_t pid = p->pid();
    auto t0 = Clock::now();
    Reply r = p->call("hang", 300ms);
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.timed_out) << r;
    r = p->call("ping", 300ms);
    EXPECT_TRUE(r.timed_out) << r;
    EXPECT_LT(Clock::now() - t0, 5s);
    p.reset();  // SIGKILL + waitpid
    EXPECT_EQ(::kill(pid, 0), -1);
    EXPECT_EQ(errno, ESRCH) << "the peer is still there (not reaped?)";
    int st = 0;
    EXPECT_EQ(::waitpid(pid, &st, WNOHANG), -1) << "already reaped: nothing to wait for";
    EXPECT_EQ(count_open_fds(), fds);
}

TEST(TwoProcHarness, CleanExitAndErrors) {
    const int fds = count_open_fds();
    std::string why;
    auto p = PeerProcess::spawn({}, &why);
    ASSERT_NE(p, nullptr) << why;
    Reply r = p->call("no_such_verb 1 2 3");
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.text.find("unknown verb"), std::string::npos) << r;
    r = p->call("check nothing 1 2 0");
    EXPECT_FALSE(r.ok) << r;
    EXPECT_EQ(p->exit_and_wait(), 0);
    EXPECT_FALSE(p->running());
    p.reset();
    EXPECT_EQ(count_open_fds(), fds);
}

// Killing the test process (SIGKILL, e.g. a CTest timeout) takes the peer down with it
// (PR_SET_PDEATHSIG): a child stands in for the test process here.
TEST(TwoProcHarness, PeerDiesWithItsParent) {
    int pfd[2];
    ASSERT_EQ(::pipe2(pfd, O_CLOEXEC), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        std::string why;
        auto p = PeerProcess::spawn({}, &why);
        pid_t peer = p ? p->pid() : -1;
        [[maybe_unused]] ssize_t n = ::write(pfd[1], &peer, sizeof peer);
        ::pause();  // killed by the test below; `p` is never destroyed
        ::_exit(0);
    }
    ::close(pfd[1]);
    pid_t peer = -1;
    pollfd pf{pfd[0], POLLIN, 0};
    ASSERT_EQ(::poll(&pf, 1, 20000), 1);
    ASSERT_EQ(::read(pfd[0], &peer, sizeof peer), static_cast<ssize_t>(sizeof peer));
    ::close(pfd[0]);
    ::kill(child, SIGKILL);
    int st = 0;
    ASSERT_EQ(::waitpid(child, &st, 0), child);
    ASSERT_GT(peer, 0) << "the stand-in could not start a peer";
    // The orphaned peer is re-parented (to init or a subreaper) and killed by the kernel;
    // only its disappearance from /proc can be awaited from here.
    const auto deadline = Clock::now() + 10s;
    bool gone = false;
    while (!gone && Clock::now() < deadline) {
        std::string stat;
        if (FILE *f = std::fopen(("/proc/" + std::to_string(peer) + "/stat").c_str(), "r")) {
            char b[512] = {};
            size_t n = std::fread(b, 1, sizeof b - 1, f);
            std::fclose(f);
            stat.assign(b, n);
            auto rp = stat.rfind(')');
            gone = rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 2] == 'Z';
        } else {
            gone = true;
        }
        if (!gone) std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(gone) << "peer " << peer << " outlived its parent";
}
