// SMP formats and SMA attributes (IBA 1.2 ch. 14). Offsets are bytes from the start of the
// MAD or of the attribute, as IBA's layout tables draw them.
#include "mad/smp.hpp"

#include "mad/fields.hpp"

namespace softrnic::mad {

namespace {

bool is_smp_class(uint8_t c) {
    return c == mgmt_class::kSubnLid || c == mgmt_class::kSubnDirected;
}

}  // namespace

CodecStatus decode_smp(std::span<const uint8_t> in, Smp &out) {
    if (in.size() < kMadSize) return CodecStatus::Truncated;
    out = Smp{};
    CodecStatus s = decode_header(in, out.hdr);
    if (s != CodecStatus::Ok) return s;
    if (!is_smp_class(out.hdr.mgmt_class)) return CodecStatus::BadClass;
    if (out.hdr.class_version != kSmpClassVersion) return CodecStatus::BadClassVersion;
    FieldReader r(in);
    out.m_key = r.u64(24);
    out.data = r.bytes<kSmpDataSize>(64);
    if (out.directed()) {
        out.direction = r.bits(4, 0, 1) != 0;
        out.hdr.status = static_cast<uint16_t>(r.bits(4, 1, 15));
        out.hdr.class_specific = 0;
        out.hop_pointer = r.u8(6);
        out.hop_count = r.u8(7);
        out.dr_slid = r.u16(32);
        out.dr_dlid = r.u16(34);
        // bytes 36-63 reserved
        out.initial_path = r.bytes<kSmpPathSize>(128);
        out.return_path = r.bytes<kSmpPathSize>(192);
        if (out.hop_count > kSmpMaxHops) return CodecStatus::BadField;
    }
    // LID-routed: bytes 32-63 and 128-255 reserved.
    return CodecStatus::Ok;
}

CodecStatus encode_smp(const Smp &smp, MadBuffer out) {
    if (!is_smp_class(smp.hdr.mgmt_class)) return CodecStatus::BadClass;
    FieldWriter w(out);
    encode_header(smp.hdr, out.first<kMadHeaderSize>());
    w.u64(24, smp.m_key);
    w.bytes(64, smp.data);
    if (smp.directed()) {
        if (smp.hop_count > kSmpMaxHops) return CodecStatus::OutOfRange;
        w.bits(4, 0, 1, smp.direction ? 1 : 0);
        w.bits(4, 1, 15, smp.hdr.status);
        w.u8(6, smp.hop_pointer);
        w.u8(7, smp.hop_count);
        w.u16(32, smp.dr_slid);
        w.u16(34, smp.dr_dlid);
        w.bytes(128, smp.initial_path);
        w.bytes(192, smp.return_path);
    }
    return encode_status(w);
}

CodecStatus decode_node_info(std::span<const uint8_t> in, NodeInfo &out) {
    if (in.size() < kNodeInfoSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.base_version = r.u8(0);
    out.class_version = r.u8(1);
    out.node_type = r.u8(2);
    out.num_ports = r.u8(3);
    out.system_image_guid = r.u64(4);
    out.node_guid = r.u64(12);
    out.port_guid = r.u64(20);
    out.partition_cap = r.u16(28);
    out.device_id = r.u16(30);
    out.revision = r.u32(32);
    out.local_port_num = r.u8(36);
    out.vendor_id = static_cast<uint32_t>(r.bits(37, 0, 24));
    return CodecStatus::Ok;
}

CodecStatus encode_node_info(const NodeInfo &v, std::span<uint8_t, kNodeInfoSize> out) {
    FieldWriter w(out);
    w.u8(0, v.base_version);
    w.u8(1, v.class_version);
    w.u8(2, v.node_type);
    w.u8(3, v.num_ports);
    w.u64(4, v.system_image_guid);
    w.u64(12, v.node_guid);
    w.u64(20, v.port_guid);
    w.u16(28, v.partition_cap);
    w.u16(30, v.device_id);
    w.u32(32, v.revision);
    w.u8(36, v.local_port_num);
    w.bits(37, 0, 24, v.vendor_id);
    return encode_status(w);
}

CodecStatus decode_node_description(std::span<const uint8_t> in, NodeDescription &out) {
    if (in.size() < kNodeDescriptionSize) return CodecStatus::Truncated;
    out = FieldReader(in).bytes<kNodeDescriptionSize>(0);
    return CodecStatus::Ok;
}

CodecStatus encode_node_description(const NodeDescription &v,
                                    std::span<uint8_t, kNodeDescriptionSize> out) {
    FieldWriter w(out);
    w.bytes(0, v);
    return encode_status(w);
}

CodecStatus decode_port_info(std::span<const uint8_t> in, PortInfo &out) {
    if (in.size() < kPortInfoSize) return CodecStatus::Truncated;
    FieldReader r(in);
    auto b = [&r](size_t byte, unsigned bit, unsigned width) {
        return static_cast<uint8_t>(r.bits(byte, bit, width));
    };
    out.m_key = r.u64(0);
    out.gid_prefix = r.u64(8);
    out.lid = r.u16(16);
    out.master_sm_lid = r.u16(18);
    out.capability_mask = r.u32(20);
    out.diag_code = r.u16(24);
    out.m_key_lease_period = r.u16(26);
    out.local_port_num = r.u8(28);
    out.link_width_enabled = r.u8(29);
    out.link_width_supported = r.u8(30);
    out.link_width_active = r.u8(31);
    out.link_speed_supported = b(32, 0, 4);
    out.port_state = b(32, 4, 4);
    out.port_phys_state = b(33, 0, 4);
    out.link_down_default_state = b(33, 4, 4);
    out.m_key_protect_bits = b(34, 0, 2);
    out.lmc = b(34, 5, 3);  // bits 2-4 reserved
    out.link_speed_active = b(35, 0, 4);
    out.link_speed_enabled = b(35, 4, 4);
    out.neighbor_mtu = b(36, 0, 4);
    out.master_sm_sl = b(36, 4, 4);
    out.vl_cap = b(37, 0, 4);
    out.init_type = b(37, 4, 4);
    out.vl_high_limit = r.u8(38);
    out.vl_arbitration_high_cap = r.u8(39);
    out.vl_arbitration_low_cap = r.u8(40);
    out.init_type_reply = b(41, 0, 4);
    out.mtu_cap = b(41, 4, 4);
    out.vl_stall_count = b(42, 0, 3);
    out.hoq_life = b(42, 3, 5);
    out.operational_vls = b(43, 0, 4);
    out.partition_enforcement_inbound = b(43, 4, 1) != 0;
    out.partition_enforcement_outbound = b(43, 5, 1) != 0;
    out.filter_raw_inbound = b(43, 6, 1) != 0;
    out.filter_raw_outbound = b(43, 7, 1) != 0;
    out.m_key_violations = r.u16(44);
    out.p_key_violations = r.u16(46);
    out.q_key_violations = r.u16(48);
    out.guid_cap = r.u8(50);
    out.client_reregister = b(51, 0, 1) != 0;  // bits 1-2 reserved
    out.subnet_timeout = b(51, 3, 5);
    out.resp_time_value = b(52, 3, 5);  // bits 0-2 reserved
    out.local_phy_errors = b(53, 0, 4);
    out.overrun_errors = b(53, 4, 4);
    out.max_credit_hint = r.u16(54);
    out.link_round_trip_latency = static_cast<uint32_t>(r.bits(57, 0, 24));  // byte 56 reserved
    // bytes 60-63 reserved in IBA 1.2
    return CodecStatus::Ok;
}

CodecStatus encode_port_info(const PortInfo &v, std::span<uint8_t, kPortInfoSize> out) {
    FieldWriter w(out);
    w.u64(0, v.m_key);
    w.u64(8, v.gid_prefix);
    w.u16(16, v.lid);
    w.u16(18, v.master_sm_lid);
    w.u32(20, v.capability_mask);
    w.u16(24, v.diag_code);
    w.u16(26, v.m_key_lease_period);
    w.u8(28, v.local_port_num);
    w.u8(29, v.link_width_enabled);
    w.u8(30, v.link_width_supported);
    w.u8(31, v.link_width_active);
    w.bits(32, 0, 4, v.link_speed_supported);
    w.bits(32, 4, 4, v.port_state);
    w.bits(33, 0, 4, v.port_phys_state);
    w.bits(33, 4, 4, v.link_down_default_state);
    w.bits(34, 0, 2, v.m_key_protect_bits);
    w.bits(34, 5, 3, v.lmc);
    w.bits(35, 0, 4, v.link_speed_active);
    w.bits(35, 4, 4, v.link_speed_enabled);
    w.bits(36, 0, 4, v.neighbor_mtu);
    w.bits(36, 4, 4, v.master_sm_sl);
    w.bits(37, 0, 4, v.vl_cap);
    w.bits(37, 4, 4, v.init_type);
    w.u8(38, v.vl_high_limit);
    w.u8(39, v.vl_arbitration_high_cap);
    w.u8(40, v.vl_arbitration_low_cap);
    w.bits(41, 0, 4, v.init_type_reply);
    w.bits(41, 4, 4, v.mtu_cap);
    w.bits(42, 0, 3, v.vl_stall_count);
    w.bits(42, 3, 5, v.hoq_life);
    w.bits(43, 0, 4, v.operational_vls);
    w.bits(43, 4, 1, v.partition_enforcement_inbound);
    w.bits(43, 5, 1, v.partition_enforcement_outbound);
    w.bits(43, 6, 1, v.filter_raw_inbound);
    w.bits(43, 7, 1, v.filter_raw_outbound);
    w.u16(44, v.m_key_violations);
    w.u16(46, v.p_key_violations);
    w.u16(48, v.q_key_violations);
    w.u8(50, v.guid_cap);
    w.bits(51, 0, 1, v.client_reregister);
    w.bits(51, 3, 5, v.subnet_timeout);
    w.bits(52, 3, 5, v.resp_time_value);
    w.bits(53, 0, 4, v.local_phy_errors);
    w.bits(53, 4, 4, v.overrun_errors);
    w.u16(54, v.max_credit_hint);
    w.bits(57, 0, 24, v.link_round_trip_latency);
    return encode_status(w);
}

CodecStatus decode_pkey_table(std::span<const uint8_t> in, PKeyBlock &out) {
    if (in.size() < kPKeyTableSize) return CodecStatus::Truncated;
    FieldReader r(in);
    for (size_t i = 0; i < kPKeysPerBlock; ++i)
        out[i] = r.u16(2 * i);
    return CodecStatus::Ok;
}

CodecStatus encode_pkey_table(const PKeyBlock &v, std::span<uint8_t, kPKeyTableSize> out) {
    FieldWriter w(out);
    for (size_t i = 0; i < kPKeysPerBlock; ++i)
        w.u16(2 * i, v[i]);
    return encode_status(w);
}

CodecStatus decode_guid_info(std::span<const uint8_t> in, GuidBlock &out) {
    if (in.size() < kGuidInfoSize) return CodecStatus::Truncated;
    FieldReader r(in);
    for (size_t i = 0; i < kGuidsPerBlock; ++i)
        out[i] = r.u64(8 * i);
    return CodecStatus::Ok;
}

CodecStatus encode_guid_info(const GuidBlock &v, std::span<uint8_t, kGuidInfoSize> out) {
    FieldWriter w(out);
    for (size_t i = 0; i < kGuidsPerBlock; ++i)
        w.u64(8 * i, v[i]);
    return encode_status(w);
}

CodecStatus decode_sm_info(std::span<const uint8_t> in, SmInfo &out) {
    if (in.size() < kSmInfoSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.guid = r.u64(0);
    out.sm_key = r.u64(8);
    out.act_count = r.u32(16);
    out.priority = static_cast<uint8_t>(r.bits(20, 0, 4));
    out.sm_state = static_cast<uint8_t>(r.bits(20, 4, 4));
    return CodecStatus::Ok;
}

CodecStatus encode_sm_info(const SmInfo &v, std::span<uint8_t, kSmInfoSize> out) {
    FieldWriter w(out);
    w.u64(0, v.guid);
    w.u64(8, v.sm_key);
    w.u32(16, v.act_count);
    w.bits(20, 0, 4, v.priority);
    w.bits(20, 4, 4, v.sm_state);
    return encode_status(w);
}

}  // namespace softrnic::mad
