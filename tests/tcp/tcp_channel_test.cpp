// TCP/iWARP channel end to end: two RNIC instances in one process, a real TCP connection
// over 127.0.0.1 with a real MPA Request/Reply exchange (codec helpers), each end adopted
// and claimed by a QP moving to RTS. Data path (send, write, read, invalidate), CRC on and
// off, small and default MULPDU, error paths (bad STag, peer loss, corrupted CRC) and a
// quick latency/bandwidth measurement.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "../rnicpi/fixture.hpp"
#include "loopback_socket_pair.hpp"
#include "transport/tcp/tcp_channel.hpp"
#include "transport/tcp/wire/crc32c.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/mpa.hpp"

using namespace rt;
namespace tcp = softrnic::transport::tcp;
namespace w = softrnic::transport::tcp::wire;

namespace {

bool socket_pair(int &a, int &b) {
    return rt_tcp::loopback_socket_pair(a, b);
}

bool write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
        if (r <= 0) return false;
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

// Reads one MPA frame byte-exactly (never past it: what follows belongs to the FPDUs).
bool read_mpa(int fd, w::MpaParser &p) {
    uint8_t c;
    while (p.state() == w::MpaParser::State::NeedMore) {
        pollfd pf{fd, POLLIN, 0};
        if (::poll(&pf, 1, 5000) != 1 || ::recv(fd, &c, 1, 0) != 1) return false;
        p.feed({&c, 1});
    }
    return p.state() == w::MpaParser::State::Complete;
}

// MPA v2 exchange on a blocking socket pair: `a` initiates, `b` responds.
bool mpa_exchange(int a, int b, bool want_crc, w::MpaResult &ra, w::MpaResult &rb) {
    w::MpaConfig cfg;
    cfg.want_crc = want_crc;
    cfg.ird = cfg.ord = 16;
    w::MpaFrame req = w::mpa_make_request(cfg);
    uint8_t buf[w::kMpaMaxFrame];
    size_t n = 0;
    if (w::build_mpa_frame(req, buf, n) != w::Status::Ok || !write_all(a, buf, n)) return false;
    w::MpaParser pb(w::MpaKind::Request);
    if (!read_mpa(b, pb)) return false;
    w::MpaConfig rcfg;  // responder: no CRC preference of its own
    w::MpaFrame rep;
    if (w::mpa_respond(rcfg, pb.frame(), {}, rep, rb) != w::Status::Ok) return false;
    if (w::build_mpa_frame(rep, buf, n) != w::Status::Ok || !write_all(b, buf, n)) return false;
    w::MpaParser pa(w::MpaKind::Reply);
    if (!read_mpa(a, pa)) return false;
    return w::mpa_finish_initiator(cfg, req, pa.frame(), ra) == w::Status::Ok;
}

tcp::StreamParams params_of(const w::MpaResult &r, uint32_t mulpdu) {
    tcp::StreamParams p;
    p.crc = r.crc;
    p.ird = r.ird;
    p.ord = r.ord;
    p.mulpdu_tx = mulpdu;
    return p;
}

ri_api_return_t to_rts(Qp *q, ri_llp_stream_handle_t h) {
    ri_err_data_t e = 0;
    ri_qp_attr_t at{};
    at.state = RI_QP_STATE_READY_TO_SEND;
    at.qp_xport.qp_iwarp.llp_stream_handle = h;
    return ri_qp_modify(q->owner->rnic, q->h,
                        QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
}

struct Cfg {
    bool crc;
    uint32_t mulpdu;  // 0: from the MSS
};

class TcpTest : public ::testing::TestWithParam<Cfg> {
  protected:
    void SetUp() override { ASSERT_TRUE(ra.ok() && rb.ok()); }

    // Creates the QPs and connects them over TCP with a real MPA exchange.
    void up(const QpOpts &oa = {}, const QpOpts &ob = {}, Cfg c = {true, 0}, bool rfc7306 = false) {
        a = ra.new_qp(oa);
        b = rb.new_qp(ob);
        ASSERT_TRUE(a && b);
        int fa = -1, fb = -1;
        ASSERT_TRUE(socket_pair(fa, fb));
        w::MpaResult ma, mb;
        ASSERT_TRUE(mpa_exchange(fa, fb, c.crc, ma, mb));
        EXPECT_EQ(ma.crc, c.crc);
        EXPECT_EQ(mb.crc, c.crc);
        tcp::StreamParams pa = params_of(ma, c.mulpdu), pb = params_of(mb, c.mulpdu);
        pa.rfc7306 = pb.rfc7306 = rfc7306;  // agreed out of band (MPA has no bit for it)
        ri_llp_stream_handle_t ha = tcp::adopt_socket(fa, pa);
        ri_llp_stream_handle_t hb = tcp::adopt_socket(fb, pb);
        ASSERT_EQ(ha, fa);
        ASSERT_EQ(hb, fb);
        ASSERT_EQ(to_rts(a, ha), RI_RET_SUCCESS);
        ASSERT_EQ(to_rts(b, hb), RI_RET_SUCCESS);
    }
    Cfg cfg() const { return GetParam(); }

    // Buffers outlive the RNICs (declared first, destroyed last): registered memory must
    // stay valid until it is deregistered, and a responder's send path may still hold
    // its last reference for a moment after the initiator saw its completion.
    std::vector<std::unique_ptr<Buf>> bufs_;
    Buf &buf(size_t len, uint8_t fill = 0) {
        bufs_.push_back(std::make_unique<Buf>(len, fill));
        return *bufs_.back();
    }
    Rnic ra{"A"}, rb{"B"};
    Qp *a = nullptr, *b = nullptr;
};

// Send of `len` bytes split over `nsge` SGEs, received into one buffer; byte-exact.
// `keep` owns the buffers past the test's RNICs (see TcpTest::bufs_).
void send_one(Rnic &ra, Rnic &rb, Qp *a, Qp *b, size_t len, uint32_t nsge, uint64_t seed,
              std::vector<std::unique_ptr<Buf>> &keep) {
    auto buf = [&](size_t n, uint8_t fill = 0) -> Buf & {
        keep.push_back(std::make_unique<Buf>(n, fill));
        return *keep.back();
    };
    Buf &src = buf(len ? len : 1);
    Buf &dst = buf(len + 64, 0x11);
    src.fill(seed);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *md = rb.reg(dst, kLocalRW);
    ASSERT_TRUE(ms && md);
    ri_data_seg_t r = sge(dst.data(), static_cast<uint32_t>(len + 64), md->ltag);
    ASSERT_EQ(post_recv(b, 7, &r, 1), RI_RET_SUCCESS);
    std::vector<ri_data_seg_t> sg;
    size_t off = 0;
    for (uint32_t i = 0; i < nsge; ++i) {
        size_t piece = i + 1 == nsge ? len - off : len / nsge;
        sg.push_back(sge(src.data() + off, static_cast<uint32_t>(piece), ms->ltag));
        off += piece;
    }
    ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, 5, sg.data(), nsge), RI_RET_SUCCESS);
    ri_rc_wc_t s = must_poll(ra, a->scq);
    EXPECT_WC(s, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 5, len);
    ri_rc_wc_t rc = must_poll(rb, b->rcq);
    EXPECT_WC(rc, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 7, len);
    EXPECT_EQ(first_diff(src.data(), dst.data(), len), SIZE_MAX) << "len " << len;
    for (size_t i = len; i < len + 64; ++i)
        ASSERT_EQ(dst.data()[i], 0x11) << "past the message at " << i;
    EXPECT_TRUE(dst.guards_intact());
}

