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

// Nothing to do: adopted sockets go to the LLP registry (kept for callers).
void ensure_registered();

}  // namespace softrnic::transport::tcp
