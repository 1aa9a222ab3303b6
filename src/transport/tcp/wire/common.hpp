// Shared vocabulary of the iWARP wire codec: status values, their Terminate mapping and
// big-endian field access.
//
// The codec never throws and never allocates from a length read off the wire: every
// function returns a Status, and every decoder bounds its reads by the span it was given.
// Status values that describe a peer's protocol violation map to the Terminate
// layer/etype/ecode triple the brief lists (RFC 5040 4.8, RFC 5041 7.2, RFC 5044 8,
// RFC 6581); local misuse (buffer too small, bad arguments) maps to "local catastrophic".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softrnic::transport::tcp::wire {

enum class Status : uint8_t {
    Ok = 0,
    // Local errors (caller bugs, never caused by the peer).
    BufferTooSmall,
    InvalidArgument,
    // MPA startup (streaming mode).
    MpaBadKey,              // key is not "MPA ID Req Frame" / "MPA ID Rep Frame"
    MpaBadRevision,         // Rev > 2, or a Reply whose Rev is above the Request's
    MpaPrivateDataTooLong,  // PD_Length > 512
    MpaMarkersRequested,    // M=1: markers are refused (see mpa.hpp)
    MpaBadIrdOrd,           // Enhanced frame whose PD_Length cannot hold the IRD/ORD block
    MpaRejected,            // the peer's Reply has R=1
    MpaNotEnhanced,         // Rev 2 Reply that answers an Enhanced Request without the block
    MpaInsufficientIrd,     // peer ORD exceeds what we can take inbound
    MpaNoMatchingRtr,       // P2P reply names no RTR type we offered
    // LLP framing in full operation (RFC 5044).
    CrcMismatch,
    FramingLength,   // ULPDU_LENGTH below the opcode's header size or disagreeing with it
    UlpduTooLong,    // ULPDU_LENGTH above the receiver's cap
    MarkerMismatch,  // a marker's FPDUPTR or reserved half is wrong
    // DDP (RFC 5041).
    DdpTaggedVersion,    // DV != 1 on a tagged segment
    DdpUntaggedVersion,  // DV != 1 on an untagged segment
    DdpInvalidQn,
    DdpInvalidMsn,  // MSN out of the expected range (also: interleaved untagged messages)
    DdpInvalidMo,
    DdpMessageTooLong,
    DdpTaggedOffsetWrap,
    // RDMAP (RFC 5040, RFC 7306).
    RdmapVersion,           // RV != 1
    RdmapUnexpectedOpcode,  // reserved opcode, RFC 7306 opcode not enabled, T bit or L bit
                            // that cannot go with the opcode
    RdmapBadAtomicOpcode,   // atomic request whose opcode field is not FetchAdd/CmpSwap
    RdmapMalformedTerminate,
};

// Terminate Control fields (RFC 5040 4.8): layer 0 RDMAP, 1 DDP, 2 LLP (MPA).
struct TermCode {
    uint8_t layer = 0;
    uint8_t etype = 0;
    uint8_t ecode = 0;
    // The 32-bit Terminate Control word with the hdrct bits (M, D, R) clear.
    constexpr uint32_t control_word() const {
        return (uint32_t{layer} & 0xF) << 28 | (uint32_t{etype} & 0xF) << 24 |
               uint32_t{ecode} << 16;
    }
    friend constexpr bool operator==(const TermCode &, const TermCode &) = default;
};

// What a Terminate caused by `s` must carry. Ok maps to {0, 0, 0} (never sent).
TermCode term_code(Status s);
const char *to_string(Status s);

// Big-endian field access. Callers check bounds first; these only move bytes.
inline uint16_t load_be16(const uint8_t *p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t load_be32(const uint8_t *p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
inline uint64_t load_be64(const uint8_t *p) {
    return uint64_t{load_be32(p)} << 32 | load_be32(p + 4);
}
inline void store_be16(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t *p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline void store_be64(uint8_t *p, uint64_t v) {
    store_be32(p, static_cast<uint32_t>(v >> 32));
    store_be32(p + 4, static_cast<uint32_t>(v));
}

}  // namespace softrnic::transport::tcp::wire
