// Shared-memory channel: one connected QP over a pair of segments (layout.hpp).
//
// Roles. Each end is the initiator of the operations its QP posts and the target of the
// peer's. Requests go into the peer's req ring from the posting thread (submit); every
// response and control entry goes into the peer's resp ring from this end's progress
// context (or from close()/terminate(), under ctl_mu_). Two single-producer rings per
// direction, so the post path never contends with the progress path for a ring.
//
// Small messages (<= kInlineMax) travel inline: the poster copies the payload into the
// entry, and a Send or Write then completes at once (like TCP, "handed to the LLP"); when
// nothing older is outstanding that is the whole post path: no lock, no allocation, no
// system call (a doorbell only if the target's progress thread sleeps).
//
// Large transfers are single-copy at the target, after its own checks: a Send or Write
// entry lists the initiator's source iovecs; the target resolves its receive buffer
// (rx_recv_map) or STag (rx_tagged_acquire) and pulls with process_vm_readv, then acks.
// A Read Request lists the initiator's sink iovecs; the target checks its STag (for_read)
// and pushes with process_vm_writev, then acks. Reads up to kInlineMax come back inline.
// From kCmaSplitMin on, a copy is split with the process's copy helper (cma_copy.hpp) and
// still done when the call returns.
// Atomics run at the target (Endpoint::rx_atomic, atomic w.r.t. other atomics on that
// RNIC) and answer with the original value. Operations complete at the initiator in
// submission order (tx_complete from the progress context).
//
// Without CMA (ptrace policy, or SOFTRNIC_SHM_CMA=0, or the Handshake's allow_cma) the
// target drives a pipelined copy through its bounce chunks: for a Send/Write it asks the
// initiator to copy chunk k into bounce slot i (Pull), the initiator's progress copies
// and answers PullDone, the target places it; for a Read the target copies source chunks
// into its bounce slots (ReadChunk) and the initiator copies them out (ChunkFree). Up to
// kBounceChunks chunks are in flight.
//
// Flow control: a request that does not fit in the peer's req ring stays queued (op
// record "unsent") and progress retries it when the peer consumed; later posts queue
// behind it. Response production never waits on the ring the other side is producing
// into: control entries go through a small local queue, and the req ring is consumed only
// while that queue has room, so two ends can never wait for each other.
//
// Sleeping and waking: the progress thread of an end, before blocking, sets need_wake in
// its own segment header and re-checks its rings (ProgressSource::arm_wakeup, a Dekker
// pair with the producer's "publish, then read-and-clear need_wake", both sides using an
// RMW on need_wake); a producer that finds it set writes one byte to the Unix socket,
// which that thread watches (a thread-only watch: inline pollers never make a system
// call for it). While a consumer polls its CQ the thread is parked (not armed: pollers run
// the rings) and nobody is signalled; a parked thread still listens to the socket. When
// that application stops polling its CQ and polls memory instead (the last byte of an
// RDMA-written buffer, as dtest -W and perftest do), entries for it would wait until its
// park window ended: so a producer whose entries the peer has left unconsumed for
// kPeerStallNs rings once anyway (peer_stalled(); the producer typically polls its CQ for
// the very operation that waits there).
//
// Inbound RDMA Write data is placed so that its last byte is stored last, with release
// order, on every path (inline, CMA, bounce chunks): applications poll that byte.
//
// Peer death: the Unix socket reports EOF/HUP when the peer process dies (even SIGKILL)
// or its channel is destroyed: outstanding operations are flushed (Disconnected) and the
// engine sees rx_llp_closed(Abortive). A CMA call that fails (ESRCH) does the same.
//
// Nothing read from shared memory is trusted: entry sizes, sequence numbers, offsets,
// bounce indices and iovec lists are validated; a bad entry is a stream error.
//
// Internal to the shm transport: the channel core shared by its source files (ring.hpp,
// shm_initiator.cpp, shm_target.cpp, shm_bounce.cpp, shm_grants.cpp, shm_channel.cpp).
#pragma once

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/config.hpp"
#include "base/sync.hpp"
#include "transport/async_channel.hpp"
#include "transport/iwarp/terminate_map.hpp"
#include "transport/llp_registry.hpp"
#include "transport/shm/cma_copy.hpp"
#include "transport/shm/link.hpp"
#include "transport/shm/ring.hpp"
#include "transport/shm/shm.hpp"
#include "transport/transport.hpp"

