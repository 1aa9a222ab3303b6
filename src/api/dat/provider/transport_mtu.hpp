// The provider-specific attribute DAT_IB_TRANSPORT_MTU (dat_ia_query): the reference (OFED)
// providers report the IB path MTU there as decimal text ("256" ... "4096"), and unmodified
// consumers read it; dtestsrq, for one, sizes its messages from it when given no length.
// softrnic has no IB path, so it reports the largest IB MTU value that its transport
// carries in one piece. Spec reference: uDAPL L2489 (provider-specific attributes are
// name/value strings).
#pragma once

#include <array>
#include <cstdint>

namespace softrnic::dapl {

// The IB path MTU values, largest first (what the attribute may say).
inline constexpr std::array<uint32_t, 5> kIbMtus = {4096, 2048, 1024, 512, 256};

// Bytes of a full TCP segment on an IPv4 interface that are headers: IPv4 (20), TCP (20)
// and the timestamp option Linux sends by default (12).
inline constexpr uint32_t kIpTcpHeaderBytes = 20 + 20 + 12;
// Bytes of an FPDU that are not ULPDU: the MPA length field (2) and CRC (4), RFC 5044.
inline constexpr uint32_t kMpaFramingBytes = 2 + 4;
// DDP untagged and RDMAP headers of a Send segment (RFC 5041, RFC 5040).
inline constexpr uint32_t kSendHeaderBytes = 18;

// Send payload bytes one TCP segment carries on an interface of MTU `if_mtu`: softrnic
// sizes an FPDU as siw does, (MSS & ~7) bytes framing included, so a segment holds one
// whole FPDU.
constexpr uint32_t send_payload_per_segment(uint32_t if_mtu) {
    if (if_mtu <= kIpTcpHeaderBytes) return 0;
    const uint32_t fpdu = (if_mtu - kIpTcpHeaderBytes) & ~7u;
    if (fpdu <= kMpaFramingBytes + kSendHeaderBytes) return 0;
    return fpdu - kMpaFramingBytes - kSendHeaderBytes;
}

// The largest IB MTU value whose message travels in one TCP segment of the interface; 256
// (the smallest IB value) when even that does not fit.
constexpr uint32_t ib_mtu_over_tcp(uint32_t if_mtu) {
    const uint32_t payload = send_payload_per_segment(if_mtu);
    for (uint32_t m : kIbMtus)
        if (m <= payload) return m;
    return kIbMtus.back();
}

// Over shm a Send of up to 1 KiB is one ring entry and a larger one is copied in one piece
// (cross-memory attach) or in 16 KiB bounce chunks: nothing of 4096 bytes or less is ever
// split, so the largest IB value holds.
inline constexpr uint32_t kIbMtuOverShm = kIbMtus.front();

// An interface whose MTU cannot be read is taken to be Ethernet's.
inline constexpr uint32_t kAssumedInterfaceMtu = 1500;

}  // namespace softrnic::dapl