TEST_P(TcpTest, SendSizes) {
    up({}, {}, cfg());
    for (size_t len : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, size_t{16} << 20})
        send_one(ra, rb, a, b, len, 1, len + 1, bufs_);
    send_one(ra, rb, a, b, 100000, 5, 99, bufs_);  // multi-SGE, uneven pieces
    send_one(ra, rb, a, b, 3, 3, 98, bufs_);       // one byte per SGE
}

TEST_P(TcpTest, WriteThenReadBack) {
    up({}, {}, cfg());
    const size_t len = (1 << 20) + 13;
    Buf &src = buf(len);
    Buf &dst = buf(len, 0);
    Buf &back = buf(len, 0);
    src.fill(3);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *mback = ra.reg(back, kLocalRW);
    Mr *md = rb.reg(dst, kAllRemote);
    ri_data_seg_t s = sge(src.data(), static_cast<uint32_t>(len), ms->ltag);
    ASSERT_EQ(post_write(a, kSig, 1, &s, 1, dst.va(), md->rtag), RI_RET_SUCCESS);
    {
        ri_rc_wc_t wc_ = must_poll(ra, a->scq);
        EXPECT_WC(wc_, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, 1, len);
    }
    // Split the read sink over two SGEs to check scatter across spans.
    ri_data_seg_t r[2] = {sge(back.data(), 1000, mback->ltag),
                          sge(back.data() + 1000, static_cast<uint32_t>(len - 1000), mback->ltag)};
    ASSERT_EQ(post_read(a, kSig, 2, r, 2, dst.va(), md->rtag), RI_RET_SUCCESS);
    {
        ri_rc_wc_t wc_ = must_poll(ra, a->scq);
        EXPECT_WC(wc_, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 2, len);
    }
    EXPECT_EQ(first_diff(src.data(), dst.data(), len), SIZE_MAX);
    EXPECT_EQ(first_diff(src.data(), back.data(), len), SIZE_MAX);
    EXPECT_TRUE(dst.guards_intact());
    EXPECT_TRUE(back.guards_intact());
}

// More reads than ORD outstanding, interleaved with sends: completions in posting order.
TEST_P(TcpTest, ManyReadsInOrder) {
    QpOpts o;
    o.ord = 2;
    o.ird = 2;
    up(o, o, cfg());
    const size_t len = 200000;
    Buf &remote = buf(len);
    Buf &sink = buf(len * 8, 0);
    Buf &msg = buf(64);
    Buf &rbuf = buf(64 * 8);
    remote.fill(9);
    msg.fill(1);
    Mr *mr = rb.reg(remote, kAllRemote);
    Mr *ms = ra.reg(sink, kLocalRW);
    Mr *mm = ra.reg(msg, kLocalRW);
    Mr *mrb = rb.reg(rbuf, kLocalRW);
    for (int i = 0; i < 8; ++i) {
        ri_data_seg_t r = sge(rbuf.data() + 64 * i, 64, mrb->ltag);
        ASSERT_EQ(post_recv(b, 100 + i, &r, 1), RI_RET_SUCCESS);
    }
    for (int i = 0; i < 8; ++i) {
        ri_data_seg_t s = sge(sink.data() + len * i, static_cast<uint32_t>(len), ms->ltag);
        ASSERT_EQ(post_read(a, kSig, 10 + 2 * i, &s, 1, remote.va(), mr->rtag), RI_RET_SUCCESS);
        ri_data_seg_t m = sge(msg.data(), 64, mm->ltag);
        ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, 11 + 2 * i, &m, 1), RI_RET_SUCCESS);
    }
    auto wcs = poll_n(ra, a->scq, 16);
    for (size_t i = 0; i < wcs.size(); ++i) {
        EXPECT_EQ(wcs[i].id, 10 + i) << "completion order";
        EXPECT_EQ(wcs[i].op_status, RI_WC_STATUS_SUCCESS);
        EXPECT_EQ(wcs[i].op_type, i % 2 ? RI_WC_TYPE_SEND : RI_WC_TYPE_RDMA_READ);
    }
    for (int i = 0; i < 8; ++i)
        EXPECT_EQ(first_diff(remote.data(), sink.data() + len * i, len), SIZE_MAX) << i;
    auto rcs = poll_n(rb, b->rcq, 8);
    for (size_t i = 0; i < rcs.size(); ++i)
        EXPECT_EQ(rcs[i].id, 100 + i);
}

