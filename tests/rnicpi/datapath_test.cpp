// Data-path matrix over the loopback transport, ordering checks, two-instance traffic
// and the error paths at both ends of a connection.
// Line references (L1234) are to RNICPI 1.0 (see docs/spec-deviations.md).
#include "fixture.hpp"

#include <tuple>

using namespace rt;

namespace {

// ---------------------------------------------------------------------------
// SGE layouts: `n` pieces covering `total` bytes, separated by 8-byte gaps so that a
// scatter list that writes outside its pieces is detected.
// ---------------------------------------------------------------------------
constexpr size_t kGap = 8;
constexpr uint8_t kGapByte = 0xEE;

std::vector<size_t> split(size_t total, uint32_t n, bool rem_first) {
    std::vector<size_t> v(n, total / n);
    size_t rem = total % n;
    if (rem_first)
        v[0] += rem;
    else
        v[n - 1] += rem;
    return v;
}
size_t layout_bytes(size_t total, uint32_t n) {
    return total + kGap * n;
}
std::vector<ri_data_seg_t> layout(uint8_t *base, ri_ltag_t tag, size_t total, uint32_t n,
                                  bool rem_first) {
    std::vector<ri_data_seg_t> s;
    size_t off = 0;
    for (size_t len : split(total, n, rem_first)) {
        s.push_back(sge(base + off, uint32_t(len), tag));
        off += len + kGap;
    }
    return s;
}
std::vector<uint8_t> gather(const std::vector<ri_data_seg_t> &s) {
    std::vector<uint8_t> v;
    for (auto &e : s) {
        auto *p = reinterpret_cast<const uint8_t *>(e.addr.vaddr);
        v.insert(v.end(), p, p + e.len);
    }
    return v;
}
// Checks that the scatter list received `expect` and that every gap byte between the
// pieces (and after the last piece) is untouched.
void expect_scattered(const Buf &buf, const std::vector<ri_data_seg_t> &s,
                      const std::vector<uint8_t> &expect) {
    std::vector<uint8_t> got = gather(s);
    ASSERT_EQ(got.size(), expect.size());
    size_t d = first_diff(got.data(), expect.data(), got.size());
    EXPECT_EQ(d, SIZE_MAX) << "first differing byte at stream offset " << d;
    size_t off = 0;
    for (auto &e : s) {
        off += e.len;
        for (size_t g = 0; g < kGap; ++g)
            ASSERT_EQ(buf.data()[off + g], kGapByte) << "gap byte overwritten";
        off += kGap;
    }
    EXPECT_TRUE(buf.guards_intact());
}

enum class Op { Send, SendSE, SendInv, Write, Read, ReadLI, FetchAdd, CmpSwap, WriteImm, SendImm };
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
        case Op::ReadLI:
            return "ReadLocalInv";
        case Op::FetchAdd:
            return "FetchAdd";
        case Op::CmpSwap:
            return "CmpSwap";
        case Op::WriteImm:
            return "WriteImm";
        case Op::SendImm:
            return "SendImm";
    }
    return "?";
}
bool is_send(Op o) {
    return o == Op::Send || o == Op::SendSE || o == Op::SendInv || o == Op::SendImm;
}
bool is_atomic(Op o) {
    return o == Op::FetchAdd || o == Op::CmpSwap;
}

struct Param {
    Op op;
    size_t size;
    bool max_sge;
};

std::vector<Param> all_params() {
    const Op ops[] = {Op::Send,   Op::SendSE,   Op::SendInv, Op::Write,    Op::Read,
                      Op::ReadLI, Op::FetchAdd, Op::CmpSwap, Op::WriteImm, Op::SendImm};
    const size_t sizes[] = {0, 1, 63, 4096, size_t(1) << 20, size_t(16) << 20};
    std::vector<Param> v;
    for (Op o : ops) {
        if (is_atomic(o)) {
            v.push_back({o, 8, false});
            continue;
        }
        for (size_t s : sizes) {
            v.push_back({o, s, false});
            // Several SGEs only where every SGE can hold a byte; Read with Local
            // Invalidate takes exactly one SGE (L4389).
            if (s >= 63 && o != Op::ReadLI) v.push_back({o, s, true});
        }
    }
    return v;
}

std::string param_name(const ::testing::TestParamInfo<Param> &i) {
    std::string s = op_name(i.param.op);
    s += "_" + std::to_string(i.param.size) + "B";
    s += i.param.max_sge ? "_MaxSge" : "_OneSge";
    return s;
}

class DataPath : public ::testing::TestWithParam<Param> {};

// The SGE limit that applies to the local list of `op` (ri_rnic_query, L7610-7615).
uint32_t max_sges_for(const ri_rnic_attr_t &a, Op op) {
    if (is_send(op)) return a.max_sgl_send_recvqp;
    if (op == Op::Write || op == Op::WriteImm) return a.max_sgl_rdma_write;
    return a.max_sgl_rdma_read;
}

}  // namespace

