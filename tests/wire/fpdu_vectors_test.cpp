// FPDU + DDP/RDMAP vectors of brief section 8 (9-16, 19-21, 23, 24) in both directions:
// encoding produces exactly the vector bytes, decoding the vector bytes gives the fields.
#include <gtest/gtest.h>

#include <sys/uio.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "transport/tcp/wire/crc32c.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/segment.hpp"
#include "wire_test_util.hpp"

using namespace softrnic::transport::tcp::wire;
using wire_test::bytes;
using wire_test::hex;
using wire_test::to_hex;
namespace vec = wire_test::vec;

namespace {

std::string encode(std::span<const uint8_t> headers, std::span<const uint8_t> payload, bool crc) {
    std::array<uint8_t, 70000> out{};
    size_t n = 0;
    EXPECT_EQ(encode_fpdu(headers, payload, crc, out, n), Status::Ok);
    return to_hex(std::span<const uint8_t>(out).first(n));
}

// Decodes one whole FPDU through the streaming decoder and the strict segment decoder.
struct Decoded {
    Status fpdu = Status::Ok;
    Status seg = Status::Ok;
    size_t consumed = 0;
    std::vector<uint8_t> ulpdu;
    Segment s;
};
Decoded decode(const std::vector<uint8_t> &in, bool crc = true, bool rfc7306 = true) {
    Decoded d;
    FpduDecoder dec({crc, kMaxUlpdu});
    const auto r = dec.feed(in);
    d.consumed = r.consumed;
    if (r.state != FeedState::Segment) {
        d.fpdu = r.state == FeedState::Error ? dec.error() : Status::BufferTooSmall;
        return d;
    }
    d.ulpdu.assign(dec.segment().begin(), dec.segment().end());
    d.seg = decode_segment(d.ulpdu, d.s, {rfc7306});
    return d;
}

DdpHeader untagged(Opcode op, uint32_t msn, uint32_t inv = 0) {
    DdpHeader h;
    h.opcode = op;
    h.last = true;
    h.qn = static_cast<uint32_t>(queue_of(op));
    h.msn = msn;
    h.inv_stag = inv;
    return h;
}

DdpHeader tagged(Opcode op, uint32_t stag, uint64_t to, bool last = true) {
    DdpHeader h;
    h.opcode = op;
    h.last = last;
    h.stag = stag;
    h.to = to;
    return h;
}

std::vector<uint8_t> hdr_bytes(const DdpHeader &h) {
    std::vector<uint8_t> b(kMaxHeaderLen);
    b.resize(encode_ddp_header(h, b));
    return b;
}

// ---- Vector 9: zero-length Write RTR ------------------------------------------------------

TEST(FpduVectors, V9ZeroLengthWriteRtrEncode) {
    const auto h = hdr_bytes(tagged(Opcode::RdmaWrite, 1, 0));
    EXPECT_EQ(encode(h, {}, true), to_hex(hex(vec::v9_crc)));
    EXPECT_EQ(encode(h, {}, false), to_hex(hex(vec::v9_nocrc)));
}

TEST(FpduVectors, V9ZeroLengthWriteRtrDecode) {
    for (bool crc : {true, false}) {
        const auto d = decode(hex(crc ? vec::v9_crc : vec::v9_nocrc), crc);
        ASSERT_EQ(d.fpdu, Status::Ok);
        ASSERT_EQ(d.seg, Status::Ok);
        EXPECT_EQ(d.consumed, 20u);
        EXPECT_EQ(d.ulpdu.size(), 14u);
        EXPECT_EQ(d.s.hdr.opcode, Opcode::RdmaWrite);
        EXPECT_TRUE(d.s.hdr.last);
        EXPECT_EQ(d.s.hdr.stag, 1u);
        EXPECT_EQ(d.s.hdr.to, 0u);
        EXPECT_TRUE(d.s.payload.empty());
    }
    // CRC off: the receiver ignores the CRC field, whatever it holds.
    EXPECT_EQ(decode(hex(vec::v9_crc), false).seg, Status::Ok);
}

// ---- Vectors 10, 11, 14: Read Request / Read Response ----------------------------------------

TEST(FpduVectors, V10ZeroLengthReadRtrEncode) {
    std::array<uint8_t, 64> h{};
    const size_t n =
        encode_read_request(untagged(Opcode::ReadRequest, 1), ReadRequestBody{0, 0, 0, 1, 0}, h);
    ASSERT_EQ(n, 46u);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v10)));
}