namespace softrnic::transport::shm::detail {

namespace L = layout;

// Places inbound RDMA Write data so that its last byte is stored last, with release order:
// consumers poll the final byte of an RDMA-written buffer to learn that the rest arrived
// (dtest -W, perftest-style ping-pong), and memcpy may store its tail first.
inline void place_last_byte_last(std::byte *dst, const void *src, size_t len) {
    if (len == 0) return;
    const auto *s = static_cast<const std::byte *>(src);
    if (len > 1) std::memcpy(dst, s, len - 1);
    std::atomic_ref<std::byte>(dst[len - 1]).store(s[len - 1], std::memory_order_release);
}

constexpr size_t kCtlCap = 64;
constexpr size_t kCtlRoomForReq = 16;  // the req ring is consumed only with this much room
constexpr uint32_t kNoChunk = ~0u;
// Consumed slots an inline poller may leave unpublished for its next pass
// (ShmConnection::progress): a quarter of each ring, so a streaming producer always has room while
// we catch up.
constexpr uint64_t kLazyReqSlots = L::kReqSlots / 4;
constexpr uint64_t kLazyRespSlots = L::kRespSlots / 4;
constexpr size_t kCmaStage = L::kBounceChunks * L::kBounceChunk;
// How long entries we gave the peer may sit unconsumed before we ring its doorbell anyway
// (ShmConnection::peer_stalled). A peer that polls consumes within a microsecond; one whose thread
// sleeps armed was rung at once. 5 us rather than 30: a dtest -W ping-pong (both sides
// polling memory, the peer's thread parked) paid this once per trip (8 B one-way 15-60 us
// at 30 us, 12-19 us at 5 us); a doorbell is one non-blocking send() per stall.
constexpr int64_t kPeerStallNs = 5'000;
// Placement by the initiator (layout.hpp, "Placement grants"). We place a small RDMA Write
// into the peer's memory ourselves only when our last kDirectAfterGaps posts on the
// connection each came at least kDirectMinGapNs after the one before: a ping-pong over
// memory (one write per round trip, each side spinning on a byte) then needs no progress
// thread at the target, while a stream of writes, which the target's thread drains from
// the ring in batches faster than one system call each, stays on the ring even where the
// poster paused once (a yield on an empty CQ).
constexpr int64_t kDirectMinGapNs = 1'000;
constexpr uint32_t kDirectAfterGaps = 2;
// Largest write placed that way: the copy runs in the poster's call (about 3 us at 64 KiB),
// where the ring path's target would pull it with one copy of its own anyway.
constexpr uint64_t kDirectMax = 64 << 10;
// SOFTRNIC_SHM_DIRECT_WRITES=0: neither grant nor place (every write through the ring, as
// before grants existed), for comparisons and as a way out. Read once.
inline bool direct_writes_enabled() {
    static const bool on = [] {
        const char *v = base::env_value(base::EnvVar::ShmDirectWrites);
        return !(v && std::strcmp(v, "0") == 0);
    }();
    return on;
}
// Empty progress passes of an application polling its CQ, with none of its own operations
// on this connection outstanding, after which we ask the peer to use our ring again,
// though none of its entries arrived to show that we poll (its writes were placed
// directly). An application that polls memory and now and then its CQ for one completion
// (dtest -W: every tenth write) makes a pass or two per completion.
constexpr uint32_t kPollsBeforeRingHint = 64;
// A revocation waiting for a peer's direct write that takes long (a stopped peer) sleeps
// this long between looks, after spinning and yielding for a while.
constexpr int kRevokeSleepUs = 100;

// ------------------------------------------------------------------------- helpers

// Copies `len` bytes at stream offset `off` of a span list from `src` (scatter) or into
// `dst` (gather).
inline void scatter(const IoSpan *spans, uint32_t n, uint64_t off, const std::byte *src,
                    uint64_t len) {
    uint64_t base = 0;
    for (uint32_t i = 0; i < n && len > 0; ++i) {
        const IoSpan &s = spans[i];
        if (off < base + s.len) {
            uint64_t in = off - base;
            uint64_t k = std::min<uint64_t>(s.len - in, len);
            std::memcpy(s.ptr + in, src, k);
            src += k;
            off += k;
            len -= k;
        }
        base += s.len;
    }
}
inline void gather(const IoSpan *spans, uint32_t n, uint64_t off, std::byte *dst, uint64_t len) {
    uint64_t base = 0;
    for (uint32_t i = 0; i < n && len > 0; ++i) {
        const IoSpan &s = spans[i];
        if (off < base + s.len) {
            uint64_t in = off - base;
            uint64_t k = std::min<uint64_t>(s.len - in, len);
            std::memcpy(dst, s.ptr + in, k);
            dst += k;
            off += k;
            len -= k;
        }
        base += s.len;
    }
}

// --------------------------------------------------------------------------- records

// What a request entry says about an operation, beside its gather list and sequence
// number: kept in a queued ShmOp, or made from the poster's OutboundOp on the inline fast
// path (submit_now).
struct EntryFields {
    OpKind kind = OpKind::Send;
    bool solicited = false;
    bool inline_data = false;
    uint64_t length = 0;
    uint32_t remote_stag = 0;
    uint64_t remote_to = 0;
    uint32_t immediate = 0;
    uint64_t op1 = 0, op2 = 0;
};

inline EntryFields fields_of(const OutboundOp &op, bool inline_data) {
    EntryFields f;
    f.kind = op.kind;
    f.solicited = op.solicited;
    f.inline_data = inline_data;
    f.length = op.length;
    f.remote_stag = op.remote_stag;
    f.remote_to = op.remote_to;
    f.immediate = op.immediate;
    f.op1 = op.operand1;
    f.op2 = op.operand2;
    return f;
}

// Our part of an outstanding operation at the initiator, kept in its record
// (InflightOp::state; the record's seq is the entry's sequence number). The engine keeps the
// local memory pinned until the record is finished and reported.
struct ShmOp : EntryFields {
    bool sent = false;
    std::array<IoSpan, L::kMaxIov> local{};
    uint32_t nlocal = 0;
    uint64_t *atomic_result = nullptr;
    uint64_t placed = 0;  // Read without CMA: bytes copied out of the target's chunks
};

// A control entry waiting for room in the peer's resp ring.
struct Ctl {
    L::Type type = L::Type::Ack;
    uint8_t flags = 0;
    uint32_t stag = 0;
    uint64_t a = 0, b = 0;
    uint32_t seq = 0;
    uint16_t len = 0;
    uint8_t payload[48] = {};
};

// A Terminate on the control ring: its code in the entry's stag field (layer << 16 |
// etype << 8 | ecode) and its message (control word onwards) as the payload, both from
// the one iWARP mapping and encoder the TCP transport uses.
inline Ctl terminate_ctl(const FaultReport &f) {
    Ctl c;
    c.type = L::Type::Terminate;
    const tcp::wire::TermCode code = iwarp::terminate_code(f);
    c.stag = uint32_t{code.layer} << 16 | uint32_t{code.etype} << 8 | code.ecode;
    uint8_t msg[kFaultMessageMax];
    const size_t n = std::min(iwarp::terminate_message(f, msg), sizeof c.payload);
    c.len = static_cast<uint16_t>(n);
    std::memcpy(c.payload, msg, n);
    return c;
}

// The request the target is working on across progress calls (copy path without CMA).
struct TargetOp {
    bool active = false;
    L::Type type = L::Type::SendRemote;
    uint8_t flags = 0;
    uint32_t seq = 0, stag = 0, imm = 0;
    uint64_t to = 0, length = 0;
    uint64_t next = 0;  // next offset to request (Pull) or push (ReadChunk)
    uint64_t done = 0;  // bytes placed (Pull)
    RxRecv recv{};
    bool recv_open = false;
    IoSpan mem{};  // write destination or read source (tagged)
    void *ref = nullptr;
};

enum class ChunkUse : uint8_t { Free, Pull, Push };

// Cores that have given their peer placement grants; a revocation walks them.
class ShmConnection;
extern std::mutex g_grant_mu;
extern std::vector<ShmConnection *> g_granting;  // guarded by g_grant_mu
void revoke_all_grants();

class ShmConnection final : public ProgressSource {
  public:
    ShmConnection(std::unique_ptr<Link> link, ProgressEngine &pe)
        : link_(std::move(link)), pe_(pe) {
        me_ = link_->mine.header();
        peer_ = link_->peer.header();
        std::byte *m = link_->mine.get();
        std::byte *p = link_->peer.get();
        // Synchronisation keys for ThreadSanitizer (see sync_release): our segment at our
        // address; the peer's at the peer's address, when the peer is this process.
        my_key_ = sync_key(link_->peer_canon ? m : nullptr);
        peer_key_ = sync_key(link_->peer_canon);
        req_rx_.init(m + L::kReqOff, L::kReqSlots, &me_->req_cons, my_key_);
        resp_rx_.init(m + L::kRespOff, L::kRespSlots, &me_->resp_cons, my_key_);
        req_tx_.init(p + L::kReqOff, L::kReqSlots, &peer_->req_cons, peer_key_);
        resp_tx_.init(p + L::kRespOff, L::kRespSlots, &peer_->resp_cons, peer_key_);
        my_bounce_ = m + L::kBounceOff;
        peer_bounce_ = p + L::kBounceOff;
        token_ = pe_.add(this, /*memory_polled=*/true);
    }
    ~ShmConnection() override {
        leave_grants();
        if (token_.valid()) pe_.remove(token_);
        std::atomic_ref<uint32_t>(me_->need_wake).store(0, std::memory_order_relaxed);
    }
    bool ok() const { return token_.valid(); }
    std::unique_ptr<Link> take_link() { return std::move(link_); }

