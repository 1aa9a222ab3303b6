// SA MADs, the RMPP header and the SA records: golden vectors built by hand from the IBA 1.2
// ch. 13/15 layouts, with a distinct value in every field.
#include <gtest/gtest.h>

#include "mad/sa.hpp"
#include "mad_test_util.hpp"

using namespace softrnic::mad;
using namespace mad_test;

namespace {

Gid gid_from(uint8_t first) {
    Gid g{};
    for (size_t i = 0; i < g.size(); ++i)
        g[i] = static_cast<uint8_t>(first + i);
    return g;
}

TEST(SaMad, GoldenWithRmpp) {
    SaMad m;
    m.hdr = {.mgmt_class = mgmt_class::kSubnAdm,
             .class_version = 2,
             .method = method::kGetTableResp,
             .status = sa_status::kNoRecords,
             .tid = 0x8000000100000002,
             .attr_id = sa_attr::kNodeRecord};
    m.rmpp = {.version = 1,
              .type = rmpp::kTypeData,
              .resp_time = 0x12,
              .flags = rmpp::kFlagActive | rmpp::kFlagFirst | rmpp::kFlagLast,
              .status = 0,
              .data1 = 1,
              .data2 = 0xc8};
    m.sm_key = 0x0102030405060708;
    m.attr_offset = record_stride_units(kNodeRecordSize);
    m.component_mask = 0x1112131415161718;
    for (size_t i = 0; i < m.data.size(); ++i)
        m.data[i] = static_cast<uint8_t>(i);
    EXPECT_EQ(m.attr_offset, 14);  // 108 bytes -> 112
    // RRespTime 10010 and flags 111 share byte 26.
    auto golden =
        hex("01 03 02 92 | 0300 | 0000 | 8000000100000002 | 0011 | 0000 | 00000000"
            "01 01 97 00 | 00000001 | 000000c8"
            "0102030405060708 | 000e | 0000 | 1112131415161718");
    golden = cat(golden, pattern(200, 0));
    check_layout<kMadSize>(m, golden, decode_sa_mad,
                           [](const SaMad &v, MadBuffer out) { return encode_sa_mad(v, out); });
    check_reserved_ignored(m, with_bits(golden, {{46, 0xff}, {47, 0xff}}), decode_sa_mad);

    RmppHeader r;
    EXPECT_EQ(decode_rmpp_header(golden, r), CodecStatus::Ok);
    EXPECT_EQ(r, m.rmpp);
    EXPECT_EQ(decode_rmpp_header(std::span(golden).first(35), r), CodecStatus::Truncated);

    std::array<uint8_t, kMadSize> buf{};
    m.rmpp.flags = 8;
    EXPECT_EQ(encode_sa_mad(m, buf), CodecStatus::OutOfRange);
    m.rmpp.flags = 0;
    m.rmpp.resp_time = 32;
    EXPECT_EQ(encode_sa_mad(m, buf), CodecStatus::OutOfRange);
}

TEST(SaMad, WrongClassOrVersion) {
    std::array<uint8_t, kMadSize> buf{};
    SaMad m;
    m.hdr = {.mgmt_class = mgmt_class::kSubnAdm, .class_version = 2, .method = method::kGet};
    ASSERT_EQ(encode_sa_mad(m, buf), CodecStatus::Ok);
    SaMad out;
    EXPECT_EQ(decode_sa_mad(buf, out), CodecStatus::Ok);
    buf[2] = 1;
    EXPECT_EQ(decode_sa_mad(buf, out), CodecStatus::BadClassVersion);
    buf[2] = 2;
    buf[1] = 0x07;
    EXPECT_EQ(decode_sa_mad(buf, out), CodecStatus::BadClass);
}

PathRecord sample_path() {
    PathRecord p;
    p.service_id = 0x0102030405060708;
    p.dgid = gid_from(0x10);
    p.sgid = gid_from(0x20);
    p.dlid = 0x3132;
    p.slid = 0x3334;
    p.raw_traffic = true;
    p.flow_label = 0xabcde;
    p.hop_limit = 0x47;
    p.traffic_class = 0x48;
    p.reversible = true;
    p.numb_path = 0x49;
    p.pkey = 0x8a8b;
    p.sl = 0xd;
    p.mtu_selector = 2;
    p.mtu = 4;
    p.rate_selector = 1;
    p.rate = 16;
    p.packet_life_time_selector = 3;
    p.packet_life_time = 0x12;
    p.preference = 0x57;
    return p;
}

TEST(SaRecord, PathRecordGolden) {
    // 44: RawTraffic 1, reserved 000, FlowLabel abcde, HopLimit 47; 49: Reversible 1,
    // NumbPath 1001001; 54: 10 000100; 55: 01 010000; 56: 11 010010.
    const auto golden =
        hex("0102030405060708 | 101112131415161718191a1b1c1d1e1f | 202122232425262728292a2b2c2d2e2f"
            "3132 | 3334 | 8abcde47 | 48 c9 8a8b | 00 0d 84 50 | d2 57 0000 | 00000000");
    check_layout<kPathRecordSize>(sample_path(), golden, decode_path_record, encode_path_record);
    check_reserved_ignored(
        sample_path(),
        with_bits(golden, {{44, 0x70}, {52, 0xff}, {53, 0xf0}, {58, 0xff}, {63, 0xff}}),
        decode_path_record);
}

TEST(SaRecord, PathRecordRangeChecks) {
    std::array<uint8_t, kPathRecordSize> buf{};
    auto p = sample_path();
    p.flow_label = 0x100000;
    EXPECT_EQ(encode_path_record(p, buf), CodecStatus::OutOfRange);
    p = sample_path();
    p.numb_path = 0x80;
    EXPECT_EQ(encode_path_record(p, buf), CodecStatus::OutOfRange);
    p = sample_path();
    p.mtu = 64;
    EXPECT_EQ(encode_path_record(p, buf), CodecStatus::OutOfRange);
    p = sample_path();
    p.mtu_selector = 4;
    EXPECT_EQ(encode_path_record(p, buf), CodecStatus::OutOfRange);
    p = sample_path();
    p.sl = 16;
    EXPECT_EQ(encode_path_record(p, buf), CodecStatus::OutOfRange);
}

McMemberRecord sample_mcmember() {
    McMemberRecord m;
    m.mgid = gid_from(0x10);
    m.port_gid = gid_from(0x20);
    m.qkey = 0x31323334;
    m.mlid = 0xc001;
    m.mtu_selector = 2;
    m.mtu = 4;
    m.traffic_class = 0x39;
    m.pkey = 0x8a8b;
    m.rate_selector = 1;
    m.rate = 16;
    m.packet_life_time_selector = 3;
    m.packet_life_time = 0x12;
    m.sl = 0xa;
    m.flow_label = 0xbcdef;
    m.hop_limit = 0x47;
    m.scope = 0x2;
    m.join_state = 0x1;
    m.proxy_join = true;
    return m;
}

TEST(SaRecord, McMemberRecordGolden) {
    const auto golden = hex(
        "101112131415161718191a1b1c1d1e1f | 202122232425262728292a2b2c2d2e2f | 31323334 | c001 |"
        "84 39 | 8a8b | 50 d2 | abcdef47 | 21 80 0000");
    check_layout<kMcMemberRecordSize>(sample_mcmember(), golden, decode_mcmember_record,
                                      encode_mcmember_record);
    check_reserved_ignored(sample_mcmember(),
                           with_bits(golden, {{49, 0x7f}, {50, 0xff}, {51, 0xff}}),
                           decode_mcmember_record);
    std::array<uint8_t, kMcMemberRecordSize> buf{};
    auto m = sample_mcmember();
    m.join_state = 16;
    EXPECT_EQ(encode_mcmember_record(m, buf), CodecStatus::OutOfRange);
}

TEST(SaRecord, NodeRecordGolden) {
    NodeRecord r;
    r.lid = 0x0102;
    r.node_info = {.node_type = 1,
                   .num_ports = 1,
                   .system_image_guid = 0x1112131415161718,
                   .node_guid = 0x2122232425262728,
                   .port_guid = 0x3132333435363738,
                   .partition_cap = 0x0040,
                   .device_id = 0x4142,
                   .revision = 0x43444546,
                   .local_port_num = 1,
                   .vendor_id = 0x474849};
    for (size_t i = 0; i < r.node_description.size(); ++i)
        r.node_description[i] = static_cast<uint8_t>(0x80 + i);
    auto golden =
        hex("0102 0000 | 01 01 01 01 | 1112131415161718 | 2122232425262728 |"
            "3132333435363738 | 0040 | 4142 | 43444546 | 01 | 474849");
    golden = cat(golden, pattern(64, 0x80));
    check_layout<kNodeRecordSize>(r, golden, decode_node_record, encode_node_record);
    check_reserved_ignored(r, with_bits(golden, {{2, 0xff}, {3, 0xff}}), decode_node_record);
}

TEST(SaRecord, PortInfoRecordGolden) {
    PortInfoRecord r;
    r.endport_lid = 0x0a0b;
    r.port_num = 1;
    r.port_info.lid = 0x0a0b;
    r.port_info.port_state = 4;
    r.port_info.link_round_trip_latency = 0x010203;
    auto golden = hex("0a0b 01 00");
    auto pi = std::vector<uint8_t>(64, 0);
    pi[16] = 0x0a;
    pi[17] = 0x0b;
    pi[32] = 0x04;
    pi[57] = 0x01;
    pi[58] = 0x02;
    pi[59] = 0x03;
    golden = cat(golden, pi);
    check_layout<kPortInfoRecordSize>(r, golden, decode_port_info_record, encode_port_info_record);
    check_reserved_ignored(r, with_bits(golden, {{3, 0xff}}), decode_port_info_record);
}

TEST(SaRecord, ServiceRecordGolden) {
    ServiceRecord r;
    r.service_id = 0x0102030405060708;
    r.service_gid = gid_from(0x10);
    r.service_pkey = 0x2122;
    r.service_lease = 0x31323334;
    for (size_t i = 0; i < 16; ++i)
        r.service_key[i] = static_cast<uint8_t>(0x40 + i);
    for (size_t i = 0; i < 64; ++i)
        r.service_name[i] = static_cast<uint8_t>(0x60 + i);
    for (size_t i = 0; i < 16; ++i)
        r.service_data8[i] = static_cast<uint8_t>(0xa0 + i);
    for (size_t i = 0; i < 8; ++i)
        r.service_data16[i] = static_cast<uint16_t>(0xb000 + i);
    for (size_t i = 0; i < 4; ++i)
        r.service_data32[i] = 0xc0000000u + static_cast<uint32_t>(i);
    for (size_t i = 0; i < 2; ++i)
        r.service_data64[i] = 0xd000000000000000ull + i;
    auto golden = hex("0102030405060708 | 101112131415161718191a1b1c1d1e1f | 2122 0000 | 31323334");
    golden = cat(golden, pattern(16, 0x40));
    golden = cat(golden, pattern(64, 0x60));
    golden = cat(golden, pattern(16, 0xa0));
    golden = cat(golden, hex("b000 b001 b002 b003 b004 b005 b006 b007"));
    golden = cat(golden, hex("c0000000 c0000001 c0000002 c0000003"));
    golden = cat(golden, hex("d000000000000000 d000000000000001"));
    check_layout<kServiceRecordSize>(r, golden, decode_service_record, encode_service_record);
    check_reserved_ignored(r, with_bits(golden, {{26, 0xff}, {27, 0xff}}), decode_service_record);
    EXPECT_EQ(record_stride_units(kServiceRecordSize), 22);
}

TEST(SaRecord, InformInfoGolden) {
    InformInfo v{.gid = gid_from(0x10),
                 .lid_range_begin = 0x2122,
                 .lid_range_end = 0x2324,
                 .is_generic = 1,
                 .subscribe = 1,
                 .type = 0x2728,
                 .trap_number = 0x0040,
                 .qpn = 0x313233,
                 .resp_time_value = 0x13,
                 .producer_type = 0x414243};
    const auto golden =
        hex("101112131415161718191a1b1c1d1e1f | 2122 2324 | 0000 | 01 01 |"
            "2728 | 0040 | 313233 13 | 00 414243");
    check_layout<kInformInfoSize>(v, golden, decode_inform_info, encode_inform_info);
    check_reserved_ignored(v, with_bits(golden, {{20, 0xff}, {31, 0xe0}, {32, 0xff}}),
                           decode_inform_info);
    std::array<uint8_t, kInformInfoSize> buf{};
    v.qpn = 0x1000000;
    EXPECT_EQ(encode_inform_info(v, buf), CodecStatus::OutOfRange);
}

TEST(SaRecord, NoticeGolden) {
    Notice n;
    n.is_generic = true;
    n.type = 3;
    n.producer_type = 0x010203;
    n.trap_number = 0x0040;
    n.issuer_lid = 0x5152;
    n.notice_toggle = true;
    n.notice_count = 0x1234;
    for (size_t i = 0; i < n.data_details.size(); ++i)
        n.data_details[i] = static_cast<uint8_t>(0x60 + i);
    n.issuer_gid = gid_from(0xa0);
    auto golden = hex("83 010203 | 0040 | 5152 | 9234");
    golden = cat(golden, pattern(54, 0x60));
    golden = cat(golden, pattern(16, 0xa0));
    check_layout<kNoticeSize>(n, golden, decode_notice, encode_notice);
    std::array<uint8_t, kNoticeSize> buf{};
    n.notice_count = 0x8000;
    EXPECT_EQ(encode_notice(n, buf), CodecStatus::OutOfRange);
}

}  // namespace
