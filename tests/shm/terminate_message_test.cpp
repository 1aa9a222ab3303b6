// One Terminate encoding (the wire codec's) on every transport: a Write to an unknown STag
// makes the target answer with a Terminate that quotes the Write's tagged DDP header (T and
// L set, RFC 5041 4) with M and D set (RFC 5040 4.8). The message the initiator receives
// and the one the target records (ri_qp_query, RNICPI L8583) must decode with the wire
// codec, and shm must say what TCP says.
#include <algorithm>
#include <string>
#include <vector>

#include "shm_util.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"

using namespace st;
namespace w = softrnic::transport::tcp::wire;

namespace {
struct TermSeen {
    std::vector<uint8_t> remote, local;  // initiator's received / target's recorded message
    uint64_t to = 0;                     // the Write's target address (its tagged offset)
};

// The Terminate message as ri_qp_query returns it (control word onwards), decoded behind the
// Terminate's own untagged DDP header.
// `ulpdu` holds the bytes `seg` points into.
void decode_term(const std::vector<uint8_t> &body, std::vector<uint8_t> &ulpdu, w::Segment &seg) {
    ulpdu.assign(w::kUntaggedHeaderLen, 0);
    w::DdpHeader h;
    h.opcode = w::Opcode::Terminate;
    h.qn = static_cast<uint32_t>(w::Queue::Terminate);
    h.msn = 1;
    ASSERT_EQ(w::encode_untagged_header(h, ulpdu), w::kUntaggedHeaderLen);
    ulpdu.insert(ulpdu.end(), body.begin(), body.end());
    ASSERT_EQ(w::decode_segment(ulpdu, seg), w::Status::Ok) << "not a valid Terminate";
}

void tagged_fault(Xport x, TermSeen &out) {
    Buf abuf(64 + 64), bbuf(64 + 64);
    Rnic ra("ta"), rb("tb");
    ASSERT_TRUE(ra.ok() && rb.ok());
    Qp *a = ra.new_qp(), *b = rb.new_qp();
    ASSERT_TRUE(a && b);
    Mr *amr = ra.reg(abuf, kAllRemote), *bmr = rb.reg(bbuf, kAllRemote);
    ASSERT_TRUE(amr && bmr);
    ASSERT_NO_FATAL_FAILURE(bring_up(a, b, x));
    const ri_rtag_t bad = 0x00FFF000u | 0x5Au;
    ri_data_seg_t s = sge(abuf.data(), 64, amr->ltag);
    ASSERT_EQ(post_write(a, kSig, 7, &s, 1, bbuf.va(), bad), RI_RET_SUCCESS);
    (void)must_poll(ra, a->scq);
    EXPECT_TRUE(wait_event(ra, RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED, a->os()));
    ASSERT_TRUE(wait_state(a, RI_QP_STATE_ERROR));
    ASSERT_TRUE(wait_state(b, RI_QP_STATE_ERROR));
    auto take = [](const ri_qp_attr_t &q) {
        const auto &iw = q.qp_xport.qp_iwarp;
        const auto *p = reinterpret_cast<const uint8_t *>(iw.terminate_buffer);
        return std::vector<uint8_t>(p, p + std::min<uint32_t>(iw.terminate_msg_length, 52));
    };
    out.to = bbuf.va();
    out.remote = take(query(a));
    out.local = take(query(b));
}

class TerminateMessage : public ::testing::TestWithParam<Xport> {};

TEST_P(TerminateMessage, TaggedFaultQuotesTheWriteHeaderAsTcpDoes) {
    TermSeen tcp, mine;
    ASSERT_NO_FATAL_FAILURE(tagged_fault(Xport::Tcp, tcp));
    ASSERT_NO_FATAL_FAILURE(tagged_fault(GetParam(), mine));
    for (const TermSeen *run : {&tcp, &mine})
        for (const auto *v : {&run->remote, &run->local}) {
            std::vector<uint8_t> ulpdu;
            w::Segment seg;
            ASSERT_NO_FATAL_FAILURE(decode_term(*v, ulpdu, seg));
            const w::TerminateBody &t = seg.term;
            EXPECT_EQ(t.code, (w::TermCode{1, 1, 0x00})) << "DDP tagged, invalid STag";
            EXPECT_TRUE(t.m && t.d) << "M and D set together, as the codec and siw do";
            ASSERT_EQ(t.ddp_header.size(), w::kTaggedHeaderLen);
            EXPECT_EQ(t.ddp_header[0], 0xC1) << "tagged DDP control byte: T, L, DV 1";
            EXPECT_EQ(t.ddp_header[1], 0x40) << "RDMAP version 1, RDMA Write";
            EXPECT_EQ(w::load_be32(t.ddp_header.data() + 2), 0x00FFF05Au) << "the faulting STag";
            EXPECT_EQ(w::load_be64(t.ddp_header.data() + 6), run->to) << "the Write's offset";
        }
    // Control word and quoted header up to the offset (each run has its own buffer): what
    // shm sends and records is what TCP does (the segment length slot may differ: the RFC's
    // meaning is the whole offending segment).
    auto head = [](const std::vector<uint8_t> &v) {
        std::vector<uint8_t> h(v.begin(), v.begin() + std::min<size_t>(v.size(), 4));
        if (v.size() > 12) h.insert(h.end(), v.begin() + 6, v.begin() + 12);
        return h;
    };
    EXPECT_EQ(head(mine.remote), head(tcp.remote));
    EXPECT_EQ(head(mine.local), head(tcp.local));
}

INSTANTIATE_TEST_SUITE_P(Transports, TerminateMessage,
                         ::testing::Values(Xport::Shm, Xport::ShmNoCma),
                         [](const auto &i) { return std::string(xname(i.param)); });

}  // namespace
