// Hostile input for the streaming FPDU decoder and the strict segment decoder: truncation,
// bad versions/opcodes/QNs, lengths over the cap, arbitrary chunking.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "wire_test_util.hpp"

using namespace softrnic::transport::tcp::wire;
using wire_test::hex;
using wire_test::to_hex;
namespace vec = wire_test::vec;

namespace {

std::vector<uint8_t> seg_of(const char *fpdu_hex) {
    const auto f = hex(fpdu_hex);
    const size_t n = load_be16(f.data());
    return {f.begin() + 2, f.begin() + 2 + static_cast<long>(n)};
}

const char *const kAllFpdus[] = {vec::v9_crc,
                                 vec::v10,
                                 vec::v11,
                                 vec::v12,
                                 vec::v13,
                                 vec::v14_req,
                                 vec::v14_resp,
                                 vec::v20,
                                 vec::v21_ulp,
                                 vec::v21_op,
                                 vec::v23_fetchadd,
                                 vec::v23_cmpswap,
                                 vec::v23_atomic_resp,
                                 vec::v23_immediate};

// Everything the decoder reports for a stream, to compare chunkings.
struct Trace {
    std::vector<std::string> segments;
    Status error = Status::Ok;
    size_t consumed = 0;
    bool operator==(const Trace &) const = default;
};

Trace run(const std::vector<uint8_t> &stream, bool crc, uint32_t cap, size_t chunk) {
    FpduDecoder dec({crc, cap});
    Trace t;
    size_t pos = 0;
    while (pos < stream.size()) {
        const size_t n = chunk ? std::min(chunk, stream.size() - pos) : stream.size() - pos;
        std::span<const uint8_t> in(stream.data() + pos, n);
        while (true) {
            const auto r = dec.feed(in);
            in = in.subspan(r.consumed);
            t.consumed += r.consumed;
            if (r.state == FeedState::Segment) {
                t.segments.push_back(to_hex(dec.segment()));
                continue;
            }
            if (r.state == FeedState::Error) t.error = dec.error();
            break;
        }
        if (t.error != Status::Ok) break;
        pos += n;
    }
    return t;
}

std::vector<uint8_t> all_vectors_stream() {
    std::vector<uint8_t> s;
    for (const char *v : kAllFpdus) {
        const auto b = hex(v);
        s.insert(s.end(), b.begin(), b.end());
    }
    return s;
}

TEST(FpduStream, AllVectorsBackToBackAnyChunking) {
    const auto stream = all_vectors_stream();
    const Trace whole = run(stream, true, kMaxUlpdu, 0);
    ASSERT_EQ(whole.error, Status::Ok);
    ASSERT_EQ(whole.segments.size(), std::size(kAllFpdus));
    EXPECT_EQ(whole.consumed, stream.size());
    for (size_t i = 0; i < std::size(kAllFpdus); ++i)
        EXPECT_EQ(whole.segments[i], to_hex(seg_of(kAllFpdus[i])));
    for (size_t chunk : {1, 2, 3, 5, 7, 13, 64})
        EXPECT_EQ(run(stream, true, kMaxUlpdu, chunk), whole) << "chunk " << chunk;
}

TEST(FpduStream, RandomChunkingMatchesOneChunk) {
    const auto stream = all_vectors_stream();
    const Trace whole = run(stream, true, kMaxUlpdu, 0);
    std::mt19937 rng(7);
    for (int iter = 0; iter < 200; ++iter) {
        FpduDecoder dec({true, kMaxUlpdu});
        Trace t;
        size_t pos = 0;
        while (pos < stream.size()) {
            const size_t n = std::min<size_t>(1 + rng() % 40, stream.size() - pos);
            std::span<const uint8_t> in(stream.data() + pos, n);
            while (true) {
                const auto r = dec.feed(in);
                in = in.subspan(r.consumed);
                t.consumed += r.consumed;
                if (r.state != FeedState::Segment) break;
                t.segments.push_back(to_hex(dec.segment()));
            }
            pos += n;
        }
        ASSERT_EQ(t, whole) << "iteration " << iter;
    }
}

TEST(FpduStream, ErrorsAreTheSameByteByByte) {
    std::vector<std::vector<uint8_t>> bad;
    auto crc = hex(vec::v12);
    crc.back() ^= 1;
    bad.push_back(crc);
    auto shortlen = hex(vec::v9_crc);
    shortlen[1] = 13;
    bad.push_back(shortlen);
    auto longlen = hex(vec::v12);
    longlen[0] = 0x06;  // 0x0617 > cap 1454
    bad.push_back(longlen);
    for (const auto &b : bad) {
        auto stream = hex(vec::v11);  // one good FPDU first
        stream.insert(stream.end(), b.begin(), b.end());
        const Trace whole = run(stream, true, 1454, 0);
        EXPECT_NE(whole.error, Status::Ok);
        EXPECT_EQ(whole.segments.size(), 1u);
        EXPECT_EQ(run(stream, true, 1454, 1).error, whole.error);
        EXPECT_EQ(run(stream, true, 1454, 1).segments, whole.segments);
    }
}

TEST(FpduStream, UlpduOverCapIsRejectedBeforeBuffering) {
    FpduDecoder dec({false, 1454});
    const uint8_t hdr[2] = {0x05, 0xAF};  // 1455
    const auto r = dec.feed(hdr);
    EXPECT_EQ(r.state, FeedState::Error);
    EXPECT_EQ(dec.error(), Status::UlpduTooLong);
    EXPECT_EQ(term_code(dec.error()).control_word(), 0x20030000u);
    // A failed decoder stays failed.
    EXPECT_EQ(dec.feed(hex(vec::v11)).state, FeedState::Error);
    // At the cap it is fine.
    FpduDecoder ok({false, 1454});
    std::vector<uint8_t> f(fpdu_size(1454), 0);
    store_be16(f.data(), 1454);
    f[2] = 0xC1;
    f[3] = 0x40;
    const auto r2 = ok.feed(f);
    EXPECT_EQ(r2.state, FeedState::Segment);
    EXPECT_EQ(ok.segment().size(), 1454u);
    EXPECT_EQ(r2.consumed, 1460u);
}

TEST(FpduStream, MaxUlpduAcrossChunks) {
    std::vector<uint8_t> f(fpdu_size(65535), 0xEE);
    store_be16(f.data(), 65535);
    FpduDecoder dec;
    size_t pos = 0;
    FeedResult r;
    while (pos < f.size()) {
        r = dec.feed(std::span(f).subspan(pos, std::min<size_t>(4000, f.size() - pos)));
        pos += r.consumed;
        if (r.state != FeedState::NeedMore) break;
    }
    ASSERT_EQ(r.state, FeedState::Segment);
    EXPECT_EQ(pos, 2 + 65535u + 3 + 4);
    EXPECT_EQ(dec.segment().size(), 65535u);
    EXPECT_EQ(dec.fpdus(), 1u);
}

TEST(FpduStream, TruncatedFpduNeedsMore) {
    const auto f = hex(vec::v14_req);
    for (size_t n = 0; n < f.size(); ++n) {
        FpduDecoder dec({true, kMaxUlpdu});
        const auto r = dec.feed(std::span(f).first(n));
        EXPECT_EQ(r.state, FeedState::NeedMore) << n;
        EXPECT_EQ(r.consumed, n);
        EXPECT_TRUE(dec.segment().empty());
    }
}

// ---- Strict segment decoder -------------------------------------------------------------------

TEST(SegmentDecode, TruncatedHeadersAtEveryLength) {
    for (const char *v : kAllFpdus) {
        const auto seg = seg_of(v);
        Segment s;
        ASSERT_EQ(decode_segment(seg, s, {true}), Status::Ok) << v;
        for (size_t n = 0; n < seg.size(); ++n) {
            // A copy of exactly n bytes, so ASan catches any read past the span.
            const std::vector<uint8_t> cut(seg.begin(), seg.begin() + static_cast<long>(n));
            const Status st = decode_segment(cut, s, {true});
            const auto op = static_cast<Opcode>(seg[1] & 0x0F);
            if (n >= header_len(op) &&
                (op == Opcode::Send || op == Opcode::SendInvalidate || is_tagged(op))) {
                EXPECT_EQ(st, Status::Ok) << "payload-bearing segments may be shorter";
            } else if (op == Opcode::Terminate && n >= header_len(op)) {
                EXPECT_EQ(st, Status::RdmapMalformedTerminate) << v << " n=" << n;
            } else {
                EXPECT_EQ(st, Status::FramingLength) << v << " n=" << n;
            }
        }
    }
}

TEST(SegmentDecode, FixedSizeMessagesMustBeExact) {
    for (const char *v : {vec::v10, vec::v23_fetchadd, vec::v23_atomic_resp, vec::v23_immediate}) {
        auto seg = seg_of(v);
        seg.push_back(0);
        Segment s;
        EXPECT_EQ(decode_segment(seg, s, {true}), Status::FramingLength) << v;
    }
}

TEST(SegmentDecode, ReservedOpcodesAndTBitMismatch) {
    Segment s;
    for (uint8_t op = 12; op < 16; ++op) {
        auto seg = seg_of(vec::v12);
        seg[1] = static_cast<uint8_t>(0x40 | op);
        EXPECT_EQ(decode_segment(seg, s, {true}), Status::RdmapUnexpectedOpcode) << int(op);
    }
    auto tagged_send = seg_of(vec::v12);
    tagged_send[0] |= 0x80;
    EXPECT_EQ(decode_segment(tagged_send, s), Status::RdmapUnexpectedOpcode);
    auto untagged_write = seg_of(vec::v12);
    untagged_write[1] = 0x40;  // opcode 0 (Write) in an untagged header
    EXPECT_EQ(decode_segment(untagged_write, s), Status::RdmapUnexpectedOpcode);
}

TEST(SegmentDecode, QueueMustMatchOpcode) {
    Segment s;
    for (uint32_t qn : {1u, 2u, 3u, 4u, 0xFFFFFFFFu}) {
        auto seg = seg_of(vec::v12);
        store_be32(&seg[6], qn);
        EXPECT_EQ(decode_segment(seg, s), Status::DdpInvalidQn) << qn;
    }
    auto rr = seg_of(vec::v10);
    store_be32(&rr[6], 0);
    EXPECT_EQ(decode_segment(rr, s), Status::DdpInvalidQn);
    auto ar = seg_of(vec::v23_atomic_resp);
    store_be32(&ar[6], 1);
    EXPECT_EQ(decode_segment(ar, s, {true}), Status::DdpInvalidQn);
}

TEST(SegmentDecode, SingleSegmentMessagesNeedLastAndMoZero) {
    Segment s;
    for (const char *v : {vec::v10, vec::v21_ulp, vec::v23_fetchadd, vec::v23_immediate}) {
        auto notlast = seg_of(v);
        notlast[0] &= ~0x40;
        EXPECT_EQ(decode_segment(notlast, s, {true}), Status::RdmapUnexpectedOpcode) << v;
        auto mo = seg_of(v);
        store_be32(&mo[14], 4);
        EXPECT_EQ(decode_segment(mo, s, {true}), Status::DdpInvalidMo) << v;
    }
    auto term = seg_of(vec::v21_ulp);
    store_be32(&term[10], 2);
    EXPECT_EQ(decode_segment(term, s), Status::DdpInvalidMsn);
}

TEST(SegmentDecode, ReservedBitsAreIgnored) {
    Segment s;
    auto seg = seg_of(vec::v12);
    seg[0] |= 0x3C;                   // DDP reserved
    seg[1] |= 0x30;                   // RDMAP reserved
    store_be32(&seg[2], 0xDEADBEEF);  // RsvdULP of a plain Send
    ASSERT_EQ(decode_segment(seg, s), Status::Ok);
    EXPECT_EQ(s.hdr.opcode, Opcode::Send);
    EXPECT_EQ(s.hdr.inv_stag, 0u);
    EXPECT_EQ(s.payload.size(), 5u);
}

TEST(SegmentDecode, BadAtomicOpcode) {
    Segment s;
    auto seg = seg_of(vec::v23_fetchadd);
    seg[18 + 3] = 1;
    EXPECT_EQ(decode_segment(seg, s, {true}), Status::RdmapBadAtomicOpcode);
    seg[18 + 3] = 0x12;  // upper bits reserved: 0x2 = CmpSwap
    EXPECT_EQ(decode_segment(seg, s, {true}), Status::Ok);
    EXPECT_EQ(s.atomic_req.op, AtomicOp::CmpSwap);
}

TEST(SegmentDecode, MalformedTerminates) {
    Segment s;
    auto base = seg_of(vec::v20);  // D=1 with an 18-byte header
    auto shorter = base;
    shorter.pop_back();
    EXPECT_EQ(decode_segment(shorter, s), Status::RdmapMalformedTerminate);
    auto longer = base;
    longer.push_back(0);
    EXPECT_EQ(decode_segment(longer, s), Status::RdmapMalformedTerminate);
    auto r_partial = base;  // R=1 with 5 stray bytes instead of 0 or 28
    r_partial[18 + 2] |= 0x20;
    r_partial.insert(r_partial.end(), 5, 0);
    EXPECT_EQ(decode_segment(r_partial, s), Status::RdmapMalformedTerminate);
    auto d_no_room = seg_of(vec::v21_ulp);  // D=1 but nothing follows the control word
    d_no_room[18 + 2] = 0x40;
    EXPECT_EQ(decode_segment(d_no_room, s), Status::RdmapMalformedTerminate);
    std::vector<uint8_t> huge = base;
    huge.resize(18 + kTerminateBodyMax + 1, 0);
    EXPECT_EQ(decode_segment(huge, s), Status::RdmapMalformedTerminate);
}

TEST(SegmentDecode, RandomBytesNeverReadOutOfBounds) {
    // Random segments of every small length (ASan/UBSan run guards the bounds).
    std::mt19937 rng(42);
    size_t ok = 0;
    for (int i = 0; i < 20000; ++i) {
        std::vector<uint8_t> seg(rng() % 90);
        for (auto &b : seg)
            b = static_cast<uint8_t>(rng());
        if (!seg.empty()) seg[0] = static_cast<uint8_t>((seg[0] & 0xFC) | 1);
        if (seg.size() > 1) seg[1] = static_cast<uint8_t>((seg[1] & 0x3F) | 0x40);
        Segment s;
        if (decode_segment(seg, s, {true}) == Status::Ok) {
            ++ok;
            EXPECT_LE(s.payload.size(), seg.size());
            if (!s.payload.empty()) {
                EXPECT_EQ(s.payload.data() + s.payload.size(), seg.data() + seg.size());
            }
        }
    }
    EXPECT_GT(ok, 0u);
}

}  // namespace
