// libFuzzer target: the streaming MPA startup parser and the negotiation helpers.
//
// Input: byte 0 = bit 0 which frame the parser expects (Request/Reply), bits 1-7 seed of the
// chunk sizes; the rest is the TCP byte stream. The stream is parsed in pseudo-random
// chunks and in one piece; both must agree on state, error, bytes consumed and fields.
// A complete frame must rebuild and re-parse to the same fields, and negotiation on it
// must not crash and must produce frames the builder accepts. Bytes after the frame are
// fed to an FPDU decoder, as an initiator would.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/mpa.hpp"

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

struct Outcome {
    MpaParser::State state;
    Status error;
    size_t consumed;
    MpaFrame frame;
    std::vector<uint8_t> pd;
};

Outcome parse(MpaKind kind, std::span<const uint8_t> in, uint32_t seed, bool chunked) {
    MpaParser p(kind);
    size_t pos = 0;
    uint32_t rng = seed * 2654435761u + 7;
    while (pos < in.size()) {
        size_t n = in.size() - pos;
        if (chunked) {
            rng = rng * 1103515245u + 12345u;
            n = std::min<size_t>(n, 1 + (rng >> 16) % 23);
        }
        const auto r = p.feed(in.subspan(pos, n));
        FUZZ_CHECK(r.consumed <= n);
        pos += r.consumed;
        if (r.state != MpaParser::State::NeedMore) break;
        FUZZ_CHECK(r.consumed == n);
    }
    const MpaFrame &f = p.frame();
    return {p.state(), p.error(), pos, f, {f.private_data.begin(), f.private_data.end()}};
}

bool same_fields(const MpaFrame &a, const MpaFrame &b) {
    return a.kind == b.kind && a.markers == b.markers && a.crc == b.crc && a.reject == b.reject &&
           a.enhanced == b.enhanced && a.rev == b.rev && (!a.enhanced || a.ird_ord == b.ird_ord) &&
           std::equal(a.private_data.begin(), a.private_data.end(), b.private_data.begin(),
                      b.private_data.end());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const MpaKind kind = (data[0] & 1) ? MpaKind::Reply : MpaKind::Request;
    const uint32_t seed = data[0] >> 1;
    const std::span<const uint8_t> in(data + 1, size - 1);

    const Outcome whole = parse(kind, in, seed, false);
    const Outcome parts = parse(kind, in, seed, true);
    FUZZ_CHECK(whole.state == parts.state);
    FUZZ_CHECK(whole.error == parts.error);
    FUZZ_CHECK(whole.consumed == parts.consumed);
    FUZZ_CHECK(whole.pd == parts.pd);
    FUZZ_CHECK(whole.consumed <= kMpaMaxFrame);
    if (whole.state == MpaParser::State::NeedMore) FUZZ_CHECK(whole.consumed == in.size());

    const bool have_frame =
        whole.state == MpaParser::State::Complete || whole.error == Status::MpaMarkersRequested;
    if (!have_frame) return 0;
    MpaFrame f = whole.frame;
    f.private_data = whole.pd;
    FUZZ_CHECK(f.rev <= 2);
    FUZZ_CHECK(f.private_data.size() + (f.enhanced ? kMpaIrdOrdLen : 0) <= kMpaMaxPrivateData);
    FUZZ_CHECK(whole.consumed ==
               kMpaHeaderLen + f.private_data.size() + (f.enhanced ? kMpaIrdOrdLen : 0));

    // Rebuild and re-parse: same fields.
    uint8_t buf[kMpaMaxFrame];
    size_t n = 0;
    FUZZ_CHECK(build_mpa_frame(f, buf, n) == Status::Ok);
    MpaFrame again;
    size_t used = 0;
    const Status st = parse_mpa_frame({buf, n}, kind, again, used);
    FUZZ_CHECK(st == whole.error);
    FUZZ_CHECK(used == n);
    FUZZ_CHECK(same_fields(f, again));

    // Negotiation in the role this frame implies.
    MpaConfig cfg;
    cfg.p2p = seed & 1;
    cfg.want_crc = seed & 2;
    MpaResult res;
    if (kind == MpaKind::Request) {
        MpaFrame reply;
        const Status s = mpa_respond(cfg, f, {}, reply, res);
        if (s == Status::Ok || s == Status::MpaMarkersRequested) {
            FUZZ_CHECK(!reply.markers);
            FUZZ_CHECK(build_mpa_frame(reply, buf, n) == Status::Ok);
            if (s == Status::Ok) FUZZ_CHECK(res.ird <= kIrdOrdMax && res.ord <= kIrdOrdMax);
        }
    } else {
        const MpaFrame req = mpa_make_request(cfg);
        const Status s = mpa_finish_initiator(cfg, req, f, res);
        if (s == Status::Ok) {
            FUZZ_CHECK(res.crc == (req.crc || f.crc));
            FUZZ_CHECK(res.ord <= cfg.ord);
            FUZZ_CHECK(!res.p2p || res.rtr != Rtr::None);
        }
        // What follows the Reply is full operation: feed it to an FPDU decoder.
        FpduDecoder dec({res.crc, kMaxUlpdu});
        std::span<const uint8_t> rest = in.subspan(whole.consumed);
        while (!rest.empty()) {
            const auto r = dec.feed(rest);
            rest = rest.subspan(r.consumed);
            if (r.state != FeedState::Segment) break;
            FUZZ_CHECK(dec.segment().size() >= kMinUlpdu);
        }
    }
    return 0;
}
