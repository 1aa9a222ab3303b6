// InfiniBand address vectors: the checks ri_ah_create and ri_ah_modify make (RNICPI
// L6361-6598), and what a UD send takes out of an address handle at post time
// (docs/ib-personality.md 4.4: "the AH is resolved at post time into a ResolvedAv").
#pragma once

#include <cstdint>

#include "rnicpi/rnicpi.h"
#include "transport/ib_port.hpp"

namespace softrnic::engine {

class Ah;

// IBA 1.2 static rate encodings run up to 18 (0: the port's own rate, no limit).
inline constexpr uint8_t kMaxStaticRate = 18;
inline constexpr ri_lid_t kFirstMulticastLid = 0xC000;
inline constexpr ri_lid_t kPermissiveLid = 0xFFFF;

// RI_RET_SUCCESS, or RI_RET_INVALID_PARAMETER ("av points to an invalid address vector",
// L6415, L6545) naming why in a debug log line.
ri_api_return_t check_address_vector(const transport::ib::Hca &hca,
                                     const ri_ud_address_vector_t &av);

// An address handle's vector as a send uses it, copied under the handle's lock.
struct ResolvedAv {
    uint8_t port = 0;
    ri_lid_t dlid = 0;
    uint8_t sl = 0;
    uint8_t path_bits = 0;
    bool grh = false;
    uint8_t sgid_index = 0;
    uint8_t hop_limit = 0;
    uint8_t traffic_class = 0;
    uint32_t flow_label = 0;
    ri_gid_t dgid{};
};
ResolvedAv resolve(const Ah &ah);

}  // namespace softrnic::engine
