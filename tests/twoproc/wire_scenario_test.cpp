// The traffic of the Wireshark acceptance (wireshark_check.sh): one connection carrying an
// MPA Request and Reply with private data, then one of each RDMAP message the stack sends —
// Send, Send with Solicited Event, Send with Invalidate, RDMA Write, RDMA Read (Read Request
// + Read Response) — and finally an RDMA Write to a bad STag that the peer answers with a
// Terminate. Every message fits one FPDU, so the capture holds exactly one FPDU per opcode
// below (the script checks those counts).
//
// It is an ordinary test too (ephemeral port); the script sets TWOPROC_WIRE_PORT so that it
// can capture `tcp port P` before the connection starts.
#include <cstdio>
#include <cstdlib>

#include "harness.hpp"

using namespace rt;
using namespace twoproc;

namespace {

// Also grepped for by wireshark_check.sh (as hex) in the MPA frames' private data.
constexpr const char *kRequestPd = "softrnic-twoproc MPA request private data";
constexpr const char *kReplyPd = "softrnic-twoproc MPA reply private data";

class TwoProcWireshark : public TwoProcTest {};

}  // namespace

TEST_P(TwoProcWireshark, Scenario) {
    uint16_t port = 0;
    if (const char *e = std::getenv("TWOPROC_WIRE_PORT"); e && *e) {
        auto p = to_num<uint16_t>(e);
        ASSERT_TRUE(p) << "bad TWOPROC_WIRE_PORT " << e;
        port = *p;
    }
    ASSERT_NO_FATAL_FAILURE(connect_to_peer(kRequestPd, kReplyPd, port));

    // Peer side: receive buffer with three receives, an STag to invalidate, a target.
    RemoteBuf rb = peer_buf("rb", 1024, kLocalRW);
    RemoteBuf inv = peer_buf("inv", 64, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    RemoteBuf tgt = peer_buf("tgt", 4096, kAllRemote);
    ASSERT_FALSE(HasFailure());
    for (int i = 0; i < 3; ++i) {
        Reply r =
            pc("recv rb " + std::to_string(100 + i) + " 1 " + std::to_string(300 * i) + " 300");
        ASSERT_TRUE(r.ok) << r;
    }
    Buf &src = buf(4096);
    Buf &back = buf(4096, 0);
    src.fill(0x5C);
    Mr *ms = rnic_->reg(src, kLocalRW);
    Mr *mb = rnic_->reg(back, kLocalRW);
    ASSERT_TRUE(ms && mb);

    struct SendCase {
        ri_wr_type_t type;
        unsigned flags;
        uint32_t len;
        ri_rtag_t inv;
    };
    const SendCase sends[] = {{RI_WR_TYPE_SEND, kSig, 100, 0},
                              {RI_WR_TYPE_SEND, kSig | RI_WR_SOLICITED_EVENT_FLAG, 200, 0},
                              {RI_WR_TYPE_SEND_INVALIDATE, kSig, 64, inv.rtag}};
    for (int i = 0; i < 3; ++i) {
        const SendCase &c = sends[i];
        ri_data_seg_t s = sge(src.data(), c.len, ms->ltag);
        ASSERT_EQ(post_send(qp_, c.type, c.flags, 10 + i, &s, 1, c.inv), RI_RET_SUCCESS);
        ri_rc_wc_t wc = must_poll(*rnic_, qp_->scq);
        EXPECT_WC(wc, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 10 + i, c.len);
        Reply r = pc("poll r 20000");
        ASSERT_TRUE(r.ok) << r;
        EXPECT_EQ(r.u64("id"), uint64_t(100 + i)) << r;
        EXPECT_EQ(r.u64("status"), uint64_t{RI_WC_STATUS_SUCCESS}) << r;
        EXPECT_EQ(r.u64("len"), c.len) << r;
    }

    // RDMA Write, then an RDMA Read of the same range brings it back.
    ri_data_seg_t s = sge(src.data(), 4096, ms->ltag);
    ASSERT_EQ(post_write(qp_, kSig, 20, &s, 1, tgt.va, tgt.rtag), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(*rnic_, qp_->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, 20, 4096);
    ri_data_seg_t d = sge(back.data(), 4096, mb->ltag);
    ASSERT_EQ(post_read(qp_, kSig, 21, &d, 1, tgt.va, tgt.rtag), RI_RET_SUCCESS);
    wc = must_poll(*rnic_, qp_->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 21, 4096);
    EXPECT_EQ(first_diff(src.data(), back.data(), 4096), SIZE_MAX);

    // A Write to an STag the peer never issued: the peer answers with a Terminate.
    ri_data_seg_t bad = sge(src.data(), 64, ms->ltag);
    ASSERT_EQ(post_write(qp_, kSig, 22, &bad, 1, tgt.va, tgt.rtag ^ 0x5500u), RI_RET_SUCCESS);
    wc = must_poll(*rnic_, qp_->scq);
    EXPECT_EQ(wc.id, 22u);
    EXPECT_TRUE(wait_event(*rnic_, RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, qp_->os()))
        << rnic_->rec.describe_events();
    Reply r =
        pc("event " + std::to_string(RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH) + " 20000");
    EXPECT_TRUE(r.ok) << r;
    EXPECT_TRUE(wait_state(qp_, RI_QP_STATE_ERROR));
    std::printf(
        "[ twoproc  ] wire scenario done (%s, port %s): FPDUs sent: Send 1, Send+SE 1, "
        "Send+Inv 1, Write 2 (+ the P2P RTR), Read Request 1, Read Response 1, Terminate 1\n",
        family() == AF_INET ? "127.0.0.1" : "::1",
        port ? std::to_string(port).c_str() : "ephemeral");
}

INSTANTIATE_TEST_SUITE_P(Tcp, TwoProcWireshark, all_modes(), mode_name);
