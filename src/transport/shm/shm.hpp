// Intra-host shared-memory transport.
//
// Two RNIC instances on the same host and in the same network namespace talk through a
// pair of shared rings instead of TCP/iWARP. The connection manager (src/cm/) owns the
// rendezvous: a listener also binds an abstract Unix stream socket whose name encodes
// (family, address, port), so reaching it proves "same host, same netns". Over that
// socket the usual MPA v2 Request/Reply runs unchanged, then a Handshake (below): both
// ends check SO_PEERCRED (same user only), create a sealed memfd segment each
// (layout.hpp), pass it with SCM_RIGHTS, and probe cross-memory attach (CMA,
// process_vm_readv) on each other. adopt() then turns the socket + mappings into an LLP
// stream handle that a QP claims as an asynchronous Channel (shm_channel.cpp).
//
// After set-up the Unix socket carries no data: it is the doorbell for a peer whose
// progress thread sleeps (one byte, sent only when the peer asked for it) and the
// liveness signal (it closes when the peer process dies, even by SIGKILL).
//
// Nothing is created on disk or in /dev/shm: the memfds are closed as soon as both sides
// mapped them, so the memory goes away with the last mapping (process exit included).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "rnicpi/rnicpi.h"
#include "transport/shm/layout.hpp"

namespace softrnic::transport::shm {

// False when SOFTRNIC_SHM_CMA=0 (forces the bounce-buffer copy path). Whether a connection
// uses shm at all is the connection manager's policy (src/cm/transport_policy.hpp).
bool cma_allowed_by_env();

// Shared memory one connected QP pair uses: one segment per end.
inline constexpr size_t kSegmentBytes = layout::kSegmentBytes;
inline constexpr size_t kBytesPerConnection = 2 * layout::kSegmentBytes;

// Abstract Unix socket address of the rendezvous for a listener bound to `addr` (IPv4 or
// IPv6). `wildcard`: the name of a listener bound to the any-address on that port.
struct UnixName {
    sockaddr_un sa{};
    socklen_t len = 0;
};
bool rendezvous_name(const sockaddr *addr, bool wildcard, UnixName &out);
bool is_any_address(const sockaddr *addr);
// True when `addr` is an address of this host in this network namespace.
bool is_local_address(const sockaddr *addr);

// SO_PEERCRED of a connected Unix socket: true when the peer runs as our effective uid.
bool same_user(int sock, pid_t *peer_pid = nullptr);

// One end of the post-MPA hello. Non-blocking: start() once, then receive() whenever the
// socket is readable until it returns Done or Failed (errno says why).
class Handshake {
  public:
    Handshake();
    ~Handshake();
    Handshake(const Handshake &) = delete;
    Handshake &operator=(const Handshake &) = delete;

    // Checks the peer's credentials, creates and maps the local segment and sends the
    // hello (with the segment's fd). `allow_cma`: use CMA if the probe succeeds.
    // `defer_hello` (the responder): the hello is owed, and adopt() hands the debt to the
    // link; the segment is made and the hello sent when a QP claims the stream or by
    // llp::send_deferred(), whichever comes first (cm::Established::handover_key says
    // why). Until then the link holds no descriptor but its socket.
    bool start(int sock, bool allow_cma, bool defer_hello = false);
    enum class Step : uint8_t { NeedMore, Done, Failed };
    Step receive(int sock);
    // Hands the socket and both mappings (and a deferred hello, named by `key`) to the
    // transport. Returns the LLP handle (the socket's fd, now owned by the transport) or -1.
    ri_llp_stream_handle_t adopt(int sock, uint64_t key = 0);
    bool cma() const;

  private:
    struct State;
    std::unique_ptr<State> st_;
};

// The deferred hello of an adopted handle no QP has claimed yet goes out through
// llp::send_deferred: false when `h` is not unclaimed with that key, or its hello already
// went (or could not go: the peer is gone, which the claiming channel then finds).

// Registers the shm placement revoker (idempotent; adopt() calls it).
void ensure_registered();

// Process-wide counters, for tests and diagnostics.
struct Stats {
    uint64_t live_links = 0;      // adopted or claimed connections not yet closed
    uint64_t mapped_bytes = 0;    // shared memory mapped by them (both segments each)
    uint64_t cma_links = 0;       // of which use CMA
    uint64_t doorbells_sent = 0;  // wake-ups sent to sleeping peers
    // Of which sent because the peer had left what we gave it unconsumed for a while
    // (its progress thread parked while its application polled memory, not its CQ).
    uint64_t stall_doorbells_sent = 0;
    // RDMA Writes this process placed into a peer's memory itself (process_vm_writev under
    // the peer's grant) because the peer's application was not polling its CQ.
    uint64_t direct_writes = 0;
};
Stats stats();

}  // namespace softrnic::transport::shm
