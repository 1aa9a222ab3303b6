// TCP/iWARP transport channel: carries RDMAP operations between two QPs over a connected
// TCP socket as MPA FPDUs (RFC 5044) holding DDP segments (RFC 5041) with RDMAP headers
// (RFC 5040), using the codec in wire/.
//
// RNICPI leaves connection setup to the ULP: it runs the MPA Request/Reply exchange on the
// connected socket and then hands the socket to ri_qp_modify(IDLE->RTS). adopt_socket() is
// that hand-over: it records the negotiated stream parameters and makes the fd a valid LLP
// stream handle; the engine's claim turns it into a TcpChannel that owns the fd.
//
// Threading: the claiming RNIC instance's ProgressEngine (transport/progress.hpp) runs the
// receive side and every call into the Endpoint, on its thread (idle in epoll) or inline
// on a consumer's thread polling a CQ. The posting thread encodes and writes directly
// (non-blocking) under a small per-channel mutex; what the kernel does not take stays
// queued and progress flushes it on EPOLLOUT.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rnicpi/rnicpi.h"
#include "transport/transport.hpp"

namespace softrnic::transport::tcp {

// Result of the MPA exchange done by the ULP before the hand-over.
struct StreamParams {
    bool crc = false;            // CRC32c negotiated (both directions)
    uint32_t mulpdu_tx = 0;      // largest ULPDU we send; 0: from the socket's TCP_MAXSEG
    uint32_t mulpdu_rx_cap = 0;  // largest ULPDU we accept; 0: 65535 (the peer's MSS rules)
    uint32_t ird = 16;           // inbound Read Requests we accept outstanding
    uint32_t ord = 16;           // outbound Read Requests we may have outstanding
    bool rfc7306 = false;        // RFC 7306 opcodes negotiated (see tcp_channel.cpp)
    // First inbound Read Request MSN: 2 when the connection manager consumed a Read RTR.
    uint32_t rx_read_msn_base = 1;
    // Responder in RFC 6581 P2P mode with the Write RTR: the initiator's zero-length RDMA
    // Write is the stream's first FPDU; the channel consumes it and sends nothing before
    // it (RFC 5044 7.1.2), so the QP may be used as soon as the Reply is out.
    bool await_rtr = false;
    // The responder's MPA Reply, when the connection manager defers it (see
    // llp::send_deferred): the channel writes it before anything else once a QP claims the
    // stream, even while it awaits the RTR. `preamble_key` names this hand-over, so a
    // late send_deferred cannot reach another socket that reused the descriptor.
    std::vector<uint8_t> preamble;
    uint64_t preamble_key = 0;
};

// Registers a connected TCP socket whose MPA exchange is complete (the Request/Reply
// already consumed) as an LLP stream handle in the LLP registry (llp_registry.hpp).
// Returns the handle (the fd itself), or -1 when `fd` is not a usable socket. From then
// on the registry's entry owns the fd (llp::release closes it) until a QP claims it; the
// channel then owns it and closes it on destruction.
ri_llp_stream_handle_t adopt_socket(int fd, const StreamParams &params);

// The preamble of an adopted socket that no QP has claimed yet goes out through
// llp::send_deferred (the connection manager calls it once the consumer has handled
// Established, so that the initiator can see the connection only after the responder's
// consumer has: a fast initiator's close then never reaches that consumer ahead of its
// Established). A QP that claims the stream first sends it itself. An unclaimed socket is
// closed by llp::release, like any transport's handle.

// Failure detection. A peer that vanishes without a FIN or RST (link down, host gone) is
// noticed only by TCP's own timers: keepalive probes while the connection is idle, the
// retransmission limit while data is unacknowledged. Both are set so that either way the
// kernel breaks the connection within a bound (ETIMEDOUT, or the routing error it met),
// and the channel ends the stream as lost (RI_EVENT_QP_LLQ_CONNECTION_LOST, work flushed).
// RNICPI's iWARP QP attributes carry no timeout (local_ack_timeout and retry_count are in
// the InfiniBand path attributes only), so the bound is the process's, not the QP's.
// The kernel also ends zero-window probing at TCP_USER_TIMEOUT (Linux 5.12 and later): a
// peer whose process is stopped while data is queued for it counts as gone after the
// bound, because its receiver (its progress thread) stopped with it.
struct LivenessParams {
    int keepidle_s = 0;            // TCP_KEEPIDLE: idle time before the first probe
    int keepintvl_s = 0;           // TCP_KEEPINTVL: between probes
    int keepcnt = 0;               // TCP_KEEPCNT: unanswered probes (with no user timeout)
    unsigned user_timeout_ms = 0;  // TCP_USER_TIMEOUT: also ends the probing at the bound
};

inline constexpr uint32_t kDefaultLivenessMs = 10000;
inline constexpr uint32_t kMinLivenessMs = 1000;     // keepalive counts in whole seconds
inline constexpr uint32_t kMaxLivenessMs = 3600000;  // an hour

// The socket options that break a connection within `bound_ms` (kMinLivenessMs and up).
// With the kernel's keepalive timer, which aborts at its first tick past the user timeout
// once a probe went unanswered, an idle connection breaks between bound_ms and bound_ms +
// keepintvl_s after the last segment heard.
LivenessParams liveness_params(uint32_t bound_ms);

// SOFTRNIC_TCP_TIMEOUT_MS, read now: the bound in milliseconds, 0 for none (the kernel's
// defaults). An invalid value means kDefaultLivenessMs, with one warning per process.
uint32_t liveness_bound_ms();

// Sets SO_KEEPALIVE, TCP_KEEPIDLE/KEEPINTVL/KEEPCNT and TCP_USER_TIMEOUT on a TCP socket for
// `bound_ms` (0: leaves the socket alone). False when the kernel refused one of them.
bool apply_liveness(int fd, uint32_t bound_ms);

// Nothing to do: adopted sockets go to the LLP registry (kept for callers).
void ensure_registered();

}  // namespace softrnic::transport::tcp
