// MPA Request/Reply frames, IRD/ORD block, streaming parser and negotiation
// (brief vectors 2-8 plus hostile input).
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "transport/tcp/wire/mpa.hpp"
#include "wire_test_util.hpp"

using namespace softrnic::transport::tcp::wire;
using wire_test::hex;
using wire_test::to_hex;
namespace vec = wire_test::vec;

namespace {

std::vector<uint8_t> build(const MpaFrame &f) {
    std::array<uint8_t, kMpaMaxFrame> buf{};
    size_t n = 0;
    EXPECT_EQ(build_mpa_frame(f, buf, n), Status::Ok);
    return {buf.begin(), buf.begin() + n};
}

// Feeds `in` in chunks of `chunk` bytes (0 = all at once); returns the final parser.
struct Fed {
    MpaParser::State state;
    Status error;
    size_t consumed;
    MpaFrame frame;
    std::vector<uint8_t> pd;
};
Fed feed(MpaKind kind, const std::vector<uint8_t> &in, size_t chunk) {
    MpaParser p(kind);
    size_t used = 0;
    MpaParser::Result r;
    while (used < in.size()) {
        size_t n = chunk ? std::min(chunk, in.size() - used) : in.size() - used;
        r = p.feed(std::span<const uint8_t>(in).subspan(used, n));
        used += r.consumed;
        if (r.state != MpaParser::State::NeedMore) break;
        if (r.consumed != n) ADD_FAILURE() << "NeedMore must consume everything";
    }
    const MpaFrame &f = p.frame();
    return {p.state(), p.error(), used, f, {f.private_data.begin(), f.private_data.end()}};
}

// ---- Vectors 2-4: siw default request, Chelsio-style request, siw reply --------------------

TEST(MpaVectors, V2SiwDefaultRequestEncode) {
    MpaConfig cfg;  // Rev 2, Enhanced, no CRC, IRD=ORD=16, no P2P: siw defaults
    EXPECT_EQ(to_hex(build(mpa_make_request(cfg))), to_hex(hex(vec::v2)));
}

TEST(MpaVectors, V2SiwDefaultRequestDecode) {
    MpaFrame f;
    size_t used = 0;
    const auto in = hex(vec::v2);
    ASSERT_EQ(parse_mpa_frame(in, MpaKind::Request, f, used), Status::Ok);
    EXPECT_EQ(used, 24u);
    EXPECT_EQ(f.kind, MpaKind::Request);
    EXPECT_FALSE(f.markers);
    EXPECT_FALSE(f.crc);
    EXPECT_FALSE(f.reject);
    EXPECT_TRUE(f.enhanced);
    EXPECT_EQ(f.rev, 2);
    EXPECT_EQ(f.ird_ord, (IrdOrd{false, false, false, false, 16, 16}));
    EXPECT_TRUE(f.private_data.empty());
}

MpaConfig chelsio_style() {
    MpaConfig c;
    c.want_crc = true;
    c.p2p = true;
    c.offer_write = false;
    c.offer_read = true;
    c.ird = 1;
    c.ord = 1;
    return c;
}

TEST(MpaVectors, V3ChelsioRequestEncode) {
    EXPECT_EQ(to_hex(build(mpa_make_request(chelsio_style()))), to_hex(hex(vec::v3)));
}

TEST(MpaVectors, V3ChelsioRequestDecode) {
    const auto r = feed(MpaKind::Request, hex(vec::v3), 0);
    ASSERT_EQ(r.state, MpaParser::State::Complete);
    EXPECT_EQ(r.consumed, 24u);
    EXPECT_TRUE(r.frame.crc);
    EXPECT_FALSE(r.frame.markers);
    EXPECT_TRUE(r.frame.enhanced);
    EXPECT_EQ(r.frame.rev, 2);
    EXPECT_EQ(r.frame.ird_ord, (IrdOrd{true, false, false, true, 1, 1}));
}

TEST(MpaVectors, V4SiwReplyToV3Encode) {
    const auto req = feed(MpaKind::Request, hex(vec::v3), 0);
    ASSERT_EQ(req.state, MpaParser::State::Complete);
    MpaConfig siw;  // responder with siw defaults (max IRD/ORD 128, no CRC wish)
    MpaFrame reply;
    MpaResult res;
    ASSERT_EQ(mpa_respond(siw, req.frame, {}, reply, res), Status::Ok);
    EXPECT_EQ(to_hex(build(reply)), to_hex(hex(vec::v4)));
    EXPECT_TRUE(res.crc);
    EXPECT_TRUE(res.enhanced);
    EXPECT_TRUE(res.p2p);
    EXPECT_EQ(res.rtr, Rtr::Read);
    EXPECT_EQ(res.ird, 1);
    EXPECT_EQ(res.ord, 1);
}

TEST(MpaVectors, V4SiwReplyDecodeAndInitiatorFinish) {
    const auto rep = feed(MpaKind::Reply, hex(vec::v4), 0);
    ASSERT_EQ(rep.state, MpaParser::State::Complete);
    EXPECT_EQ(rep.frame.kind, MpaKind::Reply);
    EXPECT_TRUE(rep.frame.crc);
    EXPECT_FALSE(rep.frame.reject);
    EXPECT_EQ(rep.frame.ird_ord, (IrdOrd{true, false, false, true, 1, 1}));
    const MpaConfig cfg = chelsio_style();
    MpaResult res;
    ASSERT_EQ(mpa_finish_initiator(cfg, mpa_make_request(cfg), rep.frame, res), Status::Ok);
    EXPECT_TRUE(res.crc);
    EXPECT_EQ(res.rev, 2);
    EXPECT_TRUE(res.p2p);
    EXPECT_EQ(res.rtr, Rtr::Read);
    EXPECT_EQ(res.ird, 1);
    EXPECT_EQ(res.ord, 1);
}

// ---- Vector 5: RTR choice of a siw-like responder --------------------------------------------

struct RtrCase {
    bool write, read, send;
    uint16_t expect_ord_word_bits;
    Rtr expect;
};

TEST(MpaVectors, V5ResponderRtrChoiceTable) {
    const RtrCase cases[] = {
        {true, true, false, 0x8000, Rtr::Write},   {false, true, false, 0x4000, Rtr::Read},
        {false, false, false, 0x8000, Rtr::Write}, {false, false, true, 0x8000, Rtr::Write},
        {true, false, false, 0x8000, Rtr::Write},
    };
    for (const RtrCase &c : cases) {
        MpaFrame req;
        req.enhanced = true;
        req.rev = 2;
        req.ird_ord = {true, c.send, c.write, c.read, 4, 4};
        MpaFrame reply;
        MpaResult res;
        ASSERT_EQ(mpa_respond(MpaConfig{}, req, {}, reply, res), Status::Ok);
        const auto bytes = build(reply);
        ASSERT_EQ(bytes.size(), 24u);
        EXPECT_EQ(load_be16(&bytes[20]) & 0xC000, 0x8000) << "reply IRD word carries P2P";
        EXPECT_EQ(load_be16(&bytes[22]) & 0xC000, c.expect_ord_word_bits);
        EXPECT_EQ(res.rtr, c.expect);
        EXPECT_FALSE(reply.ird_ord.rtr_send) << "siw never selects the Send RTR";
    }
}

// ---- Vectors 6, 7: rejects ------------------------------------------------------------------

TEST(MpaVectors, V6PlainRev1RejectEncodeDecode) {
    MpaFrame req;
    req.rev = 1;
    EXPECT_EQ(to_hex(build(mpa_make_reject(req))), to_hex(hex(vec::v6)));
    const auto r = feed(MpaKind::Reply, hex(vec::v6), 0);
    ASSERT_EQ(r.state, MpaParser::State::Complete);
    EXPECT_EQ(r.consumed, 20u);
    EXPECT_TRUE(r.frame.reject);
    EXPECT_EQ(r.frame.rev, 1);
    EXPECT_FALSE(r.frame.enhanced);
    MpaResult res;
    MpaConfig cfg;
    cfg.rev = 1;
    EXPECT_EQ(mpa_finish_initiator(cfg, req, r.frame, res), Status::MpaRejected);
    EXPECT_EQ(term_code(Status::MpaRejected).control_word(), 0x20040000u);
}

TEST(MpaVectors, V7SiwRejectOfMarkerRequest) {
    // Request flags 0xD0 (M + C + Enhanced), Rev 2.
    const auto in = hex(std::string(vec::kReqKey) + "d0020004 00100010");
    const auto r = feed(MpaKind::Request, in, 0);
    ASSERT_EQ(r.state, MpaParser::State::Error);
    EXPECT_EQ(r.error, Status::MpaMarkersRequested);
    EXPECT_EQ(r.consumed, 24u) << "the whole frame is read so a reject can be built";
    EXPECT_TRUE(r.frame.markers);
    EXPECT_TRUE(r.frame.crc);
    MpaFrame reply;
    MpaResult res;
    EXPECT_EQ(mpa_respond(MpaConfig{}, r.frame, {}, reply, res), Status::MpaMarkersRequested);
    EXPECT_EQ(to_hex(build(reply)), to_hex(hex(vec::v7)));
    // Decode direction: the IRD/ORD block is parsed even with R=1.
    const auto d = feed(MpaKind::Reply, hex(vec::v7), 0);
    ASSERT_EQ(d.state, MpaParser::State::Complete);
    EXPECT_TRUE(d.frame.reject);
    EXPECT_TRUE(d.frame.crc);
    EXPECT_TRUE(d.frame.enhanced);
    EXPECT_FALSE(d.frame.markers);
    EXPECT_EQ(d.frame.ird_ord, IrdOrd{});
}

// ---- Vector 8: parser limits ------------------------------------------------------------------

std::vector<uint8_t> frame_with(const char *key, uint8_t flags, uint8_t rev, uint16_t pd_len,
                                size_t pd_bytes) {
    auto v = hex(key);
    v.push_back(flags);
    v.push_back(rev);
    v.push_back(static_cast<uint8_t>(pd_len >> 8));
    v.push_back(static_cast<uint8_t>(pd_len));
    for (size_t i = 0; i < pd_bytes; ++i)
        v.push_back(static_cast<uint8_t>(i));
    return v;
}

TEST(MpaVectors, V8PdLength513IsAnError) {
    const auto in = frame_with(vec::kReqKey, 0x00, 1, 513, 513);
    const auto r = feed(MpaKind::Request, in, 0);
    EXPECT_EQ(r.state, MpaParser::State::Error);
    EXPECT_EQ(r.error, Status::MpaPrivateDataTooLong);
    EXPECT_EQ(r.consumed, 20u) << "rejected at the length field, before any private data";
}

TEST(MpaVectors, V8PdLength512And257AreAccepted) {
    for (uint16_t n : {uint16_t{257}, uint16_t{512}}) {
        const auto in = frame_with(vec::kReqKey, 0x00, 1, n, n);
        const auto r = feed(MpaKind::Request, in, 0);
        ASSERT_EQ(r.state, MpaParser::State::Complete) << n;
        ASSERT_EQ(r.pd.size(), n);
        EXPECT_EQ(r.pd[n - 1], static_cast<uint8_t>(n - 1));
    }
}

TEST(MpaVectors, V8Rev3IsRejected) {
    const auto r = feed(MpaKind::Request, frame_with(vec::kReqKey, 0x00, 3, 0, 0), 0);
    EXPECT_EQ(r.state, MpaParser::State::Error);
    EXPECT_EQ(r.error, Status::MpaBadRevision);
}

TEST(MpaVectors, V8KeyOffByOneByteIsRejectedAtThatByte) {
    auto in = hex(vec::v2);
    in[9] ^= 0x01;  // 'q' -> 'p' would be the Reply key; anything else is just wrong
    const auto r = feed(MpaKind::Request, in, 1);
    EXPECT_EQ(r.state, MpaParser::State::Error);
    EXPECT_EQ(r.error, Status::MpaBadKey);
    EXPECT_EQ(r.consumed, 10u);
    EXPECT_EQ(term_code(r.error).control_word(), 0x20040000u);
}

// ---- Hostile input --------------------------------------------------------------------------

TEST(MpaHostile, ReplyKeyWhenRequestExpected) {
    const auto r = feed(MpaKind::Request, hex(vec::v4), 0);
    EXPECT_EQ(r.error, Status::MpaBadKey);
    EXPECT_EQ(r.consumed, 10u) << "key bytes 0-8 match, byte 9 differs";
    const auto r2 = feed(MpaKind::Reply, hex(vec::v2), 0);
    EXPECT_EQ(r2.error, Status::MpaBadKey);
}

TEST(MpaHostile, EnhancedWithoutRoomForIrdOrd) {
    const auto r = feed(MpaKind::Request, frame_with(vec::kReqKey, 0x10, 2, 3, 3), 0);
    EXPECT_EQ(r.state, MpaParser::State::Error);
    EXPECT_EQ(r.error, Status::MpaBadIrdOrd);
}

TEST(MpaHostile, EnhancedBitWithRev1IsAReservedBit) {
    const auto r = feed(MpaKind::Request, frame_with(vec::kReqKey, 0x10, 1, 2, 2), 0);
    ASSERT_EQ(r.state, MpaParser::State::Complete);
    EXPECT_FALSE(r.frame.enhanced);
    EXPECT_EQ(r.pd.size(), 2u);
}

TEST(MpaHostile, Rev0AcceptedLikeSiw) {
    const auto r = feed(MpaKind::Request, frame_with(vec::kReqKey, 0x40, 0, 0, 0), 0);
    ASSERT_EQ(r.state, MpaParser::State::Complete);
    EXPECT_EQ(r.frame.rev, 0);
    EXPECT_TRUE(r.frame.crc);
}

TEST(MpaHostile, TruncatedFrameNeedsMore) {
    const auto in = hex(vec::v3);
    for (size_t n = 0; n < in.size(); ++n) {
        MpaParser p(MpaKind::Request);
        const auto r = p.feed(std::span<const uint8_t>(in).first(n));
        EXPECT_EQ(r.state, MpaParser::State::NeedMore) << n;
        EXPECT_EQ(r.consumed, n);
    }
}

TEST(MpaHostile, TrailingBytesAreLeftUnconsumed) {
    auto in = hex(vec::v4);
    in.push_back(0x00);
    in.push_back(0x0e);
    MpaParser p(MpaKind::Reply);
    const auto r = p.feed(in);
    EXPECT_EQ(r.state, MpaParser::State::Complete);
    EXPECT_EQ(r.consumed, 24u);
    EXPECT_EQ(p.feed(in).consumed, 0u) << "a finished parser takes nothing more";
}

TEST(MpaHostile, ByteByByteEqualsOneChunkForEveryInput) {
    std::vector<std::vector<uint8_t>> inputs = {hex(vec::v2),
                                                hex(vec::v3),
                                                hex(vec::v4),
                                                hex(vec::v6),
                                                hex(vec::v7),
                                                frame_with(vec::kReqKey, 0x00, 1, 513, 0),
                                                frame_with(vec::kReqKey, 0xd0, 2, 8, 8),
                                                frame_with(vec::kReqKey, 0x00, 7, 0, 0),
                                                frame_with(vec::kRepKey, 0x60, 2, 300, 300)};
    for (auto kind : {MpaKind::Request, MpaKind::Reply}) {
        for (const auto &in : inputs) {
            const auto whole = feed(kind, in, 0);
            for (size_t chunk : {1, 3, 7}) {
                const auto part = feed(kind, in, chunk);
                EXPECT_EQ(part.state, whole.state);
                EXPECT_EQ(part.error, whole.error);
                EXPECT_EQ(part.consumed, whole.consumed);
                EXPECT_EQ(part.pd, whole.pd);
                EXPECT_EQ(part.frame.ird_ord, whole.frame.ird_ord);
                EXPECT_EQ(part.frame.crc, whole.frame.crc);
            }
        }
    }
}

TEST(MpaBuild, RefusesInvalidFrames) {
    std::array<uint8_t, 1024> buf{};
    std::vector<uint8_t> pd(509);
    size_t n = 99;
    MpaFrame f;
    f.enhanced = true;
    f.private_data = pd;  // 4 + 509 > 512
    EXPECT_EQ(build_mpa_frame(f, buf, n), Status::InvalidArgument);
    EXPECT_EQ(n, 0u);
    f.private_data = std::span<const uint8_t>(pd).first(508);
    EXPECT_EQ(build_mpa_frame(f, buf, n), Status::Ok);
    EXPECT_EQ(n, 532u);
    EXPECT_EQ(build_mpa_frame(f, std::span<uint8_t>(buf).first(531), n), Status::BufferTooSmall);
    MpaFrame r;
    r.reject = true;  // R in a Request
    EXPECT_EQ(build_mpa_frame(r, buf, n), Status::InvalidArgument);
    MpaFrame e;
    e.enhanced = true;
    e.rev = 1;
    EXPECT_EQ(build_mpa_frame(e, buf, n), Status::InvalidArgument);
    MpaFrame v3;
    v3.rev = 3;
    EXPECT_EQ(build_mpa_frame(v3, buf, n), Status::InvalidArgument);
}

TEST(MpaBuild, PrivateDataRoundTrip) {
    const std::vector<uint8_t> pd = {1, 2, 3, 4, 5, 6, 7};
    MpaConfig cfg;
    const auto bytes = build(mpa_make_request(cfg, pd));
    ASSERT_EQ(bytes.size(), 20u + 4 + 7);
    EXPECT_EQ(load_be16(&bytes[18]), 11u) << "PD_Length includes the IRD/ORD block";
    const auto r = feed(MpaKind::Request, bytes, 5);
    ASSERT_EQ(r.state, MpaParser::State::Complete);
    EXPECT_EQ(r.pd, pd);
    EXPECT_EQ(r.frame.ird_ord.ird, 16);
}

// ---- Negotiation ------------------------------------------------------------------------------

TEST(MpaNegotiation, CrcIsOnIfEitherSideAsks) {
    for (bool req_crc : {false, true})
        for (bool resp_crc : {false, true}) {
            MpaConfig ic, rc;
            ic.want_crc = req_crc;
            rc.want_crc = resp_crc;
            const MpaFrame req = mpa_make_request(ic);
            MpaFrame reply;
            MpaResult rr, ir;
            ASSERT_EQ(mpa_respond(rc, req, {}, reply, rr), Status::Ok);
            ASSERT_EQ(mpa_finish_initiator(ic, req, reply, ir), Status::Ok);
            EXPECT_EQ(rr.crc, req_crc || resp_crc);
            EXPECT_EQ(ir.crc, req_crc || resp_crc);
        }
}

TEST(MpaNegotiation, ReplyWithMarkersAborts) {
    const MpaConfig cfg;
    const MpaFrame req = mpa_make_request(cfg);
    const auto in = hex(std::string(vec::kRepKey) + "90020004 00100010");
    const auto rep = feed(MpaKind::Reply, in, 0);
    EXPECT_EQ(rep.error, Status::MpaMarkersRequested);
    MpaResult res;
    EXPECT_EQ(mpa_finish_initiator(cfg, req, rep.frame, res), Status::MpaMarkersRequested);
}

TEST(MpaNegotiation, Rev1ResponderFallback) {
    MpaConfig v1;
    v1.rev = 1;
    const MpaConfig v2;
    const MpaFrame req = mpa_make_request(v2);
    MpaFrame reply;
    MpaResult rr, ir;
    ASSERT_EQ(mpa_respond(v1, req, {}, reply, rr), Status::Ok);
    EXPECT_EQ(reply.rev, 1);
    EXPECT_FALSE(reply.enhanced);
    EXPECT_EQ(build(reply).size(), 20u);
    ASSERT_EQ(mpa_finish_initiator(v2, req, reply, ir), Status::Ok);
    EXPECT_EQ(ir.rev, 1);
    EXPECT_FALSE(ir.enhanced);
    EXPECT_FALSE(ir.p2p);
}

TEST(MpaNegotiation, ReplyRevisionAboveRequestIsRejected) {
    MpaConfig v1;
    v1.rev = 1;
    const MpaFrame req = mpa_make_request(v1);
    MpaFrame reply;
    reply.kind = MpaKind::Reply;
    reply.rev = 2;
    reply.enhanced = true;
    MpaResult res;
    EXPECT_EQ(mpa_finish_initiator(v1, req, reply, res), Status::MpaBadRevision);
}

TEST(MpaNegotiation, Rev2ReplyWithoutBlockToEnhancedRequest) {
    const MpaConfig cfg;
    MpaFrame reply;
    reply.kind = MpaKind::Reply;
    reply.rev = 2;
    MpaResult res;
    EXPECT_EQ(mpa_finish_initiator(cfg, mpa_make_request(cfg), reply, res), Status::MpaNotEnhanced);
}

TEST(MpaNegotiation, IrdOrdRelaxed) {
    MpaConfig init;
    init.ird = 8;
    init.ord = 200;  // wants more than the responder's max IRD
    MpaConfig resp;  // max 128 each
    const MpaFrame req = mpa_make_request(init);
    MpaFrame reply;
    MpaResult rr, ir;
    ASSERT_EQ(mpa_respond(resp, req, {}, reply, rr), Status::Ok);
    EXPECT_EQ(reply.ird_ord.ird, 128);  // min(request ORD 200, 128)
    EXPECT_EQ(reply.ird_ord.ord, 8);    // min(request IRD 8, 128)
    EXPECT_EQ(rr.ird, 128);
    EXPECT_EQ(rr.ord, 8);
    ASSERT_EQ(mpa_finish_initiator(init, req, reply, ir), Status::Ok);
    EXPECT_EQ(ir.ord, 128) << "ORD_local <= IRD_peer";
    EXPECT_EQ(ir.ird, 8);
}

TEST(MpaNegotiation, InsufficientIrd) {
    MpaConfig init;
    init.max_ird = 4;
    const MpaFrame req = mpa_make_request(init);
    MpaFrame reply;
    reply.kind = MpaKind::Reply;
    reply.enhanced = true;
    reply.ird_ord = {false, false, false, false, 16, 64};
    MpaResult res;
    EXPECT_EQ(mpa_finish_initiator(init, req, reply, res), Status::MpaInsufficientIrd);
    EXPECT_EQ(term_code(Status::MpaInsufficientIrd).control_word(), 0x20060000u);
    reply.ird_ord.ord = kIrdOrdMax;  // irdma's "no preference" is not a demand
    EXPECT_EQ(mpa_finish_initiator(init, req, reply, res), Status::Ok);
    EXPECT_EQ(res.ird, init.ird);
}

TEST(MpaNegotiation, NoMatchingRtr) {
    MpaConfig init;
    init.p2p = true;
    init.offer_write = false;
    init.offer_read = true;
    const MpaFrame req = mpa_make_request(init);
    MpaFrame reply;
    reply.kind = MpaKind::Reply;
    reply.enhanced = true;
    reply.ird_ord = {true, false, true, false, 16, 16};  // chose Write, which we did not offer
    MpaResult res;
    EXPECT_EQ(mpa_finish_initiator(init, req, reply, res), Status::MpaNoMatchingRtr);
    EXPECT_EQ(term_code(Status::MpaNoMatchingRtr).control_word(), 0x20070000u);
    reply.ird_ord.rtr_write = false;  // none chosen
    EXPECT_EQ(mpa_finish_initiator(init, req, reply, res), Status::MpaNoMatchingRtr);
    reply.ird_ord.rtr_read = true;
    ASSERT_EQ(mpa_finish_initiator(init, req, reply, res), Status::Ok);
    EXPECT_EQ(res.rtr, Rtr::Read);
    reply.ird_ord.p2p = false;  // responder declined P2P: RFC 5044 rules, no RTR
    ASSERT_EQ(mpa_finish_initiator(init, req, reply, res), Status::Ok);
    EXPECT_EQ(res.rtr, Rtr::None);
    EXPECT_FALSE(res.p2p);
}

TEST(MpaIrdOrd, BitsRoundTrip) {
    const IrdOrd b{true, true, false, true, 0x3FFF, 0x0123};
    uint8_t w[4];
    encode_ird_ord(b, w);
    EXPECT_EQ(to_hex(w), "ffff4123");
    EXPECT_EQ(decode_ird_ord(w), b);
    const IrdOrd over{false, false, true, false, 0xFFFF, 0xFFFF};  // 14-bit fields mask
    encode_ird_ord(over, w);
    EXPECT_EQ(to_hex(w), "3fffbfff");
}

}  // namespace
