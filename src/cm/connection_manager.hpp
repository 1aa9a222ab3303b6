// Connection manager: TCP connection set-up plus the MPA Request/Reply exchange (RFC 5044
// 7.1, RFC 6581) that RNICPI leaves to the consumer, ending in a connected socket adopted
// as an LLP stream handle ready for ri_qp_modify(IDLE->RTS, RI_QP_ATTR_LLQ_STREAM_HANDLE).
//
// This header speaks no transport's language: Established carries NegotiatedParams and
// Failed a FailReason, and only the protocol engine behind the manager translates them to
// and from its wire (MPA, the TCP channel's stream parameters). Inside src/cm/: the core
// (connection_manager.cpp, cm_core.hpp: ids, listeners, event thread, events), the
// transport policy (transport_policy.hpp), the shm rendezvous (shm_rendezvous.hpp) and the
// iWARP engine (iwarp_engine.cpp); cm_core.hpp says where the IB CM plugs in.
//
// Transports: a listener also binds an abstract Unix stream socket named after its
// (family, address, port) (transport/shm/shm.hpp). connect() to a peer on the same host
// and in the same network namespace reaches it, and the connection then uses the
// shared-memory transport: the same MPA v2 exchange runs over the Unix socket (so
// accept/reject/private data/IRD-ORD and every event are the same), followed by the shm
// hello (same-user check, segments, CMA probe) before Established. Anything else uses
// TCP. Options::transport or SOFTRNIC_TRANSPORT=auto|shm|tcp choose: auto (default)
// prefers shm and falls back to TCP, shm insists (Unreachable when not possible), tcp never
// tries shm. Established::transport says which one a connection uses.
//
// Protocol choices for this version:
//   - MPA revision 2 with the Enhanced IRD/ORD block, "relaxed" negotiation (mpa.hpp):
//     the responder answers IRD = min(request ORD, its IRD), ORD = min(request IRD, its ORD).
//   - Peer-to-peer mode (RFC 6581) by default: the initiator asks for P2P offering the
//     zero-length RDMA Write RTR, sends it right after reading the Reply, and only then
//     reports Established; the responder reports Established before its Reply is out (see
//     Established::handover_key: the Reply follows the consumer's claim or the handler's
//     return), and its TCP channel consumes the RTR and holds every send until it arrived,
//     so the QP never sends before the initiator's first FPDU (RFC 5044 7.1.2). As responder, a
//     Read RTR (offered alone by some peers) is consumed by the manager, which answers it with the
//     zero-length Read Response before Established; a Send RTR is never chosen (like siw).
//     ConnParams::p2p false asks for plain MPA v2. Frame readers consume exactly their frame
//     (MSG_PEEK, then drop what the parser took) so an early FPDU stays in the socket for the
//     channel.
//   - A Reply the initiator cannot accept (bad key, revision, IRD/ORD, no matching RTR...)
//     is answered with a Terminate LLP/MPA carrying the matching code before closing.
//   - CRC on if either side asks; markers are never requested and are refused.
//   - ULP private data is at most 508 bytes: PD_Length (<= 512) also carries the 4-byte
//     IRD/ORD block. 256 is the safe limit towards siw/cxgb4 peers (not enforced).
//
// Threading: one event thread (epoll, blocks when idle) owns every listening and in-setup
// socket; the handler runs on it, never concurrently with itself, and may call back into
// the manager (accept/reject from a ConnectRequest is the normal pattern). Public calls
// are thread-safe. Do not destroy the manager from its own handler.
//
// Ownership: an Established event hands the stream over: its llp handle is a descriptor
// (the TCP socket, or the shm connection's Unix socket), and the consumer owns it from
// then on (claimed by a QP, or release_unclaimed()). Everything else stays with the
// manager and is closed by it.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <variant>
#include <vector>

#include "rnicpi/rnicpi.h"

// The faces call the connection manager across libsoftrnic.so, whose objects are otherwise
// compiled hidden: what this header declares keeps default visibility (libsoftrnic.map
// still exports only the public calls).
#pragma GCC visibility push(default)

