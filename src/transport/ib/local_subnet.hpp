// The process-local LID authority: what stands for the subnet manager until the embedded
// one exists (docs/ib-personality.md §10 step 2; step 5 replaces it).
//
// Each subnet name is one subnet of this process only. The authority plays the master SM
// and the host switch: it keeps LID 1 for itself (the SM LID its ports report) and gives
// each port the LID it gave that port GUID before, else the lowest one never given, from
// 2. A LID stays with its GUID for the life of the process (the SM will keep it 10
// minutes), so an instance that is closed and opened again gets its LIDs back. A second
// live port with the GUID of a live port gets no LID and stays Init, as the SM will leave
// it (§2.2).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "rnicpi/rnicpi.h"

namespace softrnic::transport::ib {

inline constexpr ri_lid_t kAuthorityLid = 1;
inline constexpr ri_lid_t kFirstPortLid = 2;
inline constexpr ri_lid_t kLastUnicastLid = 0xBFFF;

// The LID of a port that the authority accepted, and the SM LID to report.
struct LidGrant {
    ri_lid_t lid;
    ri_lid_t sm_lid;
};

// A port with `port_guid` comes up on `subnet`: its LID, or nothing when another live port
// has that GUID or the unicast LIDs are exhausted (the port then stays Init).
std::optional<LidGrant> local_attach(std::string_view subnet, uint64_t port_guid);
// The port that local_attach accepted goes down.
void local_detach(std::string_view subnet, uint64_t port_guid);

}  // namespace softrnic::transport::ib
