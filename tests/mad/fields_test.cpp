// FieldReader and FieldWriter: IBA's bit numbering (bit 0 = most significant bit of the
// byte), unaligned wide fields, and the out-of-span and out-of-range guards.
#include <gtest/gtest.h>

#include <array>

#include "mad/fields.hpp"
#include "mad_test_util.hpp"

using namespace softrnic::mad;
using namespace mad_test;

namespace {

TEST(Fields, BitNumberingIsMostSignificantFirst) {
    std::array<uint8_t, 4> buf{};
    FieldWriter w(buf);
    w.bits(0, 0, 1, 1);       // the top bit of byte 0
    w.bits(0, 5, 3, 0x5);     // the low three bits of byte 0
    w.bits(1, 4, 12, 0xabc);  // low nibble of byte 1, then byte 2
    EXPECT_FALSE(w.out_of_range());
    EXPECT_EQ(to_hex(buf), "850abc00");
    FieldReader r(buf);
    EXPECT_EQ(r.bits(0, 0, 1), 1u);
    EXPECT_EQ(r.bits(0, 5, 3), 5u);
    EXPECT_EQ(r.bits(1, 4, 12), 0xabcu);
    EXPECT_FALSE(r.overrun());
}

TEST(Fields, UnalignedSixtyFourBits) {
    std::array<uint8_t, 10> buf{};
    FieldWriter w(buf);
    w.bits(0, 3, 64, 0xfedcba9876543210ull);
    FieldReader r(buf);
    EXPECT_EQ(r.bits(0, 3, 64), 0xfedcba9876543210ull);
    EXPECT_EQ(r.bits(0, 0, 3), 0u);  // untouched neighbours
    EXPECT_EQ(r.bits(8, 3, 5), 0u);
}

TEST(Fields, WriterZeroesAndFlagsValuesTooWide) {
    std::array<uint8_t, 2> buf{0xff, 0xff};
    FieldWriter w(buf);
    EXPECT_EQ(to_hex(buf), "0000");
    w.bits(0, 0, 4, 0x10);
    EXPECT_TRUE(w.out_of_range());
    EXPECT_EQ(encode_status(w), CodecStatus::OutOfRange);
}

TEST(Fields, NeverLeavesTheSpan) {
    std::array<uint8_t, 3> backing{0x11, 0x22, 0x33};
    FieldReader r(std::span<const uint8_t>(backing).first(2));
    EXPECT_EQ(r.u32(0), 0x11220000u);  // the missing bytes read as 0
    EXPECT_TRUE(r.overrun());
    const auto bytes = r.bytes<4>(1);
    EXPECT_EQ(bytes[0], 0x22);
    EXPECT_EQ(bytes[1], 0);

    FieldWriter w(std::span<uint8_t>(backing).first(2));
    w.u32(0, 0xaabbccdd);
    EXPECT_TRUE(w.overrun());
    EXPECT_EQ(backing[2], 0x33);  // the byte past the span is untouched
    EXPECT_EQ(encode_status(w), CodecStatus::OutOfRange);
}

}  // namespace