namespace softrnic::cm {

// Listeners and connections share one id space; 0 is never a valid id.
using ConnId = uint64_t;

enum class CmStatus : uint8_t {
    Ok = 0,
    InvalidArgument,  // null/short address, unsupported family, private data too long...
    UnknownId,        // no listener/connection with that id (or already finished)
    WrongState,       // e.g. accept() on a connection whose request was already answered
    SystemError,      // a socket call failed; `sys_errno` says why
    Stopped,          // the manager failed to start its thread
};
const char *to_string(CmStatus s);

template <class T>
struct CmResult {
    CmStatus status = CmStatus::Ok;
    int sys_errno = 0;
    T value{};
    bool ok() const { return status == CmStatus::Ok; }
};

// ULP private data per set-up message: MPA's 512-byte PD_Length also carries the 4-byte
// IRD/ORD block (the iWARP engine checks this against the wire codec).
inline constexpr size_t kMaxPrivateData = 508;

struct ConnParams {
    std::vector<uint8_t> private_data;  // <= kMaxPrivateData
    uint16_t ird = 16;                  // inbound Read Requests we accept (<= 0x3FFF)
    uint16_t ord = 16;                  // outbound Read Requests we want (<= 0x3FFF)
    bool crc = false;                   // ask for CRC32c (on if either side asks)
    bool p2p = true;                    // initiator: ask for peer-to-peer mode (RTR)
    // Both ULPs agreed out of band that RFC 7306 atomics and immediate data may be used
    // (MPA has no capability bit for them); both sides must set it.
    bool rfc7306 = false;
    // Initiator: bound on TCP connect + MPA exchange; zero means none. Unused by accept().
    std::chrono::milliseconds timeout{10000};
};

// Which transport connect() uses (and whether listen() offers shm).
enum class Transport : uint8_t {
    Env,   // SOFTRNIC_TRANSPORT, read when the manager is created (unset: Auto)
    Auto,  // shm when the peer is on this host and in this netns, else TCP
    Shm,   // shm only: a connection that cannot use it is Unreachable
    Tcp,   // TCP only (listeners do not offer shm either)
};
// What an established connection runs on.
enum class LlpTransport : uint8_t { Tcp, Shm };
const char *to_string(LlpTransport t);

struct Options {
    // Responder: how long an accepted TCP connection may take to send its MPA Request
    // before it is dropped (stops idle peers from holding descriptors). Zero: forever.
    std::chrono::milliseconds request_timeout{10000};
    Transport transport = Transport::Env;
    // shm: use cross-memory attach when the probe allows it (SOFTRNIC_SHM_CMA=0 also
    // turns it off); otherwise bulk data is copied through shared bounce buffers.
    bool shm_cma = true;
};

// Socket address large enough for IPv4 and IPv6.
struct Address {
    sockaddr_storage storage{};
    socklen_t len = 0;
    const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&storage); }
};

// What the set-up negotiated, as the consumer (and the transport behind the handle) sees it.
struct NegotiatedParams {
    uint32_t ird = 16;     // inbound RDMA Read Requests accepted outstanding
    uint32_t ord = 16;     // outbound RDMA Read Requests allowed outstanding
    bool crc = false;      // a CRC on every frame (MPA CRC32c; on if either side asked)
    bool rfc7306 = false;  // atomics and immediate data agreed (ConnParams::rfc7306)
    // Responder of a peer-to-peer set-up (RFC 6581 for iWARP): the initiator's
    // ready-to-receive message is still to come; the stream consumes it and sends nothing
    // before it, so the QP is usable as soon as the reply is out.
    bool await_ready = false;
    // Inbound RDMA Read Requests the manager consumed before the hand-over (a Read RTR,
    // answered by the manager): the stream's first one is number reads_consumed + 1.
    uint32_t reads_consumed = 0;
};

