// The InfiniBand RC channel between the IB instances of one process
// (docs/ib-personality.md 4.3, "same process"; section 10 step 4). An RC QP claims it with
// its IbPathBinding when it goes RTR -> RTS; its responder is whatever RC QP the datagram
// fabric has bound at (DLID, destination QPN) in the subnet, and it carries each operation
// out there in the poster's thread through that QP's Endpoint (transport/local_delivery.hpp),
// as the loopback transport does: one copy, completed when the responder accepted it.
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace softrnic::transport::ib {

// The channel for `b`. It pairs at each submit: a responder that is not there (or not
// paired with this QP) is silence, reported as Disconnected; a responder fault as
// Terminated with the fault (the engine says it as the IB completion status); a missing
// receive (RNR) is retried up to b.rnr_retry times, then Terminated with NoReceiveBuffer.
std::unique_ptr<Channel> claim_path(const IbPathBinding &b);

}  // namespace softrnic::transport::ib
