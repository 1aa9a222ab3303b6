// Bit-exact field access for MAD layouts.
//
// IBA 1.2 draws every MAD layout as rows of 32 bits with bit 0 the most significant bit of
// the first byte, and every multi-byte field in network byte order (IBA 1.2 ch. 13, "MAD
// formats"). FieldReader and FieldWriter address a field the same way: a byte offset, a bit
// offset inside that byte counted from the most significant bit, and a width, so a layout
// reads like the spec's table.
//
// Neither class ever touches a byte outside its span: a reader asked for bits past its end
// returns 0 for them and remembers it, a writer drops them and remembers it. The codecs
// check sizes before reading, so these flags are a second line, not the main check.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mad/common.hpp"

namespace softrnic::mad {

class FieldReader {
  public:
    explicit FieldReader(std::span<const uint8_t> in) : in_(in) {}

    // `width` (1..64) bits starting `bit` (0..7) bits into byte `byte`.
    uint64_t bits(size_t byte, unsigned bit, unsigned width) {
        uint64_t value = 0;
        size_t pos = byte * 8 + bit;
        unsigned done = 0;
        while (done < width) {
            const size_t index = pos / 8;
            const unsigned offset = pos % 8;
            const unsigned take = std::min(8u - offset, width - done);
            uint8_t octet = 0;
            if (index < in_.size()) {
                octet = in_[index];
            } else {
                overrun_ = true;
            }
            const uint8_t chunk =
                static_cast<uint8_t>((octet >> (8 - offset - take)) & ((1u << take) - 1));
            value = (value << take) | chunk;
            pos += take;
            done += take;
        }
        return value;
    }
    uint8_t u8(size_t byte) { return static_cast<uint8_t>(bits(byte, 0, 8)); }
    uint16_t u16(size_t byte) { return static_cast<uint16_t>(bits(byte, 0, 16)); }
    uint32_t u32(size_t byte) { return static_cast<uint32_t>(bits(byte, 0, 32)); }
    uint64_t u64(size_t byte) { return bits(byte, 0, 64); }
    template <size_t N>
    std::array<uint8_t, N> bytes(size_t byte) {
        std::array<uint8_t, N> out{};
        for (size_t i = 0; i < N; ++i)
            out[i] = u8(byte + i);
        return out;
    }
    bool overrun() const { return overrun_; }

  private:
    std::span<const uint8_t> in_;
    bool overrun_ = false;
};

class FieldWriter {
  public:
    // Zeroes `out` first: every reserved bit of an encoded layout is 0.
    explicit FieldWriter(std::span<uint8_t> out) : out_(out) {
        std::fill(out_.begin(), out_.end(), uint8_t{0});
    }

    // Writes the low `width` (1..64) bits of `value`; a value that does not fit is written
    // truncated and marks the writer out of range.
    void bits(size_t byte, unsigned bit, unsigned width, uint64_t value) {
        if (width < 64 && (value >> width) != 0) out_of_range_ = true;
        size_t pos = byte * 8 + bit + width;  // one past the last bit, filled backwards
        unsigned left = width;
        while (left > 0) {
            const size_t index = (pos - 1) / 8;
            const unsigned end_offset = static_cast<unsigned>((pos - 1) % 8) + 1;  // 1..8
            const unsigned take = std::min(end_offset, left);
            const unsigned shift = 8 - end_offset;
            const unsigned mask = ((1u << take) - 1) << shift;
            const unsigned chunk = static_cast<unsigned>(value & ((1u << take) - 1)) << shift;
            if (index < out_.size()) {
                out_[index] = static_cast<uint8_t>((out_[index] & ~mask) | chunk);
            } else {
                overrun_ = true;
            }
            value >>= take;
            pos -= take;
            left -= take;
        }
    }
    void u8(size_t byte, uint64_t v) { bits(byte, 0, 8, v); }
    void u16(size_t byte, uint64_t v) { bits(byte, 0, 16, v); }
    void u32(size_t byte, uint64_t v) { bits(byte, 0, 32, v); }
    void u64(size_t byte, uint64_t v) { bits(byte, 0, 64, v); }
    void bytes(size_t byte, std::span<const uint8_t> src) {
        for (size_t i = 0; i < src.size(); ++i)
            u8(byte + i, src[i]);
    }
    bool out_of_range() const { return out_of_range_; }
    bool overrun() const { return overrun_; }

  private:
    std::span<uint8_t> out_;
    bool out_of_range_ = false;
    bool overrun_ = false;
};

// What an encoder returns once every field is written.
inline CodecStatus encode_status(const FieldWriter &w) {
    return w.out_of_range() || w.overrun() ? CodecStatus::OutOfRange : CodecStatus::Ok;
}

}  // namespace softrnic::mad
