// Common MAD header, SMPs (LID-routed and directed route) and the SMA attributes: golden
// vectors built by hand from the IBA 1.2 ch. 13/14 layouts, with a distinct value in every
// field so each field's offset and width is pinned.
#include <gtest/gtest.h>

#include "mad/smp.hpp"
#include "mad_test_util.hpp"

using namespace softrnic::mad;
using namespace mad_test;

namespace {

TEST(MadHeader, GoldenAndTruncation) {
    MadHeader h;
    h.base_version = 1;
    h.mgmt_class = 0x03;
    h.class_version = 0x02;
    h.method = 0x92;
    h.status = 0x000c;
    h.class_specific = 0xabcd;
    h.tid = 0x0102030405060708;
    h.attr_id = 0x0035;
    h.attr_mod = 0xdeadbeef;
    const auto golden =
        hex("01 03 02 92 | 000c | abcd | 0102030405060708 | 0035 | 0000 | deadbeef");
    check_layout<kMadHeaderSize>(h, golden, decode_header,
                                 [](const MadHeader &v, std::span<uint8_t, kMadHeaderSize> out) {
                                     encode_header(v, out);
                                     return CodecStatus::Ok;
                                 });
    check_reserved_ignored(h, with_bits(golden, {{18, 0xff}, {19, 0xff}}), decode_header);
}

TEST(MadHeader, BadBaseVersionStillDecodes) {
    auto golden = hex("02 03 02 01 | 0000 | 0000 | 0000000000000007 | 0035 | 0000 | 00000000");
    MadHeader h;
    EXPECT_EQ(decode_header(golden, h), CodecStatus::BadBaseVersion);
    EXPECT_EQ(h.tid, 7u);  // enough to answer "bad version"
    EXPECT_EQ(h.mgmt_class, 0x03);
}

TEST(MadHeader, ClassHeaderChecks) {
    std::array<uint8_t, kMadSize> mad{};
    MadHeader h{.mgmt_class = 0x03, .class_version = 2, .method = method::kGet};
    encode_header(h, std::span(mad).first<kMadHeaderSize>());
    MadHeader out;
    EXPECT_EQ(decode_class_header(mad, 0x03, 2, out), CodecStatus::Ok);
    EXPECT_EQ(decode_class_header(mad, 0x07, 2, out), CodecStatus::BadClass);
    EXPECT_EQ(decode_class_header(mad, 0x03, 1, out), CodecStatus::BadClassVersion);
    EXPECT_EQ(decode_class_header(std::span(mad).first(255), 0x03, 2, out), CodecStatus::Truncated);
}

Smp sample_dr_smp() {
    Smp s;
    s.hdr = {.mgmt_class = mgmt_class::kSubnDirected,
             .class_version = 1,
             .method = method::kGetResp,
             .status = 0x001c,
             .tid = 0x1112131415161718,
             .attr_id = smp_attr::kPortInfo,
             .attr_mod = 0x00000001};
    s.direction = true;
    s.hop_pointer = 2;
    s.hop_count = 3;
    s.m_key = 0x2122232425262728;
    s.dr_slid = 0xffff;
    s.dr_dlid = 0x0102;
    for (size_t i = 0; i < s.data.size(); ++i)
        s.data[i] = static_cast<uint8_t>(0x40 + i);
    for (size_t i = 0; i < 64; ++i)
        s.initial_path[i] = static_cast<uint8_t>(0x80 + i);
    for (size_t i = 0; i < 64; ++i)
        s.return_path[i] = static_cast<uint8_t>(0xc0 + i);
    return s;
}

TEST(Smp, DirectedRouteGolden) {
    const Smp s = sample_dr_smp();
    // D bit + 15-bit status 0x001c -> 801c; class specific = hop pointer, hop count.
    auto golden =
        hex("01 81 01 81 | 801c | 02 03 | 1112131415161718 | 0015 | 0000 | 00000001"
            "2122232425262728 | ffff | 0102");
    golden = cat(golden, std::vector<uint8_t>(28, 0));  // reserved 36-63
    golden = cat(golden, pattern(64, 0x40));
    golden = cat(golden, pattern(64, 0x80));
    golden = cat(golden, pattern(64, 0xc0));
    check_layout<kMadSize>(s, golden, decode_smp,
                           [](const Smp &v, MadBuffer out) { return encode_smp(v, out); });
    // Reserved bytes 18-19 and 36-63 are ignored.
    check_reserved_ignored(s, with_bits(golden, {{18, 0xff}, {36, 0xff}, {63, 0xff}}), decode_smp);
}

TEST(Smp, LidRoutedGoldenIgnoresReserved) {
    Smp s;
    s.hdr = {.mgmt_class = mgmt_class::kSubnLid,
             .class_version = 1,
             .method = method::kGet,
             .status = 0x8001,  // a full 16-bit status: no D bit in a LID-routed SMP
             .class_specific = 0x0203,
             .tid = 9,
             .attr_id = smp_attr::kNodeInfo};
    s.m_key = 0x0102030405060708;
    for (size_t i = 0; i < s.data.size(); ++i)
        s.data[i] = static_cast<uint8_t>(i + 1);
    auto golden =
        hex("01 01 01 01 | 8001 | 0203 | 0000000000000009 | 0011 | 0000 | 00000000"
            "0102030405060708");
    golden = cat(golden, std::vector<uint8_t>(32, 0));
    golden = cat(golden, pattern(64, 1));
    golden = cat(golden, std::vector<uint8_t>(128, 0));
    check_layout<kMadSize>(s, golden, decode_smp,
                           [](const Smp &v, MadBuffer out) { return encode_smp(v, out); });
    check_reserved_ignored(s, with_bits(golden, {{32, 0xff}, {128, 0xff}, {255, 0xff}}),
                           decode_smp);
}

TEST(Smp, RangeAndClassChecks) {
    std::array<uint8_t, kMadSize> buf{};
    Smp s = sample_dr_smp();
    s.hop_count = 64;
    EXPECT_EQ(encode_smp(s, buf), CodecStatus::OutOfRange);
    s = sample_dr_smp();
    s.hdr.status = 0x8000;  // does not fit 15 bits
    EXPECT_EQ(encode_smp(s, buf), CodecStatus::OutOfRange);
    s = sample_dr_smp();
    s.hdr.mgmt_class = 0x03;
    EXPECT_EQ(encode_smp(s, buf), CodecStatus::BadClass);

    ASSERT_EQ(encode_smp(sample_dr_smp(), buf), CodecStatus::Ok);
    Smp out;
    buf[7] = 64;  // hop count past the path arrays
    EXPECT_EQ(decode_smp(buf, out), CodecStatus::BadField);
    buf[7] = 3;
    buf[2] = 2;
    EXPECT_EQ(decode_smp(buf, out), CodecStatus::BadClassVersion);
    buf[2] = 1;
    buf[1] = 0x04;
    EXPECT_EQ(decode_smp(buf, out), CodecStatus::BadClass);
    buf[1] = 0x81;
    buf[0] = 2;
    EXPECT_EQ(decode_smp(buf, out), CodecStatus::BadBaseVersion);
}

TEST(SmpAttr, NodeInfoGolden) {
    NodeInfo v{.base_version = 1,
               .class_version = 1,
               .node_type = 1,
               .num_ports = 2,
               .system_image_guid = 0x0102030405060708,
               .node_guid = 0x1112131415161718,
               .port_guid = 0x2122232425262728,
               .partition_cap = 0x3132,
               .device_id = 0x3334,
               .revision = 0x35363738,
               .local_port_num = 0x39,
               .vendor_id = 0x414243};
    const auto golden =
        hex("01 01 01 02 | 0102030405060708 | 1112131415161718 | "
            "2122232425262728 | 3132 | 3334 | 35363738 | 39 | 414243");
    check_layout<kNodeInfoSize>(v, golden, decode_node_info, encode_node_info);
    v.vendor_id = 0x01000000;
    std::array<uint8_t, kNodeInfoSize> buf{};
    EXPECT_EQ(encode_node_info(v, buf), CodecStatus::OutOfRange);
}

TEST(SmpAttr, NodeDescriptionGolden) {
    NodeDescription d{};
    const std::string name = "softrnic node";
    for (size_t i = 0; i < name.size(); ++i)
        d[i] = static_cast<uint8_t>(name[i]);
    const auto golden = cat(std::vector<uint8_t>(name.begin(), name.end()),
                            std::vector<uint8_t>(64 - name.size(), 0));
    check_layout<kNodeDescriptionSize>(d, golden, decode_node_description, encode_node_description);
}

PortInfo sample_port_info() {
    PortInfo p;
    p.m_key = 0x0102030405060708;
    p.gid_prefix = 0xfe80000000000000;
    p.lid = 0x0a0b;
    p.master_sm_lid = 0x0c0d;
    p.capability_mask = 0x11223344;
    p.diag_code = 0x5566;
    p.m_key_lease_period = 0x7788;
    p.local_port_num = 0x99;
    p.link_width_enabled = 0xa1;
    p.link_width_supported = 0xa2;
    p.link_width_active = 0xa3;
    p.link_speed_supported = 0x3;
    p.port_state = 0x4;
    p.port_phys_state = 0x5;
    p.link_down_default_state = 0x2;
    p.m_key_protect_bits = 0x2;
    p.lmc = 0x5;
    p.link_speed_active = 0x1;
    p.link_speed_enabled = 0x7;
    p.neighbor_mtu = 0x5;
    p.master_sm_sl = 0xc;
    p.vl_cap = 0x4;
    p.init_type = 0x9;
    p.vl_high_limit = 0xb1;
    p.vl_arbitration_high_cap = 0xb2;
    p.vl_arbitration_low_cap = 0xb3;
    p.init_type_reply = 0x6;
    p.mtu_cap = 0x4;
    p.vl_stall_count = 0x5;
    p.hoq_life = 0x13;
    p.operational_vls = 0x4;
    p.partition_enforcement_inbound = true;
    p.partition_enforcement_outbound = false;
    p.filter_raw_inbound = true;
    p.filter_raw_outbound = false;
    p.m_key_violations = 0xc1c2;
    p.p_key_violations = 0xc3c4;
    p.q_key_violations = 0xc5c6;
    p.guid_cap = 0x20;
    p.client_reregister = true;
    p.subnet_timeout = 0x12;
    p.resp_time_value = 0x11;
    p.local_phy_errors = 0xd;
    p.overrun_errors = 0xe;
    p.max_credit_hint = 0xe1e2;
    p.link_round_trip_latency = 0xf1f2f3;
    return p;
}

// 34: protect 10, reserved 000, LMC 101; 42: stall 101, HOQ 10011; 43: OpVLs 0100, then
// 1 0 1 0; 51: ClientReregister 1, reserved 00, SubnetTimeOut 10010; 52: 000, 10001.
const char *kPortInfoHex =
    "0102030405060708 | fe80000000000000 | 0a0b | 0c0d | 11223344 | 5566 | 7788 |"
    "99 a1 a2 a3 | 34 52 85 17 | 5c 49 b1 b2 | b3 64 b3 4a | c1c2 c3c4 | c5c6 20 92 |"
    "11 de e1e2 | 00 f1f2f3 | 00000000";

TEST(SmpAttr, PortInfoGolden) {
    const auto golden = hex(kPortInfoHex);
    check_layout<kPortInfoSize>(sample_port_info(), golden, decode_port_info, encode_port_info);
    // Reserved: bits 2-4 of byte 34, bits 1-2 of 51, bits 0-2 of 52, byte 56, bytes 60-63.
    check_reserved_ignored(
        sample_port_info(),
        with_bits(golden, {{34, 0x1c}, {51, 0x60}, {52, 0xe0}, {56, 0xff}, {60, 0xff}, {63, 0xff}}),
        decode_port_info);
}

TEST(SmpAttr, PortInfoRangeChecks) {
    std::array<uint8_t, kPortInfoSize> buf{};
    auto p = sample_port_info();
    p.lmc = 8;
    EXPECT_EQ(encode_port_info(p, buf), CodecStatus::OutOfRange);
    p = sample_port_info();
    p.port_state = 16;
    EXPECT_EQ(encode_port_info(p, buf), CodecStatus::OutOfRange);
    p = sample_port_info();
    p.hoq_life = 32;
    EXPECT_EQ(encode_port_info(p, buf), CodecStatus::OutOfRange);
    p = sample_port_info();
    p.link_round_trip_latency = 0x1000000;
    EXPECT_EQ(encode_port_info(p, buf), CodecStatus::OutOfRange);
}

TEST(SmpAttr, PKeyTableGolden) {
    PKeyBlock b{};
    for (size_t i = 0; i < b.size(); ++i)
        b[i] = static_cast<uint16_t>(0x8000 | (i * 0x101));
    std::vector<uint8_t> golden;
    for (size_t i = 0; i < b.size(); ++i) {
        golden.push_back(static_cast<uint8_t>(b[i] >> 8));
        golden.push_back(static_cast<uint8_t>(b[i]));
    }
    EXPECT_EQ(golden[0], 0x80);
    EXPECT_EQ(golden[3], 0x01);  // 0x8101, big-endian
    check_layout<kPKeyTableSize>(b, golden, decode_pkey_table, encode_pkey_table);
}

TEST(SmpAttr, GuidInfoGolden) {
    GuidBlock b{};
    for (size_t i = 0; i < b.size(); ++i)
        b[i] = 0x0001020304050600ull + i;
    std::vector<uint8_t> golden;
    for (size_t i = 0; i < b.size(); ++i) {
        auto g = hex("0001020304050600");
        g[7] = static_cast<uint8_t>(i);
        golden = cat(golden, g);
    }
    check_layout<kGuidInfoSize>(b, golden, decode_guid_info, encode_guid_info);
}

TEST(SmpAttr, SmInfoGolden) {
    SmInfo v{.guid = 0x0102030405060708,
             .sm_key = 0x1112131415161718,
             .act_count = 0x21222324,
             .priority = 0xa,
             .sm_state = 0x3};
    const auto golden = hex("0102030405060708 | 1112131415161718 | 21222324 | a3");
    check_layout<kSmInfoSize>(v, golden, decode_sm_info, encode_sm_info);
    v.priority = 16;
    std::array<uint8_t, kSmInfoSize> buf{};
    EXPECT_EQ(encode_sm_info(v, buf), CodecStatus::OutOfRange);
}

}  // namespace