TEST(FpduVectors, V10ZeroLengthReadRtrDecode) {
    const auto d = decode(hex(vec::v10));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 52u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::ReadRequest);
    EXPECT_EQ(d.s.hdr.qn, 1u);
    EXPECT_EQ(d.s.hdr.msn, 1u);
    EXPECT_EQ(d.s.hdr.mo, 0u);
    EXPECT_EQ(d.s.read.sink_stag, 0u);
    EXPECT_EQ(d.s.read.sink_to, 0u);
    EXPECT_EQ(d.s.read.size, 0u);
    EXPECT_EQ(d.s.read.src_stag, 1u);
    EXPECT_EQ(d.s.read.src_to, 0u);
}

TEST(FpduVectors, V11ZeroLengthReadResponseBothWays) {
    const auto h = hdr_bytes(tagged(Opcode::ReadResponse, 0, 0));
    EXPECT_EQ(encode(h, {}, true), to_hex(hex(vec::v11)));
    const auto d = decode(hex(vec::v11));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::ReadResponse);
    EXPECT_TRUE(d.s.hdr.last);
    EXPECT_EQ(d.s.hdr.stag, 0u);
    EXPECT_EQ(d.s.hdr.to, 0u);
    EXPECT_TRUE(d.s.payload.empty());
}

TEST(FpduVectors, V14ReadRequestBothWays) {
    std::array<uint8_t, 64> h{};
    const size_t n = encode_read_request(untagged(Opcode::ReadRequest, 1),
                                         ReadRequestBody{0x1111, 0x2000, 8, 0x2222, 0x3000}, h);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v14_req)));
    const auto d = decode(hex(vec::v14_req));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.s.read.sink_stag, 0x1111u);
    EXPECT_EQ(d.s.read.sink_to, 0x2000u);
    EXPECT_EQ(d.s.read.size, 8u);
    EXPECT_EQ(d.s.read.src_stag, 0x2222u);
    EXPECT_EQ(d.s.read.src_to, 0x3000u);
}

TEST(FpduVectors, V14ReadResponseBothWays) {
    const auto h = hdr_bytes(tagged(Opcode::ReadResponse, 0x1111, 0x2000));
    EXPECT_EQ(encode(h, bytes("ABCDEFGH"), true), to_hex(hex(vec::v14_resp)));
    const auto d = decode(hex(vec::v14_resp));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 28u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::ReadResponse);
    EXPECT_EQ(d.s.hdr.stag, 0x1111u);
    EXPECT_EQ(d.s.hdr.to, 0x2000u);
    EXPECT_EQ(std::string(d.s.payload.begin(), d.s.payload.end()), "ABCDEFGH");
}

// ---- Vectors 12, 13: Send, Send with Invalidate ---------------------------------------------

TEST(FpduVectors, V12SendHelloBothWays) {
    const auto h = hdr_bytes(untagged(Opcode::Send, 1));
    EXPECT_EQ(encode(h, bytes("hello"), true), to_hex(hex(vec::v12)));
    const auto d = decode(hex(vec::v12));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 32u);
    EXPECT_EQ(d.ulpdu.size(), 23u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::Send);
    EXPECT_TRUE(d.s.hdr.last);
    EXPECT_EQ(d.s.hdr.qn, 0u);
    EXPECT_EQ(d.s.hdr.msn, 1u);
    EXPECT_EQ(d.s.hdr.mo, 0u);
    EXPECT_EQ(d.s.hdr.inv_stag, 0u);
    EXPECT_EQ(std::string(d.s.payload.begin(), d.s.payload.end()), "hello");
}

TEST(FpduVectors, V13SendWithInvalidateBothWays) {
    const auto h = hdr_bytes(untagged(Opcode::SendInvalidate, 1, 0xABCDEF01));
    EXPECT_EQ(encode(h, bytes("x"), true), to_hex(hex(vec::v13)));
    const auto d = decode(hex(vec::v13));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 28u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::SendInvalidate);
    EXPECT_EQ(d.s.hdr.inv_stag, 0xABCDEF01u);
    EXPECT_EQ(d.s.hdr.msn, 1u);
    ASSERT_EQ(d.s.payload.size(), 1u);
    EXPECT_EQ(d.s.payload[0], 'x');
}

