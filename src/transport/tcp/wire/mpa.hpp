// MPA connection setup (RFC 5044 7.1, RFC 6581): Request/Reply frames, the MPA v2
// IRD/ORD block, a streaming startup parser and the negotiation rules.
//
// Markers: not implemented, refused the way siw refuses them (brief 2.2, 6.1):
//   - a Request with M=1 is parsed to the end (so its flags, revision and IRD/ORD block
//     are known) and reported as MpaMarkersRequested; mpa_respond() then builds a reject
//     Reply: the request's flags minus M plus R, the request's revision, and for an
//     Enhanced request PD_Length 4 with an all-zero IRD/ORD block (vector 7). Send it and
//     close the TCP connection.
//   - a Reply with M=1 is reported the same way; mpa_finish_initiator() fails with
//     MpaMarkersRequested and the initiator closes (siw aborts too; it may send Terminate
//     LLP/MPA/0x04 first).
// Markers would cost a per-512-byte insertion/strip pass and a second framing state
// machine on both paths for a feature siw, irdma (default) and cxgb4 never turn on;
// rejecting keeps us interoperable with all three.
//
// Other refusals (all from the parser): unknown key (MpaBadKey; as responder close
// without replying like siw, as initiator send Terminate 0x20040000), Rev > 2
// (MpaBadRevision; siw closes without reply), PD_Length > 512 (MpaPrivateDataTooLong),
// Enhanced frame whose PD_Length < 4 (MpaBadIrdOrd). Revision 0 (pre-standard draft) is
// accepted and treated as 1, like siw. Bytes after the frame are left unconsumed: for a
// responder anything before its Reply is a protocol error (siw treats it so); for an
// initiator they may be the first FPDU of a responder that does not wait (siw) and belong
// to the FPDU decoder.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/tcp/wire/common.hpp"

namespace softrnic::transport::tcp::wire {

inline constexpr size_t kMpaKeyLen = 16;
inline constexpr size_t kMpaHeaderLen = 20;  // key, flags, rev, PD_Length
inline constexpr size_t kMpaMaxPrivateData = 512;
// What to send at most (Linux RDMA_MAX_PRIVATE_DATA): siw and cxgb4 drop more.
inline constexpr size_t kMpaSendPrivateDataMax = 256;
inline constexpr size_t kMpaIrdOrdLen = 4;
inline constexpr size_t kMpaMaxFrame = kMpaHeaderLen + kMpaMaxPrivateData;
inline constexpr uint16_t kIrdOrdMax = 0x3FFF;  // also irdma's "no preference"

inline constexpr uint8_t kMpaFlagM = 0x80;
inline constexpr uint8_t kMpaFlagC = 0x40;
inline constexpr uint8_t kMpaFlagR = 0x20;
inline constexpr uint8_t kMpaFlagEnhanced = 0x10;

enum class MpaKind : uint8_t { Request, Reply };

// RFC 6581 IRD/ORD block: the first 4 bytes of private data of an Enhanced frame.
struct IrdOrd {
    bool p2p = false;        // IRD word 0x8000
    bool rtr_send = false;   // IRD word 0x4000: zero-length Send RTR
    bool rtr_write = false;  // ORD word 0x8000: zero-length RDMA Write RTR
    bool rtr_read = false;   // ORD word 0x4000: zero-length RDMA Read RTR
    uint16_t ird = 0;        // 14 bits
    uint16_t ord = 0;        // 14 bits
    friend bool operator==(const IrdOrd &, const IrdOrd &) = default;
};
void encode_ird_ord(const IrdOrd &b, uint8_t out[kMpaIrdOrdLen]);
IrdOrd decode_ird_ord(const uint8_t in[kMpaIrdOrdLen]);

// One Request or Reply. `private_data` is the ULP part only: for Enhanced frames the
// IRD/ORD block is separate and PD_Length on the wire is 4 + private_data.size().
struct MpaFrame {
    MpaKind kind = MpaKind::Request;
    bool markers = false;
    bool crc = false;
    bool reject = false;    // Reply only; 0 in a Request
    bool enhanced = false;  // 0x10 with Rev 2: the IRD/ORD block is present
    uint8_t rev = 2;
    IrdOrd ird_ord{};  // valid when enhanced
    std::span<const uint8_t> private_data{};
};

// Writes the frame into `out`. Fails with InvalidArgument for Rev > 2, Enhanced without
// Rev 2, R in a Request, or PD_Length > 512 (send at most 256 for siw/cxgb4 peers; the
// builder does not enforce that), BufferTooSmall when `out` is short.
Status build_mpa_frame(const MpaFrame &f, std::span<uint8_t> out, size_t &written);

// Streaming parser for the one frame a peer sends in streaming mode. Feed it bytes as
// they arrive (any chunking):
//     MpaParser p(MpaKind::Request);
//     auto r = p.feed(chunk);   // r.consumed bytes taken; r.state as below
// NeedMore: all input consumed. Complete: frame() is valid (its private data lives in
// the parser). Error: error() says why (see the file comment); for MpaMarkersRequested
// the whole frame was consumed and frame() is valid, so a reject can be built. A key
// mismatch is reported as soon as the first wrong byte arrives. Nothing is allocated:
// private data goes into a fixed 512-byte buffer.
class MpaParser {
  public:
    enum class State : uint8_t { NeedMore, Complete, Error };
    struct Result {
        State state = State::NeedMore;
        size_t consumed = 0;
    };

