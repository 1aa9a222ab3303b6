#include "transport/tcp/wire/segment.hpp"

#include <algorithm>

namespace softrnic::transport::tcp::wire {

Status Segmenter::start(const DdpHeader &first_hdr, uint64_t length, uint32_t mulpdu) {
    finished_ = true;
    const Opcode op = first_hdr.opcode;
    if (!is_tagged(op) && !is_send_family(op)) return Status::InvalidArgument;
    const size_t hl = header_len(op);
    if (mulpdu <= hl || mulpdu > 0xFFFF) return Status::InvalidArgument;
    if (is_tagged(op)) {
        if (length > 0 && first_hdr.to + (length - 1) < first_hdr.to)
            return Status::DdpTaggedOffsetWrap;
    } else if (length > uint64_t{0xFFFFFFFF} + 1) {
        return Status::InvalidArgument;  // the last segment's MO must fit 32 bits
    }
    hdr_ = first_hdr;
    hdr_.mo = 0;
    length_ = length;
    done_ = 0;
    max_payload_ = static_cast<uint32_t>(mulpdu - hl);
    finished_ = false;
    return Status::Ok;
}

bool Segmenter::next(SegmentPlan &out) {
    if (finished_) return false;
    const uint64_t left = length_ - done_;
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(left, max_payload_));
    out.hdr = hdr_;
    out.offset = done_;
    out.length = n;
    out.hdr.last = (n == left);
    if (is_tagged(hdr_.opcode))
        out.hdr.to = hdr_.to + done_;
    else
        out.hdr.mo = static_cast<uint32_t>(done_);
    done_ += n;
    finished_ = out.hdr.last;
    return true;
}

uint64_t Segmenter::segment_count() const {
    if (max_payload_ == 0) return 0;
    return length_ == 0 ? 1 : (length_ + max_payload_ - 1) / max_payload_;
}

Status UntaggedReassembler::accept(const DdpHeader &h, uint32_t payload_len, Result &out,
                                   uint64_t max_message) {
    out = Result{};
    if (h.tagged()) return Status::Ok;
    if (h.qn >= kQueueCount) return Status::DdpInvalidQn;
    if (open_ && h.qn != open_qn_) return Status::DdpInvalidMsn;  // interleaved messages
    if (h.msn != next_msn_[h.qn]) return Status::DdpInvalidMsn;
    const uint64_t expected_mo = open_ ? received_ : 0;
    if (h.mo != expected_mo) return Status::DdpInvalidMo;
    const uint64_t total = expected_mo + payload_len;
    if (max_message != 0 && total > max_message) return Status::DdpMessageTooLong;
    if (!h.last && total > 0xFFFFFFFFu) return Status::DdpInvalidMo;  // next MO unrepresentable
    out.msg_offset = expected_mo;
    out.msg_length = total;
    if (h.last) {
        out.complete = true;
        ++next_msn_[h.qn];  // wraps 0xFFFFFFFF -> 0 as RFC 5041 says
        open_ = false;
        received_ = 0;
    } else {
        open_ = true;
        open_qn_ = h.qn;
        received_ = total;
    }
    return Status::Ok;
}

}  // namespace softrnic::transport::tcp::wire
