// Vector 22: markers around one FPDU (encode and strip), plus the CRC coverage rule.
#include <gtest/gtest.h>

#include <vector>

#include "transport/tcp/wire/crc32c.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/markers.hpp"
#include "wire_test_util.hpp"

using namespace softrnic::transport::tcp::wire;
using wire_test::hex;
using wire_test::to_hex;

namespace {

// The vector's FPDU without markers: Send MSN 1, payload 00..ff x3 + 232 zeros.
std::vector<uint8_t> v22_fpdu(std::vector<uint8_t> &payload) {
    payload.assign(1000, 0);
    for (size_t i = 0; i < 768; ++i)
        payload[i] = static_cast<uint8_t>(i);
    DdpHeader h;
    h.opcode = Opcode::Send;
    h.msn = 1;
    std::vector<uint8_t> hb(kMaxHeaderLen);
    hb.resize(encode_ddp_header(h, hb));
    std::vector<uint8_t> out(2000);
    size_t n = 0;
    EXPECT_EQ(encode_fpdu(hb, payload, false, out, n), Status::Ok);
    out.resize(n);
    return out;
}

TEST(Markers, V22EncodeLayout) {
    std::vector<uint8_t> payload;
    const auto fpdu = v22_fpdu(payload);
    ASSERT_EQ(fpdu.size(), 1024u);  // 2 + 1018 + 0 PAD + 4
    EXPECT_EQ(marked_fpdu_size(0, fpdu.size()), 1036u);
    std::vector<uint8_t> wire(1036);
    size_t n = 0;
    ASSERT_EQ(encode_marked_fpdu(0, fpdu, true, wire, n), Status::Ok);
    ASSERT_EQ(n, 1036u);
    EXPECT_EQ(to_hex(std::span(wire).first(4)), "00000000");
    EXPECT_EQ(to_hex(std::span(wire).subspan(4, 4)), "03fa4143");
    EXPECT_EQ(to_hex(std::span(wire).subspan(512, 4)), "000001fc");
    EXPECT_EQ(to_hex(std::span(wire).subspan(1024, 4)), "000003fc");
    EXPECT_EQ(to_hex(std::span(wire).subspan(1028, 4)), to_hex(std::span(payload).last(4)));
    EXPECT_EQ(to_hex(std::span(wire).subspan(1032, 4)), "00e6a77f");
    EXPECT_EQ(crc32c(std::span(wire).first(1032)), load_crc_wire(&wire[1032]))
        << "the CRC covers the markers inside the FPDU";
}

TEST(Markers, V22DecodeStripsAndChecks) {
    std::vector<uint8_t> payload;
    const auto fpdu = v22_fpdu(payload);
    std::vector<uint8_t> wire(1036);
    size_t n = 0;
    ASSERT_EQ(encode_marked_fpdu(0, fpdu, true, wire, n), Status::Ok);
    std::vector<uint8_t> out(2000);
    size_t used = 0, flen = 0;
    ASSERT_EQ(decode_marked_fpdu(0, wire, true, out, used, flen), Status::Ok);
    EXPECT_EQ(used, 1036u);
    ASSERT_EQ(flen, 1024u);
    // Same bytes as the unmarked FPDU except the CRC, which covered the markers.
    EXPECT_EQ(to_hex(std::span(out).first(1020)), to_hex(std::span(fpdu).first(1020)));
    EXPECT_EQ(to_hex(std::span(out).subspan(1020, 4)), "00e6a77f");

    auto bad_ptr = wire;
    bad_ptr[515] ^= 4;
    EXPECT_EQ(decode_marked_fpdu(0, bad_ptr, false, out, used, flen), Status::MarkerMismatch);
    EXPECT_EQ(term_code(Status::MarkerMismatch).control_word(), 0x20030000u);
    auto bad_crc = wire;
    bad_crc[1033] ^= 1;
    EXPECT_EQ(decode_marked_fpdu(0, bad_crc, true, out, used, flen), Status::CrcMismatch);
    EXPECT_EQ(decode_marked_fpdu(0, std::span(wire).first(1035), true, out, used, flen),
              Status::BufferTooSmall);
}

TEST(Markers, V22NextFpduStartsWithoutLeadingMarker) {
    // The next FPDU starts at 1036; a marker at 1536 inside it carries FPDUPTR 500.
    std::vector<uint8_t> payload(600, 0x77);
    DdpHeader h;
    h.opcode = Opcode::Send;
    h.msn = 2;
    std::vector<uint8_t> hb(kMaxHeaderLen);
    hb.resize(encode_ddp_header(h, hb));
    std::vector<uint8_t> fpdu(1000);
    size_t n = 0;
    ASSERT_EQ(encode_fpdu(hb, payload, false, fpdu, n), Status::Ok);
    fpdu.resize(n);
    std::vector<uint8_t> wire(2000);
    ASSERT_EQ(encode_marked_fpdu(1036, fpdu, true, wire, n), Status::Ok);
    EXPECT_EQ(n, fpdu.size() + 4);
    EXPECT_EQ(load_be16(&wire[0]), 18 + 600u) << "no leading marker at 1036";
    EXPECT_EQ(to_hex(std::span(wire).subspan(1536 - 1036, 4)), "000001f4");
    std::vector<uint8_t> out(2000);
    size_t used = 0, flen = 0;
    ASSERT_EQ(decode_marked_fpdu(1036, std::span(wire).first(n), true, out, used, flen),
              Status::Ok);
    EXPECT_EQ(flen, fpdu.size());
    EXPECT_EQ(to_hex(std::span(out).first(flen - 4)), to_hex(std::span(fpdu).first(flen - 4)));
}

}  // namespace
