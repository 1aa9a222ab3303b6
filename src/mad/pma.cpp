// PortCounters (IBA 1.2 ch. 16, PortCounters attribute layout).
#include "mad/pma.hpp"

#include "mad/fields.hpp"

namespace softrnic::mad {

CodecStatus decode_port_counters(std::span<const uint8_t> in, PortCounters &out) {
    if (in.size() < kPortCountersSize) return CodecStatus::Truncated;
    FieldReader r(in);
    out.port_select = r.u8(1);  // byte 0 reserved
    out.counter_select = r.u16(2);
    out.symbol_error_counter = r.u16(4);
    out.link_error_recovery_counter = r.u8(6);
    out.link_downed_counter = r.u8(7);
    out.port_rcv_errors = r.u16(8);
    out.port_rcv_remote_physical_errors = r.u16(10);
    out.port_rcv_switch_relay_errors = r.u16(12);
    out.port_xmit_discards = r.u16(14);
    out.port_xmit_constraint_errors = r.u8(16);
    out.port_rcv_constraint_errors = r.u8(17);  // byte 18 reserved
    out.local_link_integrity_errors = static_cast<uint8_t>(r.bits(19, 0, 4));
    out.excessive_buffer_overrun_errors = static_cast<uint8_t>(r.bits(19, 4, 4));
    out.vl15_dropped = r.u16(22);  // bytes 20-21 reserved
    out.port_xmit_data = r.u32(24);
    out.port_rcv_data = r.u32(28);
    out.port_xmit_pkts = r.u32(32);
    out.port_rcv_pkts = r.u32(36);
    out.port_xmit_wait = r.u32(40);
    return CodecStatus::Ok;
}

CodecStatus encode_port_counters(const PortCounters &v, std::span<uint8_t, kPortCountersSize> out) {
    FieldWriter w(out);
    w.u8(1, v.port_select);
    w.u16(2, v.counter_select);
    w.u16(4, v.symbol_error_counter);
    w.u8(6, v.link_error_recovery_counter);
    w.u8(7, v.link_downed_counter);
    w.u16(8, v.port_rcv_errors);
    w.u16(10, v.port_rcv_remote_physical_errors);
    w.u16(12, v.port_rcv_switch_relay_errors);
    w.u16(14, v.port_xmit_discards);
    w.u8(16, v.port_xmit_constraint_errors);
    w.u8(17, v.port_rcv_constraint_errors);
    w.bits(19, 0, 4, v.local_link_integrity_errors);
    w.bits(19, 4, 4, v.excessive_buffer_overrun_errors);
    w.u16(22, v.vl15_dropped);
    w.u32(24, v.port_xmit_data);
    w.u32(28, v.port_rcv_data);
    w.u32(32, v.port_xmit_pkts);
    w.u32(36, v.port_rcv_pkts);
    w.u32(40, v.port_xmit_wait);
    return encode_status(w);
}

}  // namespace softrnic::mad
