// The InfiniBand RC channel between the IB instances of one process
// (docs/ib-personality.md 4.3, "same process"; section 10 step 4). An RC QP claims it with
// its IbPathBinding when it goes RTR -> RTS; its responder is whatever RC QP the datagram
// fabric has bound at (DLID, destination QPN) in the subnet, and it carries each operation
// out there through that QP's Endpoint (transport/local_delivery.hpp), as the loopback
// transport does: one copy, completed once the responder accepted it (7.1).
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace softrnic::transport::ib {

// The channel for `b`, an asynchronous one: an operation the responder takes or NAKs at
// once completes inside its post (Channel::submit_now); one that meets silence (no
// responder, or one not paired with this QP) or an RNR NAK is held, with everything after
// it, and tried again from `progress`'s thread on a timer (7.2): after the responder's RNR
// timer up to b.rnr_retry times (7: without limit), then Terminated with NoReceiveBuffer;
// every millisecond until the ACK timeout's 4.096 us x 2^ack_timeout x (retry_count + 1)
// has passed (ack_timeout 0: never), then Disconnected.
std::unique_ptr<Channel> claim_path(const IbPathBinding &b, ProgressEngine &progress);

}  // namespace softrnic::transport::ib
