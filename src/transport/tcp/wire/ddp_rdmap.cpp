#include "transport/tcp/wire/ddp_rdmap.hpp"

namespace softrnic::transport::tcp::wire {

namespace {

constexpr uint8_t kDdpT = 0x80;
constexpr uint8_t kDdpL = 0x40;
constexpr uint8_t kDdpDvMask = 0x03;
constexpr uint8_t kDdpDv = 0x01;
constexpr uint8_t kRdmapRvMask = 0xC0;
constexpr uint8_t kRdmapRv = 0x40;
constexpr uint8_t kRdmapOpMask = 0x0F;
constexpr uint32_t kTermM = 0x8000;
constexpr uint32_t kTermD = 0x4000;
constexpr uint32_t kTermR = 0x2000;

uint8_t ddp_ctrl(bool tagged, bool last) {
    return static_cast<uint8_t>((tagged ? kDdpT : 0) | (last ? kDdpL : 0) | kDdpDv);
}
uint8_t rdmap_ctrl(Opcode op) {
    return static_cast<uint8_t>(kRdmapRv | static_cast<uint8_t>(op));
}

Status decode_terminate(std::span<const uint8_t> body, TerminateBody &t) {
    if (body.size() < kTerminateBodyMin || body.size() > kTerminateBodyMax)
        return Status::RdmapMalformedTerminate;
    const uint32_t w = load_be32(body.data());
    t.code = {static_cast<uint8_t>(w >> 28), static_cast<uint8_t>((w >> 24) & 0xF),
              static_cast<uint8_t>((w >> 16) & 0xFF)};
    t.m = w & kTermM;
    t.d = w & kTermD;
    t.r = w & kTermR;
    size_t off = kTerminateBodyMin;
    if (t.d) {
        if (body.size() < off + 2 + 1) return Status::RdmapMalformedTerminate;
        t.ddp_seg_len = load_be16(body.data() + off);
        off += 2;
        const size_t hl = (body[off] & kDdpT) ? kTaggedHeaderLen : kUntaggedHeaderLen;
        if (body.size() < off + hl) return Status::RdmapMalformedTerminate;
        t.ddp_header = body.subspan(off, hl);
        off += hl;
    }
    if (t.r && body.size() - off == kReadRequestBodyLen) {
        t.rdma_header = body.subspan(off, kReadRequestBodyLen);
        off += kReadRequestBodyLen;
    }
    // Anything left over is a layout the sender's hdrct bits do not describe.
    if (off != body.size()) return Status::RdmapMalformedTerminate;
    return Status::Ok;
}

}  // namespace

Status decode_segment(std::span<const uint8_t> s, Segment &out, DecodeOptions opt) {
    out = Segment{};
    if (s.size() < kTaggedHeaderLen) return Status::FramingLength;
    const uint8_t ctrl = s[0];
    const uint8_t rctrl = s[1];
    const bool tagged = ctrl & kDdpT;
    if ((ctrl & kDdpDvMask) != kDdpDv)
        return tagged ? Status::DdpTaggedVersion : Status::DdpUntaggedVersion;
    if ((rctrl & kRdmapRvMask) != kRdmapRv) return Status::RdmapVersion;
    const uint8_t raw_op = rctrl & kRdmapOpMask;
    if (raw_op > static_cast<uint8_t>(Opcode::AtomicResponse)) return Status::RdmapUnexpectedOpcode;
    const auto op = static_cast<Opcode>(raw_op);
    if (is_rfc7306(op) && !opt.rfc7306) return Status::RdmapUnexpectedOpcode;
    if (tagged != is_tagged(op)) return Status::RdmapUnexpectedOpcode;

    DdpHeader &h = out.hdr;
    h.opcode = op;
    h.last = ctrl & kDdpL;
    if (tagged) {
        h.stag = load_be32(s.data() + 2);
        h.to = load_be64(s.data() + 6);
        out.payload = s.subspan(kTaggedHeaderLen);
        return Status::Ok;
    }

    const size_t hlen = header_len(op);
    if (s.size() < hlen) return Status::FramingLength;
    if (is_single_segment(op) && op != Opcode::Terminate && s.size() != hlen)
        return Status::FramingLength;
    h.inv_stag = load_be32(s.data() + 2);
    h.qn = load_be32(s.data() + 6);
    h.msn = load_be32(s.data() + 10);
    h.mo = load_be32(s.data() + 14);
    if (h.qn != static_cast<uint32_t>(queue_of(op))) return Status::DdpInvalidQn;
    // Plain Send and Send with SE carry a reserved field here: report it as 0.
    if (!carries_invalidate(op)) h.inv_stag = 0;

    if (is_send_family(op)) {
        out.payload = s.subspan(kUntaggedHeaderLen);
        return Status::Ok;
    }
    // Single-segment messages from here on.
    if (!h.last) return Status::RdmapUnexpectedOpcode;
    if (h.mo != 0) return Status::DdpInvalidMo;

    const uint8_t *b = s.data() + kUntaggedHeaderLen;
    switch (op) {
        case Opcode::ReadRequest:
            out.read = {load_be32(b), load_be64(b + 4), load_be32(b + 12), load_be32(b + 16),
                        load_be64(b + 20)};
            return Status::Ok;
        case Opcode::Terminate:
            if (h.msn != 1) return Status::DdpInvalidMsn;
            return decode_terminate(s.subspan(kUntaggedHeaderLen), out.term);
        case Opcode::ImmediateData:
        case Opcode::ImmediateDataSe:
            out.immediate = load_be64(b);
            return Status::Ok;
        case Opcode::AtomicRequest: {
            const uint32_t aop = load_be32(b) & 0xF;
            if (aop != static_cast<uint32_t>(AtomicOp::FetchAdd) &&
                aop != static_cast<uint32_t>(AtomicOp::CmpSwap))
                return Status::RdmapBadAtomicOpcode;
            out.atomic_req = {static_cast<AtomicOp>(aop), load_be32(b + 4),  load_be32(b + 8),
                              load_be64(b + 12),          load_be64(b + 20), load_be64(b + 28),
                              load_be64(b + 36),          load_be64(b + 44)};
            return Status::Ok;
        }
        case Opcode::AtomicResponse:
            out.atomic_resp = {load_be32(b), load_be64(b + 4)};
            return Status::Ok;
        default:
            return Status::RdmapUnexpectedOpcode;  // not reachable: all opcodes handled above
    }
}

size_t encode_tagged_header(const DdpHeader &h, std::span<uint8_t> out) {
    if (!is_tagged(h.opcode) || out.size() < kTaggedHeaderLen) return 0;
    uint8_t *p = out.data();
    p[0] = ddp_ctrl(true, h.last);
    p[1] = rdmap_ctrl(h.opcode);
    store_be32(p + 2, h.stag);
    store_be64(p + 6, h.to);
    return kTaggedHeaderLen;
}

size_t encode_untagged_header(const DdpHeader &h, std::span<uint8_t> out) {
    if (is_tagged(h.opcode) || static_cast<uint8_t>(h.opcode) > 11 ||
        out.size() < kUntaggedHeaderLen)
        return 0;
    uint8_t *p = out.data();
    p[0] = ddp_ctrl(false, h.last);
    p[1] = rdmap_ctrl(h.opcode);
    store_be32(p + 2, carries_invalidate(h.opcode) ? h.inv_stag : 0);
    store_be32(p + 6, h.qn);
    store_be32(p + 10, h.msn);
    store_be32(p + 14, h.mo);
    return kUntaggedHeaderLen;
}

size_t encode_ddp_header(const DdpHeader &h, std::span<uint8_t> out) {
    return is_tagged(h.opcode) ? encode_tagged_header(h, out) : encode_untagged_header(h, out);
}

size_t encode_read_request(const DdpHeader &h, const ReadRequestBody &b, std::span<uint8_t> out) {
    if (h.opcode != Opcode::ReadRequest || out.size() < header_len(h.opcode)) return 0;
    encode_untagged_header(h, out);
    uint8_t *p = out.data() + kUntaggedHeaderLen;
    store_be32(p, b.sink_stag);
    store_be64(p + 4, b.sink_to);
    store_be32(p + 12, b.size);
    store_be32(p + 16, b.src_stag);
    store_be64(p + 20, b.src_to);
    return header_len(h.opcode);
}

size_t encode_atomic_request(const DdpHeader &h, const AtomicRequestBody &b,
                             std::span<uint8_t> out) {
    if (h.opcode != Opcode::AtomicRequest || out.size() < header_len(h.opcode)) return 0;
    encode_untagged_header(h, out);
    uint8_t *p = out.data() + kUntaggedHeaderLen;
    store_be32(p, static_cast<uint32_t>(b.op));
    store_be32(p + 4, b.request_id);
    store_be32(p + 8, b.stag);
    store_be64(p + 12, b.to);
    store_be64(p + 20, b.add_swap);
    store_be64(p + 28, b.add_swap_mask);
    store_be64(p + 36, b.compare);
    store_be64(p + 44, b.compare_mask);
    return header_len(h.opcode);
}

size_t encode_atomic_response(const DdpHeader &h, const AtomicResponseBody &b,
                              std::span<uint8_t> out) {
    if (h.opcode != Opcode::AtomicResponse || out.size() < header_len(h.opcode)) return 0;
    encode_untagged_header(h, out);
    uint8_t *p = out.data() + kUntaggedHeaderLen;
    store_be32(p, b.request_id);
    store_be64(p + 4, b.original);
    return header_len(h.opcode);
}

size_t encode_immediate(const DdpHeader &h, uint64_t data, std::span<uint8_t> out) {
    if ((h.opcode != Opcode::ImmediateData && h.opcode != Opcode::ImmediateDataSe) ||
        out.size() < header_len(h.opcode))
        return 0;
    encode_untagged_header(h, out);
    store_be64(out.data() + kUntaggedHeaderLen, data);
    return header_len(h.opcode);
}

namespace {

// How much of the offending segment a Terminate copies: DDP header length (0 if absent or
// not wanted) and whether the Read Request header goes too.
struct TermCopy {
    size_t ddp = 0;
    bool rdma = false;
};

TermCopy term_copy(const TerminateSpec &t) {
    TermCopy c;
    if (!t.include_ddp_header || t.offending.empty()) return c;
    const size_t hl = (t.offending[0] & kDdpT) ? kTaggedHeaderLen : kUntaggedHeaderLen;
    if (t.offending.size() < hl) return c;
    c.ddp = hl;
    c.rdma = t.include_rdma_header && hl == kUntaggedHeaderLen &&
             (t.offending[1] & kRdmapOpMask) == static_cast<uint8_t>(Opcode::ReadRequest) &&
             t.offending.size() >= kUntaggedHeaderLen + kReadRequestBodyLen;
    return c;
}

}  // namespace

size_t terminate_len(const TerminateSpec &t) {
    const TermCopy c = term_copy(t);
    return kUntaggedHeaderLen + kTerminateBodyMin + (c.ddp ? 2 + c.ddp : 0) +
           (c.rdma ? kReadRequestBodyLen : 0);
}

size_t encode_terminate(const TerminateSpec &t, std::span<uint8_t> out) {
    const size_t len = terminate_len(t);
    if (out.size() < len) return 0;
    const TermCopy c = term_copy(t);
    DdpHeader h;
    h.opcode = Opcode::Terminate;
    h.qn = static_cast<uint32_t>(Queue::Terminate);
    h.msn = 1;
    encode_untagged_header(h, out);
    uint8_t *p = out.data() + kUntaggedHeaderLen;
    uint32_t w = t.code.control_word();
    if (c.ddp) w |= kTermM | kTermD;
    if (c.rdma) w |= kTermR;
    store_be32(p, w);
    p += 4;
    if (c.ddp) {
        store_be16(p, t.offending_len);
        p += 2;
        for (size_t i = 0; i < c.ddp; ++i)
            *p++ = t.offending[i];
    }
    if (c.rdma)
        for (size_t i = 0; i < kReadRequestBodyLen; ++i)
            *p++ = t.offending[kUntaggedHeaderLen + i];
    return len;
}

}  // namespace softrnic::transport::tcp::wire