TEST_P(TcpTest, SendWithInvalidate) {
    up({}, {}, cfg());
    Buf &target = buf(4096);
    Buf &src = buf(32);
    Buf &dst = buf(32);
    Mr *mt = rb.reg(target, kAllRemote);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *md = rb.reg(dst, kLocalRW);
    ri_data_seg_t r = sge(dst.data(), 32, md->ltag);
    ASSERT_EQ(post_recv(b, 1, &r, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = sge(src.data(), 32, ms->ltag);
    ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND_INVALIDATE, kSig | RI_WR_SOLICITED_EVENT_FLAG, 2, &s, 1,
                        mt->rtag),
              RI_RET_SUCCESS);
    {
        ri_rc_wc_t wc_ = must_poll(ra, a->scq);
        EXPECT_WC(wc_, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 2, 32);
    }
    ri_rc_wc_t wc = must_poll(rb, b->rcq);
    EXPECT_WC(wc, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 1, 32);
    EXPECT_TRUE(wc.flags & RI_WC_FLAG_RTAG_INVALIDATE);
    EXPECT_TRUE(wc.flags & RI_WC_FLAG_SOLICITED_EVENT);
    EXPECT_EQ(wc.invalidated_rtag, mt->rtag);
    // The STag is gone: a write to it now fails at B (Terminate back to A).
    ASSERT_EQ(post_write(a, 0, 3, &s, 1, target.va(), mt->rtag), RI_RET_SUCCESS);
    EXPECT_TRUE(wait_state(b, RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
}

// 1000 small sends posted back to back: segmentation, socket-full queueing, in-order.
TEST_P(TcpTest, ThousandSmallSends) {
    constexpr int kN = 1000;
    QpOpts o;
    o.sq = 1024;
    o.rq = 1024;
    o.scq = ra.new_cq(2048);
    o.rcq = ra.new_cq(2048);
    QpOpts ob = o;
    ob.scq = rb.new_cq(2048);
    ob.rcq = rb.new_cq(2048);
    up(o, ob, cfg());
    const uint32_t len = 700;
    Buf &src = buf(len * kN);
    Buf &dst = buf(len * kN, 0);
    src.fill(77);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *md = rb.reg(dst, kLocalRW);
    for (int i = 0; i < kN; ++i) {
        ri_data_seg_t r = sge(dst.data() + size_t{len} * i, len, md->ltag);
        ASSERT_EQ(post_recv(b, i, &r, 1), RI_RET_SUCCESS);
    }
    for (int i = 0; i < kN; ++i) {
        ri_data_seg_t s = sge(src.data() + size_t{len} * i, len, ms->ltag);
        ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, i, &s, 1), RI_RET_SUCCESS);
    }
    auto sw = poll_n(ra, a->scq, kN);
    for (size_t i = 0; i < sw.size(); ++i) {
        EXPECT_EQ(sw[i].id, i);
        EXPECT_EQ(sw[i].op_status, RI_WC_STATUS_SUCCESS);
    }
    auto rw = poll_n(rb, b->rcq, kN);
    for (size_t i = 0; i < rw.size(); ++i) {
        EXPECT_EQ(rw[i].id, i);
        EXPECT_EQ(rw[i].bytes_transferred, len);
    }
    EXPECT_EQ(first_diff(src.data(), dst.data(), src.size()), SIZE_MAX);
}

INSTANTIATE_TEST_SUITE_P(Modes, TcpTest,
                         ::testing::Values(Cfg{true, 0}, Cfg{false, 0}, Cfg{true, 512},
                                           Cfg{false, 1460}),
                         [](const auto &i) {
                             return std::string(i.param.crc ? "Crc" : "NoCrc") + "Mulpdu" +
                                    std::to_string(i.param.mulpdu);
                         });

class TcpErrors : public TcpTest {};

TEST_F(TcpErrors, BadStagWrite) {
    up();
    Buf &src = buf(4096);
    Buf &sink = buf(64);
    Buf &target = buf(64);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *mk = ra.reg(sink, kLocalRW);
    Mr *mt = rb.reg(target, kAllRemote);
    ri_data_seg_t s = sge(src.data(), 4096, ms->ltag);
    // Write to an STag B never issued; the read behind it is outstanding when the
    // Terminate arrives and completes with it (the write itself completed locally once
    // its bytes were in the kernel, as iWARP writes do).
    ASSERT_EQ(post_write(a, kSig, 1, &s, 1, 0x1000, mt->rtag ^ 0x5500), RI_RET_SUCCESS);
    ri_data_seg_t k = sge(sink.data(), 64, mk->ltag);
    ASSERT_EQ(post_read(a, kSig, 2, &k, 1, target.va(), mt->rtag), RI_RET_SUCCESS);
    ri_rc_wc_t w1 = must_poll(ra, a->scq);
    EXPECT_EQ(w1.id, 1u);
    EXPECT_EQ(w1.op_status, RI_WC_STATUS_SUCCESS);
    ri_rc_wc_t w2 = must_poll(ra, a->scq);
    EXPECT_EQ(w2.id, 2u);
    // Usually the read is outstanding when the Terminate arrives and fails with it; on a
    // loaded machine the Terminate can arrive before the read is posted, and the read is
    // then posted to a QP already in Error and flushed. Both are correct.
    EXPECT_TRUE(w2.op_status == RI_WC_STATUS_REMOTE_TERMINATION_ERROR ||
                w2.op_status == RI_WC_STATUS_WR_FLUSHED_ERROR)
        << "status " << w2.op_status;
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, a->os()));
    EXPECT_TRUE(wait_event(rb, RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH, b->os()))
        << rb.rec.describe_events();
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_state(b, RI_QP_STATE_ERROR));
    ri_qp_attr_t qa = query(a);
    EXPECT_FALSE(qa.qp_xport.qp_iwarp.is_terminate_local);
    EXPECT_GE(qa.qp_xport.qp_iwarp.terminate_msg_length, 4u);
    // DDP tagged, invalid STag (the engine's code for an unknown STag).
    EXPECT_EQ(qa.qp_xport.qp_iwarp.terminate_buffer[0] >> 4, 1);
    EXPECT_EQ(qa.qp_xport.qp_iwarp.terminate_buffer[0] & 0xF, 1);
}

