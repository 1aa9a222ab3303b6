// DDP (RFC 5041) and RDMAP (RFC 5040, RFC 7306) headers: encode, and a strict decode of
// one DDP segment (the ULPDU an FPDU carries).
//
// The decoder treats every byte as hostile. It reads only inside the span it is given,
// allocates nothing, and returns the first violation in this order (earlier layers
// first, so the Terminate names the lowest layer that is broken):
//   1. segment shorter than the 14-byte minimum          -> FramingLength (LLP 0x03)
//   2. DV != 1                                           -> DDP tagged/untagged version
//   3. RV != 1                                           -> RDMAP version
//   4. opcode 12-15, or 8-11 without `rfc7306`           -> RDMAP unexpected opcode
//   5. T bit that does not go with the opcode            -> RDMAP unexpected opcode
//   6. segment shorter than the opcode's headers, or a fixed-size message (Read Request,
//      Atomic Request/Response, Immediate Data) of another size -> FramingLength
//   7. QN != the opcode's queue                          -> DDP invalid QN
//   8. single-segment message (QN 1, 2, 3, Immediate Data) with L=0 -> RDMAP unexpected
//      opcode; with MO != 0 -> DDP invalid MO; Terminate with MSN != 1 -> DDP invalid MSN
//   9. body: atomic opcode other than FetchAdd/CmpSwap, Terminate body that does not
//      parse inside the segment                         -> RDMAP errors
// Reserved bits (DDP 0x3C, RDMAP 0x30, the Invalidate STag field of a plain Send, the
// upper 28 bits of the atomic opcode word) are ignored on receive as the RFCs say.
// MSN sequencing, MO continuity and buffer sizes are not a single segment's property:
// UntaggedReassembler (segment.hpp) checks them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/tcp/wire/common.hpp"

