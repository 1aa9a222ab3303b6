// MPA markers (RFC 5044 4.2/4.3) for ONE FPDU at a known stream offset.
//
// softrnic does not negotiate markers (see mpa.hpp): neither the FPDU encoder nor the
// streaming decoder handles them. These two functions exist so the marker layout and
// the CRC coverage rule (markers inside an FPDU are covered by its CRC) are pinned by a
// test against the brief's vector 22, and as a starting point should markers ever be
// needed. Rules implemented (brief 2.9): a marker (16-bit reserved 0 + 16-bit FPDUPTR)
// sits at every 512th octet of the direction's full-operation stream; inside an FPDU its
// FPDUPTR is (marker offset - offset of the FPDU's ULPDU_LENGTH); a marker exactly at an
// FPDU boundary precedes that FPDU's ULPDU_LENGTH, belongs to it and carries FPDUPTR 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/tcp/wire/common.hpp"

namespace softrnic::transport::tcp::wire {

inline constexpr uint32_t kMarkerInterval = 512;
inline constexpr size_t kMarkerLen = 4;

// Wire size of an FPDU of `fpdu_len` bytes (a multiple of 4) starting at `stream_offset`.
size_t marked_fpdu_size(uint64_t stream_offset, size_t fpdu_len);

// `fpdu` is a complete FPDU without markers (its CRC field is ignored and recomputed over
// the marked bytes when `crc`, else written as 0). Writes the marked FPDU to `out`.
Status encode_marked_fpdu(uint64_t stream_offset, std::span<const uint8_t> fpdu, bool crc,
                          std::span<uint8_t> out, size_t &written);

// Reads one marked FPDU at the start of `in` (which begins at `stream_offset`), checks
// every marker and, when `crc`, the CRC; writes the unmarked FPDU to `out`.
// BufferTooSmall when `in` does not hold the whole FPDU or `out` is short.
Status decode_marked_fpdu(uint64_t stream_offset, std::span<const uint8_t> in, bool crc,
                          std::span<uint8_t> out, size_t &consumed, size_t &fpdu_len);

}  // namespace softrnic::transport::tcp::wire
