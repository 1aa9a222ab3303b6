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

}  // namespace softrnic::mad
