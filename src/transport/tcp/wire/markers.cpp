#include "transport/tcp/wire/markers.hpp"

#include <cstring>

#include "transport/tcp/wire/crc32c.hpp"
#include "transport/tcp/wire/fpdu.hpp"

namespace softrnic::transport::tcp::wire {

namespace {

bool at_marker(uint64_t pos) {
    return pos % kMarkerInterval == 0;
}

// FPDUPTR of a marker at `pos` for an FPDU that starts (first byte, possibly a leading
// marker) at `start`, with its ULPDU_LENGTH at `len_pos`.
uint16_t fpduptr(uint64_t pos, uint64_t start, uint64_t len_pos) {
    return pos == start ? 0 : static_cast<uint16_t>(pos - len_pos);
}

}  // namespace

size_t marked_fpdu_size(uint64_t stream_offset, size_t fpdu_len) {
    uint64_t pos = stream_offset;
    for (size_t i = 0; i < fpdu_len; i += 4) {
        if (at_marker(pos)) pos += kMarkerLen;
        pos += 4;
    }
    return static_cast<size_t>(pos - stream_offset);
}

Status encode_marked_fpdu(uint64_t stream_offset, std::span<const uint8_t> fpdu, bool crc,
                          std::span<uint8_t> out, size_t &written) {
    written = 0;
    if (fpdu.size() < kFpduLengthLen + kMinUlpdu + kFpduCrcLen || fpdu.size() % 4 != 0 ||
        stream_offset % 4 != 0)
        return Status::InvalidArgument;
    const size_t total = marked_fpdu_size(stream_offset, fpdu.size());
    if (out.size() < total) return Status::BufferTooSmall;
    const uint64_t len_pos = stream_offset + (at_marker(stream_offset) ? kMarkerLen : 0);
    uint64_t pos = stream_offset;
    size_t o = 0;
    for (size_t i = 0; i < fpdu.size(); i += 4) {
        if (at_marker(pos)) {
            store_be16(&out[o], 0);
            store_be16(&out[o + 2], fpduptr(pos, stream_offset, len_pos));
            o += kMarkerLen;
            pos += kMarkerLen;
        }
        if (i + 4 == fpdu.size()) {
            store_crc_wire(&out[o], crc ? crc32c({out.data(), o}) : 0);
        } else {
            std::memcpy(&out[o], &fpdu[i], 4);
        }
        o += 4;
        pos += 4;
    }
    written = o;
    return Status::Ok;
}

Status decode_marked_fpdu(uint64_t stream_offset, std::span<const uint8_t> in, bool crc,
                          std::span<uint8_t> out, size_t &consumed, size_t &fpdu_len) {
    consumed = fpdu_len = 0;
    if (stream_offset % 4 != 0) return Status::InvalidArgument;
    const uint64_t len_pos = stream_offset + (at_marker(stream_offset) ? kMarkerLen : 0);
    const size_t lead = static_cast<size_t>(len_pos - stream_offset);
    if (in.size() < lead + kFpduLengthLen) return Status::BufferTooSmall;
    const size_t ulpdu = load_be16(&in[lead]);
    if (ulpdu < kMinUlpdu) return Status::FramingLength;
    const size_t flen = fpdu_size(ulpdu);
    const size_t total = marked_fpdu_size(stream_offset, flen);
    if (in.size() < total || out.size() < flen) return Status::BufferTooSmall;
    uint64_t pos = stream_offset;
    size_t i = 0, o = 0;
    while (o < flen) {
        if (at_marker(pos)) {
            if (load_be16(&in[i]) != 0 ||
                load_be16(&in[i + 2]) != fpduptr(pos, stream_offset, len_pos))
                return Status::MarkerMismatch;
            i += kMarkerLen;
            pos += kMarkerLen;
        }
        std::memcpy(&out[o], &in[i], 4);
        if (o + 4 == flen && crc && crc32c(in.first(i)) != load_crc_wire(&in[i]))
            return Status::CrcMismatch;
        i += 4;
        o += 4;
        pos += 4;
    }
    consumed = i;
    fpdu_len = flen;
    return Status::Ok;
}

}  // namespace softrnic::transport::tcp::wire
