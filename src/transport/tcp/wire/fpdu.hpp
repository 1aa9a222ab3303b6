// MPA FPDU framing (RFC 5044 4.1, 4.5, 4.6) for the full-operation phase:
//     ULPDU_LENGTH(2) | ULPDU (DDP segment) | PAD(0-3, zero) | CRC(4)
// The CRC field is always present; without negotiated CRC senders write 0 and receivers
// ignore it.
//
// Markers (RFC 5044 4.2/4.3) are not supported by the encoder or the streaming decoder:
// negotiation refuses them (mpa.hpp), as siw does, so a stream that reaches this layer
// never carries them. markers.hpp has stand-alone helpers that add/strip markers around
// one FPDU, used only to check the brief's marker vector.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "transport/tcp/wire/common.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"

namespace softrnic::transport::tcp::wire {

inline constexpr size_t kFpduLengthLen = 2;
inline constexpr size_t kFpduCrcLen = 4;
inline constexpr size_t kMinUlpdu = kTaggedHeaderLen;  // a DDP segment is at least 14 bytes
inline constexpr size_t kMaxUlpdu = 0xFFFF;

// PAD after a ULPDU of `ulpdu_len` bytes so that 2 + ULPDU + PAD is a multiple of 4.
constexpr size_t fpdu_pad(size_t ulpdu_len) {
    return (0 - (kFpduLengthLen + ulpdu_len)) & 3;
}
// Whole FPDU on the wire (length field, ULPDU, PAD, CRC).
constexpr size_t fpdu_size(size_t ulpdu_len) {
    return kFpduLengthLen + ulpdu_len + fpdu_pad(ulpdu_len) + kFpduCrcLen;
}

// MULPDU from the effective MSS (RFC 5044 4.6). Without markers EMSS - (6 + EMSS mod 4);
// with markers EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4). The result keeps
// 2 + MULPDU a multiple of 4 (a full segment needs no PAD) and is capped at 65534, the
// largest ULPDU_LENGTH with that property. Returns 0 when the EMSS is too small to carry
// the largest fixed-size message (70-byte Atomic Request / Terminate).
uint32_t mulpdu_for_emss(uint32_t emss, bool markers = false);

// siw sizes FPDUs by (tcp MSS & ~7) bytes including length and CRC, not by the RFC
// formula; this is the ULPDU cap that gives the same FPDUs (brief 2.7, vector 19).
uint32_t siw_mulpdu_for_mss(uint32_t mss);

// ---- Encoding ---------------------------------------------------------------------------

// Prefix (length field + DDP/RDMAP headers) and trailer (PAD + CRC) of one FPDU, built in
// fixed storage so the payload can go out by writev() straight from user memory.
struct FpduFrame {
    std::array<uint8_t, kFpduLengthLen + kMaxHeaderLen + kTerminateBodyMax> prefix{};
    size_t prefix_len = 0;
    std::array<uint8_t, 3 + kFpduCrcLen> trailer{};
    size_t trailer_len = 0;
    size_t total() const { return prefix_len + trailer_len; }
};

// Builds the prefix and trailer around `headers` (output of an encode_* function from
// ddp_rdmap.hpp) and a payload given as a list of pieces. With `crc` off the CRC field
// is 0. Fails with InvalidArgument when the ULPDU would exceed 65535 bytes or be shorter
// than 14, and with BufferTooSmall when `headers` does not fit the prefix.
Status build_fpdu_frame(std::span<const uint8_t> headers,
                        std::span<const std::span<const uint8_t>> payload, bool crc,
                        FpduFrame &frame);

// Fills `iov` with prefix, payload pieces and trailer (in that order) for writev().
// Returns the number of entries used, or 0 when `iov` is too short. Empty pieces are
// skipped. `frame` and the payload must outlive the write.
size_t fpdu_iovecs(const FpduFrame &frame, std::span<const std::span<const uint8_t>> payload,
                   std::span<struct iovec> iov);

// Writes the whole FPDU contiguously into `out`; `written` receives its size.
Status encode_fpdu(std::span<const uint8_t> headers,
                   std::span<const std::span<const uint8_t>> payload, bool crc,
                   std::span<uint8_t> out, size_t &written);
// Convenience: a single payload piece.
Status encode_fpdu(std::span<const uint8_t> headers, std::span<const uint8_t> payload, bool crc,
                   std::span<uint8_t> out, size_t &written);

// ---- Streaming decoding -----------------------------------------------------------------

struct FpduDecoderConfig {
    // Check the CRC of every FPDU (negotiated CRC). When off the CRC field is ignored.
    bool crc = false;
    // Largest ULPDU_LENGTH accepted. Keep the default (65535) unless a local policy needs
    // less: the peer sizes FPDUs from its own MSS, which need not equal ours, so the
    // local MULPDU is the wrong cap. Values are clamped to [14, 65535].
    uint32_t max_ulpdu = kMaxUlpdu;
};

enum class FeedState : uint8_t {
    NeedMore,  // all input consumed, no complete FPDU yet
    Segment,   // one FPDU complete: segment() is its DDP segment
    Error,     // error() says why; the decoder stays failed (the stream must be closed)
};

struct FeedResult {
    FeedState state = FeedState::NeedMore;
    size_t consumed = 0;  // bytes of the input taken; feed the rest again
};

// Incremental FPDU decoder. Input may be cut anywhere; each feed() returns at most one
// segment, so call it in a loop until it returns NeedMore:
//     while (!in.empty()) {
//         auto r = dec.feed(in);
//         in = in.subspan(r.consumed);
//         if (r.state == FeedState::Segment) handle(dec.segment());
//         else if (r.state == FeedState::Error) return terminate(dec.error());
//     }
// It checks 14 <= ULPDU_LENGTH <= max_ulpdu as soon as the length field is complete
// (before buffering anything of the FPDU) and the CRC when enabled; the DDP segment
// itself is validated by decode_segment(). The segment span points into the caller's
// input when the FPDU arrived in one piece (no copy), otherwise into the decoder's
// buffer; it is valid until the next feed() or until the input buffer is reused.
// The buffer is allocated once, at construction, from the configured cap: never from a
// length read off the wire.
class FpduDecoder {
  public:
    explicit FpduDecoder(FpduDecoderConfig cfg = {});
    FpduDecoder(const FpduDecoder &) = delete;
    FpduDecoder &operator=(const FpduDecoder &) = delete;

    FeedResult feed(std::span<const uint8_t> in);
    std::span<const uint8_t> segment() const { return segment_; }
    Status error() const { return error_; }
    // Total FPDUs decoded so far.
    uint64_t fpdus() const { return fpdus_; }
    // Turns CRC checking on or off between FPDUs.
    void set_crc(bool on) { cfg_.crc = on; }
    // Part of an FPDU has arrived and the rest has not (a stream ending now was cut).
    bool mid_fpdu() const { return have_ != 0; }

  private:
    FeedResult fail(Status s, size_t consumed);
    Status finish_fpdu(std::span<const uint8_t> fpdu);

    FpduDecoderConfig cfg_;
    std::unique_ptr<uint8_t[]> buf_;  // partial FPDU: length field .. CRC
    size_t have_ = 0;                 // bytes of the current FPDU buffered
    size_t need_ = 0;                 // its full size once the length field is known
    std::span<const uint8_t> segment_{};
    Status error_ = Status::Ok;
    uint64_t fpdus_ = 0;
};

}  // namespace softrnic::transport::tcp::wire
