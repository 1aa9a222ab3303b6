// The in-process datagram fabric (docs/ib-personality.md 4.2, "in this process"): which
// port of which instance has a LID in a subnet, and which endpoint a UD QP bound on a port
// by its QPN. What Hca::send_datagram finds its receiver through; the cross-process lanes
// of 4.4 (step 6) sit behind the same Hca calls.
#pragma once

#include <cstdint>
#include <shared_mutex>
#include <string_view>

#include "rnicpi/rnicpi.h"
#include "transport/transport.hpp"

namespace softrnic::transport::ib {

class Hca;

namespace fabric {

// Shared while a datagram is delivered, exclusive while a LID or a binding changes: so
// unbinding waits out the deliveries into that endpoint.
std::shared_mutex &lock();

// Exclusive lock held by the caller.
void port_up(std::string_view subnet, ri_lid_t lid, Hca *hca, uint8_t port);
void port_down(std::string_view subnet, ri_lid_t lid);
void bind(const Hca *hca, uint8_t port, uint32_t qpn, Endpoint *ep);
void unbind(const Hca *hca, uint8_t port, uint32_t qpn);

// Shared (or exclusive) lock held by the caller: the endpoint at (lid, qpn) of `subnet`,
// with its instance and port; nullptr when nothing receives there.
Endpoint *find(std::string_view subnet, ri_lid_t lid, uint32_t qpn, Hca *&hca, uint8_t &port);

}  // namespace fabric
}  // namespace softrnic::transport::ib