TEST(FpduVectors, ControlBytePairsOfSection41) {
    const std::pair<Opcode, const char *> l1[] = {
        {Opcode::RdmaWrite, "c140"},        {Opcode::ReadRequest, "4141"},
        {Opcode::ReadResponse, "c142"},     {Opcode::Send, "4143"},
        {Opcode::SendInvalidate, "4144"},   {Opcode::SendSe, "4145"},
        {Opcode::SendSeInvalidate, "4146"}, {Opcode::Terminate, "4147"}};
    for (auto [op, want] : l1) {
        DdpHeader h = is_tagged(op) ? tagged(op, 0, 0) : untagged(op, 1);
        EXPECT_EQ(to_hex(hdr_bytes(h)).substr(0, 4), want);
    }
    EXPECT_EQ(to_hex(hdr_bytes(tagged(Opcode::RdmaWrite, 0, 0, false))).substr(0, 4), "8140");
    DdpHeader s = untagged(Opcode::Send, 1);
    s.last = false;
    EXPECT_EQ(to_hex(hdr_bytes(s)).substr(0, 4), "0143");
}

// ---- Vector 15: PAD / length table ----------------------------------------------------------

TEST(FpduVectors, V15PadAndLengthTable) {
    const size_t pads[] = {0, 3, 2, 1};
    const uint8_t payload[3] = {0xAA, 0xBB, 0xCC};
    for (size_t n = 0; n < 4; ++n) {
        for (Opcode op : {Opcode::RdmaWrite, Opcode::ReadResponse, Opcode::Send,
                          Opcode::SendInvalidate, Opcode::SendSe, Opcode::SendSeInvalidate}) {
            const bool t = is_tagged(op);
            const auto h = hdr_bytes(t ? tagged(op, 5, 6) : untagged(op, 1, 7));
            const size_t ulpdu = h.size() + n;
            EXPECT_EQ(fpdu_pad(ulpdu), pads[n]);
            const std::string enc = encode(h, std::span<const uint8_t>(payload, n), true);
            EXPECT_EQ(enc.size() / 2, (t ? 20 : 24) + n + pads[n]) << int(op) << " n=" << n;
            // The PAD bytes are zero and precede the CRC.
            EXPECT_EQ(enc.substr(enc.size() - 8 - 2 * pads[n], 2 * pads[n]),
                      std::string(2 * pads[n], '0'));
        }
    }
    EXPECT_EQ(fpdu_size(header_len(Opcode::ReadRequest)), 52u);
}

// ---- Vectors 16, 19: MULPDU --------------------------------------------------------------------

TEST(FpduVectors, V16Mulpdu) {
    EXPECT_EQ(mulpdu_for_emss(1460), 1454u);
    EXPECT_EQ(mulpdu_for_emss(1460, true), 1442u);
    EXPECT_EQ(mulpdu_for_emss(1440), 1434u);
    EXPECT_EQ(mulpdu_for_emss(1440, true), 1422u);
    EXPECT_EQ(mulpdu_for_emss(1450), 1442u);
    EXPECT_EQ(mulpdu_for_emss(1450, true), 1430u);
    EXPECT_EQ(1454 - header_len(Opcode::RdmaWrite), 1440u);
    EXPECT_EQ(1454 - header_len(Opcode::Send), 1436u);
    // A full segment at MULPDU needs no PAD and fills the EMSS exactly.
    EXPECT_EQ(fpdu_size(1454), 1460u);
}

TEST(FpduVectors, MulpduCapsAndFloor) {
    EXPECT_EQ(mulpdu_for_emss(65495), 65486u);  // loopback MSS
    EXPECT_EQ(mulpdu_for_emss(65541), 65534u);
    EXPECT_EQ(mulpdu_for_emss(1u << 20), 65534u) << "ULPDU_LENGTH must stay <= 65535";
    EXPECT_EQ(mulpdu_for_emss(0), 0u);
    EXPECT_EQ(mulpdu_for_emss(75), 0u) << "too small for a 70-byte Atomic Request";
    EXPECT_EQ(mulpdu_for_emss(76), 70u);
}