    void attach(Endpoint *ep) {
        ep_ = ep;
        {
            std::lock_guard lk(mu_);
            recs_.attach(ep);
        }
        attached_.store(true, std::memory_order_release);
        if (!pe_.watch(token_, link_->sock, EPOLLIN | EPOLLRDHUP, /*thread_only=*/true))
            peer_gone_.store(true, std::memory_order_release);
        wake();
    }
    void shutdown_owner() {
        if (attached_.load(std::memory_order_acquire) && !detached_.load(std::memory_order_acquire))
            detach();
        leave_grants();
        if (token_.valid()) {
            pe_.remove(token_);
            token_ = {};
        }
    }

    OpResult submit(const OutboundOp &op);
    bool submit_now(const OutboundOp &op, OpResult &out);
    void terminate(const FaultReport &f);
    void close(CloseKind kind);
    void detach();

    void progress(uint32_t events) override;
    bool arm_wakeup() override;
    // Voids every grant this end gave its peer and waits until the peer's direct writes
    // under way are done (layout.hpp). Any thread.
    void revoke_grants();
    void disarm_wakeup() override {
        std::atomic_ref<uint32_t>(me_->need_wake).store(0, std::memory_order_relaxed);
    }

  private:
    void wake() {
        work_.store(true, std::memory_order_release);
        pe_.wake(token_);
    }
    void notify_peer();
    bool peer_stalled();
    void ring_stalled_peer();