TEST_F(TcpErrors, PeerDestroyedMidStream) {
    up();
    Buf &dst = buf(4096);
    Buf &sink = buf(1 << 20);
    Buf &remote = buf(1 << 20);
    Mr *md = ra.reg(dst, kLocalRW);
    Mr *mk = ra.reg(sink, kLocalRW);
    Mr *mr = rb.reg(remote, kAllRemote);
    ri_data_seg_t r = sge(dst.data(), 4096, md->ltag);
    ASSERT_EQ(post_recv(a, 1, &r, 1), RI_RET_SUCCESS);
    ri_data_seg_t k = sge(sink.data(), 1 << 20, mk->ltag);
    for (int i = 0; i < 4; ++i)
        ASSERT_EQ(post_read(a, kSig, 10 + i, &k, 1, remote.va(), mr->rtag), RI_RET_SUCCESS);
    ASSERT_EQ(rb.destroy(b), RI_RET_SUCCESS);
    auto t0 = Clock::now();
    auto sw = poll_n(ra, a->scq, 4, std::chrono::seconds(5));
    for (size_t i = 0; i < sw.size(); ++i) {
        EXPECT_EQ(sw[i].id, 10 + i);
        // A read may have finished before B went away; one that B was serving while its
        // destroy closed the rx gate gets B's Terminate (local catastrophic).
        EXPECT_TRUE(sw[i].op_status == RI_WC_STATUS_WR_FLUSHED_ERROR ||
                    sw[i].op_status == RI_WC_STATUS_SUCCESS ||
                    sw[i].op_status == RI_WC_STATUS_REMOTE_TERMINATION_ERROR)
            << sw[i].op_status;
    }
    ri_rc_wc_t rw = must_poll(ra, a->rcq);
    EXPECT_EQ(rw.id, 1u);
    EXPECT_EQ(rw.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
}

TEST_F(TcpErrors, PeerSocketClosed) {
    a = ra.new_qp();
    ASSERT_TRUE(a);
    int fa = -1, fb = -1;
    ASSERT_TRUE(socket_pair(fa, fb));
    tcp::StreamParams p;
    ASSERT_EQ(to_rts(a, tcp::adopt_socket(fa, p)), RI_RET_SUCCESS);
    Buf &dst = buf(64);
    Mr *md = ra.reg(dst, kLocalRW);
    ri_data_seg_t r = sge(dst.data(), 64, md->ltag);
    ASSERT_EQ(post_recv(a, 1, &r, 1), RI_RET_SUCCESS);
    linger lg{1, 0};
    ::setsockopt(fb, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    ::close(fb);  // RST
    ri_rc_wc_t rw = must_poll(ra, a->rcq);
    EXPECT_EQ(rw.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_LLQ_CONNECTION_RESET, a->os()));
}

// A raw peer sends a Send FPDU with a corrupted CRC: the QP answers with Terminate
// LLP/MPA/CRC (layer 2, etype 0, ecode 2) and goes to Error.
TEST_F(TcpErrors, CorruptedCrc) {
    a = ra.new_qp();
    ASSERT_TRUE(a);
    int fa = -1, fb = -1;
    ASSERT_TRUE(socket_pair(fa, fb));
    tcp::StreamParams p;
    p.crc = true;
    ASSERT_EQ(to_rts(a, tcp::adopt_socket(fa, p)), RI_RET_SUCCESS);
    Buf &dst = buf(64);
    Mr *md = ra.reg(dst, kLocalRW);
    ri_data_seg_t r = sge(dst.data(), 64, md->ltag);
    ASSERT_EQ(post_recv(a, 1, &r, 1), RI_RET_SUCCESS);

    w::DdpHeader h{};
    h.opcode = w::Opcode::Send;
    h.qn = 0;
    h.msn = 1;
    uint8_t hdr[w::kMaxHeaderLen];
    size_t hl = w::encode_ddp_header(h, hdr);
    uint8_t payload[16] = {1, 2, 3};
    uint8_t fpdu[128];
    size_t n = 0;
    ASSERT_EQ(w::encode_fpdu({hdr, hl}, {payload, sizeof payload}, true, fpdu, n), w::Status::Ok);
    fpdu[n - 1] ^= 0x5A;  // corrupt the CRC
    ASSERT_TRUE(write_all(fb, fpdu, n));

    // Read the Terminate FPDU.
    w::FpduDecoder dec({true, 0xFFFF});
    uint8_t in[512];
    bool got = false;
    w::Segment seg;
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!got && Clock::now() < deadline) {
        pollfd pf{fb, POLLIN, 0};
        if (::poll(&pf, 1, 100) != 1) continue;
        ssize_t k = ::recv(fb, in, sizeof in, 0);
        if (k <= 0) break;
        std::span<const uint8_t> rest(in, static_cast<size_t>(k));
        while (!rest.empty() && !got) {
            auto fr = dec.feed(rest);
            rest = rest.subspan(fr.consumed);
            if (fr.state == w::FeedState::Segment) {
                ASSERT_EQ(w::decode_segment(dec.segment(), seg), w::Status::Ok);
                got = true;
            }
            ASSERT_NE(fr.state, w::FeedState::Error);
        }
    }
    ASSERT_TRUE(got);
    EXPECT_EQ(seg.hdr.opcode, w::Opcode::Terminate);
    EXPECT_EQ(seg.term.code, (w::TermCode{2, 0, 0x02}));
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    // The engine hears of it as a CRC integrity error (not a bare connection reset) and
    // keeps the Terminate it sent as the local one.
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_LLQ_INTEGRITY_ERROR_CRC, a->os()))
        << ra.rec.describe_events();
    ri_qp_attr_t qa = query(a);
    EXPECT_TRUE(qa.qp_xport.qp_iwarp.is_terminate_local);
    EXPECT_EQ(static_cast<uint8_t>(qa.qp_xport.qp_iwarp.terminate_buffer[0]) >> 4, 2);
    ri_rc_wc_t rw = must_poll(ra, a->rcq);
    EXPECT_EQ(rw.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    ::close(fb);
}

// Graceful disconnect (RDMAC Fig. 6): A moves to Closing with nothing outstanding; its
// stream closes in order, B's QP sees the close and goes to Idle, A's close completes, both
// raise LLQ_CLOSE_COMPLETE. Data sent before the close arrives first.
TEST_F(TcpErrors, GracefulDisconnectBothSidesSeeIt) {
    up();
    Buf &src = buf(4096);
    Buf &dst = buf(4096);
    src.fill(3);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *md = rb.reg(dst, kLocalRW);
    ri_data_seg_t r = sge(dst.data(), 4096, md->ltag);
    ASSERT_EQ(post_recv(b, 1, &r, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = sge(src.data(), 4096, ms->ltag);
    ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, 2, &s, 1), RI_RET_SUCCESS);
    ri_rc_wc_t sw = must_poll(ra, a->scq);  // EXPECT_WC evaluates its argument repeatedly
    EXPECT_WC(sw, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 2, 4096);
    ASSERT_EQ(modify_state(a, RI_QP_STATE_CLOSING), RI_RET_SUCCESS);
    ri_rc_wc_t rw = must_poll(rb, b->rcq);
    EXPECT_WC(rw, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 1, 4096);
    EXPECT_EQ(first_diff(src.data(), dst.data(), 4096), SIZE_MAX);
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_IDLE));
    EXPECT_TRUE(wait_state(b, RI_QP_STATE_IDLE));
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_LLQ_CLOSE_COMPLETE, a->os()))
        << ra.rec.describe_events();
    EXPECT_TRUE(wait_event(rb, RI_EVENT_QP_LLQ_CLOSE_COMPLETE, b->os()))
        << rb.rec.describe_events();
}

