// CM message layouts (IBA 1.2 ch. 12, the REQ, MRA, REJ, REP, RTU, DREQ, DREP, LAP, APR,
// SIDR_REQ and SIDR_REP message contents tables). Offsets are bytes from the start of the
// message, i.e. from byte 24 of the MAD.
#include "mad/cm.hpp"

#include "mad/fields.hpp"

namespace softrnic::mad {

namespace {

uint8_t bits8(FieldReader &r, size_t byte, unsigned bit, unsigned width) {
    return static_cast<uint8_t>(r.bits(byte, bit, width));
}
uint32_t bits32(FieldReader &r, size_t byte, unsigned bit, unsigned width) {
    return static_cast<uint32_t>(r.bits(byte, bit, width));
}

// A REQ path: local LID, remote LID, local GID, remote GID, flow label, packet rate,
// traffic class, hop limit, SL, subnet local, local ACK timeout (44 bytes).
void decode_req_path(FieldReader &r, size_t at, CmReqPath &p) {
    p.local_lid = r.u16(at);
    p.remote_lid = r.u16(at + 2);
    p.local_gid = r.bytes<16>(at + 4);
    p.remote_gid = r.bytes<16>(at + 20);
    p.flow_label = bits32(r, at + 36, 0, 20);  // 6 bits reserved after it
    p.packet_rate = bits8(r, at + 39, 2, 6);
    p.traffic_class = r.u8(at + 40);
    p.hop_limit = r.u8(at + 41);
    p.sl = bits8(r, at + 42, 0, 4);
    p.subnet_local = r.bits(at + 42, 4, 1) != 0;    // 3 bits reserved
    p.local_ack_timeout = bits8(r, at + 43, 0, 5);  // 3 bits reserved
}

void encode_req_path(FieldWriter &w, size_t at, const CmReqPath &p) {
    w.u16(at, p.local_lid);
    w.u16(at + 2, p.remote_lid);
    w.bytes(at + 4, p.local_gid);
    w.bytes(at + 20, p.remote_gid);
    w.bits(at + 36, 0, 20, p.flow_label);
    w.bits(at + 39, 2, 6, p.packet_rate);
    w.u8(at + 40, p.traffic_class);
    w.u8(at + 41, p.hop_limit);
    w.bits(at + 42, 0, 4, p.sl);
    w.bits(at + 42, 4, 1, p.subnet_local);
    w.bits(at + 43, 0, 5, p.local_ack_timeout);
}

template <size_t N>
void decode_private(FieldReader &r, size_t at, std::array<uint8_t, N> &pd) {
    pd = r.bytes<N>(at);
}

}  // namespace

std::span<const uint8_t> cm_message(std::span<const uint8_t> mad) {
    if (mad.size() < kMadSize) return {};
    return mad.subspan(kMadHeaderSize, kCmMessageSize);
}

CodecStatus decode_cm_req(std::span<const uint8_t> in, CmReq &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);  // bytes 4-7 reserved
    out.service_id = r.u64(8);
    out.local_ca_guid = r.u64(16);  // bytes 24-27 reserved
    out.local_qkey = r.u32(28);
    out.local_qpn = bits32(r, 32, 0, 24);
    out.responder_resources = r.u8(35);
    out.local_eecn = bits32(r, 36, 0, 24);
    out.initiator_depth = r.u8(39);
    out.remote_eecn = bits32(r, 40, 0, 24);
    out.remote_cm_response_timeout = bits8(r, 43, 0, 5);
    out.transport_service_type = bits8(r, 43, 5, 2);
    out.end_to_end_flow_control = r.bits(43, 7, 1) != 0;
    out.starting_psn = bits32(r, 44, 0, 24);
    out.local_cm_response_timeout = bits8(r, 47, 0, 5);
    out.retry_count = bits8(r, 47, 5, 3);
    out.pkey = r.u16(48);
    out.path_mtu = bits8(r, 50, 0, 4);
    out.rdc_exists = r.bits(50, 4, 1) != 0;
    out.rnr_retry_count = bits8(r, 50, 5, 3);
    out.max_cm_retries = bits8(r, 51, 0, 4);
    out.srq = r.bits(51, 4, 1) != 0;
    out.extended_transport_type = bits8(r, 51, 5, 3);
    decode_req_path(r, 52, out.primary);
    decode_req_path(r, 96, out.alternate);
    decode_private(r, 140, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_req(const CmReq &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u64(8, v.service_id);
    w.u64(16, v.local_ca_guid);
    w.u32(28, v.local_qkey);
    w.bits(32, 0, 24, v.local_qpn);
    w.u8(35, v.responder_resources);
    w.bits(36, 0, 24, v.local_eecn);
    w.u8(39, v.initiator_depth);
    w.bits(40, 0, 24, v.remote_eecn);
    w.bits(43, 0, 5, v.remote_cm_response_timeout);
    w.bits(43, 5, 2, v.transport_service_type);
    w.bits(43, 7, 1, v.end_to_end_flow_control);
    w.bits(44, 0, 24, v.starting_psn);
    w.bits(47, 0, 5, v.local_cm_response_timeout);
    w.bits(47, 5, 3, v.retry_count);
    w.u16(48, v.pkey);
    w.bits(50, 0, 4, v.path_mtu);
    w.bits(50, 4, 1, v.rdc_exists);
    w.bits(50, 5, 3, v.rnr_retry_count);
    w.bits(51, 0, 4, v.max_cm_retries);
    w.bits(51, 4, 1, v.srq);
    w.bits(51, 5, 3, v.extended_transport_type);
    encode_req_path(w, 52, v.primary);
    encode_req_path(w, 96, v.alternate);
    w.bytes(140, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_mra(std::span<const uint8_t> in, CmMra &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    out.message_mraed = bits8(r, 8, 0, 2);
    out.service_timeout = bits8(r, 9, 0, 5);
    decode_private(r, 10, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_mra(const CmMra &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u32(4, v.remote_comm_id);
    w.bits(8, 0, 2, v.message_mraed);
    w.bits(9, 0, 5, v.service_timeout);
    w.bytes(10, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_rej(std::span<const uint8_t> in, CmRej &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    out.message_rejected = bits8(r, 8, 0, 2);
    out.reject_info_length = bits8(r, 9, 0, 7);
    out.reason = r.u16(10);
    out.ari = r.bytes<kCmAdditionalInfo>(12);
    decode_private(r, 84, out.private_data);
    return out.reject_info_length > kCmAdditionalInfo ? CodecStatus::BadField : CodecStatus::Ok;
}

CodecStatus encode_cm_rej(const CmRej &v, CmBuffer out) {
    if (v.reject_info_length > kCmAdditionalInfo) return CodecStatus::OutOfRange;
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u32(4, v.remote_comm_id);
    w.bits(8, 0, 2, v.message_rejected);
    w.bits(9, 0, 7, v.reject_info_length);
    w.u16(10, v.reason);
    w.bytes(12, v.ari);
    w.bytes(84, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_rep(std::span<const uint8_t> in, CmRep &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    out.local_qkey = r.u32(8);
    out.local_qpn = bits32(r, 12, 0, 24);     // byte 15 reserved
    out.local_eecn = bits32(r, 16, 0, 24);    // byte 19 reserved
    out.starting_psn = bits32(r, 20, 0, 24);  // byte 23 reserved
    out.responder_resources = r.u8(24);
    out.initiator_depth = r.u8(25);
    out.target_ack_delay = bits8(r, 26, 0, 5);
    out.failover_accepted = bits8(r, 26, 5, 2);
    out.end_to_end_flow_control = r.bits(26, 7, 1) != 0;
    out.rnr_retry_count = bits8(r, 27, 0, 3);
    out.srq = r.bits(27, 3, 1) != 0;  // 4 bits reserved
    out.local_ca_guid = r.u64(28);
    decode_private(r, 36, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_rep(const CmRep &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u32(4, v.remote_comm_id);
    w.u32(8, v.local_qkey);
    w.bits(12, 0, 24, v.local_qpn);
    w.bits(16, 0, 24, v.local_eecn);
    w.bits(20, 0, 24, v.starting_psn);
    w.u8(24, v.responder_resources);
    w.u8(25, v.initiator_depth);
    w.bits(26, 0, 5, v.target_ack_delay);
    w.bits(26, 5, 2, v.failover_accepted);
    w.bits(26, 7, 1, v.end_to_end_flow_control);
    w.bits(27, 0, 3, v.rnr_retry_count);
    w.bits(27, 3, 1, v.srq);
    w.u64(28, v.local_ca_guid);
    w.bytes(36, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_rtu(std::span<const uint8_t> in, CmRtu &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    decode_private(r, 8, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_rtu(const CmRtu &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u32(4, v.remote_comm_id);
    w.bytes(8, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_dreq(std::span<const uint8_t> in, CmDreq &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    out.remote_qpn_eecn = bits32(r, 8, 0, 24);  // byte 11 reserved
    decode_private(r, 12, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_dreq(const CmDreq &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u32(4, v.remote_comm_id);
    w.bits(8, 0, 24, v.remote_qpn_eecn);
    w.bytes(12, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_drep(std::span<const uint8_t> in, CmDrep &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    decode_private(r, 8, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_drep(const CmDrep &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.local_comm_id);
    w.u32(4, v.remote_comm_id);
    w.bytes(8, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_sidr_req(std::span<const uint8_t> in, CmSidrReq &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.request_id = r.u32(0);
    out.pkey = r.u16(4);  // bytes 6-7 reserved
    out.service_id = r.u64(8);
    decode_private(r, 16, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus encode_cm_sidr_req(const CmSidrReq &v, CmBuffer out) {
    FieldWriter w(out);
    w.u32(0, v.request_id);
    w.u16(4, v.pkey);
    w.u64(8, v.service_id);
    w.bytes(16, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_sidr_rep(std::span<const uint8_t> in, CmSidrRep &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.request_id = r.u32(0);
    out.status = r.u8(4);
    out.additional_info_length = r.u8(5);  // bytes 6-7 reserved
    out.qpn = bits32(r, 8, 0, 24);         // byte 11 reserved
    out.service_id = r.u64(12);
    out.qkey = r.u32(20);
    out.class_port_info = r.bytes<kCmAdditionalInfo>(24);
    decode_private(r, 96, out.private_data);
    return out.additional_info_length > kCmAdditionalInfo ? CodecStatus::BadField : CodecStatus::Ok;
}

CodecStatus encode_cm_sidr_rep(const CmSidrRep &v, CmBuffer out) {
    if (v.additional_info_length > kCmAdditionalInfo) return CodecStatus::OutOfRange;
    FieldWriter w(out);
    w.u32(0, v.request_id);
    w.u8(4, v.status);
    w.u8(5, v.additional_info_length);
    w.bits(8, 0, 24, v.qpn);
    w.u64(12, v.service_id);
    w.u32(20, v.qkey);
    w.bytes(24, v.class_port_info);
    w.bytes(96, v.private_data);
    return encode_status(w);
}

CodecStatus decode_cm_lap(std::span<const uint8_t> in, CmLap &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);  // bytes 8-11 reserved
    out.remote_qpn_eecn = bits32(r, 12, 0, 24);
    out.remote_cm_response_timeout = bits8(r, 15, 0, 5);  // bytes 16-19 reserved
    out.alt_local_lid = r.u16(20);
    out.alt_remote_lid = r.u16(22);
    out.alt_local_gid = r.bytes<16>(24);
    out.alt_remote_gid = r.bytes<16>(40);
    out.alt_flow_label = bits32(r, 56, 0, 20);  // 4 bits reserved
    out.alt_traffic_class = r.u8(59);
    out.alt_hop_limit = r.u8(60);
    out.alt_packet_rate = bits8(r, 61, 2, 6);
    out.alt_sl = bits8(r, 62, 0, 4);
    out.alt_subnet_local = r.bits(62, 4, 1) != 0;
    out.alt_local_ack_timeout = bits8(r, 63, 0, 5);
    decode_private(r, 64, out.private_data);
    return CodecStatus::Ok;
}

CodecStatus decode_cm_apr(std::span<const uint8_t> in, CmApr &out) {
    if (in.size() < kCmMessageSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.local_comm_id = r.u32(0);
    out.remote_comm_id = r.u32(4);
    out.additional_info_length = r.u8(8);
    out.ap_status = r.u8(9);  // bytes 10-11 reserved
    out.additional_info = r.bytes<kCmAdditionalInfo>(12);
    decode_private(r, 84, out.private_data);
    return out.additional_info_length > kCmAdditionalInfo ? CodecStatus::BadField : CodecStatus::Ok;
}

}  // namespace softrnic::mad