    // placement grants: as initiator
    bool try_direct_write(const OutboundOp &op);
    // As target: the peer may place writes into us (CMA, and a pidfd, which is what lets a
    // revocation tell a dead peer from a slow one).
    bool grants_possible() const {
        return link_->cma && link_->peer_pidfd && link_->peer_pidfd->valid() &&
               direct_writes_enabled();
    }
    // as target (progress only, except leave_grants)
    uint64_t grant_generation();
    void grant(uint32_t stag, void *ref, uint64_t gen);
    void set_hint(uint32_t v);
    void leave_grants();

    // tx
    bool emit_request(const EntryFields &r, std::span<const IoSpan> local, uint32_t seq,
                      bool &broken);
    bool flush_unsent_locked();
    void fail_all_locked(OpResult first);
    InflightOp *find_locked(uint32_t seq);
    // control
    bool push_ctl(const Ctl &c);
    bool flush_ctl_locked();
    bool emit_direct_locked(L::Type type, uint32_t seq, const std::byte *data, uint32_t len);
    // rx
    bool process_resp();
    bool process_req();
    bool handle_req(const L::EntryHdr &h, const std::byte *payload);
    bool handle_resp(const L::EntryHdr &h, const std::byte *payload);
    void target_failed(const RxStatus &st, uint32_t stag, uint64_t to);
    void protocol_error();
    void cma_failed();
    void pump_target();
    bool handle_bounce(const L::EntryHdr &h);
    void finish_target();
    void release_target();
    void stream_end(CloseKind kind);
    // The receive side told the engine how the stream ended (InflightRecords::rx_ending).
    void finish_rx_ending();
    void report_ready();
    bool quick_check(uint32_t events) const;

