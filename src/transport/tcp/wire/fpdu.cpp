#include "transport/tcp/wire/fpdu.hpp"

#include <algorithm>
#include <cstring>

#include "transport/tcp/wire/crc32c.hpp"

namespace softrnic::transport::tcp::wire {

namespace {

// 2 + ULPDU multiple of 4 keeps full-size segments PAD-free.
constexpr uint32_t kMulpduCap = 65534;
// The largest message that cannot be segmented: Atomic Request or a full Terminate.
constexpr uint32_t kMulpduMin = kUntaggedHeaderLen + kAtomicRequestBodyLen;

size_t payload_total(std::span<const std::span<const uint8_t>> payload) {
    size_t n = 0;
    for (auto p : payload)
        n += p.size();
    return n;
}

}  // namespace

uint32_t mulpdu_for_emss(uint32_t emss, bool markers) {
    uint64_t overhead = 6 + emss % 4;
    if (markers) overhead += 4 * ((uint64_t{emss} + 511) / 512);
    if (emss < overhead) return 0;
    const uint64_t m = std::min<uint64_t>(emss - overhead, kMulpduCap);
    return m < kMulpduMin ? 0 : static_cast<uint32_t>(m);
}

uint32_t siw_mulpdu_for_mss(uint32_t mss) {
    // FPDU bytes = 2 + ULPDU + PAD + 4 <= (mss & ~7); the largest PAD-free ULPDU.
    return mulpdu_for_emss(mss & ~7u, false);
}

Status build_fpdu_frame(std::span<const uint8_t> headers,
                        std::span<const std::span<const uint8_t>> payload, bool crc,
                        FpduFrame &frame) {
    if (headers.size() > frame.prefix.size() - kFpduLengthLen) return Status::BufferTooSmall;
    const size_t ulpdu = headers.size() + payload_total(payload);
    if (ulpdu < kMinUlpdu || ulpdu > kMaxUlpdu) return Status::InvalidArgument;
    store_be16(frame.prefix.data(), static_cast<uint16_t>(ulpdu));
    if (!headers.empty())  // memcpy from a null span is undefined even for 0 bytes
        std::memcpy(frame.prefix.data() + kFpduLengthLen, headers.data(), headers.size());
    frame.prefix_len = kFpduLengthLen + headers.size();
    const size_t pad = fpdu_pad(ulpdu);
    std::memset(frame.trailer.data(), 0, pad);
    uint32_t c = 0;
    if (crc) {
        uint32_t s = crc32c_update(kCrc32cInit, {frame.prefix.data(), frame.prefix_len});
        for (auto p : payload)
            s = crc32c_update(s, p);
        s = crc32c_update(s, {frame.trailer.data(), pad});
        c = crc32c_finish(s);
    }
    store_crc_wire(frame.trailer.data() + pad, c);
    frame.trailer_len = pad + kFpduCrcLen;
    return Status::Ok;
}

size_t fpdu_iovecs(const FpduFrame &frame, std::span<const std::span<const uint8_t>> payload,
                   std::span<struct iovec> iov) {
    size_t n = 2;
    for (auto p : payload)
        n += !p.empty();
    if (iov.size() < n) return 0;
    size_t i = 0;
    iov[i++] = {const_cast<uint8_t *>(frame.prefix.data()), frame.prefix_len};
    for (auto p : payload)
        if (!p.empty()) iov[i++] = {const_cast<uint8_t *>(p.data()), p.size()};
    iov[i++] = {const_cast<uint8_t *>(frame.trailer.data()), frame.trailer_len};
    return i;
}

Status encode_fpdu(std::span<const uint8_t> headers,
                   std::span<const std::span<const uint8_t>> payload, bool crc,
                   std::span<uint8_t> out, size_t &written) {
    written = 0;
    FpduFrame f;
    if (Status s = build_fpdu_frame(headers, payload, crc, f); s != Status::Ok) return s;
    const size_t total = f.total() + payload_total(payload);
    if (out.size() < total) return Status::BufferTooSmall;
    uint8_t *p = out.data();
    std::memcpy(p, f.prefix.data(), f.prefix_len);
    p += f.prefix_len;
    for (auto piece : payload) {
        if (piece.empty()) continue;
        std::memcpy(p, piece.data(), piece.size());
        p += piece.size();
    }
    std::memcpy(p, f.trailer.data(), f.trailer_len);
    written = total;
    return Status::Ok;
}

Status encode_fpdu(std::span<const uint8_t> headers, std::span<const uint8_t> payload, bool crc,
                   std::span<uint8_t> out, size_t &written) {
    const std::span<const uint8_t> one[1] = {payload};
    return encode_fpdu(headers, std::span<const std::span<const uint8_t>>(one, 1), crc, out,
                       written);
}

FpduDecoder::FpduDecoder(FpduDecoderConfig cfg) : cfg_(cfg) {
    cfg_.max_ulpdu = std::clamp<uint32_t>(cfg_.max_ulpdu, kMinUlpdu, kMaxUlpdu);
    // Not zeroed: only bytes received into it are ever read (and 1,000 connections would
    // otherwise touch 64 MiB at set-up).
    buf_ = std::make_unique_for_overwrite<uint8_t[]>(fpdu_size(cfg_.max_ulpdu) + 3);
}

FeedResult FpduDecoder::fail(Status s, size_t consumed) {
    error_ = s;
    segment_ = {};
    return {FeedState::Error, consumed};
}

Status FpduDecoder::finish_fpdu(std::span<const uint8_t> fpdu) {
    const size_t crc_at = fpdu.size() - kFpduCrcLen;
    if (cfg_.crc && crc32c(fpdu.first(crc_at)) != load_crc_wire(fpdu.data() + crc_at))
        return Status::CrcMismatch;
    segment_ = fpdu.subspan(kFpduLengthLen, load_be16(fpdu.data()));
    ++fpdus_;
    return Status::Ok;
}

FeedResult FpduDecoder::feed(std::span<const uint8_t> in) {
    segment_ = {};
    if (error_ != Status::Ok) return {FeedState::Error, 0};
    size_t used = 0;

    // Fast path: a whole FPDU at the start of the input, nothing buffered.
    if (have_ == 0 && in.size() >= kFpduLengthLen) {
        const size_t ulpdu = load_be16(in.data());
        if (ulpdu < kMinUlpdu || ulpdu > cfg_.max_ulpdu)
            return fail(ulpdu < kMinUlpdu ? Status::FramingLength : Status::UlpduTooLong, 0);
        const size_t total = fpdu_size(ulpdu);
        if (in.size() >= total) {
            if (Status s = finish_fpdu(in.first(total)); s != Status::Ok) return fail(s, 0);
            return {FeedState::Segment, total};
        }
    }

    // Slow path: accumulate. First the length field, then the rest of the FPDU.
    while (used < in.size()) {
        if (have_ < kFpduLengthLen) {
            buf_[have_++] = in[used++];
            if (have_ < kFpduLengthLen) continue;
            const size_t ulpdu = load_be16(buf_.get());
            if (ulpdu < kMinUlpdu) return fail(Status::FramingLength, used);
            if (ulpdu > cfg_.max_ulpdu) return fail(Status::UlpduTooLong, used);
            need_ = fpdu_size(ulpdu);
            continue;
        }
        const size_t take = std::min(need_ - have_, in.size() - used);
        std::memcpy(buf_.get() + have_, in.data() + used, take);
        have_ += take;
        used += take;
        if (have_ == need_) {
            const size_t n = have_;
            have_ = need_ = 0;
            if (Status s = finish_fpdu({buf_.get(), n}); s != Status::Ok) return fail(s, used);
            return {FeedState::Segment, used};
        }
    }
    return {FeedState::NeedMore, used};
}

}  // namespace softrnic::transport::tcp::wire