TEST(FpduVectors, V19SiwSizing) {
    const uint32_t m = siw_mulpdu_for_mss(1448);
    EXPECT_EQ(fpdu_size(m), 1448u);
    EXPECT_EQ(m - header_len(Opcode::RdmaWrite), 1428u);
    EXPECT_EQ(m - header_len(Opcode::Send), 1424u);
    EXPECT_LE(fpdu_size(siw_mulpdu_for_mss(1453)), 1448u);  // (1453 & ~7) = 1448
}

// ---- Vectors 20, 21: Terminate -----------------------------------------------------------------

TEST(FpduVectors, V20TerminateWithDdpHeaderEncode) {
    // The offending segment: a 100-byte Send with MSN 4 (ULPDU 118).
    std::vector<uint8_t> seg = hdr_bytes(untagged(Opcode::Send, 4));
    seg.resize(118, 0x5A);
    TerminateSpec t;
    t.code = {1, 2, 0x02};  // DDP untagged, invalid MSN - no buffer
    t.offending = seg;
    t.offending_len = static_cast<uint16_t>(seg.size());
    t.include_ddp_header = true;
    std::array<uint8_t, 80> h{};
    const size_t n = encode_terminate(t, h);
    ASSERT_EQ(n, 42u);
    EXPECT_EQ(terminate_len(t), 42u);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v20)));
}

TEST(FpduVectors, V20TerminateWithDdpHeaderDecode) {
    const auto d = decode(hex(vec::v20));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 48u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::Terminate);
    EXPECT_EQ(d.s.hdr.qn, 2u);
    EXPECT_EQ(d.s.hdr.msn, 1u);
    EXPECT_EQ(d.s.hdr.mo, 0u);
    const TerminateBody &t = d.s.term;
    EXPECT_EQ(t.code, (TermCode{1, 2, 0x02}));
    EXPECT_TRUE(t.m);
    EXPECT_TRUE(t.d);
    EXPECT_FALSE(t.r);
    EXPECT_EQ(t.ddp_seg_len, 0x76u);
    EXPECT_EQ(to_hex(t.ddp_header), "414300000000000000000000000400000000");
    EXPECT_TRUE(t.rdma_header.empty());
    // The copied header decodes as what it was.
    Segment inner;
    std::vector<uint8_t> copy(t.ddp_header.begin(), t.ddp_header.end());
    ASSERT_EQ(decode_segment(copy, inner), Status::Ok);
    EXPECT_EQ(inner.hdr.msn, 4u);
}

TEST(FpduVectors, V21HeaderlessTerminatesBothWays) {
    const std::pair<TermCode, const char *> cases[] = {{{0, 0, 0xFF}, vec::v21_ulp},
                                                       {{0, 2, 0x06}, vec::v21_op}};
    for (auto [code, v] : cases) {
        TerminateSpec t;
        t.code = code;
        std::array<uint8_t, 80> h{};
        const size_t n = encode_terminate(t, h);
        ASSERT_EQ(n, 22u);
        EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(v)));
        const auto d = decode(hex(v));
        ASSERT_EQ(d.seg, Status::Ok);
        EXPECT_EQ(d.consumed, 28u);
        EXPECT_EQ(d.s.term.code, code);
        EXPECT_FALSE(d.s.term.m || d.s.term.d || d.s.term.r);
        EXPECT_TRUE(d.s.term.ddp_header.empty());
    }
    EXPECT_EQ((TermCode{0, 2, 0x06}).control_word(), 0x02060000u);
    EXPECT_EQ(term_code(Status::RdmapUnexpectedOpcode), (TermCode{0, 2, 0x06}));
}

TEST(FpduVectors, TerminateWithReadRequestHeaderRoundTrip) {
    const auto rr = hex(vec::v14_req);
    const std::span<const uint8_t> seg(rr.data() + 2, 46);
    TerminateSpec t;
    t.code = {0, 1, 0x00};
    t.offending = seg;
    t.offending_len = 46;
    t.include_ddp_header = true;
    t.include_rdma_header = true;
    std::array<uint8_t, 80> h{};
    const size_t n = encode_terminate(t, h);
    ASSERT_EQ(n, 70u);
    EXPECT_EQ(load_be32(&h[18]), 0x0100E000u) << "M, D and R set";
    Segment s;
    ASSERT_EQ(decode_segment(std::span(h).first(n), s), Status::Ok);
    EXPECT_TRUE(s.term.r);
    EXPECT_EQ(s.term.ddp_seg_len, 46u);
    EXPECT_EQ(to_hex(s.term.rdma_header), to_hex(seg.subspan(18)));
    // siw style: R=1 with only the 18-byte header attached is accepted too.
    const std::vector<uint8_t> siw(h.begin(), h.begin() + 42);
    ASSERT_EQ(decode_segment(siw, s), Status::Ok);
    EXPECT_TRUE(s.term.r);
    EXPECT_TRUE(s.term.rdma_header.empty());
}