    explicit MpaParser(MpaKind expect) : expect_(expect) {}
    Result feed(std::span<const uint8_t> in);
    const MpaFrame &frame() const { return frame_; }
    Status error() const { return error_; }
    State state() const { return state_; }

  private:
    Status check_header();
    Result finish(size_t used);

    MpaKind expect_;
    std::array<uint8_t, kMpaHeaderLen> hdr_{};
    std::array<uint8_t, kMpaMaxPrivateData> pd_{};
    size_t have_ = 0;    // bytes consumed of the frame so far
    size_t pd_len_ = 0;  // PD_Length once known
    MpaFrame frame_{};
    Status error_ = Status::Ok;
    State state_ = State::NeedMore;
};

// One-shot parse of a complete frame at the start of `in`.
Status parse_mpa_frame(std::span<const uint8_t> in, MpaKind expect, MpaFrame &out,
                       size_t &consumed);

// ---- Negotiation ------------------------------------------------------------------------

enum class Rtr : uint8_t { None, Write, Read, Send };

struct MpaConfig {
    uint8_t rev = 2;        // 1: RFC 5044 frames only; 2: Enhanced (RFC 6581)
    bool want_crc = false;  // siw default: CRC only if the peer asks
    // Initiator: ask for peer-to-peer mode and offer these RTR messages.
    bool p2p = false;
    bool offer_write = true;
    bool offer_read = true;
    bool offer_send = false;
    // Inbound (IRD) and outbound (ORD) Read/Atomic requests: what we advertise and the
    // most we accept (siw: 128 each).
    uint16_t ird = 16;
    uint16_t ord = 16;
    uint16_t max_ird = 128;
    uint16_t max_ord = 128;
};

// What both ends run with after startup.
struct MpaResult {
    bool crc = false;
    uint8_t rev = 1;
    bool enhanced = false;
    bool p2p = false;
    Rtr rtr = Rtr::None;  // the zero-length message the initiator sends first
    uint16_t ird = 0;     // inbound requests we must accept
    uint16_t ord = 0;     // outbound requests we may have outstanding
};

// Initiator: the Request to send for `cfg` (private_data is the ULP's, <= 256 advised).
MpaFrame mpa_make_request(const MpaConfig &cfg, std::span<const uint8_t> private_data = {});

// Responder: decides the Reply to a parsed Request. On Ok `reply` accepts and `result`
// holds the parameters; on MpaMarkersRequested `reply` is the reject to send before
// closing. Negotiation follows siw (brief 2.2-2.4): CRC if either side wants it; the
// request's revision echoed (capped at cfg.rev; Enhanced only if both do v2); IRD/ORD
// "relaxed": reply IRD = min(request ORD, max_ird), reply ORD = min(request IRD,
// max_ord); P2P honoured by choosing Write if offered, else Read, else Write (never
// Send, like siw; vector 5).
Status mpa_respond(const MpaConfig &cfg, const MpaFrame &request,
                   std::span<const uint8_t> reply_private_data, MpaFrame &reply, MpaResult &result);

// Reject Reply for a Request (e.g. the ULP refused it), keeping the IRD/ORD block zeroed
// when the request was Enhanced, as siw and cxgb4 do.
MpaFrame mpa_make_reject(const MpaFrame &request, std::span<const uint8_t> private_data = {});

// Initiator: checks the peer's Reply against the Request we sent. Errors: MpaRejected
// (R=1: connection refused, close), MpaMarkersRequested, MpaBadRevision (Reply Rev above
// ours), MpaNotEnhanced (we sent Enhanced v2 and the reply is Rev 2 without the block),
// MpaInsufficientIrd (reply ORD above our max_ird; 0x3FFF counts as "no preference"),
// MpaNoMatchingRtr (P2P reply naming none or more than one of our offered RTRs). A Rev 1
// reply to a v2 request is accepted without IRD/ORD or P2P (RFC 6581 fallback; siw would
// abort instead). term_code() of the error is the Terminate to send before closing.
Status mpa_finish_initiator(const MpaConfig &cfg, const MpaFrame &request, const MpaFrame &reply,
                            MpaResult &result);

}  // namespace softrnic::transport::tcp::wire
