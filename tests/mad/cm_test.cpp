// CM messages: golden vectors built by hand from the IBA 1.2 ch. 12 message contents
// tables, with a distinct value in every field, and the private data sizes of §6.2.
#include <gtest/gtest.h>

#include "mad/cm.hpp"
#include "mad_test_util.hpp"

using namespace softrnic::mad;
using namespace mad_test;

namespace {

template <size_t N>
std::array<uint8_t, N> filled(uint8_t first) {
    std::array<uint8_t, N> a{};
    for (size_t i = 0; i < N; ++i)
        a[i] = static_cast<uint8_t>(first + i);
    return a;
}

template <typename T, typename Encode>
std::vector<uint8_t> encoded(const T &v, Encode encode) {
    std::array<uint8_t, kCmMessageSize> buf{};
    EXPECT_EQ(encode(v, buf), CodecStatus::Ok);
    return {buf.begin(), buf.end()};
}

CmReq sample_req() {
    CmReq r;
    r.local_comm_id = 0x11223344;
    r.service_id = 0x0102030405060708;
    r.local_ca_guid = 0x1112131415161718;
    r.local_qkey = 0x21222324;
    r.local_qpn = 0x313233;
    r.responder_resources = 0x34;
    r.local_eecn = 0x353637;
    r.initiator_depth = 0x38;
    r.remote_eecn = 0x414243;
    r.remote_cm_response_timeout = 0x15;
    r.transport_service_type = 1;
    r.end_to_end_flow_control = true;
    r.starting_psn = 0x515253;
    r.local_cm_response_timeout = 0x0e;
    r.retry_count = 5;
    r.pkey = 0x8001;
    r.path_mtu = 4;
    r.rdc_exists = true;
    r.rnr_retry_count = 6;
    r.max_cm_retries = 9;
    r.srq = true;
    r.extended_transport_type = 3;
    r.primary = {.local_lid = 0x6162,
                 .remote_lid = 0x6364,
                 .local_gid = filled<16>(0x70),
                 .remote_gid = filled<16>(0x80),
                 .flow_label = 0xabcde,
                 .packet_rate = 0x2a,
                 .traffic_class = 0x91,
                 .hop_limit = 0x92,
                 .sl = 0xa,
                 .subnet_local = true,
                 .local_ack_timeout = 0x13};
    r.alternate = {.local_lid = 0x6566,
                   .remote_lid = 0x6768,
                   .local_gid = filled<16>(0xa0),
                   .remote_gid = filled<16>(0xb0),
                   .flow_label = 0x12345,
                   .packet_rate = 0x05,
                   .traffic_class = 0xc1,
                   .hop_limit = 0xc2,
                   .sl = 0x3,
                   .subnet_local = false,
                   .local_ack_timeout = 0x1f};
    r.private_data = filled<kReqPrivateData>(0x01);
    return r;
}

TEST(CmMessage, PrivateDataSizesFillTheMessage) {
    EXPECT_EQ(kCmMessageSize, 232u);
    EXPECT_EQ(140 + kReqPrivateData, kCmMessageSize);
    EXPECT_EQ(10 + kMraPrivateData, kCmMessageSize);
    EXPECT_EQ(84 + kRejPrivateData, kCmMessageSize);
    EXPECT_EQ(36 + kRepPrivateData, kCmMessageSize);
    EXPECT_EQ(8 + kRtuPrivateData, kCmMessageSize);
    EXPECT_EQ(12 + kDreqPrivateData, kCmMessageSize);
    EXPECT_EQ(8 + kDrepPrivateData, kCmMessageSize);
    EXPECT_EQ(16 + kSidrReqPrivateData, kCmMessageSize);
    EXPECT_EQ(96 + kSidrRepPrivateData, kCmMessageSize);
    EXPECT_EQ(kReqPrivateData, 92u);
    EXPECT_EQ(kRepPrivateData, 196u);
    EXPECT_EQ(kRejPrivateData, 148u);
    EXPECT_EQ(kRtuPrivateData, 224u);
    EXPECT_EQ(kDreqPrivateData, 220u);
    EXPECT_EQ(kDrepPrivateData, 224u);
    EXPECT_EQ(kMraPrivateData, 222u);
    EXPECT_EQ(kSidrReqPrivateData, 216u);
    EXPECT_EQ(kSidrRepPrivateData, 136u);
}

// 43: RemoteCMResponseTimeout 10101, TransportServiceType 01, EEFC 1; 47: 01110 101;
// 50: MTU 0100, RDC 1, RNR 110; 51: MaxCMRetries 1001, SRQ 1, ExtTransport 011.
// Paths: flow label, 6 reserved bits, packet rate; SL, SubnetLocal, 3 reserved; ACK
// timeout, 3 reserved.
const char *kReqHex =
    "11223344 | 00000000 | 0102030405060708 | 1112131415161718 | 00000000 | 21222324 |"
    "313233 34 | 353637 38 | 414243 ab | 515253 75 | 8001 4e 9b |"
    "6162 6364 | 707172737475767778797a7b7c7d7e7f | 808182838485868788898a8b8c8d8e8f |"
    "abcde02a | 91 92 a8 98 |"
    "6566 6768 | a0a1a2a3a4a5a6a7a8a9aaabacadaeaf | b0b1b2b3b4b5b6b7b8b9babbbcbdbebf |"
    "12345005 | c1 c2 30 f8";

TEST(CmMessage, ReqGolden) {
    const auto golden = cat(hex(kReqHex), pattern(kReqPrivateData, 0x01));
    check_layout<kCmMessageSize>(sample_req(), golden, decode_cm_req, encode_cm_req);
    // Reserved: bytes 4-7 and 24-27, the 6 bits before each packet rate, 3 bits after
    // SubnetLocal and after each ACK timeout.
    check_reserved_ignored(sample_req(),
                           with_bits(golden, {{4, 0xff},
                                              {27, 0xff},
                                              {90, 0x0f},
                                              {91, 0xc0},
                                              {94, 0x07},
                                              {95, 0x07},
                                              {138, 0x07},
                                              {139, 0x07}}),
                           decode_cm_req);
}

TEST(CmMessage, ReqRangeChecks) {
    std::array<uint8_t, kCmMessageSize> buf{};
    auto r = sample_req();
    r.local_qpn = 0x1000000;
    EXPECT_EQ(encode_cm_req(r, buf), CodecStatus::OutOfRange);
    r = sample_req();
    r.transport_service_type = 4;
    EXPECT_EQ(encode_cm_req(r, buf), CodecStatus::OutOfRange);
    r = sample_req();
    r.primary.packet_rate = 64;
    EXPECT_EQ(encode_cm_req(r, buf), CodecStatus::OutOfRange);
    r = sample_req();
    r.alternate.flow_label = 0x100000;
    EXPECT_EQ(encode_cm_req(r, buf), CodecStatus::OutOfRange);
    r = sample_req();
    r.max_cm_retries = 16;
    EXPECT_EQ(encode_cm_req(r, buf), CodecStatus::OutOfRange);
}

TEST(CmMessage, MraGolden) {
    CmMra m{.local_comm_id = 0x01020304,
            .remote_comm_id = 0x05060708,
            .message_mraed = cm_msg_ref::kRep,
            .service_timeout = 0x1b,
            .private_data = filled<kMraPrivateData>(0x10)};
    // 8: MessageMRAed 01 + 6 reserved; 9: ServiceTimeout 11011 + 3 reserved.
    const auto golden = cat(hex("01020304 05060708 40 d8"), pattern(kMraPrivateData, 0x10));
    check_layout<kCmMessageSize>(m, golden, decode_cm_mra, encode_cm_mra);
    check_reserved_ignored(m, with_bits(golden, {{8, 0x3f}, {9, 0x07}}), decode_cm_mra);
}

TEST(CmMessage, RejGolden) {
    CmRej m{.local_comm_id = 0x01020304,
            .remote_comm_id = 0x05060708,
            .message_rejected = cm_msg_ref::kOther,
            .reject_info_length = 72,
            .reason = 28,
            .ari = filled<kCmAdditionalInfo>(0x20),
            .private_data = filled<kRejPrivateData>(0x70)};
    // 8: 10 + 6 reserved; 9: 1001000 + 1 reserved.
    auto golden = cat(hex("01020304 05060708 80 90 001c"), pattern(72, 0x20));
    golden = cat(golden, pattern(kRejPrivateData, 0x70));
    check_layout<kCmMessageSize>(m, golden, decode_cm_rej, encode_cm_rej);
    check_reserved_ignored(m, with_bits(golden, {{8, 0x3f}, {9, 0x01}}), decode_cm_rej);

    std::array<uint8_t, kCmMessageSize> buf{};
    m.reject_info_length = 73;
    EXPECT_EQ(encode_cm_rej(m, buf), CodecStatus::OutOfRange);
    auto bad = golden;
    bad[9] = 73 << 1;
    CmRej out;
    EXPECT_EQ(decode_cm_rej(bad, out), CodecStatus::BadField);
}

TEST(CmMessage, RepGolden) {
    CmRep m{.local_comm_id = 0x01020304,
            .remote_comm_id = 0x05060708,
            .local_qkey = 0x11121314,
            .local_qpn = 0x212223,
            .local_eecn = 0x313233,
            .starting_psn = 0x414243,
            .responder_resources = 0x51,
            .initiator_depth = 0x52,
            .target_ack_delay = 0x11,
            .failover_accepted = 2,
            .end_to_end_flow_control = true,
            .rnr_retry_count = 7,
            .srq = true,
            .local_ca_guid = 0x6162636465666768,
            .private_data = filled<kRepPrivateData>(0x30)};
    // 26: TargetACKDelay 10001, FailoverAccepted 10, EEFC 1; 27: RNR 111, SRQ 1, 0000.
    const auto golden = cat(hex("01020304 05060708 11121314 212223 00 313233 00 414243 00"
                                "51 52 8d f0 6162636465666768"),
                            pattern(kRepPrivateData, 0x30));
    check_layout<kCmMessageSize>(m, golden, decode_cm_rep, encode_cm_rep);
    check_reserved_ignored(m, with_bits(golden, {{15, 0xff}, {19, 0xff}, {23, 0xff}, {27, 0x0f}}),
                           decode_cm_rep);
}

TEST(CmMessage, RtuDreqDrepGolden) {
    CmRtu rtu{.local_comm_id = 0x01020304,
              .remote_comm_id = 0x05060708,
              .private_data = filled<kRtuPrivateData>(0x09)};
    check_layout<kCmMessageSize>(rtu, cat(hex("01020304 05060708"), pattern(kRtuPrivateData, 0x09)),
                                 decode_cm_rtu, encode_cm_rtu);

    CmDreq dreq{.local_comm_id = 0x01020304,
                .remote_comm_id = 0x05060708,
                .remote_qpn_eecn = 0x0a0b0c,
                .private_data = filled<kDreqPrivateData>(0x11)};
    const auto dreq_golden =
        cat(hex("01020304 05060708 0a0b0c 00"), pattern(kDreqPrivateData, 0x11));
    check_layout<kCmMessageSize>(dreq, dreq_golden, decode_cm_dreq, encode_cm_dreq);
    check_reserved_ignored(dreq, with_bits(dreq_golden, {{11, 0xff}}), decode_cm_dreq);

    CmDrep drep{.local_comm_id = 0x01020304,
                .remote_comm_id = 0x05060708,
                .private_data = filled<kDrepPrivateData>(0x21)};
    check_layout<kCmMessageSize>(drep,
                                 cat(hex("01020304 05060708"), pattern(kDrepPrivateData, 0x21)),
                                 decode_cm_drep, encode_cm_drep);
}

TEST(CmMessage, SidrGolden) {
    CmSidrReq req{.request_id = 0x01020304,
                  .pkey = 0xffff,
                  .service_id = 0x1112131415161718,
                  .private_data = filled<kSidrReqPrivateData>(0x05)};
    const auto req_golden =
        cat(hex("01020304 ffff 0000 1112131415161718"), pattern(kSidrReqPrivateData, 0x05));
    check_layout<kCmMessageSize>(req, req_golden, decode_cm_sidr_req, encode_cm_sidr_req);
    check_reserved_ignored(req, with_bits(req_golden, {{6, 0xff}, {7, 0xff}}), decode_cm_sidr_req);

    CmSidrRep rep{.request_id = 0x01020304,
                  .status = 2,
                  .additional_info_length = 72,
                  .qpn = 0x212223,
                  .service_id = 0x3132333435363738,
                  .qkey = 0x41424344,
                  .class_port_info = filled<kCmAdditionalInfo>(0x50),
                  .private_data = filled<kSidrRepPrivateData>(0x99)};
    auto rep_golden =
        cat(hex("01020304 02 48 0000 212223 00 3132333435363738 41424344"), pattern(72, 0x50));
    rep_golden = cat(rep_golden, pattern(kSidrRepPrivateData, 0x99));
    check_layout<kCmMessageSize>(rep, rep_golden, decode_cm_sidr_rep, encode_cm_sidr_rep);
    check_reserved_ignored(rep, with_bits(rep_golden, {{6, 0xff}, {11, 0xff}}), decode_cm_sidr_rep);
    std::array<uint8_t, kCmMessageSize> buf{};
    rep.additional_info_length = 73;
    EXPECT_EQ(encode_cm_sidr_rep(rep, buf), CodecStatus::OutOfRange);
    rep_golden[5] = 73;
    CmSidrRep out;
    EXPECT_EQ(decode_cm_sidr_rep(rep_golden, out), CodecStatus::BadField);
}

TEST(CmMessage, LapAndAprDecode) {
    // LAP: reserved word 8-11, RemoteQPN 24 + CM timeout 5 + 3 reserved, reserved 16-19,
    // alternate path with flow label 20 + 4 reserved, TClass at 59.
    auto lap_bytes = cat(hex("01020304 05060708 00000000 0a0b0c 98 00000000 1112 1314"
                             "202122232425262728292a2b2c2d2e2f 303132333435363738393a3b3c3d3e3f"
                             "abcde0 41 42 2a a8 98"),
                         pattern(kLapPrivateData, 0x60));
    ASSERT_EQ(lap_bytes.size(), kCmMessageSize);
    CmLap lap;
    ASSERT_EQ(decode_cm_lap(lap_bytes, lap), CodecStatus::Ok);
    EXPECT_EQ(lap.remote_qpn_eecn, 0x0a0b0cu);
    EXPECT_EQ(lap.remote_cm_response_timeout, 0x13);
    EXPECT_EQ(lap.alt_local_lid, 0x1112);
    EXPECT_EQ(lap.alt_remote_lid, 0x1314);
    EXPECT_EQ(lap.alt_local_gid[0], 0x20);
    EXPECT_EQ(lap.alt_remote_gid[15], 0x3f);
    EXPECT_EQ(lap.alt_flow_label, 0xabcdeu);
    EXPECT_EQ(lap.alt_traffic_class, 0x41);
    EXPECT_EQ(lap.alt_hop_limit, 0x42);
    EXPECT_EQ(lap.alt_packet_rate, 0x2a);
    EXPECT_EQ(lap.alt_sl, 0xa);
    EXPECT_TRUE(lap.alt_subnet_local);
    EXPECT_EQ(lap.alt_local_ack_timeout, 0x13);
    EXPECT_EQ(lap.private_data[0], 0x60);
    for (size_t n = 0; n < kCmMessageSize; ++n)
        EXPECT_EQ(decode_cm_lap(std::span(lap_bytes).first(n), lap), CodecStatus::Truncated);

    auto apr_bytes = cat(hex("01020304 05060708 48 03 ffff"), pattern(72, 0x10));
    apr_bytes = cat(apr_bytes, pattern(kAprPrivateData, 0x80));
    CmApr apr;
    ASSERT_EQ(decode_cm_apr(apr_bytes, apr), CodecStatus::Ok);
    EXPECT_EQ(apr.additional_info_length, 72);
    EXPECT_EQ(apr.ap_status, 3);
    EXPECT_EQ(apr.additional_info[71], 0x57);
    EXPECT_EQ(apr.private_data[0], 0x80);
    apr_bytes[8] = 73;
    EXPECT_EQ(decode_cm_apr(apr_bytes, apr), CodecStatus::BadField);
    EXPECT_EQ(decode_cm_apr(std::span(apr_bytes).first(231), apr), CodecStatus::Truncated);
}

TEST(CmMessage, WholeMadRoundTrip) {
    std::array<uint8_t, kMadSize> mad{};
    MadHeader h{.mgmt_class = mgmt_class::kCm,
                .class_version = kCmClassVersion,
                .method = method::kSend,
                .tid = 0x0000000180000001,
                .attr_id = cm_attr::kReq};
    encode_header(h, std::span(mad).first<kMadHeaderSize>());
    ASSERT_EQ(encode_cm_req(sample_req(), cm_message(MadBuffer(mad))), CodecStatus::Ok);
    EXPECT_EQ(mad[24], 0x11);  // the message starts right after the header

    MadHeader got;
    ASSERT_EQ(decode_class_header(mad, mgmt_class::kCm, kCmClassVersion, got), CodecStatus::Ok);
    EXPECT_EQ(got, h);
    CmReq req;
    ASSERT_EQ(decode_cm_req(cm_message(std::span<const uint8_t>(mad)), req), CodecStatus::Ok);
    EXPECT_EQ(req, sample_req());
    // A short MAD has no message.
    EXPECT_TRUE(cm_message(std::span<const uint8_t>(mad).first(255)).empty());
    EXPECT_EQ(decode_cm_req(cm_message(std::span<const uint8_t>(mad).first(255)), req),
              CodecStatus::Truncated);
}

}  // namespace