// ---- Vector 23: RFC 7306 ------------------------------------------------------------------------

TEST(FpduVectors, V23FetchAddBothWays) {
    std::array<uint8_t, 80> h{};
    AtomicRequestBody b{AtomicOp::FetchAdd, 7, 0x1234, 0x10000, 5, 0, 0, 0};
    const size_t n = encode_atomic_request(untagged(Opcode::AtomicRequest, 2), b, h);
    ASSERT_EQ(n, 70u);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v23_fetchadd)));
    const auto d = decode(hex(vec::v23_fetchadd));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 76u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::AtomicRequest);
    EXPECT_EQ(d.s.hdr.qn, 1u);
    EXPECT_EQ(d.s.hdr.msn, 2u);
    EXPECT_EQ(d.s.atomic_req.op, AtomicOp::FetchAdd);
    EXPECT_EQ(d.s.atomic_req.request_id, 7u);
    EXPECT_EQ(d.s.atomic_req.stag, 0x1234u);
    EXPECT_EQ(d.s.atomic_req.to, 0x10000u);
    EXPECT_EQ(d.s.atomic_req.add_swap, 5u);
    EXPECT_EQ(d.s.atomic_req.add_swap_mask, 0u);
    EXPECT_EQ(d.s.atomic_req.compare, 0u);
    EXPECT_EQ(d.s.atomic_req.compare_mask, 0u);
}

TEST(FpduVectors, V23CmpSwapBothWays) {
    std::array<uint8_t, 80> h{};
    AtomicRequestBody b{AtomicOp::CmpSwap, 8,    0x1234,      0x10008, 0x99,
                        ~uint64_t{0},      0x42, ~uint64_t{0}};
    const size_t n = encode_atomic_request(untagged(Opcode::AtomicRequest, 3), b, h);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v23_cmpswap)));
    const auto d = decode(hex(vec::v23_cmpswap));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.s.hdr.msn, 3u);
    EXPECT_EQ(d.s.atomic_req.op, AtomicOp::CmpSwap);
    EXPECT_EQ(d.s.atomic_req.request_id, 8u);
    EXPECT_EQ(d.s.atomic_req.to, 0x10008u);
    EXPECT_EQ(d.s.atomic_req.add_swap, 0x99u);
    EXPECT_EQ(d.s.atomic_req.add_swap_mask, ~uint64_t{0});
    EXPECT_EQ(d.s.atomic_req.compare, 0x42u);
    EXPECT_EQ(d.s.atomic_req.compare_mask, ~uint64_t{0});
}

TEST(FpduVectors, V23AtomicResponseBothWays) {
    std::array<uint8_t, 80> h{};
    const size_t n = encode_atomic_response(untagged(Opcode::AtomicResponse, 1), {7, 0x41}, h);
    ASSERT_EQ(n, 30u);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v23_atomic_resp)));
    const auto d = decode(hex(vec::v23_atomic_resp));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 36u);
    EXPECT_EQ(d.s.hdr.qn, 3u);
    EXPECT_EQ(d.s.hdr.msn, 1u);
    EXPECT_EQ(d.s.atomic_resp.request_id, 7u);
    EXPECT_EQ(d.s.atomic_resp.original, 0x41u);
}

TEST(FpduVectors, V23ImmediateDataBothWays) {
    std::array<uint8_t, 80> h{};
    const size_t n = encode_immediate(untagged(Opcode::ImmediateData, 2), 0x0102030405060708ull, h);
    ASSERT_EQ(n, 26u);
    EXPECT_EQ(encode(std::span(h).first(n), {}, true), to_hex(hex(vec::v23_immediate)));
    const auto d = decode(hex(vec::v23_immediate));
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.consumed, 32u);
    EXPECT_EQ(d.s.hdr.opcode, Opcode::ImmediateData);
    EXPECT_EQ(d.s.hdr.qn, 0u);
    EXPECT_EQ(d.s.hdr.msn, 2u);
    EXPECT_EQ(d.s.immediate, 0x0102030405060708ull);
}

