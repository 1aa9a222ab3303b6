#include "transport/tcp/wire/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace softrnic::transport::tcp::wire {

namespace {

constexpr uint32_t kPoly = 0x82F63B78u;

// tables[k][b]: CRC of byte b followed by k zero bytes, for slicing-by-8.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
    std::array<std::array<uint32_t, 256>, 8> t{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t c = b;
        for (int i = 0; i < 8; ++i)
            c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
        t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
        for (size_t k = 1; k < 8; ++k)
            t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
    return t;
}

constexpr auto kTables = make_tables();

// The slicing loop reads 8 bytes as a little-endian word; assemble it byte-wise so the
// code is endian-neutral and alignment-free (compilers turn this into one load on x86).
inline uint64_t load_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = v << 8 | p[i];
    return v;
}

#if defined(__x86_64__)
bool detect_hw() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
}
#endif

}  // namespace

uint32_t crc32c_update_sw(uint32_t state, std::span<const uint8_t> data) {
    const uint8_t *p = data.data();
    size_t n = data.size();
    uint32_t c = state;
    while (n >= 8) {
        uint64_t w = load_le64(p) ^ c;
        c = kTables[7][w & 0xFF] ^ kTables[6][(w >> 8) & 0xFF] ^ kTables[5][(w >> 16) & 0xFF] ^
            kTables[4][(w >> 24) & 0xFF] ^ kTables[3][(w >> 32) & 0xFF] ^
            kTables[2][(w >> 40) & 0xFF] ^ kTables[1][(w >> 48) & 0xFF] ^ kTables[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_update_hw(uint32_t state,
                                                            std::span<const uint8_t> data) {
    const uint8_t *p = data.data();
    size_t n = data.size();
    uint64_t c = state;
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);  // x86 is little-endian: the instruction wants LE words
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = static_cast<uint32_t>(c);
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

bool crc32c_hw_available() {
    static const bool hw = detect_hw();
    return hw;
}
#else
uint32_t crc32c_update_hw(uint32_t state, std::span<const uint8_t> data) {
    return crc32c_update_sw(state, data);
}
bool crc32c_hw_available() {
    return false;
}
#endif

uint32_t crc32c_update(uint32_t state, std::span<const uint8_t> data) {
    if (crc32c_hw_available()) return crc32c_update_hw(state, data);
    return crc32c_update_sw(state, data);
}

}  // namespace softrnic::transport::tcp::wire
