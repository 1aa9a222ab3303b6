// CRC-32C (Castagnoli) as MPA uses it (RFC 5044 4.5): reflected polynomial 0x82F63B78,
// initial state 0xFFFFFFFF, final XOR 0xFFFFFFFF.
//
// The API is incremental so an FPDU spread over several iovecs (header, user pages, pad)
// is covered without copying it together:
//     uint32_t s = kCrc32cInit;
//     s = crc32c_update(s, header);
//     s = crc32c_update(s, payload);
//     uint32_t crc = crc32c_finish(s);
// crc32c_update picks the SSE4.2 instruction path when the CPU has it (checked once) and a
// slicing-by-8 table path otherwise; both are exported so tests can compare them.
//
// On the wire the CRC value goes least-significant byte first (like iSCSI), which is NOT
// network order: use store_crc_wire/load_crc_wire, never htonl.
#pragma once

#include <cstdint>
#include <span>

namespace softrnic::transport::tcp::wire {

inline constexpr uint32_t kCrc32cInit = 0xFFFFFFFFu;

uint32_t crc32c_update(uint32_t state, std::span<const uint8_t> data);
constexpr uint32_t crc32c_finish(uint32_t state) {
    return state ^ 0xFFFFFFFFu;
}
inline uint32_t crc32c(std::span<const uint8_t> data) {
    return crc32c_finish(crc32c_update(kCrc32cInit, data));
}

// Explicit paths. crc32c_update_hw must only be called when crc32c_hw_available().
uint32_t crc32c_update_sw(uint32_t state, std::span<const uint8_t> data);
uint32_t crc32c_update_hw(uint32_t state, std::span<const uint8_t> data);
bool crc32c_hw_available();

inline void store_crc_wire(uint8_t *p, uint32_t crc) {
    p[0] = static_cast<uint8_t>(crc);
    p[1] = static_cast<uint8_t>(crc >> 8);
    p[2] = static_cast<uint8_t>(crc >> 16);
    p[3] = static_cast<uint8_t>(crc >> 24);
}
inline uint32_t load_crc_wire(const uint8_t *p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace softrnic::transport::tcp::wire
