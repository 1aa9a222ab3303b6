// Helpers for the MAD codec tests: hex vectors and the checks every layout gets.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mad/common.hpp"

namespace mad_test {

// Bytes from hex digits; spaces, '|' and newlines are ignored so vectors can be laid out
// one field per group.
inline std::vector<uint8_t> hex(const std::string &s) {
    std::vector<uint8_t> out;
    int high = -1;
    for (char c : s) {
        int v;
        if (c >= '0' && c <= '9') {
            v = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            v = c - 'a' + 10;
        } else {
            continue;
        }
        if (high < 0) {
            high = v;
        } else {
            out.push_back(static_cast<uint8_t>(high << 4 | v));
            high = -1;
        }
    }
    EXPECT_LT(high, 0) << "odd number of hex digits";
    return out;
}

inline std::string to_hex(std::span<const uint8_t> b) {
    static const char *digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < b.size(); ++i) {
        if (i && i % 8 == 0) s += ' ';
        s += digits[b[i] >> 4];
        s += digits[b[i] & 0xF];
    }
    return s;
}

// `n` bytes counting up from `first` (a private data or filler pattern).
inline std::vector<uint8_t> pattern(size_t n, uint8_t first) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<uint8_t>(first + i);
    return v;
}

inline std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

template <size_t N>
std::array<uint8_t, N> to_array(const std::vector<uint8_t> &v) {
    std::array<uint8_t, N> a{};
    EXPECT_EQ(v.size(), N);
    for (size_t i = 0; i < N && i < v.size(); ++i)
        a[i] = v[i];
    return a;
}

// The checks of one fixed-size layout: `value` encodes to exactly `golden` (over a buffer
// full of junk, so every byte is written), `golden` decodes back to `value`, and every
// shorter prefix decodes to Truncated.
template <size_t N, typename T, typename Decode, typename Encode>
void check_layout(const T &value, const std::vector<uint8_t> &golden, Decode decode,
                  Encode encode) {
    using softrnic::mad::CodecStatus;
    ASSERT_EQ(golden.size(), N);
    std::array<uint8_t, N> buf;
    buf.fill(0xEE);
    EXPECT_EQ(encode(value, std::span<uint8_t, N>(buf)), CodecStatus::Ok);
    EXPECT_EQ(to_hex(buf), to_hex(golden));
    T back{};
    EXPECT_EQ(decode(std::span<const uint8_t>(golden), back), CodecStatus::Ok);
    EXPECT_TRUE(back == value) << "decode(golden) differs from the encoded value";
    for (size_t n = 0; n < N; ++n) {
        T t{};
        EXPECT_EQ(decode(std::span<const uint8_t>(golden.data(), n), t), CodecStatus::Truncated)
            << "length " << n;
    }
}

// Decoding `with_reserved` (the golden vector with reserved bits set) gives `value`.
template <typename T, typename Decode>
void check_reserved_ignored(const T &value, const std::vector<uint8_t> &with_reserved,
                            Decode decode) {
    T back{};
    EXPECT_EQ(decode(std::span<const uint8_t>(with_reserved), back),
              softrnic::mad::CodecStatus::Ok);
    EXPECT_TRUE(back == value) << "a reserved bit leaked into a field";
}

// `golden` with the bytes at `at` OR-ed with `mask`.
inline std::vector<uint8_t> with_bits(std::vector<uint8_t> golden,
                                      std::initializer_list<std::pair<size_t, uint8_t>> bits) {
    for (auto [at, mask] : bits)
        golden.at(at) |= mask;
    return golden;
}

}  // namespace mad_test
