// The iWARP face of the seam's neutral faults: which Terminate a RemoteFault becomes
// (RFC 5040 4.8, RFC 5041 7.2, RFC 5044 8), and the Terminate message itself, encoded by the
// wire codec. Shared by every transport that speaks iWARP Terminates (shm, TCP, loopback), so
// that they all send and record the same bytes for the same fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/tcp/wire/common.hpp"
#include "transport/transport.hpp"

namespace softrnic::transport::iwarp {

// A Terminate travels as an untagged DDP segment: its body follows the 18-byte header.
inline constexpr size_t kTerminateHeaderLen = 18;

// Terminate layer/etype/ecode for `f`. Protection faults of a Read Request or an atomic
// are RDMAP remote-protection errors, those of tagged placement DDP tagged-buffer errors
// (except access rights, which only RDMAP can say); see docs/spec-deviations.md.
tcp::wire::TermCode terminate_code(const FaultReport &f);

// The neutral fault a Terminate code stands for (a peer's Terminate, or a stream error the
// wire decoder found), as the engine raises it (RNICPI L1984-2023).
RemoteFault fault_of(tcp::wire::TermCode code);

// The whole Terminate (its own untagged DDP header, then the body) for `f`. It quotes
// `offending` (the start of the failed DDP segment as received, `offending_len` its
// length) when given, otherwise the header of f.op rebuilt from f (L=1, MSN/MO 0), and
// nothing when f.op is None. Returns the length, 0 if `out` is too small.
size_t encode_terminate(const FaultReport &f, std::span<const uint8_t> offending,
                        uint16_t offending_len, std::span<uint8_t> out);

// The Terminate message as ri_qp_query reports it (control word onwards, RNICPI L8583)
// for `f`, quoting f.op's header rebuilt from f. Returns its length (4..52).
size_t terminate_message(const FaultReport &f, std::span<uint8_t, kFaultMessageMax> out);

// The body (control word onwards) of an encoded Terminate.
inline std::span<const uint8_t> message_of(std::span<const uint8_t> terminate) {
    return terminate.size() > kTerminateHeaderLen ? terminate.subspan(kTerminateHeaderLen)
                                                  : std::span<const uint8_t>{};
}

}  // namespace softrnic::transport::iwarp
