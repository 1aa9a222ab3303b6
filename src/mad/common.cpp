// The common MAD header (IBA 1.2 ch. 13, "MAD Common Header").
#include "mad/common.hpp"

#include "mad/fields.hpp"

namespace softrnic::mad {

CodecStatus decode_header(std::span<const uint8_t> in, MadHeader &out) {
    if (in.size() < kMadHeaderSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.base_version = r.u8(0);
    out.mgmt_class = r.u8(1);
    out.class_version = r.u8(2);
    out.method = r.u8(3);
    out.status = r.u16(4);
    out.class_specific = r.u16(6);
    out.tid = r.u64(8);
    out.attr_id = r.u16(16);
    // bytes 18-19 reserved
    out.attr_mod = r.u32(20);
    return out.base_version == kBaseVersion ? CodecStatus::Ok : CodecStatus::BadBaseVersion;
}

void encode_header(const MadHeader &h, std::span<uint8_t, kMadHeaderSize> out) {
    FieldWriter w(out);
    w.u8(0, h.base_version);
    w.u8(1, h.mgmt_class);
    w.u8(2, h.class_version);
    w.u8(3, h.method);
    w.u16(4, h.status);
    w.u16(6, h.class_specific);
    w.u64(8, h.tid);
    w.u16(16, h.attr_id);
    w.u32(20, h.attr_mod);
}

CodecStatus decode_class_header(std::span<const uint8_t> in, uint8_t mgmt_class,
                                uint8_t class_version, MadHeader &out) {
    if (in.size() < kMadSize) return CodecStatus::Truncated;
    const CodecStatus s = decode_header(in, out);
    if (s != CodecStatus::Ok) return s;
    if (out.mgmt_class != mgmt_class) return CodecStatus::BadClass;
    if (out.class_version != class_version) return CodecStatus::BadClassVersion;
    return CodecStatus::Ok;
}

CodecStatus decode_class_port_info(std::span<const uint8_t> in, ClassPortInfo &out) {
    if (in.size() < kClassPortInfoSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.base_version = r.u8(0);
    out.class_version = r.u8(1);
    out.capability_mask = r.u16(2);
    out.capability_mask2 = static_cast<uint32_t>(r.bits(4, 0, 27));
    out.resp_time_value = static_cast<uint8_t>(r.bits(7, 3, 5));
    out.redirect_gid = r.bytes<16>(8);
    out.redirect_tc = r.u8(24);
    out.redirect_sl = static_cast<uint8_t>(r.bits(25, 0, 4));
    out.redirect_fl = static_cast<uint32_t>(r.bits(25, 4, 20));
    out.redirect_lid = r.u16(28);
    out.redirect_pkey = r.u16(30);
    out.redirect_qp = static_cast<uint32_t>(r.bits(33, 0, 24));  // byte 32 reserved
    out.redirect_qkey = r.u32(36);
    out.trap_gid = r.bytes<16>(40);
    out.trap_tc = r.u8(56);
    out.trap_sl = static_cast<uint8_t>(r.bits(57, 0, 4));
    out.trap_fl = static_cast<uint32_t>(r.bits(57, 4, 20));
    out.trap_lid = r.u16(60);
    out.trap_pkey = r.u16(62);
    out.trap_hl = r.u8(64);
    out.trap_qp = static_cast<uint32_t>(r.bits(65, 0, 24));
    out.trap_qkey = r.u32(68);
    return CodecStatus::Ok;
}

CodecStatus encode_class_port_info(const ClassPortInfo &v,
                                   std::span<uint8_t, kClassPortInfoSize> out) {
    FieldWriter w(out);
    w.u8(0, v.base_version);
    w.u8(1, v.class_version);
    w.u16(2, v.capability_mask);
    w.bits(4, 0, 27, v.capability_mask2);
    w.bits(7, 3, 5, v.resp_time_value);
    w.bytes(8, v.redirect_gid);
    w.u8(24, v.redirect_tc);
    w.bits(25, 0, 4, v.redirect_sl);
    w.bits(25, 4, 20, v.redirect_fl);
    w.u16(28, v.redirect_lid);
    w.u16(30, v.redirect_pkey);
    w.bits(33, 0, 24, v.redirect_qp);
    w.u32(36, v.redirect_qkey);
    w.bytes(40, v.trap_gid);
    w.u8(56, v.trap_tc);
    w.bits(57, 0, 4, v.trap_sl);
    w.bits(57, 4, 20, v.trap_fl);
    w.u16(60, v.trap_lid);
    w.u16(62, v.trap_pkey);
    w.u8(64, v.trap_hl);
    w.bits(65, 0, 24, v.trap_qp);
    w.u32(68, v.trap_qkey);
    return encode_status(w);
}

}  // namespace softrnic::mad