// A graceful close while the peer still has receives posted: the peer reports a bad close,
// goes to Error and flushes its receives; the closing side completes its close.
TEST_F(TcpErrors, GracefulDisconnectFlushesPeerReceives) {
    up();
    Buf &dst = buf(256);
    Mr *md = rb.reg(dst, kLocalRW);
    ri_data_seg_t r = sge(dst.data(), 256, md->ltag);
    ASSERT_EQ(post_recv(b, 7, &r, 1), RI_RET_SUCCESS);
    ASSERT_EQ(post_recv(b, 8, &r, 1), RI_RET_SUCCESS);
    ASSERT_EQ(modify_state(a, RI_QP_STATE_CLOSING), RI_RET_SUCCESS);
    auto flushed = poll_n(rb, b->rcq, 2, std::chrono::seconds(10));
    ASSERT_EQ(flushed.size(), 2u);
    EXPECT_EQ(flushed[0].id, 7u);
    EXPECT_EQ(flushed[1].id, 8u);
    EXPECT_EQ(flushed[0].op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_EQ(flushed[1].op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_TRUE(wait_state(b, RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_event(rb, RI_EVENT_TYPE_BAD_CLOSE, b->os())) << rb.rec.describe_events();
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_IDLE));
}

// RFC 7306 on the wire, when both ends agreed to it: fetch-and-add and compare-and-swap
// (hit and miss) execute at the target and return the original value; they share ORD with
// reads and come back in order with them; RDMA Write with immediate places the data and
// consumes a receive with the immediate, the Write's length and the solicited flag.
class TcpRfc7306 : public TcpTest {};

TEST_F(TcpRfc7306, AtomicsExecuteAtTheTargetInOrderWithReads) {
    QpOpts o;
    up(o, o, {true, 0}, true);
    Buf &target = buf(64);
    Buf &results = buf(64);
    Buf &sink = buf(64);
    uint64_t v = 100;
    std::memcpy(target.data(), &v, 8);
    Mr *mt = rb.reg(target, kAllRemote | RI_MEM_FLAGS_ATOMICS);
    Mr *mr = ra.reg(results, kLocalRW);
    Mr *mk = ra.reg(sink, kLocalRW);
    ASSERT_TRUE(mt && mr && mk);
    auto atomic = [&](ri_wr_type_t t, uint64_t id, uint64_t op1, uint64_t op2, size_t slot) {
        ri_wr_t w;
        std::memset(&w, 0, sizeof w);
        w.wr_atomic.type = t;
        w.wr_atomic.flags = F(kSig);
        w.wr_atomic.id = id;
        w.wr_atomic.rtag = mt->rtag;
        w.wr_atomic.atomic_operand1 = op1;
        w.wr_atomic.atomic_operand2 = op2;
        w.wr_atomic.atomic_result = sge(results.data() + 8 * slot, 8, mr->ltag);
        return post_wr(a, &w);
    };
    ASSERT_EQ(atomic(RI_WR_TYPE_FETCH_AND_ADD, 1, 5, 0, 0), RI_RET_SUCCESS);  // 100 -> 105
    ri_data_seg_t k = sge(sink.data(), 8, mk->ltag);
    ASSERT_EQ(post_read(a, kSig, 2, &k, 1, target.va(), mt->rtag), RI_RET_SUCCESS);  // 105
    ASSERT_EQ(atomic(RI_WR_TYPE_COMPARE_AND_SWAP, 3, 105, 7, 1), RI_RET_SUCCESS);    // hit: 7
    ASSERT_EQ(atomic(RI_WR_TYPE_COMPARE_AND_SWAP, 4, 105, 9, 2), RI_RET_SUCCESS);    // miss
    auto wcs = poll_n(ra, a->scq, 4, std::chrono::seconds(10));
    ASSERT_EQ(wcs.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(wcs[i].id, i + 1);
        EXPECT_EQ(wcs[i].op_status, RI_WC_STATUS_SUCCESS) << i;
    }
    EXPECT_EQ(wcs[0].op_type, RI_WC_TYPE_FETCH_AND_ADD);
    EXPECT_EQ(wcs[2].op_type, RI_WC_TYPE_COMPARE_AND_SWAP);
    uint64_t r[3], now, read_back;
    std::memcpy(r, results.data(), sizeof r);
    std::memcpy(&now, target.data(), 8);
    std::memcpy(&read_back, sink.data(), 8);
    EXPECT_EQ(r[0], 100u);
    EXPECT_EQ(read_back, 105u);
    EXPECT_EQ(r[1], 105u);
    EXPECT_EQ(r[2], 7u);  // the miss returns the current value and changes nothing
    EXPECT_EQ(now, 7u);
    EXPECT_TRUE(target.guards_intact());
}

TEST_F(TcpRfc7306, AtomicWithoutAtomicRightsIsRefusedByTheTarget) {
    up({}, {}, {true, 0}, true);
    Buf &target = buf(8);
    Buf &result = buf(8);
    Mr *mt = rb.reg(target, kAllRemote);  // no RI_MEM_FLAGS_ATOMICS
    Mr *mr = ra.reg(result, kLocalRW);
    ri_wr_t w;
    std::memset(&w, 0, sizeof w);
    w.wr_atomic.type = RI_WR_TYPE_FETCH_AND_ADD;
    w.wr_atomic.flags = F(kSig);
    w.wr_atomic.id = 9;
    w.wr_atomic.rtag = mt->rtag;
    w.wr_atomic.atomic_operand1 = 1;
    w.wr_atomic.atomic_result = sge(result.data(), 8, mr->ltag);
    ASSERT_EQ(post_wr(a, &w), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(ra, a->scq);
    EXPECT_EQ(wc.id, 9u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_REMOTE_TERMINATION_ERROR);
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_state(b, RI_QP_STATE_ERROR));
    uint64_t v;
    std::memcpy(&v, target.data(), 8);
    EXPECT_EQ(v, 0u);
}

TEST_F(TcpRfc7306, WriteWithImmediateConsumesAReceive) {
    up({}, {}, {false, 512}, true);  // small MULPDU: the Write spans several segments
    Buf &src = buf(5000);
    Buf &dst = buf(5000, 0x22);
    Buf &rq = buf(16);
    src.fill(77);
    Mr *ms = ra.reg(src, kLocalRW);
    Mr *md = rb.reg(dst, kAllRemote);
    Mr *mq = rb.reg(rq, kLocalRW);
    ri_data_seg_t r = sge(rq.data(), 16, mq->ltag);
    ASSERT_EQ(post_recv(b, 70, &r, 1), RI_RET_SUCCESS);
    ASSERT_EQ(post_recv(b, 71, &r, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = sge(src.data(), 5000, ms->ltag);
    ASSERT_EQ(post_write(a, kSig | RI_WR_SOLICITED_EVENT_FLAG, 5, &s, 1, dst.va(), md->rtag,
                         RI_WR_TYPE_RDMA_WRITE_IMMEDIATE, 0xC0FFEE),
              RI_RET_SUCCESS);
    ASSERT_EQ(
        post_write(a, kSig, 6, &s, 1, dst.va(), md->rtag, RI_WR_TYPE_RDMA_WRITE_IMMEDIATE, 0x1234),
        RI_RET_SUCCESS);
    auto sw = poll_n(ra, a->scq, 2, std::chrono::seconds(10));
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(sw[0].op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(sw[1].op_status, RI_WC_STATUS_SUCCESS);
    auto rw = poll_n(rb, b->rcq, 2, std::chrono::seconds(10));
    ASSERT_EQ(rw.size(), 2u);
    EXPECT_EQ(rw[0].id, 70u);
    EXPECT_EQ(rw[0].op_type, RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED);
    EXPECT_EQ(rw[0].op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rw[0].bytes_transferred, 5000u);
    EXPECT_EQ(rw[0].immediate_data, 0xC0FFEEu);
    EXPECT_TRUE(static_cast<unsigned>(rw[0].flags) & RI_WC_FLAG_IMMEDIATE_DATA);
    EXPECT_TRUE(static_cast<unsigned>(rw[0].flags) & RI_WC_FLAG_SOLICITED_EVENT);
    EXPECT_EQ(rw[1].immediate_data, 0x1234u);
    EXPECT_FALSE(static_cast<unsigned>(rw[1].flags) & RI_WC_FLAG_SOLICITED_EVENT);
    EXPECT_EQ(first_diff(src.data(), dst.data(), 5000), SIZE_MAX);
}

// Without the agreement the engine refuses these WRs at post time (the peer might be
// siw, which answers them with a Terminate), and the QP stays usable.
TEST_F(TcpRfc7306, NotAgreedMeansRefusedAtPost) {
    up();
    Buf &mem = buf(64);
    Mr *m = ra.reg(mem, kAllRemote | RI_MEM_FLAGS_ATOMICS);
    ri_wr_t w;
    std::memset(&w, 0, sizeof w);
    w.wr_atomic.type = RI_WR_TYPE_FETCH_AND_ADD;
    w.wr_atomic.flags = F(kSig);
    w.wr_atomic.rtag = m->rtag;
    w.wr_atomic.atomic_result = sge(mem.data(), 8, m->ltag);
    EXPECT_EQ(post_wr(a, &w), RI_RET_RNIC_ATOMICS_UNSUPPORTED);
    ri_data_seg_t s = sge(mem.data(), 8, m->ltag);
    EXPECT_EQ(post_write(a, kSig, 1, &s, 1, mem.va(), m->rtag, RI_WR_TYPE_RDMA_WRITE_IMMEDIATE, 1),
              RI_RET_OP_UNSUPPORTED);
    EXPECT_EQ(post_send(a, RI_WR_TYPE_SEND_IMMEDIATE, kSig, 2, &s, 1, 0, 1), RI_RET_OP_UNSUPPORTED);
    // Still in RTS and working.
    Buf &dst = buf(8);
    Mr *md = rb.reg(dst, kLocalRW);
    ri_data_seg_t r = sge(dst.data(), 8, md->ltag);
    ASSERT_EQ(post_recv(b, 3, &r, 1), RI_RET_SUCCESS);
    ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, 4, &s, 1), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(ra, a->scq);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(query(a).state, RI_QP_STATE_READY_TO_SEND);
}

// A FIN that ends the stream inside an FPDU, or between the FPDUs of one message, is a lost
// connection (LLP "connection lost", QP to Error, receives flushed), not an orderly close;
// a FIN after a whole message with nothing outstanding is the orderly close.
class TcpFin : public TcpTest {
  protected:
    // A raw peer `fb` for QP `a` (no CRC, MULPDU irrelevant: we write the FPDUs).
    int raw_peer() {
        a = ra.new_qp();
        EXPECT_TRUE(a);
        int fa = -1, fb = -1;
        EXPECT_TRUE(socket_pair(fa, fb));
        tcp::StreamParams p;
        EXPECT_EQ(to_rts(a, tcp::adopt_socket(fa, p)), RI_RET_SUCCESS);
        return fb;
    }
    std::vector<uint8_t> write_fpdu(uint32_t stag, uint64_t to, size_t len, bool last) {
        w::DdpHeader h{};
        h.opcode = w::Opcode::RdmaWrite;
        h.stag = stag;
        h.to = to;
        h.last = last;
        uint8_t hdr[w::kMaxHeaderLen];
        size_t hl = w::encode_ddp_header(h, hdr);
        std::vector<uint8_t> payload(len, 0x5C), out(len + 64);
        size_t n = 0;
        EXPECT_EQ(
            w::encode_fpdu(std::span<const uint8_t>(hdr, hl), std::span<const uint8_t>(payload),
                           false, std::span<uint8_t>(out), n),
            w::Status::Ok);
        out.resize(n);
        return out;
    }
};

TEST_F(TcpFin, FinInsideAnFpduIsALostConnection) {
    int fb = raw_peer();
    Buf &target = buf(4096);
    Mr *mt = ra.reg(target, kAllRemote);
    auto f = write_fpdu(mt->rtag, target.va(), 1000, true);
    ASSERT_TRUE(write_all(fb, f.data(), f.size() / 2));
    ::shutdown(fb, SHUT_WR);  // FIN
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_LLQ_CONNECTION_LOST, a->os()))
        << ra.rec.describe_events();
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    EXPECT_EQ(ra.rec.count_events(RI_EVENT_QP_LLQ_CLOSE_COMPLETE, a->os()), 0u);
    ::close(fb);
}

TEST_F(TcpFin, FinInsideAMessageIsALostConnection) {
    int fb = raw_peer();
    Buf &target = buf(4096);
    Mr *mt = ra.reg(target, kAllRemote);
    auto f = write_fpdu(mt->rtag, target.va(), 1000, false);  // first of two segments
    ASSERT_TRUE(write_all(fb, f.data(), f.size()));
    ::shutdown(fb, SHUT_WR);
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_LLQ_CONNECTION_LOST, a->os()))
        << ra.rec.describe_events();
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    ::close(fb);
}