namespace softrnic::transport::tcp::wire {

enum class Opcode : uint8_t {
    RdmaWrite = 0,
    ReadRequest = 1,
    ReadResponse = 2,
    Send = 3,
    SendInvalidate = 4,
    SendSe = 5,
    SendSeInvalidate = 6,
    Terminate = 7,
    ImmediateData = 8,    // RFC 7306
    ImmediateDataSe = 9,  // RFC 7306
    AtomicRequest = 10,   // RFC 7306
    AtomicResponse = 11,  // RFC 7306
};

// RDMAP's untagged queues (RFC 5040 5.1, RFC 7306).
enum class Queue : uint32_t { Send = 0, ReadRequest = 1, Terminate = 2, AtomicResponse = 3 };
inline constexpr uint32_t kQueueCount = 4;

inline constexpr size_t kTaggedHeaderLen = 14;
inline constexpr size_t kUntaggedHeaderLen = 18;
inline constexpr size_t kReadRequestBodyLen = 28;
inline constexpr size_t kAtomicRequestBodyLen = 52;
inline constexpr size_t kAtomicResponseBodyLen = 12;
inline constexpr size_t kImmediateDataLen = 8;
inline constexpr size_t kTerminateBodyMin = 4;
inline constexpr size_t kTerminateBodyMax = 4 + 2 + kUntaggedHeaderLen + kReadRequestBodyLen;
// Largest header block (DDP/RDMAP header + RDMAP extra header) of any message.
inline constexpr size_t kMaxHeaderLen = kUntaggedHeaderLen + kAtomicRequestBodyLen;

constexpr bool is_tagged(Opcode op) {
    return op == Opcode::RdmaWrite || op == Opcode::ReadResponse;
}
constexpr bool is_rfc7306(Opcode op) {
    return static_cast<uint8_t>(op) >= 8;
}
constexpr bool is_send_family(Opcode op) {
    return op == Opcode::Send || op == Opcode::SendInvalidate || op == Opcode::SendSe ||
           op == Opcode::SendSeInvalidate;
}
constexpr bool carries_invalidate(Opcode op) {
    return op == Opcode::SendInvalidate || op == Opcode::SendSeInvalidate;
}
// The queue an untagged opcode travels on. Undefined for tagged opcodes.
constexpr Queue queue_of(Opcode op) {
    switch (op) {
        case Opcode::ReadRequest:
        case Opcode::AtomicRequest:
            return Queue::ReadRequest;
        case Opcode::Terminate:
            return Queue::Terminate;
        case Opcode::AtomicResponse:
            return Queue::AtomicResponse;
        default:
            return Queue::Send;
    }
}
// DDP/RDMAP header plus the opcode's fixed RDMAP header (the body for fixed-size messages;
// the minimum for Terminate). Payload, if any, follows.
constexpr size_t header_len(Opcode op) {
    switch (op) {
        case Opcode::RdmaWrite:
        case Opcode::ReadResponse:
            return kTaggedHeaderLen;
        case Opcode::ReadRequest:
            return kUntaggedHeaderLen + kReadRequestBodyLen;
        case Opcode::Terminate:
            return kUntaggedHeaderLen + kTerminateBodyMin;
        case Opcode::ImmediateData:
        case Opcode::ImmediateDataSe:
            return kUntaggedHeaderLen + kImmediateDataLen;
        case Opcode::AtomicRequest:
            return kUntaggedHeaderLen + kAtomicRequestBodyLen;
        case Opcode::AtomicResponse:
            return kUntaggedHeaderLen + kAtomicResponseBodyLen;
        default:
            return kUntaggedHeaderLen;
    }
}
// Messages that are always exactly one segment (QN 1, 2, 3 and Immediate Data).
constexpr bool is_single_segment(Opcode op) {
    return !is_tagged(op) && !is_send_family(op);
}

// The fused DDP + RDMAP header. Tagged opcodes use stag/to; untagged ones use
// inv_stag (RsvdULP; the Invalidate STag for Send with Invalidate, otherwise 0), qn, msn
// and mo. The decoder fills the unused half with zeros.
struct DdpHeader {
    Opcode opcode = Opcode::Send;
    bool last = true;
    uint32_t stag = 0;
    uint64_t to = 0;
    uint32_t inv_stag = 0;
    uint32_t qn = 0;
    uint32_t msn = 0;
    uint32_t mo = 0;
    bool tagged() const { return is_tagged(opcode); }
};

struct ReadRequestBody {
    uint32_t sink_stag = 0;
    uint64_t sink_to = 0;
    uint32_t size = 0;
    uint32_t src_stag = 0;
    uint64_t src_to = 0;
};

enum class AtomicOp : uint8_t { FetchAdd = 0, CmpSwap = 2 };

struct AtomicRequestBody {
    AtomicOp op = AtomicOp::FetchAdd;
    uint32_t request_id = 0;
    uint32_t stag = 0;
    uint64_t to = 0;
    uint64_t add_swap = 0;       // Add Data (FetchAdd) / Swap Data (CmpSwap)
    uint64_t add_swap_mask = 0;  // Add Mask / Swap Mask
    uint64_t compare = 0;
    uint64_t compare_mask = 0;
};

struct AtomicResponseBody {
    uint32_t request_id = 0;
    uint64_t original = 0;
};

// Terminate body (RFC 5040 4.8). Layout as Wireshark and siw use it: the control word;
// then, when D=1, the 2-byte DDP Segment Length slot and the terminated DDP header
// (14 or 18 bytes, chosen by that header's T bit); then, when R=1, the 28-byte Read
// Request header. siw sets R=1 without appending the 28 bytes when the failed message
// was not a Read Request, so the decoder accepts R=1 with nothing after the DDP header.
// M only says whether the length value is meaningful (siw writes the payload length
// there, the RFC the segment length: never rely on it).
struct TerminateBody {
    TermCode code{};
    bool m = false;
    bool d = false;
    bool r = false;
    uint16_t ddp_seg_len = 0;
    std::span<const uint8_t> ddp_header{};   // copied header, 0/14/18 bytes
    std::span<const uint8_t> rdma_header{};  // copied Read Request header, 0 or 28 bytes
};

struct DecodeOptions {
    // Accept RFC 7306 opcodes 8-11. Off by default like siw (which answers them with
    // Terminate 0x02060000): MPA has no capability bit, so only enable them towards peers
    // known to support them.
    bool rfc7306 = false;
};

// One decoded DDP segment. Spans point into the segment that was decoded.
struct Segment {
    DdpHeader hdr{};
    std::span<const uint8_t> payload{};  // Write/Read Response/Send data; empty otherwise
    ReadRequestBody read{};              // ReadRequest
    AtomicRequestBody atomic_req{};      // AtomicRequest
    AtomicResponseBody atomic_resp{};    // AtomicResponse
    uint64_t immediate = 0;              // ImmediateData(Se): the 8 bytes, big-endian
    TerminateBody term{};                // Terminate
};

// Strict decode of one DDP segment (ULPDU_LENGTH bytes, without the length field, pad,
// CRC). On failure `out` is unspecified.
Status decode_segment(std::span<const uint8_t> ulpdu, Segment &out, DecodeOptions opt = {});

// Encoders write the DDP/RDMAP header (+ fixed RDMAP header) into `out` and return the
// number of bytes written, or 0 when `out` is too small or the header is inconsistent
// (tagged opcode through the untagged encoder, or the reverse). They do not write the
// ULPDU_LENGTH field: fpdu.hpp adds it.
size_t encode_tagged_header(const DdpHeader &h, std::span<uint8_t> out);
size_t encode_untagged_header(const DdpHeader &h, std::span<uint8_t> out);
// Either of the two above, by opcode.
size_t encode_ddp_header(const DdpHeader &h, std::span<uint8_t> out);
size_t encode_read_request(const DdpHeader &h, const ReadRequestBody &b, std::span<uint8_t> out);
size_t encode_atomic_request(const DdpHeader &h, const AtomicRequestBody &b,
                             std::span<uint8_t> out);
size_t encode_atomic_response(const DdpHeader &h, const AtomicResponseBody &b,
                              std::span<uint8_t> out);
size_t encode_immediate(const DdpHeader &h, uint64_t data, std::span<uint8_t> out);

// A Terminate to send. `offending` holds the start of the DDP segment that failed (its
// headers are enough). With include_ddp_header and a complete DDP header in `offending`,
// that header is copied with M=D=1 and the DDP Segment Length slot set to offending_len
// (RFC meaning: the whole segment, i.e. the offending FPDU's ULPDU_LENGTH). With
// include_rdma_header as well and a Read Request in `offending`, its 28-byte header is
// copied too (R=1). Leave both off for CRC, version and opcode errors: the header is not
// trustworthy then. The Terminate's own DDP header is QN 2, MSN 1, MO 0, L=1.
struct TerminateSpec {
    TermCode code{};
    std::span<const uint8_t> offending{};
    uint16_t offending_len = 0;
    bool include_ddp_header = false;
    bool include_rdma_header = false;
};
size_t encode_terminate(const TerminateSpec &t, std::span<uint8_t> out);

// Bytes encode_terminate will write for `t` (22..70).
size_t terminate_len(const TerminateSpec &t);

}  // namespace softrnic::transport::tcp::wire
