#include "transport/tcp/wire/mpa.hpp"

#include <algorithm>
#include <cstring>

namespace softrnic::transport::tcp::wire {

namespace {

constexpr char kReqKey[] = "MPA ID Req Frame";
constexpr char kRepKey[] = "MPA ID Rep Frame";
static_assert(sizeof(kReqKey) == kMpaKeyLen + 1 && sizeof(kRepKey) == kMpaKeyLen + 1);

constexpr uint16_t kP2p = 0x8000;
constexpr uint16_t kRtrSend = 0x4000;   // IRD word
constexpr uint16_t kRtrWrite = 0x8000;  // ORD word
constexpr uint16_t kRtrRead = 0x4000;   // ORD word

const char *key_for(MpaKind k) {
    return k == MpaKind::Request ? kReqKey : kRepKey;
}

}  // namespace

void encode_ird_ord(const IrdOrd &b, uint8_t out[kMpaIrdOrdLen]) {
    const uint16_t ird = static_cast<uint16_t>((b.ird & kIrdOrdMax) | (b.p2p ? kP2p : 0) |
                                               (b.rtr_send ? kRtrSend : 0));
    const uint16_t ord = static_cast<uint16_t>(
        (b.ord & kIrdOrdMax) | (b.rtr_write ? kRtrWrite : 0) | (b.rtr_read ? kRtrRead : 0));
    store_be16(out, ird);
    store_be16(out + 2, ord);
}

IrdOrd decode_ird_ord(const uint8_t in[kMpaIrdOrdLen]) {
    const uint16_t ird = load_be16(in);
    const uint16_t ord = load_be16(in + 2);
    IrdOrd b;
    b.p2p = ird & kP2p;
    b.rtr_send = ird & kRtrSend;
    b.ird = ird & kIrdOrdMax;
    b.rtr_write = ord & kRtrWrite;
    b.rtr_read = ord & kRtrRead;
    b.ord = ord & kIrdOrdMax;
    return b;
}

Status build_mpa_frame(const MpaFrame &f, std::span<uint8_t> out, size_t &written) {
    written = 0;
    if (f.rev > 2 || (f.enhanced && f.rev != 2) || (f.reject && f.kind == MpaKind::Request))
        return Status::InvalidArgument;
    const size_t pd = (f.enhanced ? kMpaIrdOrdLen : 0) + f.private_data.size();
    if (pd > kMpaMaxPrivateData) return Status::InvalidArgument;
    if (out.size() < kMpaHeaderLen + pd) return Status::BufferTooSmall;
    uint8_t *p = out.data();
    std::memcpy(p, key_for(f.kind), kMpaKeyLen);
    p[16] = static_cast<uint8_t>((f.markers ? kMpaFlagM : 0) | (f.crc ? kMpaFlagC : 0) |
                                 (f.reject ? kMpaFlagR : 0) | (f.enhanced ? kMpaFlagEnhanced : 0));
    p[17] = f.rev;
    store_be16(p + 18, static_cast<uint16_t>(pd));
    p += kMpaHeaderLen;
    if (f.enhanced) {
        encode_ird_ord(f.ird_ord, p);
        p += kMpaIrdOrdLen;
    }
    if (!f.private_data.empty()) std::memcpy(p, f.private_data.data(), f.private_data.size());
    written = kMpaHeaderLen + pd;
    return Status::Ok;
}

Status MpaParser::check_header() {
    const uint8_t flags = hdr_[16];
    const uint8_t rev = hdr_[17];
    pd_len_ = load_be16(hdr_.data() + 18);
    if (rev > 2) return Status::MpaBadRevision;
    if (pd_len_ > kMpaMaxPrivateData) return Status::MpaPrivateDataTooLong;
    frame_.kind = expect_;
    frame_.markers = flags & kMpaFlagM;
    frame_.crc = flags & kMpaFlagC;
    // R has no meaning in a Request (RFC 5044: 0 there); ignore it like a reserved bit.
    frame_.reject = expect_ == MpaKind::Reply && (flags & kMpaFlagR);
    // 0x10 only means Enhanced with Rev 2; otherwise it is a reserved bit (ignored).
    frame_.enhanced = rev == 2 && (flags & kMpaFlagEnhanced);
    frame_.rev = rev;
    if (frame_.enhanced && pd_len_ < kMpaIrdOrdLen) return Status::MpaBadIrdOrd;
    return Status::Ok;
}

MpaParser::Result MpaParser::finish(size_t used) {
    const uint8_t *pd = pd_.data();
    size_t n = pd_len_;
    if (frame_.enhanced) {
        frame_.ird_ord = decode_ird_ord(pd);
        pd += kMpaIrdOrdLen;
        n -= kMpaIrdOrdLen;
    }
    frame_.private_data = {pd, n};
    if (frame_.markers) {
        error_ = Status::MpaMarkersRequested;
        state_ = State::Error;
    } else {
        state_ = State::Complete;
    }
    return {state_, used};
}

MpaParser::Result MpaParser::feed(std::span<const uint8_t> in) {
    if (state_ != State::NeedMore) return {state_, 0};
    size_t used = 0;
    const char *key = key_for(expect_);
    while (have_ < kMpaHeaderLen && used < in.size()) {
        const uint8_t b = in[used++];
        if (have_ < kMpaKeyLen && b != static_cast<uint8_t>(key[have_])) {
            error_ = Status::MpaBadKey;
            state_ = State::Error;
            return {state_, used};
        }
        hdr_[have_++] = b;
        if (have_ == kMpaHeaderLen) {
            if (Status s = check_header(); s != Status::Ok) {
                error_ = s;
                state_ = State::Error;
                return {state_, used};
            }
        }
    }
    if (have_ < kMpaHeaderLen) return {state_, used};
    const size_t pd_have = have_ - kMpaHeaderLen;
    const size_t take = std::min(pd_len_ - pd_have, in.size() - used);
    if (take) std::memcpy(pd_.data() + pd_have, in.data() + used, take);
    have_ += take;
    used += take;
    if (have_ == kMpaHeaderLen + pd_len_) return finish(used);
    return {state_, used};
}

Status parse_mpa_frame(std::span<const uint8_t> in, MpaKind expect, MpaFrame &out,
                       size_t &consumed) {
    // The frame's private data must outlive the parser: point it back into `in`.
    MpaParser p(expect);
    const auto r = p.feed(in);
    consumed = r.consumed;
    if (r.state == MpaParser::State::NeedMore) return Status::BufferTooSmall;
    out = p.frame();
    if (r.state == MpaParser::State::Error && p.error() != Status::MpaMarkersRequested)
        return p.error();
    out.private_data = in.subspan(r.consumed - out.private_data.size(), out.private_data.size());
    return p.error();
}

MpaFrame mpa_make_request(const MpaConfig &cfg, std::span<const uint8_t> private_data) {
    MpaFrame f;
    f.kind = MpaKind::Request;
    f.crc = cfg.want_crc;
    f.rev = cfg.rev >= 2 ? 2 : 1;
    f.enhanced = f.rev == 2;
    if (f.enhanced) {
        f.ird_ord.ird = std::min(cfg.ird, kIrdOrdMax);
        f.ird_ord.ord = std::min(cfg.ord, kIrdOrdMax);
        if (cfg.p2p) {
            f.ird_ord.p2p = true;
            f.ird_ord.rtr_write = cfg.offer_write;
            f.ird_ord.rtr_read = cfg.offer_read;
            f.ird_ord.rtr_send = cfg.offer_send;
        }
    }
    f.private_data = private_data;
    return f;
}

MpaFrame mpa_make_reject(const MpaFrame &request, std::span<const uint8_t> private_data) {
    MpaFrame f;
    f.kind = MpaKind::Reply;
    f.reject = true;
    f.crc = request.crc;
    f.rev = request.rev;
    f.enhanced = request.enhanced;
    f.ird_ord = {};  // all-zero block on rejects
    f.private_data = private_data;
    return f;
}

Status mpa_respond(const MpaConfig &cfg, const MpaFrame &request,
                   std::span<const uint8_t> reply_private_data, MpaFrame &reply,
                   MpaResult &result) {
    result = {};
    if (request.markers) {
        reply = mpa_make_reject(request, reply_private_data);
        return Status::MpaMarkersRequested;
    }
    if (request.rev > 2) return Status::MpaBadRevision;
    reply = {};
    reply.kind = MpaKind::Reply;
    reply.crc = request.crc || cfg.want_crc;
    reply.rev = std::min<uint8_t>(request.rev, cfg.rev >= 2 ? 2 : 1);
    reply.enhanced = request.enhanced && reply.rev == 2;
    reply.private_data = reply_private_data;
    result.crc = reply.crc;
    result.rev = reply.rev;
    result.enhanced = reply.enhanced;
    result.ird = cfg.ird;
    result.ord = cfg.ord;
    if (!reply.enhanced) return Status::Ok;

    const IrdOrd &q = request.ird_ord;
    IrdOrd &a = reply.ird_ord;
    a.ird = std::min(q.ord, cfg.max_ird);
    a.ord = std::min(q.ird, cfg.max_ord);
    if (q.p2p) {
        a.p2p = true;
        // siw's choice: Write if offered, else Read if offered, else Write anyway.
        if (q.rtr_read && !q.rtr_write)
            a.rtr_read = true;
        else
            a.rtr_write = true;
        result.p2p = true;
        result.rtr = a.rtr_read ? Rtr::Read : Rtr::Write;
    }
    result.ird = a.ird;
    result.ord = a.ord;
    return Status::Ok;
}

Status mpa_finish_initiator(const MpaConfig &cfg, const MpaFrame &request, const MpaFrame &reply,
                            MpaResult &result) {
    result = {};
    if (reply.markers) return Status::MpaMarkersRequested;
    if (reply.reject) return Status::MpaRejected;
    if (reply.rev > request.rev || reply.rev > 2) return Status::MpaBadRevision;
    // A v2 peer that answers an Enhanced request with Rev 2 must include the block.
    if (request.enhanced && reply.rev == 2 && !reply.enhanced) return Status::MpaNotEnhanced;
    result.crc = request.crc || reply.crc;
    result.rev = reply.rev;
    result.enhanced = request.enhanced && reply.enhanced;
    result.ird = cfg.ird;
    result.ord = cfg.ord;
    if (!result.enhanced) return Status::Ok;

    const IrdOrd &a = reply.ird_ord;
    const IrdOrd &q = request.ird_ord;
    // The responder will issue up to a.ord requests to us; 0x3FFF means "no preference".
    if (a.ord != kIrdOrdMax) {
        if (a.ord > cfg.max_ird) return Status::MpaInsufficientIrd;
        result.ird = a.ord;
    }
    result.ord = std::min(q.ord, a.ird);
    if (a.p2p) {
        const int chosen = a.rtr_write + a.rtr_read + a.rtr_send;
        if (!q.p2p || chosen != 1) return Status::MpaNoMatchingRtr;
        if (a.rtr_write && q.rtr_write)
            result.rtr = Rtr::Write;
        else if (a.rtr_read && q.rtr_read)
            result.rtr = Rtr::Read;
        else if (a.rtr_send && q.rtr_send)
            result.rtr = Rtr::Send;
        else
            return Status::MpaNoMatchingRtr;
        result.p2p = true;
    }
    return Status::Ok;
}

}  // namespace softrnic::transport::tcp::wire
