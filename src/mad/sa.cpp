// SA MADs, the RMPP header and SA records (IBA 1.2 ch. 13 and 15). Offsets are bytes from
// the start of the MAD or of the record, as IBA's layout tables draw them.
#include "mad/sa.hpp"

#include "mad/fields.hpp"

namespace softrnic::mad {

namespace {

uint8_t bits8(FieldReader &r, size_t byte, unsigned bit, unsigned width) {
    return static_cast<uint8_t>(r.bits(byte, bit, width));
}

}  // namespace

CodecStatus decode_rmpp_header(std::span<const uint8_t> in, RmppHeader &out) {
    if (in.size() < kSaHeaderOffset) return CodecStatus::Truncated;
    FieldReader r(in);
    out.version = r.u8(24);
    out.type = r.u8(25);
    out.resp_time = bits8(r, 26, 0, 5);
    out.flags = bits8(r, 26, 5, 3);
    out.status = r.u8(27);
    out.data1 = r.u32(28);
    out.data2 = r.u32(32);
    return CodecStatus::Ok;
}

CodecStatus encode_rmpp_header(const RmppHeader &h, MadBuffer mad) {
    FieldWriter w(mad.subspan<kRmppHeaderOffset, kSaHeaderOffset - kRmppHeaderOffset>());
    // The writer sees bytes 24-35 as 0-11.
    w.u8(0, h.version);
    w.u8(1, h.type);
    w.bits(2, 0, 5, h.resp_time);
    w.bits(2, 5, 3, h.flags);
    w.u8(3, h.status);
    w.u32(4, h.data1);
    w.u32(8, h.data2);
    return encode_status(w);
}

CodecStatus decode_sa_mad(std::span<const uint8_t> in, SaMad &out) {
    out = SaMad{};
    const CodecStatus s = decode_class_header(in, mgmt_class::kSubnAdm, kSaClassVersion, out.hdr);
    if (s != CodecStatus::Ok) return s;
    decode_rmpp_header(in, out.rmpp);
    FieldReader r(in);
    out.sm_key = r.u64(36);
    out.attr_offset = r.u16(44);
    // bytes 46-47 reserved
    out.component_mask = r.u64(48);
    out.data = r.bytes<kSaDataSize>(kSaDataOffset);
    return CodecStatus::Ok;
}

CodecStatus encode_sa_mad(const SaMad &m, MadBuffer out) {
    FieldWriter w(out);
    encode_header(m.hdr, out.first<kMadHeaderSize>());
    const CodecStatus s = encode_rmpp_header(m.rmpp, out);
    w.u64(36, m.sm_key);
    w.u16(44, m.attr_offset);
    w.u64(48, m.component_mask);
    w.bytes(kSaDataOffset, m.data);
    return s != CodecStatus::Ok ? s : encode_status(w);
}

CodecStatus decode_path_record(std::span<const uint8_t> in, PathRecord &out) {
    if (in.size() < kPathRecordSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.service_id = r.u64(0);
    out.dgid = r.bytes<16>(8);
    out.sgid = r.bytes<16>(24);
    out.dlid = r.u16(40);
    out.slid = r.u16(42);
    out.raw_traffic = r.bits(44, 0, 1) != 0;  // bits 1-3 reserved
    out.flow_label = static_cast<uint32_t>(r.bits(44, 4, 20));
    out.hop_limit = r.u8(47);
    out.traffic_class = r.u8(48);
    out.reversible = r.bits(49, 0, 1) != 0;
    out.numb_path = bits8(r, 49, 1, 7);
    out.pkey = r.u16(50);
    out.sl = bits8(r, 53, 4, 4);  // byte 52 and bits 0-3 of 53 reserved
    out.mtu_selector = bits8(r, 54, 0, 2);
    out.mtu = bits8(r, 54, 2, 6);
    out.rate_selector = bits8(r, 55, 0, 2);
    out.rate = bits8(r, 55, 2, 6);
    out.packet_life_time_selector = bits8(r, 56, 0, 2);
    out.packet_life_time = bits8(r, 56, 2, 6);
    out.preference = r.u8(57);
    // bytes 58-63 reserved
    return CodecStatus::Ok;
}

CodecStatus encode_path_record(const PathRecord &v, std::span<uint8_t, kPathRecordSize> out) {
    FieldWriter w(out);
    w.u64(0, v.service_id);
    w.bytes(8, v.dgid);
    w.bytes(24, v.sgid);
    w.u16(40, v.dlid);
    w.u16(42, v.slid);
    w.bits(44, 0, 1, v.raw_traffic);
    w.bits(44, 4, 20, v.flow_label);
    w.u8(47, v.hop_limit);
    w.u8(48, v.traffic_class);
    w.bits(49, 0, 1, v.reversible);
    w.bits(49, 1, 7, v.numb_path);
    w.u16(50, v.pkey);
    w.bits(53, 4, 4, v.sl);
    w.bits(54, 0, 2, v.mtu_selector);
    w.bits(54, 2, 6, v.mtu);
    w.bits(55, 0, 2, v.rate_selector);
    w.bits(55, 2, 6, v.rate);
    w.bits(56, 0, 2, v.packet_life_time_selector);
    w.bits(56, 2, 6, v.packet_life_time);
    w.u8(57, v.preference);
    return encode_status(w);
}

CodecStatus decode_mcmember_record(std::span<const uint8_t> in, McMemberRecord &out) {
    if (in.size() < kMcMemberRecordSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.mgid = r.bytes<16>(0);
    out.port_gid = r.bytes<16>(16);
    out.qkey = r.u32(32);
    out.mlid = r.u16(36);
    out.mtu_selector = bits8(r, 38, 0, 2);
    out.mtu = bits8(r, 38, 2, 6);
    out.traffic_class = r.u8(39);
    out.pkey = r.u16(40);
    out.rate_selector = bits8(r, 42, 0, 2);
    out.rate = bits8(r, 42, 2, 6);
    out.packet_life_time_selector = bits8(r, 43, 0, 2);
    out.packet_life_time = bits8(r, 43, 2, 6);
    out.sl = bits8(r, 44, 0, 4);
    out.flow_label = static_cast<uint32_t>(r.bits(44, 4, 20));
    out.hop_limit = r.u8(47);
    out.scope = bits8(r, 48, 0, 4);
    out.join_state = bits8(r, 48, 4, 4);
    out.proxy_join = r.bits(49, 0, 1) != 0;  // the 23 bits after it reserved
    return CodecStatus::Ok;
}

CodecStatus encode_mcmember_record(const McMemberRecord &v,
                                   std::span<uint8_t, kMcMemberRecordSize> out) {
    FieldWriter w(out);
    w.bytes(0, v.mgid);
    w.bytes(16, v.port_gid);
    w.u32(32, v.qkey);
    w.u16(36, v.mlid);
    w.bits(38, 0, 2, v.mtu_selector);
    w.bits(38, 2, 6, v.mtu);
    w.u8(39, v.traffic_class);
    w.u16(40, v.pkey);
    w.bits(42, 0, 2, v.rate_selector);
    w.bits(42, 2, 6, v.rate);
    w.bits(43, 0, 2, v.packet_life_time_selector);
    w.bits(43, 2, 6, v.packet_life_time);
    w.bits(44, 0, 4, v.sl);
    w.bits(44, 4, 20, v.flow_label);
    w.u8(47, v.hop_limit);
    w.bits(48, 0, 4, v.scope);
    w.bits(48, 4, 4, v.join_state);
    w.bits(49, 0, 1, v.proxy_join);
    return encode_status(w);
}

CodecStatus decode_node_record(std::span<const uint8_t> in, NodeRecord &out) {
    if (in.size() < kNodeRecordSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.lid = r.u16(0);  // bytes 2-3 reserved
    decode_node_info(in.subspan(4, kNodeInfoSize), out.node_info);
    decode_node_description(in.subspan(4 + kNodeInfoSize, kNodeDescriptionSize),
                            out.node_description);
    return CodecStatus::Ok;
}

CodecStatus encode_node_record(const NodeRecord &v, std::span<uint8_t, kNodeRecordSize> out) {
    FieldWriter w(out);
    w.u16(0, v.lid);
    const CodecStatus s = encode_node_info(v.node_info, out.subspan<4, kNodeInfoSize>());
    encode_node_description(v.node_description,
                            out.subspan<4 + kNodeInfoSize, kNodeDescriptionSize>());
    return s != CodecStatus::Ok ? s : encode_status(w);
}

CodecStatus decode_port_info_record(std::span<const uint8_t> in, PortInfoRecord &out) {
    if (in.size() < kPortInfoRecordSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.endport_lid = r.u16(0);
    out.port_num = r.u8(2);  // byte 3 reserved
    decode_port_info(in.subspan(4, kPortInfoSize), out.port_info);
    return CodecStatus::Ok;
}

CodecStatus encode_port_info_record(const PortInfoRecord &v,
                                    std::span<uint8_t, kPortInfoRecordSize> out) {
    FieldWriter w(out);
    w.u16(0, v.endport_lid);
    w.u8(2, v.port_num);
    const CodecStatus s = encode_port_info(v.port_info, out.subspan<4, kPortInfoSize>());
    return s != CodecStatus::Ok ? s : encode_status(w);
}

CodecStatus decode_service_record(std::span<const uint8_t> in, ServiceRecord &out) {
    if (in.size() < kServiceRecordSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.service_id = r.u64(0);
    out.service_gid = r.bytes<16>(8);
    out.service_pkey = r.u16(24);  // bytes 26-27 reserved
    out.service_lease = r.u32(28);
    out.service_key = r.bytes<16>(32);
    out.service_name = r.bytes<64>(48);
    out.service_data8 = r.bytes<16>(112);
    for (size_t i = 0; i < 8; ++i)
        out.service_data16[i] = r.u16(128 + 2 * i);
    for (size_t i = 0; i < 4; ++i)
        out.service_data32[i] = r.u32(144 + 4 * i);
    for (size_t i = 0; i < 2; ++i)
        out.service_data64[i] = r.u64(160 + 8 * i);
    return CodecStatus::Ok;
}

CodecStatus encode_service_record(const ServiceRecord &v,
                                  std::span<uint8_t, kServiceRecordSize> out) {
    FieldWriter w(out);
    w.u64(0, v.service_id);
    w.bytes(8, v.service_gid);
    w.u16(24, v.service_pkey);
    w.u32(28, v.service_lease);
    w.bytes(32, v.service_key);
    w.bytes(48, v.service_name);
    w.bytes(112, v.service_data8);
    for (size_t i = 0; i < 8; ++i)
        w.u16(128 + 2 * i, v.service_data16[i]);
    for (size_t i = 0; i < 4; ++i)
        w.u32(144 + 4 * i, v.service_data32[i]);
    for (size_t i = 0; i < 2; ++i)
        w.u64(160 + 8 * i, v.service_data64[i]);
    return encode_status(w);
}

CodecStatus decode_inform_info(std::span<const uint8_t> in, InformInfo &out) {
    if (in.size() < kInformInfoSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.gid = r.bytes<16>(0);
    out.lid_range_begin = r.u16(16);
    out.lid_range_end = r.u16(18);  // bytes 20-21 reserved
    out.is_generic = r.u8(22);
    out.subscribe = r.u8(23);
    out.type = r.u16(24);
    out.trap_number = r.u16(26);
    out.qpn = static_cast<uint32_t>(r.bits(28, 0, 24));
    out.resp_time_value = bits8(r, 31, 3, 5);                      // bits 0-2 of byte 31 reserved
    out.producer_type = static_cast<uint32_t>(r.bits(33, 0, 24));  // byte 32 reserved
    return CodecStatus::Ok;
}

CodecStatus encode_inform_info(const InformInfo &v, std::span<uint8_t, kInformInfoSize> out) {
    FieldWriter w(out);
    w.bytes(0, v.gid);
    w.u16(16, v.lid_range_begin);
    w.u16(18, v.lid_range_end);
    w.u8(22, v.is_generic);
    w.u8(23, v.subscribe);
    w.u16(24, v.type);
    w.u16(26, v.trap_number);
    w.bits(28, 0, 24, v.qpn);
    w.bits(31, 3, 5, v.resp_time_value);
    w.bits(33, 0, 24, v.producer_type);
    return encode_status(w);
}

CodecStatus decode_notice(std::span<const uint8_t> in, Notice &out) {
    if (in.size() < kNoticeSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.is_generic = r.bits(0, 0, 1) != 0;
    out.type = bits8(r, 0, 1, 7);
    out.producer_type = static_cast<uint32_t>(r.bits(1, 0, 24));
    out.trap_number = r.u16(4);
    out.issuer_lid = r.u16(6);
    out.notice_toggle = r.bits(8, 0, 1) != 0;
    out.notice_count = static_cast<uint16_t>(r.bits(8, 1, 15));
    out.data_details = r.bytes<54>(10);
    out.issuer_gid = r.bytes<16>(64);
    return CodecStatus::Ok;
}

CodecStatus encode_notice(const Notice &v, std::span<uint8_t, kNoticeSize> out) {
    FieldWriter w(out);
    w.bits(0, 0, 1, v.is_generic);
    w.bits(0, 1, 7, v.type);
    w.bits(1, 0, 24, v.producer_type);
    w.u16(4, v.trap_number);
    w.u16(6, v.issuer_lid);
    w.bits(8, 0, 1, v.notice_toggle);
    w.bits(8, 1, 15, v.notice_count);
    w.bytes(10, v.data_details);
    w.bytes(64, v.issuer_gid);
    return encode_status(w);
}

}  // namespace softrnic::mad