TEST(FpduVectors, V23RejectedWhenRfc7306IsOffLikeSiw) {
    for (const char *v :
         {vec::v23_fetchadd, vec::v23_cmpswap, vec::v23_atomic_resp, vec::v23_immediate}) {
        const auto d = decode(hex(v), true, false);
        ASSERT_EQ(d.fpdu, Status::Ok) << "framing and CRC are fine";
        EXPECT_EQ(d.seg, Status::RdmapUnexpectedOpcode);
        EXPECT_EQ(term_code(d.seg).control_word(), 0x02060000u);
    }
}

// ---- Vector 24: receiver negative checks -------------------------------------------------------

TEST(FpduVectors, V24FlippedCrcByte) {
    for (const char *v : {vec::v9_crc, vec::v12, vec::v20, vec::v23_fetchadd}) {
        auto in = hex(v);
        in[in.size() - 2] ^= 0x10;
        const auto d = decode(in);
        EXPECT_EQ(d.fpdu, Status::CrcMismatch);
        EXPECT_EQ(term_code(d.fpdu).control_word(), 0x20020000u);
        auto body = hex(v);
        body[5] ^= 0x01;  // corrupt a covered byte instead
        EXPECT_EQ(decode(body).fpdu, Status::CrcMismatch);
    }
}

TEST(FpduVectors, V24UlpduLength4OnAWrite) {
    auto in = hex(vec::v9_crc);
    in[1] = 4;
    const auto d = decode(in);
    EXPECT_EQ(d.fpdu, Status::FramingLength);
    EXPECT_EQ(term_code(d.fpdu).control_word(), 0x20030000u);
    // Same answer when the length arrives one byte at a time, and nothing past it is read.
    FpduDecoder dec({true, kMaxUlpdu});
    EXPECT_EQ(dec.feed(std::span(in).first(1)).state, FeedState::NeedMore);
    const auto r = dec.feed(std::span(in).subspan(1));
    EXPECT_EQ(r.state, FeedState::Error);
    EXPECT_EQ(r.consumed, 1u);
    EXPECT_EQ(dec.error(), Status::FramingLength);
}

TEST(FpduVectors, V24VersionErrors) {
    Segment s;
    auto send = hex(vec::v12);
    std::vector<uint8_t> seg(send.begin() + 2, send.begin() + 2 + 23);
    seg[0] &= ~0x03;  // DV=0 on a Send
    EXPECT_EQ(decode_segment(seg, s), Status::DdpUntaggedVersion);
    EXPECT_EQ(term_code(Status::DdpUntaggedVersion).control_word(), 0x12060000u);
    auto wr = hex(vec::v14_resp);
    std::vector<uint8_t> tseg(wr.begin() + 2, wr.begin() + 2 + 22);
    tseg[0] &= ~0x03;
    EXPECT_EQ(decode_segment(tseg, s), Status::DdpTaggedVersion);
    EXPECT_EQ(term_code(Status::DdpTaggedVersion).control_word(), 0x11040000u);
    std::vector<uint8_t> rv(send.begin() + 2, send.begin() + 2 + 23);
    rv[1] &= 0x3F;  // RV=0
    EXPECT_EQ(decode_segment(rv, s), Status::RdmapVersion);
    EXPECT_EQ(term_code(Status::RdmapVersion).control_word(), 0x02050000u);
}

TEST(FpduVectors, V24MsnOutOfSequence) {
    UntaggedReassembler ra;
    UntaggedReassembler::Result r;
    ASSERT_EQ(ra.accept(untagged(Opcode::Send, 1), 5, r), Status::Ok);
    EXPECT_EQ(ra.expected_msn(Queue::Send), 2u);
    const DdpHeader bad = untagged(Opcode::Send, 3);
    EXPECT_EQ(ra.accept(bad, 5, r), Status::DdpInvalidMsn);
    EXPECT_EQ(term_code(Status::DdpInvalidMsn).control_word(), 0x12030000u);
    // The Terminate for it carries the header with M+D: control word 0x1203C000.
    const auto hb = hdr_bytes(bad);
    TerminateSpec t{term_code(Status::DdpInvalidMsn), hb, 23, true, false};
    std::array<uint8_t, 80> out{};
    ASSERT_EQ(encode_terminate(t, out), 42u);
    EXPECT_EQ(load_be32(&out[18]), 0x1203C000u);
}