struct Established {
    ConnId id = 0;
    bool initiator = false;
    ri_llp_stream_handle_t llp = -1;    // now owned by the consumer (see file comment)
    std::vector<uint8_t> private_data;  // the peer's
    NegotiatedParams params;
    Address peer;
    LlpTransport transport = LlpTransport::Tcp;
    bool shm_cma = false;  // shm: bulk data moves by cross-memory attach (else bounce copy)
    // Responder: the last handshake message (the MPA Reply over TCP, the shm hello) has
    // not been sent yet. It goes out when a QP claims the stream or, at the latest, when
    // the handler returns from this event, so the initiator learns of the connection only
    // after the responder's consumer has: claim the stream inside the handler and nothing
    // of the connection (the initiator's first message, its close) can reach the QP before
    // the consumer has seen Established. Internal to the manager; consumers ignore it.
    uint64_t handover_key = 0;
};

// Closes an Established handle that no QP claimed, whatever its transport. False when it
// is unknown or already claimed.
bool release_unclaimed(ri_llp_stream_handle_t h);
struct ConnectRequest {
    ConnId id = 0;        // answer with accept(id) or reject(id)
    ConnId listener = 0;  // the listener it arrived on
    Address peer;
    std::vector<uint8_t> private_data;
    uint16_t ird = 0;  // the initiator's
    uint16_t ord = 0;
    bool crc = false;  // the initiator asked for CRC
};
struct Rejected {
    ConnId id = 0;
    std::vector<uint8_t> private_data;
};
struct Unreachable {
    ConnId id = 0;
    int sys_errno = 0;  // ECONNREFUSED, EHOSTUNREACH, ...
};
struct TimedOut {
    ConnId id = 0;
};
// Why a set-up failed on the protocol's side (None: it did not; see sys_errno).
enum class FailReason : uint8_t {
    None = 0,          // peer closed, socket error (sys_errno), responder timed out
    Malformed,         // the peer's message is not of this protocol or is broken (key,
                       // revision, length, framing, CRC)
    Unsupported,       // well-formed but asks for what we refuse (MPA markers)
    Incompatible,      // the negotiation cannot be met (IRD/ORD, no enhanced block)
    NoReadyToReceive,  // peer-to-peer: no acceptable ready-to-receive message (RTR)
};
const char *to_string(FailReason r);

// Any other end of a connection the consumer knows about: peer closed, protocol error
// (reason), socket error (sys_errno).
struct Failed {
    ConnId id = 0;
    FailReason reason = FailReason::None;
    // The engine's own code for the fault, for diagnostics only (iWARP: the wire codec's
    // status); 0 when reason is None.
    uint16_t protocol_code = 0;
    int sys_errno = 0;
};

using Event = std::variant<Established, ConnectRequest, Rejected, Unreachable, TimedOut, Failed>;
using Handler = std::function<void(Event &)>;

class ConnectionManager {
  public:
    explicit ConnectionManager(Handler handler, Options opts = {});
    ~ConnectionManager();
    ConnectionManager(const ConnectionManager &) = delete;
    ConnectionManager &operator=(const ConnectionManager &) = delete;

    // False when the handler is empty or the event thread could not be started; every call
    // then fails with Stopped. The handler must not throw (a throw is swallowed and the
    // event counts as delivered).
    bool ok() const { return ep_ >= 0; }

    CmResult<ConnId> listen(const sockaddr *addr, socklen_t len, int backlog);
    CmStatus stop_listen(ConnId listener);
    CmResult<Address> local_address(ConnId id) const;

    // Asynchronous: the outcome is Established, Rejected, Unreachable, TimedOut or Failed.
    CmResult<ConnId> connect(const sockaddr *addr, socklen_t len, const ConnParams &params);

    // Responder answers to a ConnectRequest. accept() sends the Reply and then delivers
    // Established for `id`; reject() sends a Reply with the R flag and closes.
    CmStatus accept(ConnId id, const ConnParams &params);
    CmStatus reject(ConnId id, std::span<const uint8_t> private_data = {});

    // The transport connect() uses (Options::transport with Env resolved).
    Transport transport() const;

  private:
    struct Impl;
    void run();
    int ep_ = -1;
    std::unique_ptr<Impl> impl_;
};

}  // namespace softrnic::cm

#pragma GCC visibility pop
