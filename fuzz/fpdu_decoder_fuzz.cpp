// libFuzzer target: the streaming FPDU decoder and the strict DDP/RDMAP segment decoder.
//
// Input: byte 0 = options (bit 0 CRC checking, bit 1 RFC 7306 opcodes, bits 2-7 seed of the
// chunk sizes), byte 1 = receive cap selector, then the TCP byte stream. The stream is
// decoded twice, once in chunks of pseudo-random sizes and once in one piece; both runs
// must report the same segments and the same error (chunk boundaries must not matter).
// Every segment must have the size its length field announced, stay within the cap, and
// every segment that decodes must re-encode to a header that decodes to the same fields.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/segment.hpp"

using namespace softrnic::transport::tcp::wire;

namespace {

#define FUZZ_CHECK(cond)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            __builtin_fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, \
                              __LINE__);                                                 \
            abort();                                                                     \
        }                                                                                \
    } while (0)

struct Run {
    std::vector<std::vector<uint8_t>> segments;
    Status error = Status::Ok;
    size_t consumed = 0;
};

bool same_header(const DdpHeader &a, const DdpHeader &b) {
    return a.opcode == b.opcode && a.last == b.last && a.stag == b.stag && a.to == b.to &&
           a.inv_stag == b.inv_stag && a.qn == b.qn && a.msn == b.msn && a.mo == b.mo;
}

void check_segment(std::span<const uint8_t> seg, uint32_t cap, DecodeOptions opt,
                   UntaggedReassembler &ra) {
    FUZZ_CHECK(seg.size() >= kMinUlpdu && seg.size() <= cap);
    Segment s;
    const Status st = decode_segment(seg, s, opt);
    if (st != Status::Ok) {
        const TermCode tc = term_code(st);
        FUZZ_CHECK(tc.layer <= 2);
        return;
    }
    // Spans handed out stay inside the segment.
    if (!s.payload.empty()) {
        FUZZ_CHECK(s.payload.data() >= seg.data());
        FUZZ_CHECK(s.payload.data() + s.payload.size() == seg.data() + seg.size());
        FUZZ_CHECK(s.payload.size() + header_len(s.hdr.opcode) == seg.size());
    }
    // Re-encode the fixed headers and decode them again: same fields.
    uint8_t buf[kMaxHeaderLen + kTerminateBodyMax];
    size_t n = 0;
    switch (s.hdr.opcode) {
        case Opcode::ReadRequest:
            n = encode_read_request(s.hdr, s.read, buf);
            break;
        case Opcode::AtomicRequest:
            n = encode_atomic_request(s.hdr, s.atomic_req, buf);
            break;
        case Opcode::AtomicResponse:
            n = encode_atomic_response(s.hdr, s.atomic_resp, buf);
            break;
        case Opcode::ImmediateData:
        case Opcode::ImmediateDataSe:
            n = encode_immediate(s.hdr, s.immediate, buf);
            break;
        case Opcode::Terminate: {
            FUZZ_CHECK(s.term.ddp_header.size() == 0 || s.term.ddp_header.size() == 14 ||
                       s.term.ddp_header.size() == 18);
            FUZZ_CHECK(s.term.rdma_header.size() == 0 || s.term.rdma_header.size() == 28);
            return;
        }
        default:
            n = encode_ddp_header(s.hdr, buf);
            break;
    }
    FUZZ_CHECK(n == header_len(s.hdr.opcode));
    Segment again;
    FUZZ_CHECK(decode_segment({buf, n}, again, opt) == Status::Ok);
    FUZZ_CHECK(same_header(s.hdr, again.hdr));
    UntaggedReassembler::Result r;
    (void)ra.accept(s.hdr, static_cast<uint32_t>(s.payload.size()), r);
}

Run decode(std::span<const uint8_t> stream, bool crc, uint32_t cap, uint32_t seed, bool chunked,
           DecodeOptions opt) {
    FpduDecoder dec({crc, cap});
    UntaggedReassembler ra;
    Run run;
    size_t pos = 0;
    uint32_t rng = seed * 2654435761u + 1;
    while (pos < stream.size() && run.error == Status::Ok) {
        size_t n = stream.size() - pos;
        if (chunked) {
            rng = rng * 1103515245u + 12345u;
            n = std::min<size_t>(n, 1 + (rng >> 16) % 97);
        }
        std::span<const uint8_t> in = stream.subspan(pos, n);
        pos += n;
        while (true) {
            const FeedResult r = dec.feed(in);
            FUZZ_CHECK(r.consumed <= in.size());
            in = in.subspan(r.consumed);
            run.consumed += r.consumed;
            if (r.state == FeedState::Segment) {
                const auto seg = dec.segment();
                check_segment(seg, cap, opt, ra);
                run.segments.emplace_back(seg.begin(), seg.end());
                continue;
            }
            if (r.state == FeedState::Error) {
                run.error = dec.error();
                FUZZ_CHECK(run.error != Status::Ok);
            } else {
                FUZZ_CHECK(in.empty());  // NeedMore means everything was taken
            }
            break;
        }
    }
    return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    const bool crc = data[0] & 1;
    const DecodeOptions opt{(data[0] & 2) != 0};
    const uint32_t seed = data[0] >> 2;
    static constexpr uint32_t kCaps[] = {kMaxUlpdu, 1454, 14, 70, 9000, 65534, 200, 1442};
    const uint32_t cap = kCaps[data[1] % 8];
    const std::span<const uint8_t> stream(data + 2, size - 2);

    const Run whole = decode(stream, crc, cap, seed, false, opt);
    const Run parts = decode(stream, crc, cap, seed, true, opt);
    FUZZ_CHECK(whole.error == parts.error);
    FUZZ_CHECK(whole.segments == parts.segments);
    // Each segment's length equals the ULPDU_LENGTH in front of it: walk the stream.
    size_t off = 0;
    for (const auto &seg : whole.segments) {
        FUZZ_CHECK(off + 2 <= stream.size());
        FUZZ_CHECK(load_be16(&stream[off]) == seg.size());
        FUZZ_CHECK(std::memcmp(&stream[off + 2], seg.data(), seg.size()) == 0);
        off += fpdu_size(seg.size());
    }
    if (whole.error == Status::Ok) FUZZ_CHECK(whole.consumed == stream.size());
    return 0;
}