TEST_F(TcpFin, FinAfterAWholeMessageIsAnOrderlyClose) {
    int fb = raw_peer();
    Buf &target = buf(4096);
    Mr *mt = ra.reg(target, kAllRemote);
    auto f = write_fpdu(mt->rtag, target.va(), 1000, true);
    ASSERT_TRUE(write_all(fb, f.data(), f.size()));
    ::shutdown(fb, SHUT_WR);
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_LLQ_CLOSE_COMPLETE, a->os()))
        << ra.rec.describe_events();
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_IDLE));
    EXPECT_EQ(target.data()[999], 0x5C);
    ::close(fb);
}

// RFC 6581 responder with the Write RTR (StreamParams::await_rtr): the QP may post at once,
// but nothing goes on the wire before the initiator's zero-length Write; then the held send
// follows. Any other first FPDU is a Terminate LLP/MPA "no matching RTR".
class TcpRtr : public TcpFin {
  protected:
    int responder(bool await) {
        a = ra.new_qp();
        EXPECT_TRUE(a);
        int fa = -1, fb = -1;
        EXPECT_TRUE(socket_pair(fa, fb));
        tcp::StreamParams p;
        p.await_rtr = await;
        EXPECT_EQ(to_rts(a, tcp::adopt_socket(fa, p)), RI_RET_SUCCESS);
        return fb;
    }
    static bool readable(int fd, int ms) {
        pollfd pf{fd, POLLIN, 0};
        return ::poll(&pf, 1, ms) == 1;
    }
};

