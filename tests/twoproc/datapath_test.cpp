// Data-path matrix between two processes over real TCP/iWARP on 127.0.0.1 and ::1, CRC on
// and off: Send, Send with Solicited Event, Send with Invalidate, RDMA Write and RDMA Read,
// each for {0, 1, 63, 4096, 1 MiB, 16 MiB} bytes with one SGE and with the RNIC's maximum
// (8, where the message has at least a byte per SGE). The test process initiates every WR;
// the peer process is the target, and it checks its own memory byte-exactly, gaps between
// SGEs and guard bytes around the buffers included. One connection per parameter block.
#include <cstdio>

#include "harness.hpp"

using namespace rt;
using namespace twoproc;

namespace {

constexpr int kGapByte = 0xEE;     // between SGE pieces, and over unused receive space
constexpr int kTargetByte = 0x3C;  // RDMA Write target before the write
constexpr int kSourceByte = 0x5A;  // RDMA Read source around the message
constexpr size_t kMaxSize = size_t{16} << 20;

enum class Op { Send, SendSE, SendInv, Write, Read };
const char *op_name(Op o) {
    switch (o) {
        case Op::Send:
            return "Send";
        case Op::SendSE:
            return "SendSE";
        case Op::SendInv:
            return "SendInv";
        case Op::Write:
            return "Write";
        case Op::Read:
            return "Read";
    }
    return "?";
}
bool is_send(Op o) {
    return o == Op::Send || o == Op::SendSE || o == Op::SendInv;
}

struct Case {
    Op op;
    size_t size;
    bool max_sge;
    std::string name() const {
        return std::string(op_name(op)) + "_" + std::to_string(size) + "B_" +
               (max_sge ? "MaxSge" : "OneSge");
    }
};

std::vector<Case> all_cases() {
    std::vector<Case> v;
    for (Op o : {Op::Send, Op::SendSE, Op::SendInv, Op::Write, Op::Read})
        for (size_t s :
             {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, size_t{1} << 20, kMaxSize}) {
            v.push_back({o, s, false});
            // Several SGEs only where each can hold a byte (0 and 1 byte: one SGE).
            if (s >= 63) v.push_back({o, s, true});
        }
    return v;
}

uint32_t max_sges_for(const ri_rnic_attr_t &a, Op op) {
    if (is_send(op)) return a.max_sgl_send_recvqp;
    if (op == Op::Write) return a.max_sgl_rdma_write;
    return a.max_sgl_rdma_read;
}

class TwoProcDataPath : public TwoProcTest {
  protected:
    std::vector<ri_data_seg_t> sges(Buf &b, Mr *m, const Layout &l) {
        std::vector<ri_data_seg_t> s;
        for (const Piece &p : l)
            s.push_back(sge(b.data() + p.off, static_cast<uint32_t>(p.len), m->ltag));
        return s;
    }

    void run_case(const Case &c);

