// Communication management messages (class 0x07, version 2; IBA 1.2 ch. 12, "Communication
// Management": message formats and their private data).
//
// Each message is the 232 bytes after the common header. A receiver decodes the header with
// decode_class_header(mad, mgmt_class::kCm, kCmClassVersion, hdr), picks the message by
// hdr.attr_id, and hands cm_message(mad) to its decoder. Private data is a fixed-size field
// of every message: there is no length on the wire, so none is read.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mad/common.hpp"

namespace softrnic::mad {

inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr size_t kCmMessageSize = kMadSize - kMadHeaderSize;  // 232

namespace cm_attr {
inline constexpr uint16_t kReq = 0x0010;
inline constexpr uint16_t kMra = 0x0011;
inline constexpr uint16_t kRej = 0x0012;
inline constexpr uint16_t kRep = 0x0013;
inline constexpr uint16_t kRtu = 0x0014;
inline constexpr uint16_t kDreq = 0x0015;
inline constexpr uint16_t kDrep = 0x0016;
inline constexpr uint16_t kSidrReq = 0x0017;
inline constexpr uint16_t kSidrRep = 0x0018;
inline constexpr uint16_t kLap = 0x0019;
inline constexpr uint16_t kApr = 0x001A;
}  // namespace cm_attr

// Private data sizes (docs/ib-personality.md §6.2).
inline constexpr size_t kReqPrivateData = 92;
inline constexpr size_t kMraPrivateData = 222;
inline constexpr size_t kRejPrivateData = 148;
inline constexpr size_t kRepPrivateData = 196;
inline constexpr size_t kRtuPrivateData = 224;
inline constexpr size_t kDreqPrivateData = 220;
inline constexpr size_t kDrepPrivateData = 224;
inline constexpr size_t kSidrReqPrivateData = 216;
inline constexpr size_t kSidrRepPrivateData = 136;
inline constexpr size_t kLapPrivateData = 168;
inline constexpr size_t kAprPrivateData = 148;
inline constexpr size_t kCmAdditionalInfo = 72;  // REJ ARI, APR and SIDR_REP additional info

using CmBuffer = std::span<uint8_t, kCmMessageSize>;

// The 232 bytes after the common header of a whole MAD (empty when `mad` is shorter).
std::span<const uint8_t> cm_message(std::span<const uint8_t> mad);
inline CmBuffer cm_message(MadBuffer mad) {
    return mad.subspan<kMadHeaderSize>();
}

// One path of a REQ (primary or alternate).
struct CmReqPath {
    uint16_t local_lid = 0;
    uint16_t remote_lid = 0;
    Gid local_gid{};
    Gid remote_gid{};
    uint32_t flow_label = 0;  // 20 bits
    uint8_t packet_rate = 0;  // 6 bits
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 0;
    uint8_t sl = 0;  // 4 bits
    bool subnet_local = false;
    uint8_t local_ack_timeout = 0;  // 5 bits
    friend bool operator==(const CmReqPath &, const CmReqPath &) = default;
};

struct CmReq {
    uint32_t local_comm_id = 0;
    uint64_t service_id = 0;
    uint64_t local_ca_guid = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;  // 24 bits
    uint8_t responder_resources = 0;
    uint32_t local_eecn = 0;  // 24 bits
    uint8_t initiator_depth = 0;
    uint32_t remote_eecn = 0;                // 24 bits
    uint8_t remote_cm_response_timeout = 0;  // 5 bits
    uint8_t transport_service_type = 0;      // 2 bits: 0 RC, 1 UC, 2 RD
    bool end_to_end_flow_control = false;
    uint32_t starting_psn = 0;              // 24 bits
    uint8_t local_cm_response_timeout = 0;  // 5 bits
    uint8_t retry_count = 0;                // 3 bits
    uint16_t pkey = 0;
    uint8_t path_mtu = 0;  // 4 bits
    bool rdc_exists = false;
    uint8_t rnr_retry_count = 0;  // 3 bits
    uint8_t max_cm_retries = 0;   // 4 bits
    bool srq = false;
    uint8_t extended_transport_type = 0;  // 3 bits
    CmReqPath primary{};
    CmReqPath alternate{};
    std::array<uint8_t, kReqPrivateData> private_data{};
    friend bool operator==(const CmReq &, const CmReq &) = default;
};

// MessageMRAed / MessageRejected values.
namespace cm_msg_ref {
inline constexpr uint8_t kReq = 0;
inline constexpr uint8_t kRep = 1;
inline constexpr uint8_t kLap = 2;    // MRA only
inline constexpr uint8_t kOther = 2;  // REJ: "other"
}  // namespace cm_msg_ref

struct CmMra {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t message_mraed = 0;    // 2 bits
    uint8_t service_timeout = 0;  // 5 bits
    std::array<uint8_t, kMraPrivateData> private_data{};
    friend bool operator==(const CmMra &, const CmMra &) = default;
};

struct CmRej {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t message_rejected = 0;    // 2 bits
    uint8_t reject_info_length = 0;  // 7 bits, at most 72
    uint16_t reason = 0;
    std::array<uint8_t, kCmAdditionalInfo> ari{};
    std::array<uint8_t, kRejPrivateData> private_data{};
    friend bool operator==(const CmRej &, const CmRej &) = default;
};

struct CmRep {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;     // 24 bits
    uint32_t local_eecn = 0;    // 24 bits
    uint32_t starting_psn = 0;  // 24 bits
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t target_ack_delay = 0;   // 5 bits
    uint8_t failover_accepted = 0;  // 2 bits
    bool end_to_end_flow_control = false;
    uint8_t rnr_retry_count = 0;  // 3 bits
    bool srq = false;
    uint64_t local_ca_guid = 0;
    std::array<uint8_t, kRepPrivateData> private_data{};
    friend bool operator==(const CmRep &, const CmRep &) = default;
};

struct CmRtu {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    std::array<uint8_t, kRtuPrivateData> private_data{};
    friend bool operator==(const CmRtu &, const CmRtu &) = default;
};

struct CmDreq {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn_eecn = 0;  // 24 bits
    std::array<uint8_t, kDreqPrivateData> private_data{};
    friend bool operator==(const CmDreq &, const CmDreq &) = default;
};

struct CmDrep {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    std::array<uint8_t, kDrepPrivateData> private_data{};
    friend bool operator==(const CmDrep &, const CmDrep &) = default;
};

struct CmSidrReq {
    uint32_t request_id = 0;
    uint16_t pkey = 0;
    uint64_t service_id = 0;
    std::array<uint8_t, kSidrReqPrivateData> private_data{};
    friend bool operator==(const CmSidrReq &, const CmSidrReq &) = default;
};

struct CmSidrRep {
    uint32_t request_id = 0;
    uint8_t status = 0;
    uint8_t additional_info_length = 0;  // at most 72
    uint32_t qpn = 0;                    // 24 bits
    uint64_t service_id = 0;
    uint32_t qkey = 0;
    std::array<uint8_t, kCmAdditionalInfo> class_port_info{};  // status 2 (redirect)
    std::array<uint8_t, kSidrRepPrivateData> private_data{};
    friend bool operator==(const CmSidrRep &, const CmSidrRep &) = default;
};

// LAP and APR are decoded so they can be answered "unsupported" (no APM).
struct CmLap {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn_eecn = 0;            // 24 bits
    uint8_t remote_cm_response_timeout = 0;  // 5 bits
    uint16_t alt_local_lid = 0;
    uint16_t alt_remote_lid = 0;
    Gid alt_local_gid{};
    Gid alt_remote_gid{};
    uint32_t alt_flow_label = 0;  // 20 bits
    uint8_t alt_traffic_class = 0;
    uint8_t alt_hop_limit = 0;
    uint8_t alt_packet_rate = 0;  // 6 bits
    uint8_t alt_sl = 0;           // 4 bits
    bool alt_subnet_local = false;
    uint8_t alt_local_ack_timeout = 0;  // 5 bits
    std::array<uint8_t, kLapPrivateData> private_data{};
    friend bool operator==(const CmLap &, const CmLap &) = default;
};

struct CmApr {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t additional_info_length = 0;  // at most 72
    uint8_t ap_status = 0;
    std::array<uint8_t, kCmAdditionalInfo> additional_info{};
    std::array<uint8_t, kAprPrivateData> private_data{};
    friend bool operator==(const CmApr &, const CmApr &) = default;
};

// Decoders take the message (cm_message(mad)): Truncated below 232 bytes; BadField for an
// info length above 72. Encoders: OutOfRange when a value does not fit its field.
CodecStatus decode_cm_req(std::span<const uint8_t> in, CmReq &out);
CodecStatus encode_cm_req(const CmReq &v, CmBuffer out);
CodecStatus decode_cm_mra(std::span<const uint8_t> in, CmMra &out);
CodecStatus encode_cm_mra(const CmMra &v, CmBuffer out);
CodecStatus decode_cm_rej(std::span<const uint8_t> in, CmRej &out);
CodecStatus encode_cm_rej(const CmRej &v, CmBuffer out);
CodecStatus decode_cm_rep(std::span<const uint8_t> in, CmRep &out);
CodecStatus encode_cm_rep(const CmRep &v, CmBuffer out);
CodecStatus decode_cm_rtu(std::span<const uint8_t> in, CmRtu &out);
CodecStatus encode_cm_rtu(const CmRtu &v, CmBuffer out);
CodecStatus decode_cm_dreq(std::span<const uint8_t> in, CmDreq &out);
CodecStatus encode_cm_dreq(const CmDreq &v, CmBuffer out);
CodecStatus decode_cm_drep(std::span<const uint8_t> in, CmDrep &out);
CodecStatus encode_cm_drep(const CmDrep &v, CmBuffer out);
CodecStatus decode_cm_sidr_req(std::span<const uint8_t> in, CmSidrReq &out);
CodecStatus encode_cm_sidr_req(const CmSidrReq &v, CmBuffer out);
CodecStatus decode_cm_sidr_rep(std::span<const uint8_t> in, CmSidrRep &out);
CodecStatus encode_cm_sidr_rep(const CmSidrRep &v, CmBuffer out);
CodecStatus decode_cm_lap(std::span<const uint8_t> in, CmLap &out);
CodecStatus decode_cm_apr(std::span<const uint8_t> in, CmApr &out);

}  // namespace softrnic::mad