TEST_F(TcpRtr, SendsAreHeldUntilTheRtrArrives) {
    int fb = responder(true);
    Buf &src = buf(8);
    Mr *ms = ra.reg(src, kLocalRW);
    ri_data_seg_t s = sge(src.data(), 8, ms->ltag);
    ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, 1, &s, 1), RI_RET_SUCCESS);
    EXPECT_FALSE(readable(fb, 200)) << "the responder sent before the initiator's RTR";
    auto rtr = write_fpdu(1, 0, 0, true);  // zero-length Write, dummy STag 1
    ASSERT_TRUE(write_all(fb, rtr.data(), rtr.size()));
    ASSERT_TRUE(readable(fb, 5000));
    w::FpduDecoder dec({false, 0xFFFF});
    uint8_t in[256];
    ssize_t k = ::recv(fb, in, sizeof in, 0);
    ASSERT_GT(k, 0);
    auto fr = dec.feed({in, static_cast<size_t>(k)});
    ASSERT_EQ(fr.state, w::FeedState::Segment);
    w::Segment seg;
    ASSERT_EQ(w::decode_segment(dec.segment(), seg), w::Status::Ok);
    EXPECT_EQ(seg.hdr.opcode, w::Opcode::Send);
    ri_rc_wc_t wc = must_poll(ra, a->scq);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(query(a).state, RI_QP_STATE_READY_TO_SEND);
    ::close(fb);
}

TEST_F(TcpRtr, AnotherFirstFpduIsNoMatchingRtr) {
    int fb = responder(true);
    Buf &target = buf(64);
    Mr *mt = ra.reg(target, kAllRemote);
    auto f = write_fpdu(mt->rtag, target.va(), 16, true);  // a Write with data: not the RTR
    ASSERT_TRUE(write_all(fb, f.data(), f.size()));
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    EXPECT_NE(target.data()[0], 0x5C) << "data of a non-RTR first FPDU was placed";
    ASSERT_TRUE(readable(fb, 5000));
    w::FpduDecoder dec({false, 0xFFFF});
    uint8_t in[256];
    ssize_t k = ::recv(fb, in, sizeof in, 0);
    ASSERT_GT(k, 0);
    auto fr = dec.feed({in, static_cast<size_t>(k)});
    ASSERT_EQ(fr.state, w::FeedState::Segment);
    w::Segment seg;
    ASSERT_EQ(w::decode_segment(dec.segment(), seg), w::Status::Ok);
    EXPECT_EQ(seg.hdr.opcode, w::Opcode::Terminate);
    EXPECT_EQ(seg.term.code, w::term_code(w::Status::MpaNoMatchingRtr));
    ::close(fb);
}

}  // namespace