    Buf *src_ = nullptr, *dst_ = nullptr, *probe_ = nullptr;
    Mr *msrc_ = nullptr, *mdst_ = nullptr, *mprobe_ = nullptr;
    RemoteBuf rb_, wb_, sb_, scratch_;
    uint64_t next_id_ = 1;
};

void TwoProcDataPath::run_case(const Case &c) {
    const ri_rnic_attr_t &at = rnic_->attr();
    const size_t S = c.size;
    const uint64_t seed = std::hash<std::string>{}(c.name()) | 1;
    const uint32_t nsge =
        c.max_sge ? static_cast<uint32_t>(std::min<size_t>(max_sges_for(at, c.op), S)) : 1;
    const uint64_t wid = next_id_++, rid = 0x10000 + wid;
    const std::string len_layout = S ? "1 0 " + std::to_string(S) : "0";

    if (is_send(c.op)) {
        const uint32_t nrecv =
            c.max_sge ? static_cast<uint32_t>(std::min<size_t>(at.max_sgl_send_recvqp, S)) : 1;
        Layout sl = make_layout(S, nsge, false);
        Layout rl = make_layout(S == 0 ? 16 : S, nrecv, true);
        fill_layout(src_->data(), src_->size(), sl, seed, kGapByte);
        Reply r = pc("fill rb 0 " + std::to_string(kGapByte) + " 0");
        ASSERT_TRUE(r.ok) << r;
        r = pc("recv rb " + std::to_string(rid) + " " + layout_args(rl));
        ASSERT_TRUE(r.ok) << r;
        RemoteBuf inv;
        if (c.op == Op::SendInv) {
            inv = peer_buf("inv", 64, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
            ASSERT_NE(inv.rtag, 0u);
        }
        const ri_wr_type_t type =
            c.op == Op::SendInv ? RI_WR_TYPE_SEND_INVALIDATE : RI_WR_TYPE_SEND;
        const unsigned flags = kSig | (c.op == Op::SendSE ? RI_WR_SOLICITED_EVENT_FLAG : 0);
        auto s = sges(*src_, msrc_, sl);
        ASSERT_EQ(
            post_send(qp_, type, flags, wid, s.data(), static_cast<uint_t>(s.size()), inv.rtag),
            RI_RET_SUCCESS);
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc)) << "no send completion";
        EXPECT_WC(wc, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, wid, S);
        EXPECT_EQ(wc.qp_os_data, qp_->os());
        if (c.op == Op::SendSE) {
            EXPECT_EQ(unsigned(wc.flags), unsigned(RI_WC_FLAG_SOLICITED_EVENT));
        } else {
            EXPECT_EQ(unsigned(wc.flags) & ~unsigned(RI_WC_FLAG_RTAG_INVALIDATE), 0u);
        }
        r = pc("poll r 20000");
        ASSERT_TRUE(r.ok) << r;
        EXPECT_EQ(r.u64("id"), rid) << r;
        EXPECT_EQ(r.u64("status"), uint64_t{RI_WC_STATUS_SUCCESS}) << r;
        EXPECT_EQ(r.u64("type"), uint64_t{RI_WC_TYPE_DATA_RECEIVED}) << r;
        EXPECT_EQ(r.u64("len"), S) << r;
        EXPECT_EQ(r.u64("qp"), 1u) << r;
        EXPECT_EQ(r.u64("cq"), 1u) << r;
        unsigned want = c.op == Op::SendSE    ? RI_WC_FLAG_SOLICITED_EVENT
                        : c.op == Op::SendInv ? RI_WC_FLAG_RTAG_INVALIDATE
                                              : 0;
        EXPECT_EQ(r.u64("flags"), want) << r;
        if (c.op == Op::SendInv) {
            EXPECT_EQ(r.u64("inv"), inv.rtag) << r;
            Reply m = pc("mr_state inv");
            ASSERT_TRUE(m.ok) << m;
            EXPECT_EQ(m.u64("state"), uint64_t{RI_STAG_STATE_INVALID}) << "STag not invalidated";
        }
        r = pc("check rb " + std::to_string(seed) + " " + std::to_string(kGapByte) + " " +
               layout_args(truncate(rl, S)));
        EXPECT_TRUE(r.ok) << r;
    } else if (c.op == Op::Write) {
        Layout sl = make_layout(S, nsge, false);
        fill_layout(src_->data(), src_->size(), sl, seed, kGapByte);
        Reply r = pc("fill wb 0 " + std::to_string(kTargetByte) + " 0");
        ASSERT_TRUE(r.ok) << r;
        auto s = sges(*src_, msrc_, sl);
        ASSERT_EQ(
            post_write(qp_, kSig, wid, s.data(), static_cast<uint_t>(s.size()), wb_.va, wb_.rtag),
            RI_RET_SUCCESS);
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc)) << "no write completion";
        EXPECT_WC(wc, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, wid, S);
        EXPECT_EQ(unsigned(wc.flags), 0u);
        // A write completes once sent; a Read behind it on the same stream returns only
        // after the peer placed it.
        ri_data_seg_t ps = sge(probe_->data(), 8, mprobe_->ltag);
        ASSERT_EQ(post_read(qp_, kSig, wid + 0x20000, &ps, 1, scratch_.va, scratch_.rtag),
                  RI_RET_SUCCESS);
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc)) << "no sync read completion";
        EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, wid + 0x20000, 8);
        r = pc("empty r");
        ASSERT_TRUE(r.ok) << r;
        EXPECT_EQ(r.u64("empty"), 1u) << "an RDMA Write consumed a receive: " << r;
        r = pc("check wb " + std::to_string(seed) + " " + std::to_string(kTargetByte) + " " +
               len_layout);
        EXPECT_TRUE(r.ok) << r;
    } else {
        Reply r = pc("fill sb " + std::to_string(seed) + " " + std::to_string(kSourceByte) + " " +
                     len_layout);
        ASSERT_TRUE(r.ok) << r;
        Layout dl = make_layout(S, nsge, true);
        fill_layout(dst_->data(), dst_->size(), {}, 0, kGapByte);
        auto d = sges(*dst_, mdst_, dl);
        ASSERT_EQ(
            post_read(qp_, kSig, wid, d.data(), static_cast<uint_t>(d.size()), sb_.va, sb_.rtag),
            RI_RET_SUCCESS);
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll_one(*rnic_, qp_->scq, &wc)) << "no read completion";
        EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, wid, S);
        EXPECT_EQ(unsigned(wc.flags), 0u);
        std::string e = check_layout(dst_->data(), dst_->size(), dl, seed, kGapByte);
        EXPECT_TRUE(e.empty()) << e;
        // The source is untouched by being read.
        r = pc("check sb " + std::to_string(seed) + " " + std::to_string(kSourceByte) + " " +
               len_layout);
        EXPECT_TRUE(r.ok) << r;
    }
    EXPECT_TRUE(src_->guards_intact());
    EXPECT_TRUE(dst_->guards_intact());
}

}  // namespace