namespace {

TEST(MadAttr, ClassPortInfoGolden) {
    ClassPortInfo c;
    c.base_version = 1;
    c.class_version = 2;
    c.capability_mask = 0x0203;
    c.capability_mask2 = 0x0456789;
    c.resp_time_value = 18;
    for (size_t i = 0; i < 16; ++i)
        c.redirect_gid[i] = static_cast<uint8_t>(0x10 + i);
    c.redirect_tc = 0x21;
    c.redirect_sl = 0x2;
    c.redirect_fl = 0x23456;
    c.redirect_lid = 0x2728;
    c.redirect_pkey = 0x292a;
    c.redirect_qp = 0x2b2c2d;
    c.redirect_qkey = 0x2e2f3031;
    for (size_t i = 0; i < 16; ++i)
        c.trap_gid[i] = static_cast<uint8_t>(0x40 + i);
    c.trap_tc = 0x51;
    c.trap_sl = 0x5;
    c.trap_fl = 0x23457;
    c.trap_lid = 0x5758;
    c.trap_pkey = 0x595a;
    c.trap_hl = 0x5b;
    c.trap_qp = 0x5c5d5e;
    c.trap_qkey = 0x5f606162;
    // 4-7: CapabilityMask2 0x0456789 (27 bits) then RespTimeValue 10010.
    const auto golden =
        hex("01 02 0203 | 08acf132 | 101112131415161718191a1b1c1d1e1f | 21 223456 | 2728 292a |"
            "00 2b2c2d | 2e2f3031 | 404142434445464748494a4b4c4d4e4f | 51 523457 | 5758 595a |"
            "5b 5c5d5e | 5f606162");
    check_layout<kClassPortInfoSize>(c, golden, decode_class_port_info, encode_class_port_info);
    check_reserved_ignored(c, with_bits(golden, {{32, 0xff}}), decode_class_port_info);
    std::array<uint8_t, kClassPortInfoSize> buf{};
    c.capability_mask2 = 1u << 27;
    EXPECT_EQ(encode_class_port_info(c, buf), CodecStatus::OutOfRange);
}

}  // namespace