    std::unique_ptr<Link> link_;
    ProgressEngine &pe_;
    ProgressEngine::Token token_{};
    L::SegHeader *me_ = nullptr;
    L::SegHeader *peer_ = nullptr;
    std::byte *my_bounce_ = nullptr;
    std::byte *peer_bounce_ = nullptr;
    const void *my_key_ = nullptr;
    const void *peer_key_ = nullptr;
    Endpoint *ep_ = nullptr;
    std::atomic<bool> attached_{false};
    std::atomic<bool> detached_{false};
    // Calls into ep_ (a Scope each): detach() shuts it, so none runs once it returns.
    EndpointGate ep_gate_;
    std::atomic<bool> work_{false};       // progress has something to do besides the rings
    std::atomic<bool> peer_gone_{false};  // EOF/HUP on the socket, or a dead CMA peer
    std::atomic<bool> rx_open_{true};     // arrivals are delivered
    std::atomic<bool> closed_{false};     // the stream is over for new operations

    // req ring producer: the posting thread (fast path, when unsent_ == 0) or whoever
    // holds mu_ (flush_unsent_locked).
    Producer req_tx_;
    // Guarded by mu_: the records the engine lent us, and those of them not yet in the
    // peer's ring (the newest: from first_unsent_, consecutive).
    std::mutex mu_;
    InflightRecords recs_;
    uint32_t first_unsent_ = 0;
    std::atomic<uint32_t> unsent_{0};

    // Guarded by ctl_mu_: the resp ring producer and the control queue.
    std::mutex ctl_mu_;
    Producer resp_tx_;
    std::array<Ctl, kCtlCap> ctl_{};
    size_t ctl_head_ = 0, ctl_n_ = 0;
    std::atomic<size_t> ctl_pending_{0};
    bool close_sent_ = false;  // Close or Terminate queued: nothing may follow

    // Progress only.
    Consumer req_rx_, resp_rx_;
    TargetOp cur_;
    std::array<ChunkUse, L::kBounceChunks> chunk_{};
    std::array<uint64_t, L::kBounceChunks> chunk_off_{}, chunk_len_{};
    std::array<uint32_t, L::kBounceChunks> chunk_seq_{};
    bool peer_close_seen_ = false;  // Close entry arrived: deliver once the req ring drained
    bool told_closed_ = false;
    bool socket_done_ = false;
    bool req_stalled_ = false;  // the req ring head waits for room in the resp ring
    // The peer's consumer indices as last read, and since when they have not moved while
    // entries of ours were waiting (0: not timing); peer_stalled().
    uint64_t seen_req_cons_ = 0, seen_resp_cons_ = 0;
    int64_t stall_since_ns_ = 0;
    uint32_t stall_calls_ = 0;  // progress calls since the wait began (clock read every 16th)
    bool stall_rung_ = false;

    // Placement grants, target side. granting_: in g_granting (written under g_grant_mu).
    bool granting_ = false;
    struct GrantMemo {
        uint32_t stag = 0;
        uint64_t gen = ~uint64_t{0};
    };
    std::array<GrantMemo, L::kGrantSlots> grant_memo_{};  // progress only: what each slot holds
    uint32_t next_grant_ = 0;                             // progress only
    uint32_t hint_ = 0;        // progress only: our direct_hint as last written
    uint32_t idle_polls_ = 0;  // progress only: empty inline passes while hint_ is set
    // Initiator side, the posting thread: when its last post (seen while the peer wanted
    // direct writes) ended, and how many posts in a row came a long gap after the one before.
    int64_t last_post_ns_ = 0;
    uint32_t long_gaps_ = 0;
    bool no_direct_ = false;  // the kernel refused our process_vm_writev
};

}  // namespace softrnic::transport::shm::detail