// L4355-4415 (posting), L3514-3530 (WC fields), L8922 (flags), digest 4.1 (WR -> WC type).
TEST_P(DataPath, Transfer) {
    const Param prm = GetParam();
    Rnic r("dp");
    ASSERT_TRUE(r.ok());
    const ri_rnic_attr_t &at = r.attr();
    uint32_t nsge = 1;
    if (prm.max_sge) nsge = uint32_t(std::min<size_t>(max_sges_for(at, prm.op), prm.size));
    ASSERT_GE(nsge, 1u);
    uint32_t nrecv =
        prm.max_sge
            ? uint32_t(std::min<size_t>(at.max_sgl_send_recvqp, std::max<size_t>(prm.size, 1)))
            : 1;
    Pair p(r, r);
    ASSERT_TRUE(p.ok());
    const uint64_t seed = std::hash<std::string>{}(param_name({prm, 0}));
    const size_t S = prm.size;
    const uint64_t wid = 0x1000 + S, rid = 0x2000 + S;

    Buf src(layout_bytes(S, nsge) + 8), dst(layout_bytes(S, std::max(nsge, nrecv)) + 8);
    src.fill(seed);
    dst.set(kGapByte);

    if (is_send(prm.op)) {
        Mr *ms = r.reg(src, kLocalRW), *md = r.reg(dst, kLocalRW);
        ASSERT_TRUE(ms && md);
        auto sl = layout(src.data(), ms->ltag, S, nsge, false);
        auto rl = layout(dst.data(), md->ltag, S == 0 ? 16 : S, nrecv, true);
        Buf invbuf(64);
        Mr *inv = nullptr;
        if (prm.op == Op::SendInv) {
            inv = r.reg(invbuf, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
            ASSERT_NE(inv, nullptr);
        }
        ASSERT_EQ(post_recv(p.b, rid, rl.data(), uint_t(rl.size())), RI_RET_SUCCESS);
        ASSERT_NO_FATAL_FAILURE(p.up());
        ri_wr_type_t t = prm.op == Op::SendInv   ? RI_WR_TYPE_SEND_INVALIDATE
                         : prm.op == Op::SendImm ? RI_WR_TYPE_SEND_IMMEDIATE
                                                 : RI_WR_TYPE_SEND;
        unsigned fl = kSig | (prm.op == Op::SendSE ? RI_WR_SOLICITED_EVENT_FLAG : 0);
        const uint32_t imm = 0xC0FFEE00u | uint32_t(S & 0xFF);
        ASSERT_EQ(
            post_send(p.a, t, fl, wid, sl.data(), uint_t(sl.size()), inv ? inv->rtag : 0, imm),
            RI_RET_SUCCESS);
        ri_rc_wc_t sw = must_poll(r, p.a->scq), rw = must_poll(r, p.b->rcq);
        EXPECT_WC(sw, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, wid, S);
        EXPECT_EQ(sw.qp_os_data, p.a->os());
        EXPECT_EQ(sw.cq_os_data, p.a->scq->os());
        // L3516: a Send's WC flags tell whether it carried SE (and invalidate).
        if (prm.op == Op::SendSE) {
            EXPECT_EQ(sw.flags, RI_WC_FLAG_SOLICITED_EVENT);
        } else if (prm.op == Op::SendInv) {
            EXPECT_EQ(sw.flags & ~unsigned(RI_WC_FLAG_RTAG_INVALIDATE), 0u);
        } else {
            EXPECT_EQ(sw.flags, 0u);
        }
        EXPECT_WC(rw, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, rid, S);
        EXPECT_EQ(rw.qp_os_data, p.b->os());
        EXPECT_EQ(rw.cq_os_data, p.b->rcq->os());
        unsigned want = 0;
        if (prm.op == Op::SendSE) want = RI_WC_FLAG_SOLICITED_EVENT;
        if (prm.op == Op::SendInv) want = RI_WC_FLAG_RTAG_INVALIDATE;
        if (prm.op == Op::SendImm) want = RI_WC_FLAG_IMMEDIATE_DATA;
        EXPECT_EQ(unsigned(rw.flags), want);
        if (prm.op == Op::SendInv) {
            EXPECT_EQ(rw.invalidated_rtag, inv->rtag);
            ri_mr_info_t info{};
            ASSERT_EQ(ri_mr_query(r.rnic, inv->h, &info, &r.err), RI_RET_SUCCESS);
            EXPECT_EQ(info.stag_state, RI_STAG_STATE_INVALID);
        }
        if (prm.op == Op::SendImm) {
            EXPECT_EQ(rw.immediate_data, imm);
        }
        if (S > 0) {
            std::vector<uint8_t> expect = gather(sl);
            // Only the first S bytes of the receive list are written.
            std::vector<ri_data_seg_t> got;
            size_t left = S;
            for (auto &e : rl) {
                if (!left) break;
                ri_data_seg_t x = e;
                x.len = uint32_t(std::min<size_t>(left, e.len));
                left -= x.len;
                got.push_back(x);
            }
            ASSERT_NO_FATAL_FAILURE(expect_scattered(dst, got, expect));
        } else {
            EXPECT_TRUE(dst.guards_intact());
            for (size_t i = 0; i < dst.size(); ++i)
                ASSERT_EQ(dst.data()[i], kGapByte);
        }
    } else if (prm.op == Op::Write || prm.op == Op::WriteImm) {
        Buf remote(std::max<size_t>(S, 1));
        remote.set(0x3C);
        Mr *ms = r.reg(src, kLocalRW), *mr = r.reg(remote, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
        Buf rbuf(16);
        Mr *mrb = r.reg(rbuf, kLocalRW);
        ASSERT_TRUE(ms && mr && mrb);
        auto sl = layout(src.data(), ms->ltag, S, nsge, false);
        if (prm.op == Op::WriteImm) {
            ri_data_seg_t rs = sge(rbuf.data(), 16, mrb->ltag);
            ASSERT_EQ(post_recv(p.b, rid, &rs, 1), RI_RET_SUCCESS);
        }
        ASSERT_NO_FATAL_FAILURE(p.up());
        const uint32_t imm = 0xABC00000u | uint32_t(S & 0xFFFF);
        ri_wr_type_t t =
            prm.op == Op::WriteImm ? RI_WR_TYPE_RDMA_WRITE_IMMEDIATE : RI_WR_TYPE_RDMA_WRITE;
        ASSERT_EQ(
            post_write(p.a, kSig, wid, sl.data(), uint_t(sl.size()), remote.va(), mr->rtag, t, imm),
            RI_RET_SUCCESS);
        ri_rc_wc_t sw = must_poll(r, p.a->scq);
        EXPECT_WC(sw, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, wid, S);
        EXPECT_EQ(sw.qp_os_data, p.a->os());
        EXPECT_EQ(sw.cq_os_data, p.a->scq->os());
        EXPECT_EQ(sw.flags, 0u);
        if (prm.op == Op::WriteImm) {
            ri_rc_wc_t rw = must_poll(r, p.b->rcq);
            EXPECT_WC(rw, RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED, RI_WC_STATUS_SUCCESS, rid, S);
            EXPECT_EQ(unsigned(rw.flags), unsigned(RI_WC_FLAG_IMMEDIATE_DATA));
            EXPECT_EQ(rw.immediate_data, imm);
            EXPECT_EQ(rw.qp_os_data, p.b->os());
            for (size_t i = 0; i < 16; ++i)
                EXPECT_EQ(rbuf.data()[i], 0) << "write-immediate placed data in the receive buffer";
        } else {
            ASSERT_NO_FATAL_FAILURE(p.sync_ab());
            EXPECT_TRUE(cq_empty(r, p.b->rcq)) << "an RDMA Write consumed a receive";
        }
        if (S > 0) {
            std::vector<uint8_t> expect = gather(sl);
            EXPECT_EQ(first_diff(remote.data(), expect.data(), S), SIZE_MAX);
        } else {
            EXPECT_EQ(remote.data()[0], 0x3C);
        }
        EXPECT_TRUE(remote.guards_intact());
    } else if (prm.op == Op::Read || prm.op == Op::ReadLI) {
        Buf remote(std::max<size_t>(S, 1));
        remote.fill(seed + 1);
        Mr *md = r.reg(dst, kLocalRW), *mr = r.reg(remote, kLocalRW | RI_MEM_FLAGS_REMOTE_READ);
        ASSERT_TRUE(md && mr);
        auto dl = layout(dst.data(), md->ltag, S, nsge, true);
        ASSERT_NO_FATAL_FAILURE(p.up());
        ri_wr_type_t t =
            prm.op == Op::ReadLI ? RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE : RI_WR_TYPE_RDMA_READ;
        ASSERT_EQ(post_read(p.a, kSig, wid, dl.data(), uint_t(dl.size()), remote.va(), mr->rtag, t),
                  RI_RET_SUCCESS);
        ri_rc_wc_t sw = must_poll(r, p.a->scq);
        EXPECT_WC(
            sw, prm.op == Op::ReadLI ? RI_WC_TYPE_RDMA_READ_LOCAL_INVALIDATE : RI_WC_TYPE_RDMA_READ,
            RI_WC_STATUS_SUCCESS, wid, S);
        EXPECT_EQ(sw.qp_os_data, p.a->os());
        EXPECT_EQ(sw.cq_os_data, p.a->scq->os());
        EXPECT_EQ(sw.flags, 0u);
        std::vector<uint8_t> expect(remote.data(), remote.data() + S);
        ASSERT_NO_FATAL_FAILURE(expect_scattered(dst, dl, expect));
        EXPECT_TRUE(remote.guards_intact());
        if (prm.op == Op::ReadLI) {
            ri_mr_info_t info{};
            ASSERT_EQ(ri_mr_query(r.rnic, md->h, &info, &r.err), RI_RET_SUCCESS);
            EXPECT_EQ(info.stag_state, RI_STAG_STATE_INVALID) << "sink STag not invalidated";
        }
    } else {
        // Atomics: softrnic targets the first 8 bytes of the region the rtag names (the
        // RNICPI atomic WR has no remote address, L8707-9053; docs/spec-deviations.md).
        Buf remote(8), result(8);
        const uint64_t orig = 0x0102030405060708ull ^ seed;
        std::memcpy(remote.data(), &orig, 8);
        result.set(0);
        Mr *mr = r.reg(remote, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ |
                                   RI_MEM_FLAGS_ATOMICS);
        Mr *mres = r.reg(result, kLocalRW);
        ASSERT_TRUE(mr && mres);
        ASSERT_NO_FATAL_FAILURE(p.up());
        ri_wr_t w;
        std::memset(&w, 0, sizeof(w));
        w.wr_atomic.type =
            prm.op == Op::FetchAdd ? RI_WR_TYPE_FETCH_AND_ADD : RI_WR_TYPE_COMPARE_AND_SWAP;
        w.wr_atomic.flags = F(kSig);
        w.wr_atomic.id = wid;
        w.wr_atomic.rtag = mr->rtag;
        const uint64_t add = 0x1111000011110001ull, swp = 0xDEADBEEFCAFEF00Dull;
        w.wr_atomic.atomic_operand1 = prm.op == Op::FetchAdd ? add : orig;
        w.wr_atomic.atomic_operand2 = prm.op == Op::FetchAdd ? 0 : swp;
        w.wr_atomic.atomic_result = sge(result.data(), 8, mres->ltag);
        ASSERT_EQ(post_wr(p.a, &w), RI_RET_SUCCESS);
        ri_rc_wc_t sw = must_poll(r, p.a->scq);
        EXPECT_WC(sw,
                  prm.op == Op::FetchAdd ? RI_WC_TYPE_FETCH_AND_ADD : RI_WC_TYPE_COMPARE_AND_SWAP,
                  RI_WC_STATUS_SUCCESS, wid, 8);
        EXPECT_EQ(sw.qp_os_data, p.a->os());
        uint64_t now = 0, res = 0;
        std::memcpy(&now, remote.data(), 8);
        std::memcpy(&res, result.data(), 8);
        EXPECT_EQ(res, orig);
        EXPECT_EQ(now, prm.op == Op::FetchAdd ? orig + add : swp);
        if (prm.op == Op::CmpSwap) {
            // A non-matching compare leaves the target and returns the current value.
            w.wr_atomic.id = wid + 1;
            w.wr_atomic.atomic_operand1 = orig;  // no longer equal
            w.wr_atomic.atomic_operand2 = 1;
            ASSERT_EQ(post_wr(p.a, &w), RI_RET_SUCCESS);
            sw = must_poll(r, p.a->scq);
            EXPECT_WC(sw, RI_WC_TYPE_COMPARE_AND_SWAP, RI_WC_STATUS_SUCCESS, wid + 1, 8);
            std::memcpy(&now, remote.data(), 8);
            std::memcpy(&res, result.data(), 8);
            EXPECT_EQ(now, swp);
            EXPECT_EQ(res, swp);
        }
        EXPECT_TRUE(remote.guards_intact());
        EXPECT_TRUE(result.guards_intact());
    }
    EXPECT_TRUE(src.guards_intact());
    EXPECT_TRUE(dst.guards_intact());
    EXPECT_EQ(state_of(p.a), RI_QP_STATE_READY_TO_SEND);
    EXPECT_EQ(state_of(p.b), RI_QP_STATE_READY_TO_SEND);
    r.drain();
    EXPECT_TRUE(r.rec.events().empty()) << r.rec.describe_events();
}

INSTANTIATE_TEST_SUITE_P(Matrix, DataPath, ::testing::ValuesIn(all_params()), param_name);

// ===========================================================================
// Ordering
// ===========================================================================

// iWARP placement order: several RDMA Writes then a Send; once the Send's receive
// completes, every written byte is visible (RDMAP ordering, digest 9.2).
TEST(DataPathOrder, WritesThenSend) {
    Rnic r("ord");
    ASSERT_TRUE(r.ok());
    Pair p(r, r);
    ASSERT_TRUE(p.ok());
    constexpr int kN = 8;
    constexpr size_t kLen = 64 * 1024;
    Buf src(kN * kLen), remote(kN * kLen), msg(8), rmsg(8);
    src.fill(101);
    remote.set(0);
    Mr *ms = r.reg(src, kLocalRW), *mr = r.reg(remote, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    Mr *mm = r.reg(msg, kLocalRW), *mrm = r.reg(rmsg, kLocalRW);
    ASSERT_TRUE(ms && mr && mm && mrm);
    ri_data_seg_t rs = sge(rmsg.data(), 8, mrm->ltag);
    ASSERT_EQ(post_recv(p.b, 99, &rs, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(p.up());
    for (int i = 0; i < kN; ++i) {
        ri_data_seg_t s = sge(src.data() + i * kLen, kLen, ms->ltag);
        ASSERT_EQ(post_write(p.a, 0, i, &s, 1, remote.va() + i * kLen, mr->rtag), RI_RET_SUCCESS);
    }
    ri_data_seg_t s = sge(msg.data(), 8, mm->ltag);
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND, kSig, 100, &s, 1), RI_RET_SUCCESS);
    ri_rc_wc_t rw = must_poll(r, p.b->rcq);
    EXPECT_WC(rw, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 99, 8);
    EXPECT_EQ(first_diff(remote.data(), src.data(), kN * kLen), SIZE_MAX);
    // Unsignalled successful writes give no WC (project decision); only the send does.
    ri_rc_wc_t sw = must_poll(r, p.a->scq);
    EXPECT_EQ(sw.id, 100u);
    EXPECT_TRUE(cq_empty(r, p.a->scq));
}

// A Read after a Write to the same remote range returns the written data.
TEST(DataPathOrder, ReadAfterWriteSameRange) {
    Rnic r("ord");
    ASSERT_TRUE(r.ok());
    Pair p(r, r);
    ASSERT_TRUE(p.ok());
    constexpr size_t kLen = 256 * 1024;
    Buf src(kLen), remote(kLen), back(kLen);
    src.fill(202);
    remote.fill(203);
    back.set(0);
    Mr *ms = r.reg(src, kLocalRW), *mr = r.reg(remote, kAllRemote), *mb = r.reg(back, kLocalRW);
    ASSERT_TRUE(ms && mr && mb);
    ASSERT_NO_FATAL_FAILURE(p.up());
    ri_data_seg_t s = sge(src.data(), kLen, ms->ltag), d = sge(back.data(), kLen, mb->ltag);
    ri_wr_t w[2] = {write_wr(RI_WR_TYPE_RDMA_WRITE, 0, 1, &s, 1, remote.va(), mr->rtag),
                    read_wr(RI_WR_TYPE_RDMA_READ, kSig, 2, &d, 1, remote.va(), mr->rtag)};
    uint_t posted = 0;
    ASSERT_EQ(post_wr(p.a, w, 2, &posted), RI_RET_SUCCESS);
    EXPECT_EQ(posted, 2u);
    ri_rc_wc_t wc = must_poll(r, p.a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 2, kLen);
    EXPECT_EQ(first_diff(back.data(), src.data(), kLen), SIZE_MAX);
}

// L8922 (READ_FENCE valid on Send/Write on iWARP): a Send fenced behind a Read sends the
// data the Read brought in.
TEST(DataPathOrder, ReadFenceOnSendAfterRead) {
    Rnic r("ord");
    ASSERT_TRUE(r.ok());
    Pair p(r, r);
    ASSERT_TRUE(p.ok());
    constexpr size_t kLen = 1 << 20;
    Buf remote(kLen), sink(kLen), rcv(kLen);
    remote.fill(303);
    sink.set(0);
    rcv.set(0);
    Mr *mr = r.reg(remote, kAllRemote), *msink = r.reg(sink, kLocalRW),
       *mrcv = r.reg(rcv, kLocalRW);
    ASSERT_TRUE(mr && msink && mrcv);
    ri_data_seg_t rs = sge(rcv.data(), kLen, mrcv->ltag);
    ASSERT_EQ(post_recv(p.b, 7, &rs, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(p.up());
    ri_data_seg_t d = sge(sink.data(), kLen, msink->ltag);
    ASSERT_EQ(post_read(p.a, kSig, 1, &d, 1, remote.va(), mr->rtag), RI_RET_SUCCESS);
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND, kSig | RI_WR_READ_FENCE_FLAG, 2, &d, 1),
              RI_RET_SUCCESS);
    auto sw = poll_n(r, p.a->scq, 2);
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_WC(sw[0], RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 1, kLen);
    EXPECT_WC(sw[1], RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 2, kLen);
    ri_rc_wc_t rw = must_poll(r, p.b->rcq);
    EXPECT_WC(rw, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 7, kLen);
    EXPECT_EQ(first_diff(rcv.data(), remote.data(), kLen), SIZE_MAX);
}

// Two QPs on two different RNIC instances: send, write, read and an atomic across them.
TEST(DataPathOrder, TwoInstances) {
    Rnic ra("ia"), rb("ib");
    ASSERT_TRUE(ra.ok() && rb.ok());
    Pair p(ra, rb);
    ASSERT_TRUE(p.ok());
    constexpr size_t kLen = 100000;
    Buf asrc(kLen), adst(kLen), bbuf(kLen), brcv(kLen), batom(8), ares(8);
    asrc.fill(401);
    bbuf.fill(402);
    uint64_t v = 41;
    std::memcpy(batom.data(), &v, 8);
    Mr *mas = ra.reg(asrc, kLocalRW), *mad = ra.reg(adst, kLocalRW), *mres = ra.reg(ares, kLocalRW);
    Mr *mbb = rb.reg(bbuf, kAllRemote), *mbr = rb.reg(brcv, kLocalRW);
    Mr *mba = rb.reg(batom, kAllRemote | RI_MEM_FLAGS_ATOMICS);
    ASSERT_TRUE(mas && mad && mres && mbb && mbr && mba);
    ri_data_seg_t rs = sge(brcv.data(), kLen, mbr->ltag);
    ASSERT_EQ(post_recv(p.b, 1, &rs, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(p.up());
    // Read B's original buffer first, then overwrite it, then send.
    ri_data_seg_t d = sge(adst.data(), kLen, mad->ltag);
    ASSERT_EQ(post_read(p.a, kSig, 10, &d, 1, bbuf.va(), mbb->rtag), RI_RET_SUCCESS);
    std::vector<uint8_t> borig(bbuf.data(), bbuf.data() + kLen);
    ri_rc_wc_t wc = must_poll(ra, p.a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 10, kLen);
    EXPECT_EQ(first_diff(adst.data(), borig.data(), kLen), SIZE_MAX);
    ri_data_seg_t s = sge(asrc.data(), kLen, mas->ltag);
    ASSERT_EQ(post_write(p.a, kSig, 11, &s, 1, bbuf.va(), mbb->rtag), RI_RET_SUCCESS);
    wc = must_poll(ra, p.a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, 11, kLen);
    EXPECT_EQ(first_diff(bbuf.data(), asrc.data(), kLen), SIZE_MAX);
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND, kSig, 12, &s, 1), RI_RET_SUCCESS);
    wc = must_poll(ra, p.a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_SEND, RI_WC_STATUS_SUCCESS, 12, kLen);
    ri_rc_wc_t rw = must_poll(rb, p.b->rcq);
    EXPECT_WC(rw, RI_WC_TYPE_DATA_RECEIVED, RI_WC_STATUS_SUCCESS, 1, kLen);
    EXPECT_EQ(rw.qp_os_data, p.b->os());
    EXPECT_EQ(rw.cq_os_data, p.b->rcq->os());
    EXPECT_EQ(first_diff(brcv.data(), asrc.data(), kLen), SIZE_MAX);
    ri_wr_t w;
    std::memset(&w, 0, sizeof(w));
    w.wr_atomic.type = RI_WR_TYPE_FETCH_AND_ADD;
    w.wr_atomic.flags = F(kSig);
    w.wr_atomic.id = 13;
    w.wr_atomic.rtag = mba->rtag;
    w.wr_atomic.atomic_operand1 = 1;
    w.wr_atomic.atomic_result = sge(ares.data(), 8, mres->ltag);
    ASSERT_EQ(post_wr(p.a, &w), RI_RET_SUCCESS);
    wc = must_poll(ra, p.a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_FETCH_AND_ADD, RI_WC_STATUS_SUCCESS, 13, 8);
    uint64_t now = 0, res = 0;
    std::memcpy(&now, batom.data(), 8);
    std::memcpy(&res, ares.data(), 8);
    EXPECT_EQ(res, 41u);
    EXPECT_EQ(now, 42u);
}

// Memory windows as remote targets: a narrow (type 2) window bound through the responder
// QP and a wide (type 1) window; data lands inside the window only.
TEST(DataPathOrder, WindowsAsTargets) {
    Rnic r("mw");
    ASSERT_TRUE(r.ok());
    QpOpts ob;
    ob.bind = true;
    Pair p(r, r, {}, ob);
    ASSERT_TRUE(p.ok());
    Buf region(8192), src(512);
    region.set(0);
    src.fill(505);
    Mr *mr = r.reg(region, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ |
                               RI_MEM_FLAGS_BINDING);
    Mr *ms = r.reg(src, kLocalRW);
    ASSERT_TRUE(mr && ms);
    ASSERT_NO_FATAL_FAILURE(p.up());
    std::vector<ri_mw_type_t> types = {RI_MW_TYPE_2};
    if (r.attr().rnic_flags & RI_RNIC_WIDE_WINDOWS_SUPPORTED) types.push_back(RI_MW_TYPE_1);
    uint64_t off = 1024;
    for (ri_mw_type_t t : types) {
        Mw *mw = r.new_mw(t);
        ASSERT_NE(mw, nullptr);
        ri_wr_t w;
        std::memset(&w, 0, sizeof(w));
        w.wr_bind.type = RI_WR_TYPE_BIND;
        w.wr_bind.flags = F(kSig);
        w.wr_bind.id = 50 + t;
        w.wr_bind.mw_handle = mw->h;
        w.wr_bind.rtag = (mw->rtag & ~0xFFu) | 0x33u;
        w.wr_bind.mr_handle = mr->h;
        w.wr_bind.ltag = mr->ltag;
        w.wr_bind.vaddr = region.va() + off;
        w.wr_bind.length = 512;
        w.wr_bind.mem_attr = MA(RI_MEM_FLAGS_REMOTE_WRITE);
        ASSERT_EQ(post_wr(p.b, &w), RI_RET_SUCCESS);
        ri_rc_wc_t wc = must_poll(r, p.b->scq);
        EXPECT_WC(wc, RI_WC_TYPE_BIND, RI_WC_STATUS_SUCCESS, 50 + t, 0);
        ri_rtag_t wt = 0;
        ASSERT_EQ(ri_mw_query(r.rnic, mw->h, nullptr, nullptr, nullptr, nullptr, &wt, &r.err),
                  RI_RET_SUCCESS);
        EXPECT_EQ(wt & 0xFFu, 0x33u);
        ri_data_seg_t s = sge(src.data(), 512, ms->ltag);
        ASSERT_EQ(post_write(p.a, kSig, 60 + t, &s, 1, region.va() + off, wt), RI_RET_SUCCESS);
        wc = must_poll(r, p.a->scq);
        EXPECT_WC(wc, RI_WC_TYPE_RDMA_WRITE, RI_WC_STATUS_SUCCESS, 60 + t, 512);
        EXPECT_EQ(std::memcmp(region.data() + off, src.data(), 512), 0);
        off += 2048;
    }
    // Nothing outside the windows changed.
    for (size_t i = 0; i < 1024; ++i)
        ASSERT_EQ(region.data()[i], 0);
    EXPECT_TRUE(region.guards_intact());
}

// L8925: a memory window can be the local data sink of an RDMA Read (tag.rtag) when it
// was bound with local write; a window without it, or as the source of a Send, is refused.
TEST(DataPathOrder, WindowAsRdmaReadSink) {
    Rnic r("mwsink");
    ASSERT_TRUE(r.ok());
    QpOpts oa;
    oa.bind = true;
    Pair p(r, r, oa, {});
    ASSERT_TRUE(p.ok());
    Buf remote(4096), sink(8192);
    remote.fill(606);
    sink.set(0);
    Mr *mr = r.reg(remote, kAllRemote);
    Mr *msink = r.reg(sink, kLocalRW | RI_MEM_FLAGS_BINDING);
    ASSERT_TRUE(mr && msink);
    ASSERT_NO_FATAL_FAILURE(p.up());
    auto bind = [&](Mw *mw, unsigned attr, uint64_t id) {
        ri_wr_t w;
        std::memset(&w, 0, sizeof(w));
        w.wr_bind.type = RI_WR_TYPE_BIND;
        w.wr_bind.flags = F(kSig);
        w.wr_bind.id = id;
        w.wr_bind.mw_handle = mw->h;
        w.wr_bind.rtag = (mw->rtag & ~0xFFu) | 0x44u;
        w.wr_bind.mr_handle = msink->h;
        w.wr_bind.ltag = msink->ltag;
        w.wr_bind.vaddr = sink.va() + 4096;
        w.wr_bind.length = 4096;
        w.wr_bind.mem_attr = MA(attr);
        EXPECT_EQ(post_wr(p.a, &w), RI_RET_SUCCESS);
        ri_rc_wc_t wc = must_poll(r, p.a->scq);
        EXPECT_WC(wc, RI_WC_TYPE_BIND, RI_WC_STATUS_SUCCESS, id, 0);
        ri_rtag_t wt = 0;
        EXPECT_EQ(ri_mw_query(r.rnic, mw->h, nullptr, nullptr, nullptr, nullptr, &wt, &r.err),
                  RI_RET_SUCCESS);
        return wt;
    };
    Mw *mw = r.new_mw(RI_MW_TYPE_2);
    ASSERT_NE(mw, nullptr);
    ri_rtag_t wt = bind(mw, RI_MEM_FLAGS_LOCAL_WRITE, 1);
    ri_data_seg_t d{};
    d.addr.vaddr = sink.va() + 4096 + 16;
    d.tag.rtag = wt;
    d.len = 2000;
    ASSERT_EQ(post_read(p.a, kSig, 2, &d, 1, remote.va() + 8, mr->rtag), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(r, p.a->scq);
    EXPECT_WC(wc, RI_WC_TYPE_RDMA_READ, RI_WC_STATUS_SUCCESS, 2, 2000);
    EXPECT_EQ(std::memcmp(sink.data() + 4096 + 16, remote.data() + 8, 2000), 0);
    EXPECT_EQ(sink.data()[4096 + 15], 0);
    // The same window is no Send source: windows serve locally only as Read sinks.
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND, kSig, 3, &d, 1), RI_RET_SUCCESS);
    wc = must_poll(r, p.a->scq);
    EXPECT_EQ(wc.id, 3u);
    EXPECT_NE(wc.op_status, RI_WC_STATUS_SUCCESS);
}

// ===========================================================================
// Error paths
// ===========================================================================
namespace {

// A connected pair on two instances with a guarded 4 KiB target region on B
// (all remote rights) and a 4 KiB local buffer on A.
struct ErrEnv {
    Rnic ra{"ea"};
    Rnic rb{"eb"};
    std::unique_ptr<Pair> p;
    Buf abuf{4096};
    Buf bbuf{4096};
    Mr *amr = nullptr;
    Mr *bmr = nullptr;
    std::vector<uint8_t> bsnap;

    explicit ErrEnv(const QpOpts &oa = {}, const QpOpts &ob = {}, unsigned battr = kAllRemote) {
        if (!ra.ok() || !rb.ok()) return;
        p = std::make_unique<Pair>(ra, rb, oa, ob);
        abuf.fill(1);
        bbuf.fill(2);
        amr = ra.reg(abuf, kAllRemote);
        bmr = rb.reg(bbuf, battr);
    }
    bool ok() const { return p && p->ok() && amr && bmr; }
    Qp *a() { return p->a; }
    Qp *b() { return p->b; }
    void snapshot() { bsnap.assign(bbuf.data(), bbuf.data() + bbuf.size()); }
};

// The common observable results of a remote (responder-detected) error:
// initiator WC REMOTE_TERMINATION_ERROR + TERMINATE_MESSAGE_RECEIVED, responder event
// `ev`, both QPs in ERROR with the Terminate recorded, later WRs flushed.
void expect_remote_error(ErrEnv &e, uint64_t id, ri_async_event_type_t ev) {
    ri_rc_wc_t wc = must_poll(e.ra, e.a()->scq);
    EXPECT_EQ(wc.id, id);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_REMOTE_TERMINATION_ERROR);
    EXPECT_EQ(wc.qp_os_data, e.a()->os());
    EXPECT_TRUE(wait_event(e.rb, ev, e.b()->os()))
        << "responder events: " << e.rb.rec.describe_events();
    EXPECT_TRUE(wait_event(e.ra, RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, e.a()->os()))
        << "initiator events: " << e.ra.rec.describe_events();
    EXPECT_TRUE(wait_state(e.a(), RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_state(e.b(), RI_QP_STATE_ERROR));
    ri_qp_attr_t qa = query(e.a()), qb = query(e.b());
    EXPECT_GT(qa.qp_xport.qp_iwarp.terminate_msg_length, 0u);
    EXPECT_GT(qb.qp_xport.qp_iwarp.terminate_msg_length, 0u);
    EXPECT_EQ(qa.qp_xport.qp_iwarp.is_terminate_local, 0);
    EXPECT_EQ(qb.qp_xport.qp_iwarp.is_terminate_local, 1);
    // Later WRs are flushed on both sides (L4428-4431, L4660-4665).
    ri_data_seg_t s = sge(e.abuf.data(), 16, e.amr->ltag);
    ASSERT_EQ(post_send(e.a(), RI_WR_TYPE_SEND, kSig, id + 1000, &s, 1), RI_RET_SUCCESS);
    wc = must_poll(e.ra, e.a()->scq);
    EXPECT_EQ(wc.id, id + 1000);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    ri_data_seg_t rs = sge(e.bbuf.data(), 16, e.bmr->ltag);
    ASSERT_EQ(post_recv(e.b(), id + 2000, &rs, 1), RI_RET_SUCCESS);
    // Drain B's RQ: earlier receives (if any) flush first.
    auto deadline = Clock::now() + kTimeout;
    bool seen = false;
    while (!seen && Clock::now() < deadline) {
        ri_rc_wc_t r{};
        if (!poll_one(e.rb, e.b()->rcq, &r, std::chrono::milliseconds(100))) continue;
        if (r.id == id + 2000) {
            EXPECT_EQ(r.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
            seen = true;
        }
    }
    EXPECT_TRUE(seen) << "receive posted in ERROR did not complete flushed";
    EXPECT_TRUE(e.abuf.guards_intact());
    EXPECT_TRUE(e.bbuf.guards_intact());
    if (!e.bsnap.empty()) {
        EXPECT_EQ(first_diff(e.bbuf.data(), e.bsnap.data(), e.bbuf.size()), SIZE_MAX)
            << "target modified";
    }
}

enum class RemoteFault {
    UnknownStag,
    WrongKey,
    OnePastEnd,
    Wrap,
    NoRight,
    OtherPd,
    Invalidated,
    NarrowOtherQp
};
const char *fault_name(RemoteFault f) {
    switch (f) {
        case RemoteFault::UnknownStag:
            return "UnknownStag";
        case RemoteFault::WrongKey:
            return "WrongKey";
        case RemoteFault::OnePastEnd:
            return "OnePastEnd";
        case RemoteFault::Wrap:
            return "AddressWrap";
        case RemoteFault::NoRight:
            return "MissingRight";
        case RemoteFault::OtherPd:
            return "OtherPd";
        case RemoteFault::Invalidated:
            return "InvalidatedBySendInv";
        case RemoteFault::NarrowOtherQp:
            return "NarrowWindowOfOtherQp";
    }
    return "?";
}

using RemoteParam = std::tuple<bool /*read*/, RemoteFault>;

class RemoteError : public ::testing::TestWithParam<RemoteParam> {};

std::string remote_name(const ::testing::TestParamInfo<RemoteParam> &i) {
    return std::string(std::get<0>(i.param) ? "Read_" : "Write_") +
           fault_name(std::get<1>(i.param));
}

}  // namespace

// Remote protection errors (RFC 5040 via digest 6.1; project decision on the event per
// fault). Tagged (write) faults: RI_EVENT_QP_PROTECTION_ERROR_*; Read Request source
// faults: RI_EVENT_QP_IRRQ_PROTECTION_ERROR_* (L1984-2023).
TEST_P(RemoteError, Fault) {
    const bool rd = std::get<0>(GetParam());
    const RemoteFault f = std::get<1>(GetParam());
    QpOpts ob;
    ob.bind = f == RemoteFault::NarrowOtherQp;
    unsigned battr = kAllRemote;
    if (f == RemoteFault::NoRight)
        battr = kLocalRW | (rd ? RI_MEM_FLAGS_REMOTE_WRITE : RI_MEM_FLAGS_REMOTE_READ);
    if (f == RemoteFault::NarrowOtherQp) battr |= RI_MEM_FLAGS_BINDING;  // windows may bind to it
    ErrEnv e({}, ob, battr);
    ASSERT_TRUE(e.ok());
    uint64_t raddr = e.bbuf.va();
    uint32_t len = 64;
    ri_rtag_t rtag = e.bmr->rtag;
    ri_async_event_type_t ev_w = RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH;
    ri_async_event_type_t ev_r = RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_STAG;
    Qp *other = nullptr;
    Pd *pd2 = nullptr;
    Mr *mr2 = nullptr;
    Buf other_buf(4096);
    switch (f) {
        case RemoteFault::UnknownStag:
            rtag = 0x00FFF000u | 0x5Au;
            break;
        case RemoteFault::WrongKey:
            rtag = e.bmr->rtag ^ 0x01u;
            break;
        case RemoteFault::OnePastEnd:
            raddr = e.bbuf.va() + e.bbuf.size() - len + 1;
            ev_w = RI_EVENT_QP_PROTECTION_ERROR_BOUNDS_VIOLATION;
            ev_r = RI_EVENT_QP_IRRQ_PROTECTION_ERROR_BOUNDS_VIOLATION;
            break;
        case RemoteFault::Wrap:
            raddr = ~uint64_t(0) - 15;  // raddr + len wraps past 2^64
            ev_w = RI_EVENT_QP_PROTECTION_ERROR_WRAP_ERROR;
            ev_r = RI_EVENT_QP_IRRQ_PROTECTION_ERROR_WRAP_ERROR;
            break;
        case RemoteFault::NoRight:
            ev_w = RI_EVENT_QP_PROTECTION_ERROR_ACCESS_VIOLATION;
            ev_r = RI_EVENT_QP_IRRQ_PROTECTION_ERROR_ACCESS_VIOLATION;
            break;
        case RemoteFault::OtherPd:
            pd2 = e.rb.new_pd();
            ASSERT_NE(pd2, nullptr);
            other_buf.fill(9);
            mr2 = e.rb.reg(other_buf, kAllRemote, pd2);
            ASSERT_NE(mr2, nullptr);
            raddr = other_buf.va();
            rtag = mr2->rtag;
            ev_w = RI_EVENT_QP_PROTECTION_ERROR_INVALID_PD;
            ev_r = RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_PD;
            break;
        case RemoteFault::Invalidated:
        case RemoteFault::NarrowOtherQp:
            break;
    }
    ASSERT_NO_FATAL_FAILURE(e.p->up());
    if (f == RemoteFault::Invalidated) {
        // A Send with Invalidate names B's region; afterwards its STag is invalid.
        Buf rb(16);
        Mr *mrb = e.rb.reg(rb, kLocalRW);
        ASSERT_NE(mrb, nullptr);
        ri_data_seg_t rs = sge(rb.data(), 16, mrb->ltag);
        ASSERT_EQ(post_recv(e.b(), 1, &rs, 1), RI_RET_SUCCESS);
        ri_data_seg_t s = sge(e.abuf.data(), 16, e.amr->ltag);
        ASSERT_EQ(post_send(e.a(), RI_WR_TYPE_SEND_INVALIDATE, kSig, 2, &s, 1, e.bmr->rtag),
                  RI_RET_SUCCESS);
        ri_rc_wc_t wc = must_poll(e.ra, e.a()->scq);
        ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        ri_rc_wc_t rw = must_poll(e.rb, e.b()->rcq);
        ASSERT_EQ(rw.op_status, RI_WC_STATUS_SUCCESS);
        EXPECT_EQ(rw.invalidated_rtag, e.bmr->rtag);
    }
    if (f == RemoteFault::NarrowOtherQp) {
        // A type 2 window bound through another QP of B is not usable through e.b().
        QpOpts oo;
        oo.bind = true;
        Pair op(e.rb, e.ra, oo);
        ASSERT_TRUE(op.ok());
        ASSERT_NO_FATAL_FAILURE(op.up());
        other = op.a;
        Mw *mw = e.rb.new_mw(RI_MW_TYPE_2);
        ASSERT_NE(mw, nullptr);
        ri_wr_t w;
        std::memset(&w, 0, sizeof(w));
        w.wr_bind.type = RI_WR_TYPE_BIND;
        w.wr_bind.flags = F(kSig);
        w.wr_bind.id = 3;
        w.wr_bind.mw_handle = mw->h;
        w.wr_bind.rtag = mw->rtag;
        w.wr_bind.mr_handle = e.bmr->h;
        w.wr_bind.ltag = e.bmr->ltag;
        w.wr_bind.vaddr = e.bbuf.va();
        w.wr_bind.length = 1024;
        w.wr_bind.mem_attr = MA(RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ);
        ASSERT_EQ(post_wr(other, &w), RI_RET_SUCCESS);
        ri_rc_wc_t wc = must_poll(e.rb, other->scq);
        ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        ASSERT_EQ(
            ri_mw_query(e.rb.rnic, mw->h, nullptr, nullptr, nullptr, nullptr, &rtag, &e.rb.err),
            RI_RET_SUCCESS);
    }
    e.abuf.fill(77);
    std::vector<uint8_t> asnap(e.abuf.data(), e.abuf.data() + e.abuf.size());
    e.snapshot();
    std::vector<uint8_t> other_snap(other_buf.data(), other_buf.data() + other_buf.size());
    ri_data_seg_t s = sge(e.abuf.data(), len, e.amr->ltag);
    if (rd) {
        ASSERT_EQ(post_read(e.a(), kSig, 42, &s, 1, raddr, rtag), RI_RET_SUCCESS);
    } else {
        ASSERT_EQ(post_write(e.a(), kSig, 42, &s, 1, raddr, rtag), RI_RET_SUCCESS);
    }
    ASSERT_NO_FATAL_FAILURE(expect_remote_error(e, 42, rd ? ev_r : ev_w));
    if (rd) {
        EXPECT_EQ(first_diff(e.abuf.data(), asnap.data(), asnap.size()), SIZE_MAX)
            << "read sink modified";
    }
    EXPECT_EQ(first_diff(other_buf.data(), other_snap.data(), other_snap.size()), SIZE_MAX);
    EXPECT_TRUE(other_buf.guards_intact());
}

INSTANTIATE_TEST_SUITE_P(
    Loopback, RemoteError,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(RemoteFault::UnknownStag, RemoteFault::WrongKey,
                                         RemoteFault::OnePastEnd, RemoteFault::Wrap,
                                         RemoteFault::NoRight, RemoteFault::OtherPd,
                                         RemoteFault::Invalidated, RemoteFault::NarrowOtherQp)),
    remote_name);

// A Send with no receive posted: RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN at B.
TEST(DataPathErrors, SendWithoutReceive) {
    ErrEnv e;
    ASSERT_TRUE(e.ok());
    ASSERT_NO_FATAL_FAILURE(e.p->up());
    e.snapshot();
    ri_data_seg_t s = sge(e.abuf.data(), 32, e.amr->ltag);
    ASSERT_EQ(post_send(e.a(), RI_WR_TYPE_SEND, kSig, 5, &s, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(expect_remote_error(e, 5, RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN));
}

// A Send longer than the posted receive: the receive completes LOCAL_LENGTH_ERROR and B
// raises RI_EVENT_QP_LLQ_INTEGRITY_ERROR_SIZE.
TEST(DataPathErrors, SendLongerThanReceive) {
    ErrEnv e;
    ASSERT_TRUE(e.ok());
    Buf small(32);
    Mr *ms = e.rb.reg(small, kLocalRW);
    ASSERT_NE(ms, nullptr);
    ri_data_seg_t rs = sge(small.data(), 32, ms->ltag);
    ASSERT_EQ(post_recv(e.b(), 77, &rs, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(e.p->up());
    e.snapshot();
    ri_data_seg_t s = sge(e.abuf.data(), 33, e.amr->ltag);
    ASSERT_EQ(post_send(e.a(), RI_WR_TYPE_SEND, kSig, 6, &s, 1), RI_RET_SUCCESS);
    ri_rc_wc_t rw = must_poll(e.rb, e.b()->rcq);
    EXPECT_EQ(rw.id, 77u);
    EXPECT_EQ(rw.op_status, RI_WC_STATUS_LOCAL_LENGTH_ERROR);
    EXPECT_TRUE(small.guards_intact());
    ASSERT_NO_FATAL_FAILURE(expect_remote_error(e, 6, RI_EVENT_QP_LLQ_INTEGRITY_ERROR_SIZE));
}

// RDMA Read to a QP created with enable_rdma_read = 0.
TEST(DataPathErrors, ReadToReadDisabledQp) {
    QpOpts ob;
    ob.rd = false;
    ErrEnv e({}, ob);
    ASSERT_TRUE(e.ok());
    ASSERT_NO_FATAL_FAILURE(e.p->up());
    e.snapshot();
    ri_data_seg_t s = sge(e.abuf.data(), 64, e.amr->ltag);
    ASSERT_EQ(post_read(e.a(), kSig, 8, &s, 1, e.bbuf.va(), e.bmr->rtag), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(
        expect_remote_error(e, 8, RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_RD_DISABLED));
}

// RDMA Write to a QP created with enable_rdma_write = 0.
TEST(DataPathErrors, WriteToWriteDisabledQp) {
    QpOpts ob;
    ob.wr = false;
    ErrEnv e({}, ob);
    ASSERT_TRUE(e.ok());
    ASSERT_NO_FATAL_FAILURE(e.p->up());
    e.snapshot();
    ri_data_seg_t s = sge(e.abuf.data(), 64, e.amr->ltag);
    ASSERT_EQ(post_write(e.a(), kSig, 9, &s, 1, e.bbuf.va(), e.bmr->rtag), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(
        expect_remote_error(e, 9, RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_WR_RD_RESP_DISABLED));
}

// ---------------------------------------------------------------------------
// Local SGE faults (project decision): the WR completes with the status below, the QP
// goes to ERROR, later WRs flush, the peer is terminated and ends in ERROR too.
// ---------------------------------------------------------------------------
namespace {
enum class LocalFault { UnknownLtag, WrongKey, PastEnd, NoLocalWrite, OtherPd };
using LocalParam = std::tuple<int /*0 send, 1 write, 2 read*/, LocalFault>;
class LocalError : public ::testing::TestWithParam<LocalParam> {};
const char *lf_name(LocalFault f) {
    switch (f) {
        case LocalFault::UnknownLtag:
            return "UnknownLtag";
        case LocalFault::WrongKey:
            return "WrongKey";
        case LocalFault::PastEnd:
            return "PastEnd";
        case LocalFault::NoLocalWrite:
            return "NoLocalWrite";
        case LocalFault::OtherPd:
            return "OtherPd";
    }
    return "?";
}
std::string local_name(const ::testing::TestParamInfo<LocalParam> &i) {
    static const char *k[] = {"Send_", "Write_", "Read_"};
    return std::string(k[std::get<0>(i.param)]) + lf_name(std::get<1>(i.param));
}
}  // namespace

TEST_P(LocalError, Fault) {
    const int kind = std::get<0>(GetParam());
    const LocalFault f = std::get<1>(GetParam());
    ErrEnv e;
    ASSERT_TRUE(e.ok());
    Buf lbuf(4096);
    lbuf.fill(5);
    unsigned lattr = f == LocalFault::NoLocalWrite ? unsigned(RI_MEM_FLAGS_LOCAL_READ) : kLocalRW;
    Pd *pd2 = f == LocalFault::OtherPd ? e.ra.new_pd() : nullptr;
    Mr *lmr = e.ra.reg(lbuf, lattr, pd2);
    ASSERT_NE(lmr, nullptr);
    Buf rbuf(4096);
    Mr *rmr = e.rb.reg(rbuf, kLocalRW);
    ASSERT_NE(rmr, nullptr);
    ri_data_seg_t rs = sge(rbuf.data(), 4096, rmr->ltag);
    ASSERT_EQ(post_recv(e.b(), 1, &rs, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(e.p->up());
    ri_data_seg_t s = sge(lbuf.data(), 64, lmr->ltag);
    ri_wc_status_t want = RI_WC_STATUS_INVALID_STAG_ERROR;
    switch (f) {
        case LocalFault::UnknownLtag:
            s.tag.ltag = 0x00FFF000u | 0x3Cu;
            break;
        case LocalFault::WrongKey:
            s.tag.ltag = lmr->ltag ^ 0x80u;
            break;
        case LocalFault::PastEnd:
            s.addr.vaddr = lbuf.va() + 4096 - 63;
            want = RI_WC_STATUS_BASE_BOUNDS_VIOLATION_ERROR;
            break;
        case LocalFault::NoLocalWrite:
            want = RI_WC_STATUS_ACCESS_VIOLATION_ERROR;
            break;
        case LocalFault::OtherPd:
            want = RI_WC_STATUS_INVALID_PD_ERROR;
            break;
    }
    std::vector<uint8_t> lsnap(lbuf.data(), lbuf.data() + lbuf.size());
    e.snapshot();
    if (kind == 0) {
        ASSERT_EQ(post_send(e.a(), RI_WR_TYPE_SEND, kSig, 11, &s, 1), RI_RET_SUCCESS);
    } else if (kind == 1) {
        ASSERT_EQ(post_write(e.a(), kSig, 11, &s, 1, e.bbuf.va(), e.bmr->rtag), RI_RET_SUCCESS);
    } else {
        ASSERT_EQ(post_read(e.a(), kSig, 11, &s, 1, e.bbuf.va(), e.bmr->rtag), RI_RET_SUCCESS);
    }
    ri_rc_wc_t wc = must_poll(e.ra, e.a()->scq);
    EXPECT_EQ(wc.id, 11u);
    EXPECT_EQ(wc.op_status, want);
    EXPECT_EQ(wc.qp_os_data, e.a()->os());
    EXPECT_TRUE(wait_state(e.a(), RI_QP_STATE_ERROR));
    EXPECT_TRUE(wait_state(e.b(), RI_QP_STATE_ERROR));
    EXPECT_EQ(query(e.a()).qp_xport.qp_iwarp.is_terminate_local, 1);
    EXPECT_TRUE(wait_event(e.rb, RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, e.b()->os()))
        << e.rb.rec.describe_events();
    ri_data_seg_t ok = sge(e.abuf.data(), 8, e.amr->ltag);
    ASSERT_EQ(post_send(e.a(), RI_WR_TYPE_SEND, kSig, 12, &ok, 1), RI_RET_SUCCESS);
    wc = must_poll(e.ra, e.a()->scq);
    EXPECT_EQ(wc.id, 12u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    // The receive on B never got data: it completes flushed.
    ri_rc_wc_t rw = must_poll(e.rb, e.b()->rcq);
    EXPECT_EQ(rw.id, 1u);
    EXPECT_EQ(rw.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_EQ(first_diff(lbuf.data(), lsnap.data(), lsnap.size()), SIZE_MAX);
    EXPECT_EQ(first_diff(e.bbuf.data(), e.bsnap.data(), e.bsnap.size()), SIZE_MAX);
    EXPECT_TRUE(lbuf.guards_intact());
    EXPECT_TRUE(e.bbuf.guards_intact());
    EXPECT_TRUE(rbuf.guards_intact());
}

INSTANTIATE_TEST_SUITE_P(
    Loopback, LocalError,
    ::testing::Values(LocalParam{0, LocalFault::UnknownLtag}, LocalParam{0, LocalFault::WrongKey},
                      LocalParam{0, LocalFault::PastEnd}, LocalParam{0, LocalFault::OtherPd},
                      LocalParam{1, LocalFault::UnknownLtag}, LocalParam{1, LocalFault::PastEnd},
                      LocalParam{1, LocalFault::OtherPd}, LocalParam{2, LocalFault::UnknownLtag},
                      LocalParam{2, LocalFault::WrongKey}, LocalParam{2, LocalFault::PastEnd},
                      LocalParam{2, LocalFault::NoLocalWrite}, LocalParam{2, LocalFault::OtherPd}),
    local_name);
