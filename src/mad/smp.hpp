// Subnet management packets and the SMA's attributes (IBA 1.2 ch. 14, "Subnet Management":
// SMP formats, LID-routed and directed-route; attributes NodeInfo, NodeDescription,
// PortInfo, P_KeyTable, GUIDInfo, SMInfo).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mad/common.hpp"

namespace softrnic::mad {

inline constexpr uint8_t kSmpClassVersion = 1;
inline constexpr size_t kSmpDataSize = 64;
inline constexpr size_t kSmpPathSize = 64;
// The path arrays have 64 bytes and entry 0 is unused, so a route has at most 63 hops.
inline constexpr uint8_t kSmpMaxHops = 63;

namespace smp_attr {
inline constexpr uint16_t kNodeDescription = 0x0010;
inline constexpr uint16_t kNodeInfo = 0x0011;
inline constexpr uint16_t kGuidInfo = 0x0014;
inline constexpr uint16_t kPortInfo = 0x0015;
inline constexpr uint16_t kPKeyTable = 0x0016;
inline constexpr uint16_t kSmInfo = 0x0020;
}  // namespace smp_attr

// One SMP. `hdr.mgmt_class` says which kind (0x01 LID-routed, 0x81 directed route). For a
// directed-route SMP the 16-bit status word carries the D bit and a 15-bit status and the
// class-specific word carries the hop pointer and count: `hdr.status` is then the 15-bit
// status, `hdr.class_specific` is not used (decoded 0), and the fields below hold the rest.
// The directed-route fields are 0 in a decoded LID-routed SMP and not encoded for one.
struct Smp {
    MadHeader hdr{};
    bool direction = false;  // D bit: 1 on the way back (directed route)
    uint8_t hop_pointer = 0;
    uint8_t hop_count = 0;  // 0..63
    uint64_t m_key = 0;
    uint16_t dr_slid = 0;
    uint16_t dr_dlid = 0;
    std::array<uint8_t, kSmpDataSize> data{};
    std::array<uint8_t, kSmpPathSize> initial_path{};
    std::array<uint8_t, kSmpPathSize> return_path{};
    bool directed() const { return hdr.mgmt_class == mgmt_class::kSubnDirected; }
    friend bool operator==(const Smp &, const Smp &) = default;
};

// Truncated below 256 bytes; BadBaseVersion; BadClass unless 0x01/0x81; BadClassVersion
// unless 1; BadField for a directed-route hop count above 63.
CodecStatus decode_smp(std::span<const uint8_t> in, Smp &out);
// BadClass unless 0x01/0x81; OutOfRange for a directed-route status above 0x7FFF or hop
// count above 63.
CodecStatus encode_smp(const Smp &smp, MadBuffer out);

// NodeInfo (40 bytes).
inline constexpr size_t kNodeInfoSize = 40;
struct NodeInfo {
    uint8_t base_version = kBaseVersion;
    uint8_t class_version = kSmpClassVersion;
    uint8_t node_type = 0;  // 1 CA, 2 switch, 3 router
    uint8_t num_ports = 0;
    uint64_t system_image_guid = 0;
    uint64_t node_guid = 0;
    uint64_t port_guid = 0;
    uint16_t partition_cap = 0;
    uint16_t device_id = 0;
    uint32_t revision = 0;
    uint8_t local_port_num = 0;
    uint32_t vendor_id = 0;  // 24 bits
    friend bool operator==(const NodeInfo &, const NodeInfo &) = default;
};
CodecStatus decode_node_info(std::span<const uint8_t> in, NodeInfo &out);
CodecStatus encode_node_info(const NodeInfo &v, std::span<uint8_t, kNodeInfoSize> out);

// NodeDescription (64 bytes of UTF-8, not necessarily terminated).
inline constexpr size_t kNodeDescriptionSize = 64;
using NodeDescription = std::array<uint8_t, kNodeDescriptionSize>;
CodecStatus decode_node_description(std::span<const uint8_t> in, NodeDescription &out);
CodecStatus encode_node_description(const NodeDescription &v,
                                    std::span<uint8_t, kNodeDescriptionSize> out);

// PortInfo (64 bytes, the IBA 1.2 layout: the last word is reserved).
inline constexpr size_t kPortInfoSize = 64;
struct PortInfo {
    uint64_t m_key = 0;
    uint64_t gid_prefix = 0;
    uint16_t lid = 0;
    uint16_t master_sm_lid = 0;
    uint32_t capability_mask = 0;
    uint16_t diag_code = 0;
    uint16_t m_key_lease_period = 0;
    uint8_t local_port_num = 0;
    uint8_t link_width_enabled = 0;
    uint8_t link_width_supported = 0;
    uint8_t link_width_active = 0;
    uint8_t link_speed_supported = 0;     // 4 bits
    uint8_t port_state = 0;               // 4 bits
    uint8_t port_phys_state = 0;          // 4 bits
    uint8_t link_down_default_state = 0;  // 4 bits
    uint8_t m_key_protect_bits = 0;       // 2 bits
    uint8_t lmc = 0;                      // 3 bits
    uint8_t link_speed_active = 0;        // 4 bits
    uint8_t link_speed_enabled = 0;       // 4 bits
    uint8_t neighbor_mtu = 0;             // 4 bits
    uint8_t master_sm_sl = 0;             // 4 bits
    uint8_t vl_cap = 0;                   // 4 bits
    uint8_t init_type = 0;                // 4 bits
    uint8_t vl_high_limit = 0;
    uint8_t vl_arbitration_high_cap = 0;
    uint8_t vl_arbitration_low_cap = 0;
    uint8_t init_type_reply = 0;  // 4 bits
    uint8_t mtu_cap = 0;          // 4 bits
    uint8_t vl_stall_count = 0;   // 3 bits
    uint8_t hoq_life = 0;         // 5 bits
    uint8_t operational_vls = 0;  // 4 bits
    bool partition_enforcement_inbound = false;
    bool partition_enforcement_outbound = false;
    bool filter_raw_inbound = false;
    bool filter_raw_outbound = false;
    uint16_t m_key_violations = 0;
    uint16_t p_key_violations = 0;
    uint16_t q_key_violations = 0;
    uint8_t guid_cap = 0;
    bool client_reregister = false;
    uint8_t subnet_timeout = 0;    // 5 bits
    uint8_t resp_time_value = 0;   // 5 bits
    uint8_t local_phy_errors = 0;  // 4 bits
    uint8_t overrun_errors = 0;    // 4 bits
    uint16_t max_credit_hint = 0;
    uint32_t link_round_trip_latency = 0;  // 24 bits
    friend bool operator==(const PortInfo &, const PortInfo &) = default;
};
CodecStatus decode_port_info(std::span<const uint8_t> in, PortInfo &out);
CodecStatus encode_port_info(const PortInfo &v, std::span<uint8_t, kPortInfoSize> out);

// P_KeyTable block (32 P_Keys; the attribute modifier selects the block). Bit 15 of a
// P_Key is the membership bit (1 full, 0 limited).
inline constexpr size_t kPKeyTableSize = 64;
inline constexpr size_t kPKeysPerBlock = 32;
using PKeyBlock = std::array<uint16_t, kPKeysPerBlock>;
CodecStatus decode_pkey_table(std::span<const uint8_t> in, PKeyBlock &out);
CodecStatus encode_pkey_table(const PKeyBlock &v, std::span<uint8_t, kPKeyTableSize> out);

// GUIDInfo block (8 GUIDs; the attribute modifier selects the block).
inline constexpr size_t kGuidInfoSize = 64;
inline constexpr size_t kGuidsPerBlock = 8;
using GuidBlock = std::array<uint64_t, kGuidsPerBlock>;
CodecStatus decode_guid_info(std::span<const uint8_t> in, GuidBlock &out);
CodecStatus encode_guid_info(const GuidBlock &v, std::span<uint8_t, kGuidInfoSize> out);

// SMInfo (21 bytes).
inline constexpr size_t kSmInfoSize = 21;
struct SmInfo {
    uint64_t guid = 0;
    uint64_t sm_key = 0;
    uint32_t act_count = 0;
    uint8_t priority = 0;  // 4 bits
    uint8_t sm_state = 0;  // 4 bits: 0 not active, 1 discovering, 2 standby, 3 master
    friend bool operator==(const SmInfo &, const SmInfo &) = default;
};
CodecStatus decode_sm_info(std::span<const uint8_t> in, SmInfo &out);
CodecStatus encode_sm_info(const SmInfo &v, std::span<uint8_t, kSmInfoSize> out);

}  // namespace softrnic::mad