TEST(FpduVectors, V24InvalidQn) {
    auto in = hex(vec::v12);
    in[2 + 9] = 5;  // QN 5 (FPDU offsets 8-11)
    const auto d = decode(in, false);
    ASSERT_EQ(d.fpdu, Status::Ok);
    EXPECT_EQ(d.seg, Status::DdpInvalidQn);
    EXPECT_EQ(term_code(d.seg).control_word(), 0x12010000u);
}

TEST(FpduVectors, V24SendLargerThanReceive) {
    UntaggedReassembler ra;
    UntaggedReassembler::Result r;
    EXPECT_EQ(ra.accept(untagged(Opcode::Send, 1), 101, r, 100), Status::DdpMessageTooLong);
    EXPECT_EQ(term_code(Status::DdpMessageTooLong).control_word(), 0x12050000u);
}

TEST(FpduVectors, V24ZeroLengthToUnknownStagIsAccepted) {
    // The codec never judges STags: zero-length Write/Read RTRs with dummy STags decode.
    auto in = hex(vec::v9_crc);
    const auto d = decode(in);
    ASSERT_EQ(d.seg, Status::Ok);
    EXPECT_EQ(d.s.hdr.stag, 1u);
    const auto r = decode(hex(vec::v10));
    ASSERT_EQ(r.seg, Status::Ok);
    EXPECT_EQ(r.s.read.src_stag, 1u);
}

// ---- iovec encoder
// --------------------------------------------------------------------------------

TEST(FpduEncode, IovecsMatchContiguousEncoding) {
    const auto h = hdr_bytes(untagged(Opcode::Send, 1));
    const std::span<const uint8_t> pieces[] = {bytes("he"), {}, bytes("llo")};
    FpduFrame f;
    ASSERT_EQ(build_fpdu_frame(h, pieces, true, f), Status::Ok);
    std::array<struct iovec, 8> iov{};
    const size_t n = fpdu_iovecs(f, pieces, iov);
    ASSERT_EQ(n, 4u) << "prefix, two non-empty pieces, trailer";
    std::vector<uint8_t> flat;
    for (size_t i = 0; i < n; ++i) {
        auto *b = static_cast<const uint8_t *>(iov[i].iov_base);
        flat.insert(flat.end(), b, b + iov[i].iov_len);
    }
    EXPECT_EQ(to_hex(flat), to_hex(hex(vec::v12)));
    EXPECT_EQ(fpdu_iovecs(f, pieces, std::span(iov).first(3)), 0u);
    std::array<uint8_t, 64> out{};
    size_t w = 0;
    ASSERT_EQ(encode_fpdu(h, pieces, true, out, w), Status::Ok);
    EXPECT_EQ(to_hex(std::span<const uint8_t>(out).first(w)), to_hex(hex(vec::v12)));
    EXPECT_EQ(encode_fpdu(h, pieces, true, std::span(out).first(31), w), Status::BufferTooSmall);
    EXPECT_EQ(w, 0u);
}

TEST(FpduEncode, RefusesOutOfRangeUlpdu) {
    const auto h = hdr_bytes(untagged(Opcode::Send, 1));
    std::vector<uint8_t> big(65535 - 18 + 1);
    FpduFrame f;
    EXPECT_EQ(build_fpdu_frame(h, std::span<const std::span<const uint8_t>>{}, true, f),
              Status::Ok);
    const std::span<const uint8_t> one[] = {big};
    EXPECT_EQ(build_fpdu_frame(h, one, true, f), Status::InvalidArgument);
    const std::span<const uint8_t> fits[] = {std::span<const uint8_t>(big).first(65535 - 18)};
    EXPECT_EQ(build_fpdu_frame(h, fits, true, f), Status::Ok);
    EXPECT_EQ(load_be16(f.prefix.data()), 65535u);
    EXPECT_EQ(f.trailer_len, 3u + 4u);  // 2 + 65535 = 65537 -> three PAD bytes
    const uint8_t tiny[4] = {};
    EXPECT_EQ(build_fpdu_frame(tiny, std::span<const std::span<const uint8_t>>{}, true, f),
              Status::InvalidArgument);
}

}  // namespace
