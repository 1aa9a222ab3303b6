// The common MAD header and the vocabulary every MAD codec shares (IBA 1.2 ch. 13,
// "Management Datagrams": MAD format, common MAD header, methods, status field).
//
// A MAD is 256 bytes. Every decoder takes the bytes it was handed as a span, checks their
// size before it reads, returns a CodecStatus, and never allocates; every encoder writes a
// fixed-size span, zeroes reserved bits, and refuses a value wider than its field.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace softrnic::mad {

inline constexpr size_t kMadSize = 256;
inline constexpr size_t kMadHeaderSize = 24;
inline constexpr uint8_t kBaseVersion = 1;

using Gid = std::array<uint8_t, 16>;
using MadBuffer = std::span<uint8_t, kMadSize>;

enum class CodecStatus : uint8_t {
    Ok = 0,
    Truncated,        // fewer bytes than the layout needs
    BadBaseVersion,   // BaseVersion is not 1 (the header is still decoded)
    BadClass,         // the management class is not the one this decoder reads
    BadClassVersion,  // the class version is not the one this decoder reads
    BadField,         // a field holds a value its layout forbids
    OutOfRange,       // encode: a value does not fit its field (the output is unusable)
};

// Management classes (IBA 1.2 ch. 13, table "Management Class Values").
namespace mgmt_class {
inline constexpr uint8_t kSubnLid = 0x01;       // LID-routed SMP
inline constexpr uint8_t kSubnAdm = 0x03;       // SA
inline constexpr uint8_t kPerfMgt = 0x04;       // PMA
inline constexpr uint8_t kCm = 0x07;            // communication management
inline constexpr uint8_t kSubnDirected = 0x81;  // directed-route SMP
}  // namespace mgmt_class

// Methods (IBA 1.2 ch. 13 common methods, ch. 15 SA methods). The top bit of the method
// byte is the R (response) bit; it is kept inside the value, as the wire has it.
namespace method {
inline constexpr uint8_t kGet = 0x01;
inline constexpr uint8_t kSet = 0x02;
inline constexpr uint8_t kSend = 0x03;
inline constexpr uint8_t kTrap = 0x05;
inline constexpr uint8_t kReport = 0x06;
inline constexpr uint8_t kTrapRepress = 0x07;
inline constexpr uint8_t kGetTable = 0x12;
inline constexpr uint8_t kGetTraceTable = 0x13;
inline constexpr uint8_t kGetMulti = 0x14;
inline constexpr uint8_t kDelete = 0x15;
inline constexpr uint8_t kResponse = 0x80;  // the R bit
inline constexpr uint8_t kGetResp = kGet | kResponse;
inline constexpr uint8_t kReportResp = kReport | kResponse;
inline constexpr uint8_t kGetTableResp = kGetTable | kResponse;
inline constexpr uint8_t kDeleteResp = kDelete | kResponse;
}  // namespace method

// Status field values common to every class (IBA 1.2 ch. 13, "MAD Common Status Field").
namespace mad_status {
inline constexpr uint16_t kBusy = 0x0001;
inline constexpr uint16_t kRedirect = 0x0002;
inline constexpr uint16_t kBadVersion = 0x0004;
inline constexpr uint16_t kUnsupportedMethod = 0x0008;
inline constexpr uint16_t kUnsupportedMethodAttr = 0x000C;
inline constexpr uint16_t kInvalidAttrValue = 0x001C;
}  // namespace mad_status

// Attribute IDs shared by several classes (IBA 1.2 ch. 13).
namespace attr {
inline constexpr uint16_t kClassPortInfo = 0x0001;
inline constexpr uint16_t kNotice = 0x0002;
inline constexpr uint16_t kInformInfo = 0x0003;
}  // namespace attr

// Bytes 0-23 of every MAD.
struct MadHeader {
    uint8_t base_version = kBaseVersion;
    uint8_t mgmt_class = 0;
    uint8_t class_version = 0;
    uint8_t method = 0;  // includes the R bit
    uint16_t status = 0;
    uint16_t class_specific = 0;
    uint64_t tid = 0;
    uint16_t attr_id = 0;
    uint32_t attr_mod = 0;
    friend bool operator==(const MadHeader &, const MadHeader &) = default;
};

// Truncated when `in` is shorter than 24 bytes, BadBaseVersion when BaseVersion is not 1
// (with `out` filled, so the caller can answer "bad version"), else Ok.
CodecStatus decode_header(std::span<const uint8_t> in, MadHeader &out);
// Writes bytes 0-23 (the reserved word zero); touches nothing else.
void encode_header(const MadHeader &h, std::span<uint8_t, kMadHeaderSize> out);

// Decodes the header of a whole MAD and checks its class and class version, for the class
// decoders: Truncated below 256 bytes, then BadBaseVersion, BadClass, BadClassVersion (each
// with `out` filled).
CodecStatus decode_class_header(std::span<const uint8_t> in, uint8_t mgmt_class,
                                uint8_t class_version, MadHeader &out);

// ClassPortInfo (72 bytes; IBA 1.2 ch. 13), the attribute every GSI class answers and the
// additional information of a SIDR_REP that redirects. Bits 0-26 of the second word are
// reserved in IBA 1.2 and CapabilityMask2 in later releases; they are kept as
// `capability_mask2`.
inline constexpr size_t kClassPortInfoSize = 72;
struct ClassPortInfo {
    uint8_t base_version = kBaseVersion;
    uint8_t class_version = 0;
    uint16_t capability_mask = 0;
    uint32_t capability_mask2 = 0;  // 27 bits
    uint8_t resp_time_value = 0;    // 5 bits
    Gid redirect_gid{};
    uint8_t redirect_tc = 0;
    uint8_t redirect_sl = 0;   // 4 bits
    uint32_t redirect_fl = 0;  // 20 bits
    uint16_t redirect_lid = 0;
    uint16_t redirect_pkey = 0;
    uint32_t redirect_qp = 0;  // 24 bits
    uint32_t redirect_qkey = 0;
    Gid trap_gid{};
    uint8_t trap_tc = 0;
    uint8_t trap_sl = 0;   // 4 bits
    uint32_t trap_fl = 0;  // 20 bits
    uint16_t trap_lid = 0;
    uint16_t trap_pkey = 0;
    uint8_t trap_hl = 0;
    uint32_t trap_qp = 0;  // 24 bits
    uint32_t trap_qkey = 0;
    friend bool operator==(const ClassPortInfo &, const ClassPortInfo &) = default;
};
CodecStatus decode_class_port_info(std::span<const uint8_t> in, ClassPortInfo &out);
CodecStatus encode_class_port_info(const ClassPortInfo &v,
                                   std::span<uint8_t, kClassPortInfoSize> out);

}  // namespace softrnic::mad
