// DDP segmentation of outbound messages (RFC 5041 5.2) and a sequencing checker for
// inbound untagged messages. Pure bookkeeping: no bytes are copied and nothing is placed
// (placement is the engine's job through transport::Endpoint).
#pragma once

#include <array>
#include <cstdint>

#include "transport/tcp/wire/common.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"

namespace softrnic::transport::tcp::wire {

// One segment of a message: its header and which part of the message payload it carries.
struct SegmentPlan {
    DdpHeader hdr{};
    uint64_t offset = 0;  // into the message payload
    uint32_t length = 0;  // payload bytes in this segment
};

// Cuts a Write, Read Response or Send-family message of `length` bytes into segments whose
// header + payload fits `mulpdu`. Tagged: the STag stays, TO advances by the payload.
// Untagged: QN/MSN stay, MO advances. L=1 only on the last; a zero-length message is one
// segment with L=1. Usage:
//     Segmenter seg;
//     if (seg.start(first_hdr, length, mulpdu) != Status::Ok) ...;
//     for (SegmentPlan p; seg.next(p);) send(p);
// `first_hdr` holds the opcode and the message's STag/TO or QN/MSN/Invalidate STag; its
// last/mo fields are ignored. start() fails with InvalidArgument for single-segment
// opcodes, a MULPDU that leaves no room for payload, or an untagged message whose MO
// would not fit 32 bits; with DdpTaggedOffsetWrap when TO + length wraps.
class Segmenter {
  public:
    Status start(const DdpHeader &first_hdr, uint64_t length, uint32_t mulpdu);
    bool next(SegmentPlan &out);
    // Segments the message will take in total.
    uint64_t segment_count() const;

  private:
    DdpHeader hdr_{};
    uint64_t length_ = 0;
    uint64_t done_ = 0;
    uint32_t max_payload_ = 0;
    bool finished_ = true;
};

// Checks inbound untagged segments for sequencing (RFC 5041 5.3, 7.2): per queue the MSN
// starts at 1 and advances by one per message (wrapping 0xFFFFFFFF -> 0); every segment
// of a message has the message's MSN and an MO equal to the bytes already received;
// untagged messages are not interleaved (siw aborts on that too); the message fits
// `max_message` bytes (the posted receive, when the caller knows it; 0 = no limit).
// Feed decode_segment() output. Tagged segments are ignored (Ok).
class UntaggedReassembler {
  public:
    struct Result {
        bool complete = false;    // this segment ended its message (L=1)
        uint64_t msg_offset = 0;  // MO of this segment
        uint64_t msg_length = 0;  // bytes of the message so far (total when complete)
    };

    Status accept(const DdpHeader &h, uint32_t payload_len, Result &out, uint64_t max_message = 0);
    uint32_t expected_msn(Queue q) const { return next_msn_[static_cast<uint32_t>(q)]; }
    // Starts a queue at another MSN (messages consumed before the stream was handed over,
    // e.g. an RFC 6581 Read RTR).
    void set_expected_msn(Queue q, uint32_t msn) { next_msn_[static_cast<uint32_t>(q)] = msn; }
    bool in_message() const { return open_; }

  private:
    std::array<uint32_t, kQueueCount> next_msn_{1, 1, 1, 1};
    bool open_ = false;  // a multi-segment message is under way
    uint32_t open_qn_ = 0;
    uint64_t received_ = 0;
};

}  // namespace softrnic::transport::tcp::wire
