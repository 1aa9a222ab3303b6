// CRC-32C: brief vector 1 through both paths, incremental use, and path equivalence.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

#include "transport/tcp/wire/crc32c.hpp"
#include "wire_test_util.hpp"

using namespace softrnic::transport::tcp::wire;
using wire_test::bytes;
using wire_test::hex;

namespace {

using UpdateFn = uint32_t (*)(uint32_t, std::span<const uint8_t>);

struct Path {
    const char *name;
    UpdateFn fn;
};

std::vector<Path> paths() {
    std::vector<Path> p{{"sw", &crc32c_update_sw}, {"dispatch", &crc32c_update}};
    if (crc32c_hw_available()) p.push_back({"hw", &crc32c_update_hw});
    return p;
}

std::array<uint8_t, 4> wire_of(uint32_t crc) {
    std::array<uint8_t, 4> w{};
    store_crc_wire(w.data(), crc);
    return w;
}

TEST(Crc32c, HardwarePathPresentOnThisHost) {
    // The build hosts are x86-64 with SSE4.2; if this fails the hw path went untested.
    EXPECT_TRUE(crc32c_hw_available());
}

TEST(Crc32c, Vector1CheckValueBothPaths) {
    for (const Path &p : paths()) {
        SCOPED_TRACE(p.name);
        const uint32_t c = crc32c_finish(p.fn(kCrc32cInit, bytes("123456789")));
        EXPECT_EQ(c, 0xE3069283u);
        EXPECT_EQ(wire_of(c), (std::array<uint8_t, 4>{0x83, 0x92, 0x06, 0xe3}));
        EXPECT_EQ(load_crc_wire(wire_of(c).data()), c);
    }
}

TEST(Crc32c, Vector1Rfc3720BothPaths) {
    std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32), dec(32);
    for (int i = 0; i < 32; ++i) {
        inc[i] = static_cast<uint8_t>(i);
        dec[i] = static_cast<uint8_t>(31 - i);
    }
    for (const Path &p : paths()) {
        SCOPED_TRACE(p.name);
        auto run = [&](const std::vector<uint8_t> &d) {
            return wire_of(crc32c_finish(p.fn(kCrc32cInit, d)));
        };
        EXPECT_EQ(run(zeros), (std::array<uint8_t, 4>{0xaa, 0x36, 0x91, 0x8a}));
        EXPECT_EQ(run(ones), (std::array<uint8_t, 4>{0x43, 0xab, 0xa8, 0x62}));
        EXPECT_EQ(run(inc), (std::array<uint8_t, 4>{0x4e, 0x79, 0xdd, 0x46}));
        EXPECT_EQ(run(dec), (std::array<uint8_t, 4>{0x5c, 0xdb, 0x3f, 0x11}));
    }
}

TEST(Crc32c, EmptyInputLeavesStateAlone) {
    for (const Path &p : paths()) {
        EXPECT_EQ(p.fn(0x12345678u, {}), 0x12345678u) << p.name;
        EXPECT_EQ(crc32c_finish(p.fn(kCrc32cInit, {})), 0u) << p.name;
    }
}

TEST(Crc32c, PathsAgreeOnRandomDataAllLengthsAndAlignments) {
    ASSERT_TRUE(crc32c_hw_available());
    std::mt19937 rng(1234);
    std::vector<uint8_t> buf(4096 + 16);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    for (size_t len = 0; len <= 300; ++len)
        for (size_t off = 0; off < 8; ++off) {
            std::span<const uint8_t> d(buf.data() + off, len);
            ASSERT_EQ(crc32c_update_sw(0xFFFFFFFFu, d), crc32c_update_hw(0xFFFFFFFFu, d))
                << len << "/" << off;
        }
    std::span<const uint8_t> all(buf);
    EXPECT_EQ(crc32c_update_sw(0xA5A5A5A5u, all), crc32c_update_hw(0xA5A5A5A5u, all));
}

TEST(Crc32c, IncrementalAcrossIovecsEqualsOneShot) {
    std::mt19937 rng(99);
    std::vector<uint8_t> buf(1500);
    for (auto &b : buf)
        b = static_cast<uint8_t>(rng());
    const uint32_t whole = crc32c(buf);
    for (const Path &p : paths()) {
        SCOPED_TRACE(p.name);
        for (size_t cut1 : {0, 1, 7, 20, 700}) {
            for (size_t cut2 : {cut1, cut1 + 3, size_t{1499}}) {
                uint32_t s = kCrc32cInit;
                s = p.fn(s, std::span<const uint8_t>(buf).first(cut1));
                s = p.fn(s, std::span<const uint8_t>(buf).subspan(cut1, cut2 - cut1));
                s = p.fn(s, std::span<const uint8_t>(buf).subspan(cut2));
                EXPECT_EQ(crc32c_finish(s), whole) << cut1 << "," << cut2;
            }
        }
    }
}

}  // namespace
