// Subnet administration MADs (class 0x03, version 2; IBA 1.2 ch. 15), the RMPP header
// (IBA 1.2 ch. 13, "Reliable Multi-Packet Transaction Protocol"), and the SA records the
// embedded SA serves (docs/ib-personality.md §5.5).
//
// A record's size here is its size in the layout; in a GetTable response records sit at
// AttributeOffset × 8 bytes apart (record_stride_units()).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mad/common.hpp"
#include "mad/smp.hpp"

namespace softrnic::mad {

inline constexpr uint8_t kSaClassVersion = 2;
inline constexpr size_t kRmppHeaderOffset = 24;
inline constexpr size_t kSaHeaderOffset = 36;
inline constexpr size_t kSaDataOffset = 56;
inline constexpr size_t kSaDataSize = kMadSize - kSaDataOffset;  // 200

namespace sa_attr {
inline constexpr uint16_t kNodeRecord = 0x0011;
inline constexpr uint16_t kPortInfoRecord = 0x0012;
inline constexpr uint16_t kServiceRecord = 0x0031;
inline constexpr uint16_t kPathRecord = 0x0035;
inline constexpr uint16_t kMcMemberRecord = 0x0038;
}  // namespace sa_attr

// SA status codes, carried in bits 8-15 of the MAD status (IBA 1.2 ch. 15).
namespace sa_status {
inline constexpr uint16_t kNoResources = 0x0100;
inline constexpr uint16_t kReqInvalid = 0x0200;
inline constexpr uint16_t kNoRecords = 0x0300;
inline constexpr uint16_t kTooManyRecords = 0x0400;
inline constexpr uint16_t kReqInvalidGid = 0x0500;
inline constexpr uint16_t kReqInsufficientComponents = 0x0600;
}  // namespace sa_status

// RMPP header, bytes 24-35 of a MAD of any class that uses RMPP.
namespace rmpp {
inline constexpr uint8_t kVersion = 1;
inline constexpr uint8_t kTypeData = 1;
inline constexpr uint8_t kTypeAck = 2;
inline constexpr uint8_t kTypeStop = 3;
inline constexpr uint8_t kTypeAbort = 4;
inline constexpr uint8_t kFlagActive = 0x1;
inline constexpr uint8_t kFlagFirst = 0x2;
inline constexpr uint8_t kFlagLast = 0x4;
}  // namespace rmpp
struct RmppHeader {
    uint8_t version = 0;  // 0: RMPP not used
    uint8_t type = 0;
    uint8_t resp_time = 0;  // RRespTime, 5 bits
    uint8_t flags = 0;      // 3 bits: Active, First, Last
    uint8_t status = 0;
    uint32_t data1 = 0;  // DATA/ACK: SegmentNumber
    uint32_t data2 = 0;  // DATA: PayloadLength; ACK: NewWindowLast
    friend bool operator==(const RmppHeader &, const RmppHeader &) = default;
};
// `in` is the whole MAD: Truncated below 36 bytes.
CodecStatus decode_rmpp_header(std::span<const uint8_t> in, RmppHeader &out);
// Writes bytes 24-35 of `mad`; OutOfRange for resp_time above 31 or flags above 7.
CodecStatus encode_rmpp_header(const RmppHeader &h, MadBuffer mad);

// One SA MAD: common header, RMPP header, SA header, 200 bytes of data.
struct SaMad {
    MadHeader hdr{};
    RmppHeader rmpp{};
    uint64_t sm_key = 0;
    uint16_t attr_offset = 0;  // in units of 8 bytes
    uint64_t component_mask = 0;
    std::array<uint8_t, kSaDataSize> data{};
    friend bool operator==(const SaMad &, const SaMad &) = default;
};
// Truncated below 256 bytes; BadBaseVersion, BadClass (not 0x03), BadClassVersion (not 2),
// each with the common header filled.
CodecStatus decode_sa_mad(std::span<const uint8_t> in, SaMad &out);
CodecStatus encode_sa_mad(const SaMad &m, MadBuffer out);

// AttributeOffset for records of `size` bytes: the size rounded up to 8-byte units.
constexpr uint16_t record_stride_units(size_t size) {
    return static_cast<uint16_t>((size + 7) / 8);
}

// PathRecord (64 bytes). Bytes 0-7 are reserved in IBA 1.2 and the ServiceID in later
// releases; they are kept as `service_id` so a requester that sets them is answered.
inline constexpr size_t kPathRecordSize = 64;
struct PathRecord {
    uint64_t service_id = 0;
    Gid dgid{};
    Gid sgid{};
    uint16_t dlid = 0;
    uint16_t slid = 0;
    bool raw_traffic = false;
    uint32_t flow_label = 0;  // 20 bits
    uint8_t hop_limit = 0;
    uint8_t traffic_class = 0;
    bool reversible = false;
    uint8_t numb_path = 0;  // 7 bits
    uint16_t pkey = 0;
    uint8_t sl = 0;                         // 4 bits
    uint8_t mtu_selector = 0;               // 2 bits
    uint8_t mtu = 0;                        // 6 bits
    uint8_t rate_selector = 0;              // 2 bits
    uint8_t rate = 0;                       // 6 bits
    uint8_t packet_life_time_selector = 0;  // 2 bits
    uint8_t packet_life_time = 0;           // 6 bits
    uint8_t preference = 0;
    friend bool operator==(const PathRecord &, const PathRecord &) = default;
};
// Component mask bits: one per field in layout order, reserved fields included.
namespace path_comp {
inline constexpr uint64_t kServiceId = 0x3;  // bits 0-1 (the two reserved words in IBA 1.2)
inline constexpr uint64_t kDgid = 1ull << 2;
inline constexpr uint64_t kSgid = 1ull << 3;
inline constexpr uint64_t kDlid = 1ull << 4;
inline constexpr uint64_t kSlid = 1ull << 5;
inline constexpr uint64_t kRawTraffic = 1ull << 6;
inline constexpr uint64_t kFlowLabel = 1ull << 8;
inline constexpr uint64_t kHopLimit = 1ull << 9;
inline constexpr uint64_t kTClass = 1ull << 10;
inline constexpr uint64_t kReversible = 1ull << 11;
inline constexpr uint64_t kNumbPath = 1ull << 12;
inline constexpr uint64_t kPKey = 1ull << 13;
inline constexpr uint64_t kSl = 1ull << 15;
inline constexpr uint64_t kMtuSelector = 1ull << 16;
inline constexpr uint64_t kMtu = 1ull << 17;
inline constexpr uint64_t kRateSelector = 1ull << 18;
inline constexpr uint64_t kRate = 1ull << 19;
inline constexpr uint64_t kPacketLifeTimeSelector = 1ull << 20;
inline constexpr uint64_t kPacketLifeTime = 1ull << 21;
inline constexpr uint64_t kPreference = 1ull << 22;
}  // namespace path_comp
CodecStatus decode_path_record(std::span<const uint8_t> in, PathRecord &out);
CodecStatus encode_path_record(const PathRecord &v, std::span<uint8_t, kPathRecordSize> out);

// MCMemberRecord (52 bytes).
inline constexpr size_t kMcMemberRecordSize = 52;
struct McMemberRecord {
    Gid mgid{};
    Gid port_gid{};
    uint32_t qkey = 0;
    uint16_t mlid = 0;
    uint8_t mtu_selector = 0;  // 2 bits
    uint8_t mtu = 0;           // 6 bits
    uint8_t traffic_class = 0;
    uint16_t pkey = 0;
    uint8_t rate_selector = 0;              // 2 bits
    uint8_t rate = 0;                       // 6 bits
    uint8_t packet_life_time_selector = 0;  // 2 bits
    uint8_t packet_life_time = 0;           // 6 bits
    uint8_t sl = 0;                         // 4 bits
    uint32_t flow_label = 0;                // 20 bits
    uint8_t hop_limit = 0;
    uint8_t scope = 0;       // 4 bits
    uint8_t join_state = 0;  // 4 bits: full, non, send-only non member
    bool proxy_join = false;
    friend bool operator==(const McMemberRecord &, const McMemberRecord &) = default;
};
namespace mcmember_comp {
inline constexpr uint64_t kMgid = 1ull << 0;
inline constexpr uint64_t kPortGid = 1ull << 1;
inline constexpr uint64_t kQKey = 1ull << 2;
inline constexpr uint64_t kMlid = 1ull << 3;
inline constexpr uint64_t kMtuSelector = 1ull << 4;
inline constexpr uint64_t kMtu = 1ull << 5;
inline constexpr uint64_t kTClass = 1ull << 6;
inline constexpr uint64_t kPKey = 1ull << 7;
inline constexpr uint64_t kRateSelector = 1ull << 8;
inline constexpr uint64_t kRate = 1ull << 9;
inline constexpr uint64_t kPacketLifeTimeSelector = 1ull << 10;
inline constexpr uint64_t kPacketLifeTime = 1ull << 11;
inline constexpr uint64_t kSl = 1ull << 12;
inline constexpr uint64_t kFlowLabel = 1ull << 13;
inline constexpr uint64_t kHopLimit = 1ull << 14;
inline constexpr uint64_t kScope = 1ull << 15;
inline constexpr uint64_t kJoinState = 1ull << 16;
inline constexpr uint64_t kProxyJoin = 1ull << 17;
}  // namespace mcmember_comp
CodecStatus decode_mcmember_record(std::span<const uint8_t> in, McMemberRecord &out);
CodecStatus encode_mcmember_record(const McMemberRecord &v,
                                   std::span<uint8_t, kMcMemberRecordSize> out);

// NodeRecord (108 bytes): LID, reserved, NodeInfo, NodeDescription.
inline constexpr size_t kNodeRecordSize = 108;
struct NodeRecord {
    uint16_t lid = 0;
    NodeInfo node_info{};
    NodeDescription node_description{};
    friend bool operator==(const NodeRecord &, const NodeRecord &) = default;
};
CodecStatus decode_node_record(std::span<const uint8_t> in, NodeRecord &out);
CodecStatus encode_node_record(const NodeRecord &v, std::span<uint8_t, kNodeRecordSize> out);

// PortInfoRecord (68 bytes): EndportLID, PortNum, reserved, PortInfo.
inline constexpr size_t kPortInfoRecordSize = 68;
struct PortInfoRecord {
    uint16_t endport_lid = 0;
    uint8_t port_num = 0;
    PortInfo port_info{};
    friend bool operator==(const PortInfoRecord &, const PortInfoRecord &) = default;
};
CodecStatus decode_port_info_record(std::span<const uint8_t> in, PortInfoRecord &out);
CodecStatus encode_port_info_record(const PortInfoRecord &v,
                                    std::span<uint8_t, kPortInfoRecordSize> out);

// ServiceRecord (176 bytes).
inline constexpr size_t kServiceRecordSize = 176;
inline constexpr uint32_t kServiceLeaseForever = 0xFFFFFFFF;
struct ServiceRecord {
    uint64_t service_id = 0;
    Gid service_gid{};
    uint16_t service_pkey = 0;
    uint32_t service_lease = 0;  // seconds
    std::array<uint8_t, 16> service_key{};
    std::array<uint8_t, 64> service_name{};
    std::array<uint8_t, 16> service_data8{};
    std::array<uint16_t, 8> service_data16{};
    std::array<uint32_t, 4> service_data32{};
    std::array<uint64_t, 2> service_data64{};
    friend bool operator==(const ServiceRecord &, const ServiceRecord &) = default;
};
CodecStatus decode_service_record(std::span<const uint8_t> in, ServiceRecord &out);
CodecStatus encode_service_record(const ServiceRecord &v,
                                  std::span<uint8_t, kServiceRecordSize> out);

// InformInfo (36 bytes; IBA 1.2 ch. 13, also an SA attribute).
inline constexpr size_t kInformInfoSize = 36;
struct InformInfo {
    Gid gid{};
    uint16_t lid_range_begin = 0;
    uint16_t lid_range_end = 0;
    uint8_t is_generic = 0;
    uint8_t subscribe = 0;
    uint16_t type = 0;
    uint16_t trap_number = 0;     // generic; DeviceID when vendor specific
    uint32_t qpn = 0;             // 24 bits
    uint8_t resp_time_value = 0;  // 5 bits
    uint32_t producer_type = 0;   // 24 bits; VendorID when vendor specific
    friend bool operator==(const InformInfo &, const InformInfo &) = default;
};
CodecStatus decode_inform_info(std::span<const uint8_t> in, InformInfo &out);
CodecStatus encode_inform_info(const InformInfo &v, std::span<uint8_t, kInformInfoSize> out);

// Notice (80 bytes; IBA 1.2 ch. 13): the data of a Trap or Report.
inline constexpr size_t kNoticeSize = 80;
struct Notice {
    bool is_generic = false;
    uint8_t type = 0;            // 7 bits
    uint32_t producer_type = 0;  // 24 bits; VendorID when vendor specific
    uint16_t trap_number = 0;    // DeviceID when vendor specific
    uint16_t issuer_lid = 0;
    bool notice_toggle = false;
    uint16_t notice_count = 0;  // 15 bits
    std::array<uint8_t, 54> data_details{};
    Gid issuer_gid{};
    friend bool operator==(const Notice &, const Notice &) = default;
};
CodecStatus decode_notice(std::span<const uint8_t> in, Notice &out);
CodecStatus encode_notice(const Notice &v, std::span<uint8_t, kNoticeSize> out);

}  // namespace softrnic::mad