TEST_P(TwoProcDataPath, Matrix) {
    ASSERT_NO_FATAL_FAILURE(connect_to_peer());
    const size_t span = layout_span(kMaxSize, 8) + 64;
    src_ = &buf(span);
    dst_ = &buf(span);
    probe_ = &buf(8);
    msrc_ = rnic_->reg(*src_, kLocalRW);
    mdst_ = rnic_->reg(*dst_, kLocalRW);
    mprobe_ = rnic_->reg(*probe_, kLocalRW);
    ASSERT_TRUE(msrc_ && mdst_ && mprobe_);
    rb_ = peer_buf("rb", span, kLocalRW);
    wb_ = peer_buf("wb", kMaxSize, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    sb_ = peer_buf("sb", kMaxSize, kLocalRW | RI_MEM_FLAGS_REMOTE_READ);
    scratch_ = peer_buf("scratch", 64, kAllRemote);
    ASSERT_FALSE(HasFailure());

    const auto t0 = Clock::now();
    size_t bytes = 0, n = 0;
    for (const Case &c : all_cases()) {
        SCOPED_TRACE(c.name());
        ASSERT_NO_FATAL_FAILURE(run_case(c));
        bytes += c.size;
        ++n;
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("[ twoproc  ] %zu cases, %.1f MiB moved in %.2f s (checks included)\n", n,
                double(bytes) / (1 << 20), s);

    // Nothing went wrong on either side: both QPs still in RTS, no async event anywhere.
    EXPECT_EQ(state_of(qp_), RI_QP_STATE_READY_TO_SEND);
    rnic_->drain();
    EXPECT_TRUE(rnic_->rec.events().empty()) << rnic_->rec.describe_events();
    Reply q = pc("qp");
    ASSERT_TRUE(q.ok) << q;
    EXPECT_EQ(q.u64("state"), uint64_t{RI_QP_STATE_READY_TO_SEND}) << q;
    Reply ev = pc("events");
    ASSERT_TRUE(ev.ok) << ev;
    EXPECT_EQ(ev.str("list"), "-") << "the peer saw async events: " << ev;
}

INSTANTIATE_TEST_SUITE_P(Tcp, TwoProcDataPath, all_modes(), mode_name);