namespace {

// Sends posted while the peer does not read: the first go to the kernel from the posting
// thread (no queue record), one of them usually only in part once the socket fills (the
// rest is kept as an owned FPDU), and the later ones queue behind it. The raw peer then
// reads everything: every FPDU whole, in posting order, with its own bytes and MSN.
TEST_F(TcpFin, SendsIntoAFullSocketStayFramedAndOrdered) {
    a = ra.new_qp();
    ASSERT_TRUE(a);
    int fa = -1, fb = -1;
    ASSERT_TRUE(socket_pair(fa, fb));
    int small = 4096;
    ::setsockopt(fa, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(fb, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    tcp::StreamParams p;
    ASSERT_EQ(to_rts(a, tcp::adopt_socket(fa, p)), RI_RET_SUCCESS);

    constexpr size_t kMsgs = 48, kLen = 1499;
    Buf &src = buf(kMsgs * kLen);
    Mr *ms = ra.reg(src, kLocalRW);
    for (size_t i = 0; i < kMsgs * kLen; ++i)
        src.data()[i] = static_cast<uint8_t>(i / kLen * 7 + i % 251);
    for (size_t m = 0; m < kMsgs; ++m) {
        ri_data_seg_t s = sge(src.data() + m * kLen, kLen, ms->ltag);
        ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, m, &s, 1), RI_RET_SUCCESS) << m;
    }

    w::FpduDecoder dec({false, 0xFFFF});
    std::vector<uint8_t> in(1 << 16);
    size_t got = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (got < kMsgs && std::chrono::steady_clock::now() < deadline) {
        pollfd pf{fb, POLLIN, 0};
        if (::poll(&pf, 1, 100) != 1) continue;
        ssize_t k = ::recv(fb, in.data(), in.size(), 0);
        ASSERT_GT(k, 0);
        std::span<const uint8_t> rest(in.data(), static_cast<size_t>(k));
        while (!rest.empty()) {
            auto fr = dec.feed(rest);
            rest = rest.subspan(fr.consumed);
            ASSERT_NE(fr.state, w::FeedState::Error) << "framing lost after message " << got;
            if (fr.state != w::FeedState::Segment) continue;
            w::Segment seg;
            ASSERT_EQ(w::decode_segment(dec.segment(), seg), w::Status::Ok);
            ASSERT_EQ(seg.hdr.opcode, w::Opcode::Send);
            ASSERT_TRUE(seg.hdr.last);
            EXPECT_EQ(seg.hdr.msn, got + 1);
            ASSERT_EQ(seg.payload.size(), kLen);
            EXPECT_TRUE(std::equal(seg.payload.begin(), seg.payload.end(), src.data() + got * kLen))
                << "message " << got << " carries other bytes";
            ++got;
        }
    }
    EXPECT_EQ(got, kMsgs);
    for (size_t m = 0; m < kMsgs; ++m) {
        ri_rc_wc_t wc = must_poll(ra, a->scq);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        EXPECT_EQ(wc.id, m) << "send completions out of posting order";
    }
    ::close(fb);
}

// A graceful close that the engine ends in Error at once (receives still posted: a bad
// close, RDMAC Fig. 6; uDAPL's disconnect takes this path) while the peer is slow to read.
// Every send completed before the close is in our kernel's send buffer, not yet at the
// peer: the stream must end with those bytes and a FIN. It used to end with a reset, which
// discarded them (dapltest: the server never got the client's last sync message).
TEST_F(TcpFin, SendsCompletedBeforeACloseReachAPeerSlowToRead) {
    a = ra.new_qp();
    ASSERT_TRUE(a);
    int fa = -1, fb = -1;
    ASSERT_TRUE(socket_pair(fa, fb));
    int small = 4096;
    ::setsockopt(fa, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(fb, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    tcp::StreamParams p;
    ASSERT_EQ(to_rts(a, tcp::adopt_socket(fa, p)), RI_RET_SUCCESS);

    Buf &rx = buf(64);
    Mr *mr = ra.reg(rx, kLocalRW);
    ri_data_seg_t r = sge(rx.data(), 64, mr->ltag);
    ASSERT_EQ(post_recv(a, 1000, &r, 1), RI_RET_SUCCESS);
    constexpr size_t kMsgs = 48, kLen = 1499;
    Buf &src = buf(kMsgs * kLen);
    Mr *ms = ra.reg(src, kLocalRW);
    for (size_t i = 0; i < kMsgs * kLen; ++i)
        src.data()[i] = static_cast<uint8_t>(i / kLen * 7 + i % 251);
    for (size_t m = 0; m < kMsgs; ++m) {
        ri_data_seg_t s = sge(src.data() + m * kLen, kLen, ms->ltag);
        ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, m, &s, 1), RI_RET_SUCCESS) << m;
    }
    // The peer reads nothing: what our socket takes completes, the rest stays queued. Wait
    // until completions stop coming (the socket is full), then close.
    size_t completed = 0;
    for (;;) {
        ri_rc_wc_t wc{};
        if (!poll_one(ra, a->scq, &wc, std::chrono::milliseconds(200))) break;
        ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        ASSERT_EQ(wc.id, completed);
        ++completed;
    }
    ASSERT_GT(completed, 0u);
    ASSERT_LT(completed, kMsgs) << "the socket took every send: nothing is left to test";
    ASSERT_EQ(modify_state(a, RI_QP_STATE_CLOSING), RI_RET_SUCCESS);
    EXPECT_TRUE(wait_event(ra, RI_EVENT_TYPE_BAD_CLOSE, a->os())) << ra.rec.describe_events();
    EXPECT_TRUE(wait_state(a, RI_QP_STATE_ERROR));

    // Now the peer reads to the end of the stream.
    w::FpduDecoder dec({false, 0xFFFF});
    std::vector<uint8_t> in(1 << 16);
    size_t got = 0;
    ssize_t k = 0;
    int err = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd pf{fb, POLLIN, 0};
        if (::poll(&pf, 1, 100) != 1) continue;
        k = ::recv(fb, in.data(), in.size(), 0);
        if (k <= 0) {
            err = k < 0 ? errno : 0;
            break;
        }
        std::span<const uint8_t> rest(in.data(), static_cast<size_t>(k));
        while (!rest.empty()) {
            auto fr = dec.feed(rest);
            rest = rest.subspan(fr.consumed);
            ASSERT_NE(fr.state, w::FeedState::Error) << "framing lost after message " << got;
            if (fr.state != w::FeedState::Segment) continue;
            w::Segment seg;
            ASSERT_EQ(w::decode_segment(dec.segment(), seg), w::Status::Ok);
            ASSERT_EQ(seg.payload.size(), kLen);
            EXPECT_TRUE(std::equal(seg.payload.begin(), seg.payload.end(), src.data() + got * kLen))
                << "message " << got << " carries other bytes";
            ++got;
        }
    }
    EXPECT_EQ(k, 0) << "the stream ended with " << std::strerror(err) << ", not a FIN";
    // A message whose head FPDU was partly in the socket at the close is finished on the
    // wire (the framing must stay whole) although its work request was flushed.
    EXPECT_GE(got, completed) << "sends completed before the close never reached the peer";
    EXPECT_LE(got, completed + 1);
    ::close(fb);
}

}  // namespace
