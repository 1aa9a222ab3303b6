// Performance management (class 0x04, version 1; IBA 1.2 ch. 16, "General Services":
// performance management MAD format and the PortCounters attribute).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mad/common.hpp"

namespace softrnic::mad {

inline constexpr uint8_t kPmaClassVersion = 1;
// A PMA MAD: common header, 40 reserved bytes, 192 bytes of data.
inline constexpr size_t kPmaDataOffset = 64;

namespace pma_attr {
inline constexpr uint16_t kPortCounters = 0x0012;
}

// PortCounters (44 bytes, from the start of the PMA data).
inline constexpr size_t kPortCountersSize = 44;
struct PortCounters {
    uint8_t port_select = 0;
    uint16_t counter_select = 0;
    uint16_t symbol_error_counter = 0;
    uint8_t link_error_recovery_counter = 0;
    uint8_t link_downed_counter = 0;
    uint16_t port_rcv_errors = 0;
    uint16_t port_rcv_remote_physical_errors = 0;
    uint16_t port_rcv_switch_relay_errors = 0;
    uint16_t port_xmit_discards = 0;
    uint8_t port_xmit_constraint_errors = 0;
    uint8_t port_rcv_constraint_errors = 0;
    uint8_t local_link_integrity_errors = 0;      // 4 bits
    uint8_t excessive_buffer_overrun_errors = 0;  // 4 bits
    uint16_t vl15_dropped = 0;
    uint32_t port_xmit_data = 0;  // in units of 4 bytes
    uint32_t port_rcv_data = 0;   // in units of 4 bytes
    uint32_t port_xmit_pkts = 0;
    uint32_t port_rcv_pkts = 0;
    uint32_t port_xmit_wait = 0;
    friend bool operator==(const PortCounters &, const PortCounters &) = default;
};
// `in` starts at the PMA data (byte 64 of the MAD).
CodecStatus decode_port_counters(std::span<const uint8_t> in, PortCounters &out);
CodecStatus encode_port_counters(const PortCounters &v, std::span<uint8_t, kPortCountersSize> out);

}  // namespace softrnic::mad
