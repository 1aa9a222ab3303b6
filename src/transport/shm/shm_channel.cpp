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
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/sync.hpp"
#include "transport/iwarp/terminate_map.hpp"
#include "transport/llp_registry.hpp"
#include "transport/shm/cma_copy.hpp"
#include "transport/shm/link.hpp"
#include "transport/shm/shm.hpp"
#include "transport/transport.hpp"

namespace softrnic::transport::shm {

namespace L = layout;

namespace {

// Places inbound RDMA Write data so that its last byte is stored last, with release order:
// consumers poll the final byte of an RDMA-written buffer to learn that the rest arrived
// (dtest -W, perftest-style ping-pong), and memcpy may store its tail first.
void place_last_byte_last(std::byte *dst, const void *src, size_t len) {
    if (len == 0) return;
    const auto *s = static_cast<const std::byte *>(src);
    if (len > 1) std::memcpy(dst, s, len - 1);
    std::atomic_ref<std::byte>(dst[len - 1]).store(s[len - 1], std::memory_order_release);
}

constexpr size_t kCtlCap = 64;
constexpr size_t kCtlRoomForReq = 16;  // the req ring is consumed only with this much room
constexpr uint32_t kNoChunk = ~0u;
// Consumed slots an inline poller may leave unpublished for its next pass (Core::progress):
// a quarter of each ring, so a streaming producer always has room while we catch up.
constexpr uint64_t kLazyReqSlots = L::kReqSlots / 4;
constexpr uint64_t kLazyRespSlots = L::kRespSlots / 4;
constexpr size_t kCmaStage = L::kBounceChunks * L::kBounceChunk;
// How long entries we gave the peer may sit unconsumed before we ring its doorbell anyway
// (Core::peer_stalled). A peer that polls consumes within a microsecond; one whose thread
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
bool direct_writes_enabled() {
    static const bool on = [] {
        const char *v = std::getenv("SOFTRNIC_SHM_DIRECT_WRITES");
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

// ThreadSanitizer cannot see that two mappings of one segment (both ends in one process)
// are the same memory: every release/acquire on a segment also releases/acquires a key
// common to both ends (the owner's address of the segment). A no-op in normal builds and
// between processes (key nullptr).
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
void sync_release(const void *key) {
    if (key) __tsan_release(const_cast<void *>(key));
}
void sync_acquire(const void *key) {
    if (key) __tsan_acquire(const_cast<void *>(key));
}
#else
void sync_release(const void *) {}
void sync_acquire(const void *) {}
#endif

template <class T>
T load_acquire(T &x) {
    return std::atomic_ref<T>(x).load(std::memory_order_acquire);
}
template <class T>
void store_release(T &x, T v) {
    std::atomic_ref<T>(x).store(v, std::memory_order_release);
}

// ----------------------------------------------------------------------------- rings

// Producer side of a ring that lives in the peer's segment. Used by one thread at a time.
class Producer {
  public:
    void init(std::byte *slots, uint32_t n, uint64_t *cons, const void *key) {
        slots_ = slots;
        n_ = n;
        mask_ = n - 1;
        cons_ = cons;
        key_ = key;
    }
    // A contiguous run of k slots at the producer position (a Pad entry fills the tail
    // first when needed), or nullptr when the ring is full. `broken` is set when the
    // consumer's index is impossible.
    L::EntryHdr *reserve(uint32_t k, bool &broken) {
        uint32_t pos = static_cast<uint32_t>(prod_ & mask_);
        uint32_t tail = n_ - pos;
        uint64_t need = k <= tail ? k : uint64_t{tail} + k;
        if (prod_ + need - cons_cache_ > n_) {
            cons_cache_ = load_acquire(*cons_);
            sync_acquire(key_);
            if (cons_cache_ > prod_ || prod_ - cons_cache_ > n_) {
                broken = true;
                return nullptr;
            }
            if (prod_ + need - cons_cache_ > n_) {
                blocked_cons_.store(prod_ + need - n_, std::memory_order_release);
                return nullptr;
            }
        }
        blocked_cons_.store(0, std::memory_order_relaxed);
        if (k > tail) {
            auto *pad = at(prod_);
            pad->type = L::Type::Pad;
            pad->nslots = static_cast<uint16_t>(tail);
            pad->len = 0;
            sync_release(key_);
            store_release(pad->stamp, prod_ + 1);
            prod_ += tail;
        }
        return at(prod_);
    }
    void publish(L::EntryHdr *h, uint32_t k) {
        h->nslots = static_cast<uint16_t>(k);
        sync_release(key_);
        store_release(h->stamp, prod_ + 1);
        prod_ += k;
        // For the progress context's stall check (Core::peer_stalled): a count, no data
        // is read through it, so relaxed.
        published_.store(prod_, std::memory_order_relaxed);
    }
    // Slots published so far (Pad entries included, as in the consumer's index); readable
    // from any thread.
    uint64_t published() const { return published_.load(std::memory_order_relaxed); }
    // The consumer's index, for the same check (untrusted: the peer writes it); relaxed for
    // the same reason.
    uint64_t consumed() const {
        return std::atomic_ref<uint64_t>(*cons_).load(std::memory_order_relaxed);
    }
    // True when the last failed reserve() would now fit (readable from any thread).
    bool space_returned() const {
        uint64_t want = blocked_cons_.load(std::memory_order_acquire);
        return want != 0 && load_acquire(*cons_) >= want;
    }
    bool blocked() const { return blocked_cons_.load(std::memory_order_acquire) != 0; }

  private:
    L::EntryHdr *at(uint64_t p) const {
        return reinterpret_cast<L::EntryHdr *>(slots_ + (p & mask_) * L::kSlot);
    }
    std::byte *slots_ = nullptr;
    uint32_t n_ = 1;
    uint64_t mask_ = 0;  // n_ is a power of two: positions wrap with a mask, not a division
    uint64_t *cons_ = nullptr;
    const void *key_ = nullptr;
    uint64_t prod_ = 0;
    uint64_t cons_cache_ = 0;
    std::atomic<uint64_t> blocked_cons_{0};
    std::atomic<uint64_t> published_{0};
};

// Consumer side of a ring in our own segment. Progress context only.
class Consumer {
  public:
    void init(std::byte *slots, uint32_t n, uint64_t *cons, const void *key) {
        slots_ = slots;
        n_ = n;
        mask_ = n - 1;
        cons_ = cons;
        key_ = key;
    }
    bool ready() const { return load_acquire(at(pos_)->stamp) == pos_ + 1; }
    enum class Peek : uint8_t { Empty, Entry, Bad };
    // Copies the next entry's header (the peer could change the slot under us) and
    // validates its size; skips Pad entries.
    Peek peek(L::EntryHdr &h, const std::byte *&payload) {
        for (;;) {
            L::EntryHdr *e = at(pos_);
            if (load_acquire(e->stamp) != pos_ + 1) return Peek::Empty;
            sync_acquire(key_);
            std::memcpy(&h, e, sizeof h);
            uint32_t room = n_ - static_cast<uint32_t>(pos_ & mask_);
            if (h.nslots == 0 || h.nslots > room ||
                L::kHdrBytes + h.len > size_t{h.nslots} * L::kSlot)
                return Peek::Bad;
            if (h.type == L::Type::Pad) {
                pos_ += h.nslots;
                continue;
            }
            payload = reinterpret_cast<const std::byte *>(e) + L::kHdrBytes;
            return Peek::Entry;
        }
    }
    void pop(const L::EntryHdr &h) { pos_ += h.nslots; }
    // Slots consumed but not yet published to the producer.
    uint64_t uncommitted() const { return pos_ - committed_; }
    // Publishes consumption; true when something new was released to the producer.
    bool commit() {
        if (pos_ == committed_) return false;
        sync_release(key_);
        store_release(*cons_, pos_);
        committed_ = pos_;
        return true;
    }

  private:
    L::EntryHdr *at(uint64_t p) const {
        return reinterpret_cast<L::EntryHdr *>(slots_ + (p & mask_) * L::kSlot);
    }
    std::byte *slots_ = nullptr;
    uint32_t n_ = 1;
    uint64_t mask_ = 0;
    uint64_t *cons_ = nullptr;
    const void *key_ = nullptr;
    uint64_t pos_ = 0;
    uint64_t committed_ = 0;
};

// ------------------------------------------------------------------------- helpers

// Copies `len` bytes at stream offset `off` of a span list from `src` (scatter) or into
// `dst` (gather).
void scatter(const IoSpan *spans, uint32_t n, uint64_t off, const std::byte *src, uint64_t len) {
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
void gather(const IoSpan *spans, uint32_t n, uint64_t off, std::byte *dst, uint64_t len) {
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
// number: kept in a queued OpRec, or made from the poster's OutboundOp on the inline fast
// path (submit_now), which used to copy it into a zeroed OpRec first.
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

EntryFields fields_of(const OutboundOp &op, bool inline_data) {
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

// One outstanding operation at the initiator (submission order). The engine keeps the
// local memory pinned until tx_complete.
struct OpRec : EntryFields {
    uint32_t seq = 0;
    bool sent = false;
    bool ready = false;
    OpResult result{};
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
Ctl terminate_ctl(const FaultReport &f) {
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
class Core;
std::mutex g_grant_mu;
std::vector<Core *> g_granting;  // guarded by g_grant_mu
void revoke_all_grants();

class Core final : public ProgressSource {
  public:
    Core(std::unique_ptr<Link> link, ProgressEngine &pe) : link_(std::move(link)), pe_(pe) {
        me_ = link_->mine.header();
        peer_ = link_->peer.header();
        std::byte *m = link_->mine.get();
        std::byte *p = link_->peer.get();
        // Synchronisation keys for ThreadSanitizer (see sync_release): our segment at our
        // address; the peer's at the peer's address, when the peer is this process.
        my_key_ = link_->peer_canon ? m : nullptr;
        peer_key_ = link_->peer_canon;
        req_rx_.init(m + L::kReqOff, L::kReqSlots, &me_->req_cons, my_key_);
        resp_rx_.init(m + L::kRespOff, L::kRespSlots, &me_->resp_cons, my_key_);
        req_tx_.init(p + L::kReqOff, L::kReqSlots, &peer_->req_cons, peer_key_);
        resp_tx_.init(p + L::kRespOff, L::kRespSlots, &peer_->resp_cons, peer_key_);
        my_bounce_ = m + L::kBounceOff;
        peer_bounce_ = p + L::kBounceOff;
        token_ = pe_.add(this, /*memory_polled=*/true);
    }
    ~Core() override {
        leave_grants();
        if (token_.valid()) pe_.remove(token_);
        std::atomic_ref<uint32_t>(me_->need_wake).store(0, std::memory_order_relaxed);
    }
    bool ok() const { return token_.valid(); }
    std::unique_ptr<Link> take_link() { return std::move(link_); }

    void attach(Endpoint *ep) {
        ep_ = ep;
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
    OpResult finish_now_locked(OpResult r);
    void fail_all_locked(OpResult first);
    OpRec *find_locked(uint32_t seq);
    // control
    bool push_ctl(const Ctl &c);
    bool flush_ctl_locked();
    bool emit_direct_locked(L::Type type, uint32_t seq, const std::byte *data, uint32_t len);
    // rx
    bool process_resp();
    bool process_req();
    bool handle_req(const L::EntryHdr &h, const std::byte *payload);
    bool handle_resp(const L::EntryHdr &h, const std::byte *payload);
    bool parse_iovs(const L::EntryHdr &h, const std::byte *payload, uint64_t total,
                    std::array<iovec, L::kMaxIov> &out, uint32_t &n);
    void target_failed(const RxStatus &st, uint32_t stag, uint64_t to);
    void protocol_error();
    void cma_failed();
    void pump_target();
    void finish_target();
    void release_target();
    void stream_end(CloseKind kind);
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
    // Calls into ep_ (a GateScope each): detach() closes it, so none runs once it returns.
    base::ScopedGate ep_gate_;
    std::atomic<bool> work_{false};       // progress has something to do besides the rings
    std::atomic<bool> peer_gone_{false};  // EOF/HUP on the socket, or a dead CMA peer
    std::atomic<bool> rx_open_{true};     // arrivals are delivered
    std::atomic<bool> closed_{false};     // the stream is over for new operations

    // req ring producer: the posting thread (fast path, when unsent_ == 0) or whoever
    // holds mu_ (flush_unsent_locked).
    Producer req_tx_;
    // Guarded by mu_.
    std::mutex mu_;
    std::deque<OpRec> ops_;
    uint32_t next_seq_ = 1;
    uint32_t reporting_ = 0;
    std::atomic<uint32_t> unsent_{0};      // records not yet in the peer's ring
    std::atomic<uint32_t> unreported_{0};  // records not yet reported (or being reported)

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

// ----------------------------------------------------------------------------- tx side

void Core::notify_peer() {
    // Dekker pair with arm_wakeup(), through RMWs on the sleeper's need_wake (no fences:
    // an RMW reads the latest value in the word's modification order). If the sleeper's
    // exchange(1) came first, ours reads 1 and we ring; if ours came first, the sleeper's
    // acquire RMW reads from our release RMW, so it sees everything we published before
    // (the entry or the consumed index) when it re-checks, and does not sleep.
    std::atomic_ref<uint32_t> w(peer_->need_wake);
    sync_release(peer_key_);
    if (w.exchange(0, std::memory_order_acq_rel) == 0) return;
    char b = 0;
    // Non-blocking: a full socket buffer means a wake-up is already pending there.
    [[maybe_unused]] ssize_t r = ::send(link_->sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    counters().doorbells.fetch_add(1, std::memory_order_relaxed);
}

// True when entries we published into the peer's rings have waited kPeerStallNs with the
// peer consuming none of them, once per such stall. The peer's progress thread parks while
// its application polls its CQ (the pollers run the rings) and is not armed then, so we do
// not ring; if that application went on to poll memory instead (dtest -W and perftest poll
// the last byte of an RDMA-written buffer after their own write completed), nobody would
// run the peer's rings until its park window ended. A parked thread still listens to the
// doorbell. We are typically polling our CQ for the very operation that waits there.
// Progress context only; cheap (two relaxed loads) while nothing of ours is outstanding.
// Inline pollers call it on every empty CQ poll, and in a ping-pong our last entry is
// outstanding during every one of them: there the peer's indices and the clock are read
// on every 16th call only, so a peer that consumes within 15 polls costs neither. (The
// clock was a quarter of the shm 8 B ping-pong's cycles; and an index read on every poll
// kept a copy of the peer's index line here, which the peer's next store of that index
// had to take back across cores, on the peer's path to its reply.) The progress thread
// reads both on every call.
bool Core::peer_stalled() {
    uint64_t req = req_tx_.published(), resp = resp_tx_.published();
    if (req <= seen_req_cons_ && resp <= seen_resp_cons_) {
        stall_since_ns_ = 0;
        stall_calls_ = 0;
        return false;
    }
    if (socket_done_ || peer_gone_.load(std::memory_order_acquire)) return false;
    if (ProgressEngine::inline_poll_context() && (++stall_calls_ & 15) != 0) return false;
    uint64_t req_cons = req_tx_.consumed(), resp_cons = resp_tx_.consumed();
    if (req_cons != seen_req_cons_ || resp_cons != seen_resp_cons_) {
        // The peer moved: a new wait, if any, starts here.
        seen_req_cons_ = req_cons;
        seen_resp_cons_ = resp_cons;
        stall_since_ns_ = 0;
        stall_calls_ = 0;
        stall_rung_ = false;
        return false;
    }
    if (stall_rung_) return false;
    int64_t now = base::mono_ns();
    if (stall_since_ns_ == 0) {
        stall_since_ns_ = now;
        return false;
    }
    if (now - stall_since_ns_ < kPeerStallNs) return false;
    stall_rung_ = true;
    return true;
}

void Core::ring_stalled_peer() {
    char b = 0;
    // Non-blocking: a full socket buffer means a wake-up is already pending there.
    [[maybe_unused]] ssize_t r = ::send(link_->sock, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    counters().doorbells.fetch_add(1, std::memory_order_relaxed);
    counters().stall_doorbells.fetch_add(1, std::memory_order_relaxed);
}

// ------------------------------------------------------------------ placement grants

namespace {
// A grant slot as one consistent copy (the owner may be rewriting it: seqlock).
struct GrantCopy {
    uint32_t stag = 0;
    uint64_t gen = 0, to = 0, len = 0, addr = 0;
};
// Without fences (ThreadSanitizer does not model them): the owner stores the fields with
// release after making `seq` odd, so a field value of a newer write carries that odd `seq`
// with it; our field loads are acquire, so the second `seq` load cannot move before them.
bool read_grant(L::Grant &g, GrantCopy &out) {
    uint32_t s1 = std::atomic_ref<uint32_t>(g.seq).load(std::memory_order_acquire);
    if (s1 & 1) return false;
    out.stag = std::atomic_ref<uint32_t>(g.stag).load(std::memory_order_acquire);
    out.gen = std::atomic_ref<uint64_t>(g.gen).load(std::memory_order_acquire);
    out.to = std::atomic_ref<uint64_t>(g.to).load(std::memory_order_acquire);
    out.len = std::atomic_ref<uint64_t>(g.len).load(std::memory_order_acquire);
    out.addr = std::atomic_ref<uint64_t>(g.addr).load(std::memory_order_acquire);
    return std::atomic_ref<uint32_t>(g.seq).load(std::memory_order_relaxed) == s1;
}
}  // namespace

// A small RDMA Write placed into the peer's memory by us (one process_vm_writev), instead
// of an entry its progress thread would have to wake up for. Only when the peer says its
// application polls no CQ (direct_hint), our posts come apart (a ping-pong, not a
// stream), every request we gave the peer before has been consumed (so the write is
// ordered after them, as on the ring: an earlier Send with Invalidate, say), and the peer
// granted a range of that STag that holds the whole write. False: use the ring (which
// also reports any error: the target validates again there).
bool Core::try_direct_write(const OutboundOp &op) {
    if (op.kind != OpKind::RdmaWrite || op.length == 0 || op.length > kDirectMax || !link_->cma ||
        no_direct_ || op.local.size() > L::kMaxIov || !direct_writes_enabled())
        return false;
    if (std::atomic_ref<uint32_t>(peer_->direct_hint).load(std::memory_order_relaxed) == 0)
        return false;
    // Gaps are measured from the end of the previous post (a direct one takes longer than
    // the gap itself: from its start, a stream would keep itself direct).
    const int64_t now = base::mono_ns();
    const bool long_gap = now - last_post_ns_ >= kDirectMinGapNs;
    last_post_ns_ = now;
    long_gaps_ = long_gap ? long_gaps_ + 1 : 0;
    if (long_gaps_ < kDirectAfterGaps) return false;
    // Acquire: the peer's handling of what it consumed (an invalidation, say, and the
    // grant_gen bump that came with it) is then visible to us. Our responses (acks, read
    // data) go through the other ring, whose order with our requests the peer's progress
    // never kept (it takes responses first in each pass): they need not be consumed.
    if (req_tx_.published() != load_acquire(peer_->req_cons)) return false;
    // Slots of an older generation are void: skip them (one that happens to match the STag
    // would fail the check below every time, while a current grant sits in another slot).
    const uint64_t gen_now =
        std::atomic_ref<uint64_t>(peer_->grant_gen).load(std::memory_order_acquire);
    GrantCopy g;
    bool found = false;
    for (L::Grant &slot : peer_->grants) {
        if (!read_grant(slot, g) || g.gen != gen_now || g.stag != op.remote_stag) continue;
        // [to, to + length) inside [g.to, g.to + g.len), written so that nothing wraps.
        if (op.remote_to >= g.to && op.length <= g.len &&
            op.remote_to - g.to <= g.len - op.length) {
            found = true;
            break;
        }
    }
    if (!found) return false;
    std::array<iovec, L::kMaxIov> local;
    size_t nlocal = 0;
    for (const IoSpan &s : op.local)
        if (s.len) local[nlocal++] = {s.ptr, static_cast<size_t>(s.len)};
    // The last byte in a segment of its own, copied after the rest: an application polls
    // it to learn that the write arrived (the kernel copies the segments in order, and a
    // string copy's stores are not reordered with later stores).
    const uintptr_t dst = static_cast<uintptr_t>(g.addr + (op.remote_to - g.to));
    std::array<iovec, 2> remote;
    size_t nremote = 0;
    if (op.length > 1)
        remote[nremote++] = {reinterpret_cast<void *>(dst), static_cast<size_t>(op.length - 1)};
    remote[nremote++] = {reinterpret_cast<void *>(dst + op.length - 1), 1};
    // Announce the write, then check that the grant still stands: the owner bumps
    // grant_gen first and then waits for direct_inflight to drop (the Dekker pair).
    std::atomic_ref<uint32_t> inflight(peer_->direct_inflight);
    inflight.fetch_add(1, std::memory_order_seq_cst);
    bool ok = false;
    if (std::atomic_ref<uint64_t>(peer_->grant_gen).load(std::memory_order_seq_cst) == g.gen &&
        !peer_gone_.load(std::memory_order_acquire) && link_->peer_alive()) {
        ssize_t n =
            ::process_vm_writev(link_->peer_pid, local.data(), nlocal, remote.data(), nremote, 0);
        ok = n == static_cast<ssize_t>(op.length);
        // The connection's CMA probe read; writing may still be refused (a security module,
        // seccomp): then never again on this connection.
        if (n < 0 && (errno == EPERM || errno == ENOSYS || errno == EACCES)) no_direct_ = true;
    }
    inflight.fetch_sub(1, std::memory_order_release);
    last_post_ns_ = base::mono_ns();
    if (ok) counters().direct_writes.fetch_add(1, std::memory_order_relaxed);
    return ok;
}

// The generation a grant made from here on is stamped with. Read before the engine
// validates the STag (rx_tagged_acquire): a revocation after this read voids the grant;
// one before it was also before the validation, which therefore saw the change. Joining
// g_granting first makes every later revocation reach us.
uint64_t Core::grant_generation() {
    if (!granting_) {
        std::lock_guard lk(g_grant_mu);
        g_granting.push_back(this);
        granting_ = true;
    }
    return std::atomic_ref<uint64_t>(me_->grant_gen).load(std::memory_order_seq_cst);
}

// Publishes the whole range of the STag `ref` pins, as validated for this connection,
// under generation `gen` (see grant_generation).
void Core::grant(uint32_t stag, void *ref, uint64_t gen) {
    for (const GrantMemo &m : grant_memo_)
        if (m.stag == stag && m.gen == gen) return;  // already there
    // A stream closed after `gen` was read bumped it when it closed (revoke_grants), and
    // that bump is visible here if the close is.
    if (!rx_open_.load(std::memory_order_acquire)) return;
    uint64_t to = 0, len = 0;
    std::byte *host = nullptr;
    if (!ep_->rx_tagged_grant(ref, to, len, host) || len == 0) return;
    // The slot that holds this STag already (of an older generation), else one of an older
    // generation, else the next in turn.
    uint32_t i = L::kGrantSlots;
    for (uint32_t k = 0; k < L::kGrantSlots && i == L::kGrantSlots; ++k)
        if (grant_memo_[k].stag == stag) i = k;
    for (uint32_t k = 0; k < L::kGrantSlots && i == L::kGrantSlots; ++k)
        if (grant_memo_[k].gen != gen) i = k;
    if (i == L::kGrantSlots) {
        i = next_grant_;
        next_grant_ = (next_grant_ + 1) % L::kGrantSlots;
    }
    L::Grant &g = me_->grants[i];
    std::atomic_ref<uint32_t> seq(g.seq);
    const uint32_t s = seq.load(std::memory_order_relaxed);
    // Seqlock write (read_grant): odd, the fields with release (each then orders the odd
    // `seq` before it), even.
    seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_ref<uint32_t>(g.stag).store(stag, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.gen).store(gen, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.to).store(to, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.len).store(len, std::memory_order_release);
    std::atomic_ref<uint64_t>(g.addr).store(reinterpret_cast<uintptr_t>(host),
                                            std::memory_order_release);
    seq.store(s + 2, std::memory_order_release);
    grant_memo_[i] = {stag, gen};
}

void Core::set_hint(uint32_t v) {
    idle_polls_ = 0;
    if (v == hint_) return;
    hint_ = v;
    std::atomic_ref<uint32_t>(me_->direct_hint).store(v, std::memory_order_relaxed);
}

// Waits for as long as the peer process lives: a write it announced may still land, and
// the caller (a dereg, say) is about to let the memory go. Only the peer's death (its
// pidfd; grants are given only where there is one) ends the wait otherwise. A live peer's
// write is one system call; one stopped between its announcement and its write (SIGSTOP,
// a debugger) holds the revocation until it runs again, as a DMA in flight holds a NIC's.
void Core::revoke_grants() {
    std::atomic_ref<uint64_t>(me_->grant_gen).fetch_add(1, std::memory_order_seq_cst);
    std::atomic_ref<uint32_t> inflight(me_->direct_inflight);
    for (uint32_t spins = 0; inflight.load(std::memory_order_seq_cst) != 0; ++spins) {
        if (spins < 64) {
            base::cpu_relax();
        } else if (!link_ || !link_->peer_alive()) {
            break;  // a peer that died inside its write never decrements
        } else if (spins < 1024) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(kRevokeSleepUs));
        }
    }
}

void Core::leave_grants() {
    std::lock_guard lk(g_grant_mu);
    if (!granting_) return;
    revoke_grants();
    std::erase(g_granting, this);
    granting_ = false;
}

// Called only for an STag that was granted (engine::withdraw_grants). A target that joins
// g_granting after this walk validates after it too, so it sees the change the caller made
// before calling (g_grant_mu orders the two).
void revoke_all_grants() {
    std::lock_guard lk(g_grant_mu);
    for (Core *c : g_granting)
        c->revoke_grants();
}

bool Core::emit_request(const EntryFields &r, std::span<const IoSpan> local, uint32_t seq,
                        bool &broken) {
    L::Type type;
    uint8_t flags = r.solicited ? L::kFlagSolicited : 0;
    uint32_t payload = 0;
    bool remote_iov = false;
    switch (r.kind) {
        case OpKind::Send:
        case OpKind::SendInvalidate:
        case OpKind::SendImmediate:
            if (r.kind == OpKind::SendInvalidate) flags |= L::kFlagInvalidate;
            if (r.kind == OpKind::SendImmediate) flags |= L::kFlagImmediate;
            remote_iov = !r.inline_data;
            type = r.inline_data ? L::Type::SendInline : L::Type::SendRemote;
            break;
        case OpKind::RdmaWrite:
        case OpKind::RdmaWriteImmediate:
            if (r.kind == OpKind::RdmaWriteImmediate) flags |= L::kFlagImmediate;
            remote_iov = !r.inline_data;
            type = r.inline_data ? L::Type::WriteInline : L::Type::WriteRemote;
            break;
        case OpKind::RdmaRead:
            remote_iov = true;
            type = L::Type::ReadReq;
            break;
        case OpKind::FetchAdd:
        case OpKind::CompareSwap:
            if (r.kind == OpKind::CompareSwap) flags |= L::kFlagCmpSwap;
            type = L::Type::Atomic;
            payload = 16;
            break;
        default:
            return false;
    }
    uint32_t niov = 0;
    if (remote_iov) {
        for (const IoSpan &l : local)
            niov += l.len != 0;
        payload = niov * sizeof(L::Iov);
    } else if (r.inline_data) {
        payload = static_cast<uint32_t>(r.length);
    }
    uint32_t k = L::slots_for(payload);
    L::EntryHdr *e = req_tx_.reserve(k, broken);
    if (!e) return false;
    e->type = type;
    e->flags = flags;
    e->stag = r.remote_stag;
    e->a = r.remote_to;
    e->b = r.length;
    e->seq = seq;
    e->imm = r.immediate;
    e->len = static_cast<uint16_t>(payload);
    auto *out = reinterpret_cast<std::byte *>(e) + L::kHdrBytes;
    if (type == L::Type::Atomic) {
        std::memcpy(out, &r.op1, 8);
        std::memcpy(out + 8, &r.op2, 8);
    } else if (remote_iov) {
        for (const IoSpan &l : local) {
            if (!l.len) continue;
            L::Iov v{reinterpret_cast<uintptr_t>(l.ptr), l.len};
            std::memcpy(out, &v, sizeof v);
            out += sizeof v;
        }
    } else {
        gather(local.data(), static_cast<uint32_t>(local.size()), 0, out, r.length);
    }
    req_tx_.publish(e, k);
    return true;
}

OpResult Core::finish_now_locked(OpResult r) {
    // In order: immediate only when nothing older is outstanding or being reported.
    if (ops_.empty() && reporting_ == 0) return r;
    OpRec &rec = ops_.emplace_back();
    rec.seq = next_seq_++;
    rec.sent = true;
    rec.ready = true;
    rec.result = r;
    unreported_.fetch_add(1, std::memory_order_acq_rel);
    wake();
    return {OpOutcome::Pending, {}};
}

namespace {
bool is_small_inline(const OutboundOp &op) {
    return (op.kind == OpKind::Send || op.kind == OpKind::SendInvalidate ||
            op.kind == OpKind::SendImmediate || op.kind == OpKind::RdmaWrite ||
            op.kind == OpKind::RdmaWriteImmediate) &&
           op.length <= L::kInlineMax;
}
}  // namespace

bool Core::submit_now(const OutboundOp &op, OpResult &out) {
    // A small Send or Write with nothing outstanding goes straight into the peer's ring
    // and completes now. unsent_ == 0 also means nobody else produces into the req ring
    // (the last flush released it to us).
    if (!is_small_inline(op) || op.local.size() > L::kMaxIov ||
        unsent_.load(std::memory_order_acquire) != 0 ||
        unreported_.load(std::memory_order_acquire) != 0 || closed_.load(std::memory_order_acquire))
        return false;
    if (try_direct_write(op)) {
        out = {OpOutcome::Done, {}};
        return true;
    }
    bool broken = false;
    if (emit_request(fields_of(op, true), op.local, 0, broken)) {
        notify_peer();
        out = {OpOutcome::Done, {}};
        return true;
    }
    if (broken) protocol_error();
    return false;  // no room in the ring (or it broke): the queued path sorts it out
}

OpResult Core::submit(const OutboundOp &op) {
    bool small = is_small_inline(op);
    bool fits = op.local.size() <= L::kMaxIov;
    if (OpResult now; submit_now(op, now)) return now;
    // A larger write may still be placed by us, with nothing of ours outstanding (as in
    // submit_now: unsent_ == 0 also means we may produce into the req ring).
    if (!small && op.kind == OpKind::RdmaWrite && unsent_.load(std::memory_order_acquire) == 0 &&
        unreported_.load(std::memory_order_acquire) == 0 &&
        !closed_.load(std::memory_order_acquire) && try_direct_write(op))
        return {OpOutcome::Done, {}};
    std::unique_lock lk(mu_);
    if (closed_.load(std::memory_order_acquire) || detached_.load(std::memory_order_acquire))
        return finish_now_locked({OpOutcome::Disconnected, {}});
    if (!fits) return finish_now_locked({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
    OpRec &rec = ops_.emplace_back();
    static_cast<EntryFields &>(rec) = fields_of(op, small);
    rec.seq = next_seq_++;
    std::copy(op.local.begin(), op.local.end(), rec.local.begin());
    rec.nlocal = static_cast<uint32_t>(op.local.size());
    rec.atomic_result = op.atomic_result;
    unreported_.fetch_add(1, std::memory_order_acq_rel);
    unsent_.fetch_add(1, std::memory_order_acq_rel);
    flush_unsent_locked();
    bool queued = unsent_.load(std::memory_order_relaxed) != 0;
    lk.unlock();
    notify_peer();
    if (queued) wake();  // progress retries once the peer made room
    return {OpOutcome::Pending, {}};
}

bool Core::flush_unsent_locked() {
    if (unsent_.load(std::memory_order_relaxed) == 0) return false;
    bool broken = false;
    bool emitted = false;
    // Unsent records are the newest ones; skip the (few) already sent in front of them.
    auto it = ops_.begin();
    while (it != ops_.end() && it->sent)
        ++it;
    for (; it != ops_.end() && unsent_.load(std::memory_order_relaxed) != 0; ++it) {
        OpRec &r = *it;
        if (r.sent || r.ready) continue;
        if (closed_.load(std::memory_order_acquire)) break;
        if (!emit_request(r, {r.local.data(), r.nlocal}, r.seq, broken)) break;
        r.sent = true;
        emitted = true;
        if (r.inline_data) {  // handed over: done, like a Send in the kernel's buffer
            r.ready = true;
            r.result = {OpOutcome::Done, {}};
            work_.store(true, std::memory_order_release);
        }
        // Release: a poster that reads 0 here may produce into the ring itself.
        unsent_.fetch_sub(1, std::memory_order_acq_rel);
    }
    if (broken) {
        closed_.store(true, std::memory_order_release);
        peer_gone_.store(true, std::memory_order_release);
        work_.store(true, std::memory_order_release);
    }
    return emitted;
}

void Core::fail_all_locked(OpResult first) {
    bool is_first = true;
    for (OpRec &o : ops_) {
        if (o.ready) continue;
        o.ready = true;
        o.result = is_first ? first : OpResult{OpOutcome::Disconnected, {}};
        is_first = false;
    }
    unsent_.store(0, std::memory_order_release);
    work_.store(true, std::memory_order_release);
}

OpRec *Core::find_locked(uint32_t seq) {
    if (ops_.empty()) return nullptr;
    uint32_t d = seq - ops_.front().seq;  // sequence numbers are consecutive (mod 2^32)
    if (d >= ops_.size()) return nullptr;
    OpRec &r = ops_[d];
    return r.seq == seq && r.sent && !r.ready ? &r : nullptr;
}

// --------------------------------------------------------------------------- control

bool Core::emit_direct_locked(L::Type type, uint32_t seq, const std::byte *data, uint32_t len) {
    uint32_t k = L::slots_for(len);
    bool broken = false;
    L::EntryHdr *e = resp_tx_.reserve(k, broken);
    if (!e) return false;
    e->type = type;
    e->flags = 0;
    e->stag = 0;
    e->a = e->b = 0;
    e->seq = seq;
    e->imm = 0;
    e->len = static_cast<uint16_t>(len);
    std::memcpy(reinterpret_cast<std::byte *>(e) + L::kHdrBytes, data, len);
    resp_tx_.publish(e, k);
    return true;
}

bool Core::flush_ctl_locked() {
    bool any = false;
    while (ctl_n_ > 0) {
        const Ctl &c = ctl_[ctl_head_];
        uint32_t k = L::slots_for(c.len);
        bool broken = false;
        L::EntryHdr *e = resp_tx_.reserve(k, broken);
        if (!e) break;
        e->type = c.type;
        e->flags = c.flags;
        e->stag = c.stag;
        e->a = c.a;
        e->b = c.b;
        e->seq = c.seq;
        e->imm = 0;
        e->len = c.len;
        std::memcpy(reinterpret_cast<std::byte *>(e) + L::kHdrBytes, c.payload, c.len);
        resp_tx_.publish(e, k);
        ctl_head_ = (ctl_head_ + 1) % kCtlCap;
        --ctl_n_;
        any = true;
    }
    ctl_pending_.store(ctl_n_, std::memory_order_release);
    return any;
}

bool Core::push_ctl(const Ctl &c) {
    std::lock_guard lk(ctl_mu_);
    if (close_sent_) return false;        // nothing follows a Close or Terminate
    if (ctl_n_ == kCtlCap) return false;  // cannot happen: consumption is gated on room
    ctl_[(ctl_head_ + ctl_n_) % kCtlCap] = c;
    ++ctl_n_;
    if (c.type == L::Type::Close || c.type == L::Type::Terminate) close_sent_ = true;
    flush_ctl_locked();
    return true;
}

// ------------------------------------------------------------------------ rx helpers

bool Core::parse_iovs(const L::EntryHdr &h, const std::byte *payload, uint64_t total,
                      std::array<iovec, L::kMaxIov> &out, uint32_t &n) {
    if (h.len % sizeof(L::Iov) != 0 || h.len / sizeof(L::Iov) > L::kMaxIov) return false;
    n = h.len / sizeof(L::Iov);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; ++i) {
        L::Iov v;
        std::memcpy(&v, payload + i * sizeof v, sizeof v);
        if (v.len == 0 || v.addr + v.len < v.addr || sum + v.len < sum) return false;
        sum += v.len;
        out[i] = {reinterpret_cast<void *>(static_cast<uintptr_t>(v.addr)),
                  static_cast<size_t>(v.len)};
    }
    return sum == total;
}

// The engine refused an arrival (it raised its event and moved to Terminate): send the
// Terminate it describes and stop delivering.
void Core::target_failed(const RxStatus &st, uint32_t stag, uint64_t to) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    push_ctl(terminate_ctl({st.fault, st.op, stag, to}));
}

// The peer's entries make no sense: a stream error, as TCP reports a framing error.
void Core::protocol_error() {
    if (!rx_open_.exchange(false, std::memory_order_acq_rel)) return;
    revoke_grants();
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    if (cur_.recv_open) {
        ep_->rx_recv_abort(cur_.recv, RI_WC_STATUS_LOCAL_QP_CATASTROPHIC);
        cur_.recv_open = false;
    }
    const Ctl c = terminate_ctl({RemoteFault::UnexpectedOpcode, FaultedOp::Send});
    push_ctl(c);
    ep_->rx_stream_error(RemoteFault::UnexpectedOpcode, {c.payload, c.len});
}

// A cross-memory copy failed: the peer process is gone (ESRCH) or lied about its memory.
// Either way the connection cannot continue.
void Core::cma_failed() {
    peer_gone_.store(true, std::memory_order_release);
    ::shutdown(link_->sock, SHUT_RDWR);
}

// ------------------------------------------------------------------------- target side

void Core::release_target() {
    if (cur_.ref) ep_->rx_tagged_release(cur_.ref);
    cur_.ref = nullptr;
    if (cur_.recv_open) ep_->rx_recv_abort(cur_.recv, RI_WC_STATUS_WR_FLUSHED_ERROR);
    cur_.recv_open = false;
    cur_.active = false;
}

void Core::finish_target() {
    // Pull path: every byte is placed.
    TargetOp &t = cur_;
    bool se = t.flags & L::kFlagSolicited;
    RxStatus st = RxStatus::success();
    if (t.type == L::Type::SendRemote) {
        OpKind kind = t.flags & L::kFlagInvalidate  ? OpKind::SendInvalidate
                      : t.flags & L::kFlagImmediate ? OpKind::SendImmediate
                                                    : OpKind::Send;
        t.recv_open = false;
        st = ep_->rx_recv_end(t.recv, kind, t.length, se, t.stag, t.imm);
    } else {
        if (t.ref) ep_->rx_tagged_release(t.ref);
        t.ref = nullptr;
        if (t.flags & L::kFlagImmediate) st = ep_->rx_write_immediate(t.length, t.imm, se);
    }
    t.active = false;
    if (!st.ok) {
        target_failed(st, 0, 0);
        return;
    }
    Ctl c;
    c.type = L::Type::Ack;
    c.seq = t.seq;
    push_ctl(c);
}

// Without CMA: keeps up to kBounceChunks chunks moving for the current request.
void Core::pump_target() {
    TargetOp &t = cur_;
    if (!t.active) return;
    bool push = t.type == L::Type::ReadReq;
    while (t.next < t.length) {
        uint32_t idx = kNoChunk;
        for (uint32_t i = 0; i < L::kBounceChunks; ++i)
            if (chunk_[i] == ChunkUse::Free) {
                idx = i;
                break;
            }
        if (idx == kNoChunk) return;
        uint64_t len = std::min<uint64_t>(L::kBounceChunk, t.length - t.next);
        Ctl c;
        c.seq = t.seq;
        c.stag = idx;
        c.a = t.next;
        c.b = len;
        chunk_seq_[idx] = t.seq;
        chunk_off_[idx] = t.next;
        chunk_len_[idx] = len;
        if (push) {
            std::memcpy(my_bounce_ + idx * L::kBounceChunk, t.mem.ptr + t.next, len);
            chunk_[idx] = ChunkUse::Push;
            c.type = L::Type::ReadChunk;
        } else {
            chunk_[idx] = ChunkUse::Pull;
            c.type = L::Type::Pull;
        }
        t.next += len;
        if (!push_ctl(c)) {
            chunk_[idx] = ChunkUse::Free;
            return;
        }
    }
    if (push && t.next == t.length) {
        // Every byte is in a chunk: the source may go; the initiator completes the read
        // when it has copied the last chunk out.
        if (t.ref) ep_->rx_tagged_release(t.ref);
        t.ref = nullptr;
        t.active = false;
    }
}

bool Core::handle_req(const L::EntryHdr &h, const std::byte *payload) {
    bool se = h.flags & L::kFlagSolicited;
    std::array<iovec, L::kMaxIov> iov;
    uint32_t niov = 0;
    switch (h.type) {
        case L::Type::SendInline: {
            if (h.len > L::kInlineMax) return protocol_error(), false;
            OpKind kind = h.flags & L::kFlagInvalidate  ? OpKind::SendInvalidate
                          : h.flags & L::kFlagImmediate ? OpKind::SendImmediate
                                                        : OpKind::Send;
            IoSpan p{const_cast<std::byte *>(payload), h.len};
            RxStatus st = ep_->rx_send(kind, {&p, h.len ? 1u : 0u}, h.len, se, h.stag, h.imm);
            if (!st.ok) return target_failed(st, 0, 0), false;
            return true;
        }
        case L::Type::WriteInline: {
            if (h.len > L::kInlineMax) return protocol_error(), false;
            if (h.len > 0) {
                // With CMA the peer may place its next writes to this STag itself.
                const bool may_grant = grants_possible() && !(h.flags & L::kFlagImmediate);
                const uint64_t gen = may_grant ? grant_generation() : 0;
                IoSpan dst{};
                void *ref = nullptr;
                RxStatus st = ep_->rx_tagged_acquire(h.stag, h.a, h.len, false, dst, ref);
                if (!st.ok) return target_failed(st, h.stag, h.a), false;
                place_last_byte_last(dst.ptr, payload, h.len);
                if (may_grant) grant(h.stag, ref, gen);
                ep_->rx_tagged_release(ref);
            }
            if (h.flags & L::kFlagImmediate) {
                RxStatus st = ep_->rx_write_immediate(h.len, h.imm, se);
                if (!st.ok) return target_failed(st, 0, 0), false;
            }
            return true;
        }
        case L::Type::SendRemote:
        case L::Type::WriteRemote: {
            if (h.b == 0 || !parse_iovs(h, payload, h.b, iov, niov)) return protocol_error(), false;
            TargetOp &t = cur_;
            t = TargetOp{};
            t.type = h.type;
            t.flags = h.flags;
            t.seq = h.seq;
            t.stag = h.stag;
            t.imm = h.imm;
            t.to = h.a;
            t.length = h.b;
            bool send = h.type == L::Type::SendRemote;
            if (send) {
                RxStatus st = ep_->rx_recv_begin(t.recv);
                if (!st.ok) return target_failed(st, 0, 0), false;
                t.recv_open = true;
            } else {
                // As for WriteInline: the peer may place its next writes here itself.
                const bool may_grant = grants_possible() && !(h.flags & L::kFlagImmediate);
                const uint64_t gen = may_grant ? grant_generation() : 0;
                RxStatus st = ep_->rx_tagged_acquire(h.stag, h.a, h.b, false, t.mem, t.ref);
                if (!st.ok) return target_failed(st, h.stag, h.a), false;
                if (may_grant) grant(h.stag, t.ref, gen);
            }
            t.active = true;
            if (!link_->cma) {
                pump_target();
                return true;
            }
            // Single copy from the initiator's memory into ours.
            std::array<iovec, L::kMaxIov> local;
            std::array<void *, L::kMaxIov> refs{};
            size_t nlocal = 0;
            bool staged = false;
            std::byte last{};
            if (send) {
                std::array<IoSpan, L::kMaxIov> spans;
                RxStatus st = ep_->rx_recv_map(t.recv, 0, t.length, spans, refs, nlocal);
                if (!st.ok) {
                    t.recv_open = false;  // the engine completed the WQE with the fault
                    t.active = false;
                    return target_failed(st, 0, 0), false;
                }
                staged = nlocal == 0;
                for (size_t i = 0; i < nlocal; ++i)
                    local[i] = {spans[i].ptr, static_cast<size_t>(spans[i].len)};
            } else {
                // The last byte goes to `last` and is stored by us after the rest: the
                // kernel's copy (rep movsb) does not store in address order, and an
                // application polling the buffer's final byte (dtest -W) would otherwise
                // see it before some of the bytes ahead of it.
                if (t.length > 1) local[nlocal++] = {t.mem.ptr, static_cast<size_t>(t.length - 1)};
                local[nlocal++] = {&last, 1};
            }
            bool ok = true;
            if (!link_->peer_alive()) {
                ok = false;  // the peer exited: its pid may already name another process
            } else if (!staged) {
                ok = cma_copy(link_->peer_pid, CmaDir::Read, {local.data(), nlocal},
                              {iov.data(), niov}, t.length);
                // Release: whoever reads this byte (acquire) sees every byte before it. The
                // kernel stored them before the call returned (on x86 with string stores,
                // which are ordered before a later separate store: Intel SDM 8.2.4.2), for
                // this thread or for the copy helper, whose half this thread acquired
                // (release/acquire is cumulative).
                if (ok && !send)
                    std::atomic_ref<std::byte>(t.mem.ptr[t.length - 1])
                        .store(last, std::memory_order_release);
            } else {
                // The endpoint cannot map its receive buffer: stage through our bounce
                // area (two copies) and place.
                uint64_t off = 0;
                while (ok && off < t.length) {
                    uint64_t n = std::min<uint64_t>(kCmaStage, t.length - off);
                    // Remote iovecs for [off, off + n).
                    std::array<iovec, L::kMaxIov> part;
                    uint32_t np = 0;
                    uint64_t base = 0;
                    for (uint32_t i = 0; i < niov; ++i) {
                        uint64_t s = base, e = base + iov[i].iov_len;
                        uint64_t lo = std::max(s, off), hi = std::min(e, off + n);
                        if (lo < hi)
                            part[np++] = {static_cast<char *>(iov[i].iov_base) + (lo - s),
                                          static_cast<size_t>(hi - lo)};
                        base = e;
                    }
                    iovec l{my_bounce_, static_cast<size_t>(n)};
                    ok = link_->peer_alive() &&
                         ::process_vm_readv(link_->peer_pid, &l, 1, part.data(), np, 0) ==
                             static_cast<ssize_t>(n);
                    if (ok) {
                        RxStatus st =
                            ep_->rx_recv_place(t.recv, off, {my_bounce_, static_cast<size_t>(n)});
                        if (!st.ok) {
                            t.recv_open = false;
                            t.active = false;
                            return target_failed(st, 0, 0), false;
                        }
                    }
                    off += n;
                }
            }
            if (send)
                for (size_t i = 0; i < nlocal; ++i)
                    ep_->rx_tagged_release(refs[i]);
            if (!ok) {
                release_target();
                cma_failed();
                return false;
            }
            t.done = t.length;
            finish_target();
            return true;
        }
        case L::Type::ReadReq: {
            if (!parse_iovs(h, payload, h.b, iov, niov)) return protocol_error(), false;
            if (h.b == 0) {
                Ctl c;
                c.type = L::Type::Ack;
                c.seq = h.seq;
                push_ctl(c);
                return true;
            }
            IoSpan src{};
            void *ref = nullptr;
            RxStatus st = ep_->rx_tagged_acquire(h.stag, h.a, h.b, true, src, ref);
            if (!st.ok) return target_failed(st, h.stag, h.a), false;
            if (h.b <= L::kInlineMax) {
                bool sent;
                {
                    std::lock_guard lk(ctl_mu_);
                    sent = !close_sent_ && ctl_n_ == 0 &&
                           emit_direct_locked(L::Type::ReadRespInline, h.seq, src.ptr,
                                              static_cast<uint32_t>(h.b));
                }
                ep_->rx_tagged_release(ref);
                return sent;  // no room: handled again on a later pass (no side effects)
            }
            if (!link_->cma) {
                TargetOp &t = cur_;
                t = TargetOp{};
                t.type = h.type;
                t.seq = h.seq;
                t.length = h.b;
                t.mem = src;
                t.ref = ref;
                t.active = true;
                pump_target();
                return true;
            }
            iovec l{src.ptr, static_cast<size_t>(h.b)};
            bool put = link_->peer_alive() &&
                       cma_copy(link_->peer_pid, CmaDir::Write, {&l, 1}, {iov.data(), niov}, h.b);
            ep_->rx_tagged_release(ref);
            if (!put) {
                cma_failed();
                return false;
            }
            Ctl c;
            c.type = L::Type::Ack;
            c.seq = h.seq;
            push_ctl(c);
            return true;
        }
        case L::Type::Atomic: {
            if (h.len != 16) return protocol_error(), false;
            uint64_t op1, op2, orig = 0;
            std::memcpy(&op1, payload, 8);
            std::memcpy(&op2, payload + 8, 8);
            OpKind kind = h.flags & L::kFlagCmpSwap ? OpKind::CompareSwap : OpKind::FetchAdd;
            RxStatus st = ep_->rx_atomic(kind, h.stag, h.a, op1, op2, orig);
            if (!st.ok) return target_failed(st, h.stag, h.a), false;
            Ctl c;
            c.type = L::Type::AtomicResp;
            c.seq = h.seq;
            c.a = orig;
            push_ctl(c);
            return true;
        }
        default:
            protocol_error();
            return false;
    }
}

bool Core::process_req() {
    bool any = false;
    req_stalled_ = false;
    while (rx_open_.load(std::memory_order_acquire) && !cur_.active) {
        if (kCtlCap - ctl_pending_.load(std::memory_order_acquire) < kCtlRoomForReq) {
            req_stalled_ = true;
            break;
        }
        L::EntryHdr h;
        const std::byte *payload = nullptr;
        Consumer::Peek pk = req_rx_.peek(h, payload);
        if (pk == Consumer::Peek::Empty) break;
        if (pk == Consumer::Peek::Bad) {
            protocol_error();
            break;
        }
        bool stall = h.type == L::Type::ReadReq && h.b != 0 && h.b <= L::kInlineMax;
        bool done = handle_req(h, payload);
        if (!done && stall && rx_open_.load(std::memory_order_acquire) &&
            !peer_gone_.load(std::memory_order_acquire)) {
            req_stalled_ = true;  // inline read response waits for room; entry stays
            break;
        }
        req_rx_.pop(h);
        any = true;
        if (!done) break;
    }
    return any;
}

// ---------------------------------------------------------------------- initiator side

bool Core::handle_resp(const L::EntryHdr &h, const std::byte *payload) {
    switch (h.type) {
        case L::Type::Ack:
        case L::Type::ReadRespInline:
        case L::Type::AtomicResp: {
            std::lock_guard lk(mu_);
            OpRec *r = find_locked(h.seq);
            if (!r) return false;
            if (h.type == L::Type::Ack) {
                if (r->inline_data || r->kind == OpKind::FetchAdd || r->kind == OpKind::CompareSwap)
                    return false;
                if (r->kind == OpKind::RdmaRead && r->placed != 0) return false;
            } else if (h.type == L::Type::ReadRespInline) {
                if (r->kind != OpKind::RdmaRead || h.len != r->length) return false;
                scatter(r->local.data(), r->nlocal, 0, payload, h.len);
            } else {
                if (r->kind != OpKind::FetchAdd && r->kind != OpKind::CompareSwap) return false;
                if (r->atomic_result) *r->atomic_result = h.a;
            }
            r->ready = true;
            r->result = {OpOutcome::Done, {}};
            return true;
        }
        case L::Type::Pull: {
            OpRec *r;
            {
                std::lock_guard lk(mu_);
                r = find_locked(h.seq);
            }
            // A record that is sent and not ready stays put until we report it (deque
            // references survive appends), so it can be read without the lock.
            if (!r || r->inline_data ||
                (r->kind != OpKind::Send && r->kind != OpKind::SendInvalidate &&
                 r->kind != OpKind::SendImmediate && r->kind != OpKind::RdmaWrite &&
                 r->kind != OpKind::RdmaWriteImmediate) ||
                h.stag >= L::kBounceChunks || h.b == 0 || h.b > L::kBounceChunk ||
                h.a > r->length || h.b > r->length - h.a)
                return false;
            gather(r->local.data(), r->nlocal, h.a, peer_bounce_ + h.stag * L::kBounceChunk, h.b);
            Ctl c;
            c.type = L::Type::PullDone;
            c.seq = h.seq;
            c.stag = h.stag;
            c.a = h.a;
            c.b = h.b;
            push_ctl(c);
            return true;
        }
        case L::Type::ReadChunk: {
            OpRec *r;
            {
                std::lock_guard lk(mu_);
                r = find_locked(h.seq);
            }
            if (!r || r->kind != OpKind::RdmaRead || h.stag >= L::kBounceChunks || h.b == 0 ||
                h.b > L::kBounceChunk || h.a != r->placed || h.b > r->length - r->placed)
                return false;
            scatter(r->local.data(), r->nlocal, h.a, peer_bounce_ + h.stag * L::kBounceChunk, h.b);
            Ctl c;
            c.type = L::Type::ChunkFree;
            c.stag = h.stag;
            push_ctl(c);
            std::lock_guard lk(mu_);
            r->placed += h.b;
            if (r->placed == r->length) {
                r->ready = true;
                r->result = {OpOutcome::Done, {}};
            }
            return true;
        }
        case L::Type::PullDone: {
            uint32_t i = h.stag;
            TargetOp &t = cur_;
            if (i >= L::kBounceChunks || chunk_[i] != ChunkUse::Pull || chunk_seq_[i] != h.seq ||
                chunk_off_[i] != h.a || chunk_len_[i] != h.b || !t.active || t.seq != h.seq)
                return false;
            const std::byte *src = my_bounce_ + i * L::kBounceChunk;
            if (t.type == L::Type::SendRemote) {
                RxStatus st = ep_->rx_recv_place(t.recv, h.a, {src, static_cast<size_t>(h.b)});
                if (!st.ok) {
                    t.recv_open = false;  // completed with the fault by the engine
                    chunk_[i] = ChunkUse::Free;
                    release_target();
                    target_failed(st, 0, 0);
                    return true;
                }
            } else {
                place_last_byte_last(t.mem.ptr + h.a, src, h.b);
            }
            chunk_[i] = ChunkUse::Free;
            t.done += h.b;
            if (t.done == t.length)
                finish_target();
            else
                pump_target();
            return true;
        }
        case L::Type::ChunkFree: {
            uint32_t i = h.stag;
            if (i >= L::kBounceChunks || chunk_[i] != ChunkUse::Push) return false;
            chunk_[i] = ChunkUse::Free;
            pump_target();
            return true;
        }
        case L::Type::Terminate: {
            const RemoteFault fault =
                iwarp::fault_of({static_cast<uint8_t>(h.stag >> 16),
                                 static_cast<uint8_t>(h.stag >> 8), static_cast<uint8_t>(h.stag)});
            rx_open_.store(false, std::memory_order_release);
            revoke_grants();  // what we granted the peer ends with delivery
            closed_.store(true, std::memory_order_release);
            {
                std::lock_guard lk(mu_);
                // The oldest unfinished op is the one the peer failed (in-order stream).
                fail_all_locked({OpOutcome::Terminated, fault});
            }
            if (cur_.active || cur_.recv_open) release_target();
            {
                std::lock_guard lk(ctl_mu_);
                close_sent_ = true;  // the peer stopped listening
            }
            // The Terminate goes first; the outstanding ops are reported afterwards.
            told_closed_ = true;
            ep_->rx_terminate({reinterpret_cast<const uint8_t *>(payload), h.len});
            return true;
        }
        case L::Type::Close:
            peer_close_seen_ = true;
            return true;
        default:
            return false;
    }
}

bool Core::process_resp() {
    bool any = false;
    while (rx_open_.load(std::memory_order_acquire) && !peer_close_seen_) {
        L::EntryHdr h;
        const std::byte *payload = nullptr;
        Consumer::Peek pk = resp_rx_.peek(h, payload);
        if (pk == Consumer::Peek::Empty) break;
        if (pk == Consumer::Peek::Bad) {
            protocol_error();
            break;
        }
        resp_rx_.pop(h);
        any = true;
        if (!handle_resp(h, payload)) {
            protocol_error();
            break;
        }
    }
    return any;
}

// ---------------------------------------------------------------------------- progress

// True when progress() has something it can act on now. It must not be true for work
// that waits on the peer (a stalled ring head, a pull in flight, a full ring), or the
// progress thread would spin instead of sleeping.
bool Core::quick_check(uint32_t events) const {
    if (events != 0 || work_.load(std::memory_order_acquire)) return true;
    // Consumption an inline pass left unpublished (see progress()).
    if (req_rx_.uncommitted() != 0 || resp_rx_.uncommitted() != 0) return true;
    if (rx_open_.load(std::memory_order_acquire)) {
        if (!peer_close_seen_ && resp_rx_.ready()) return true;
        if (!cur_.active && req_rx_.ready() &&
            (!req_stalled_ || resp_tx_.space_returned() ||
             kCtlCap - ctl_pending_.load(std::memory_order_acquire) >= kCtlRoomForReq))
            return true;
    }
    if (peer_close_seen_ && !told_closed_) return true;
    if (peer_gone_.load(std::memory_order_acquire) && !socket_done_) return true;
    return (unsent_.load(std::memory_order_acquire) != 0 && req_tx_.space_returned()) ||
           (ctl_pending_.load(std::memory_order_acquire) != 0 && resp_tx_.space_returned());
}

void Core::progress(uint32_t events) {
    if (!attached_.load(std::memory_order_acquire)) return;
    if (peer_stalled()) ring_stalled_peer();
    // An application polling its CQ again, while the peer places its writes itself. Not
    // one waiting for its own operation's completion (it goes back to polling memory
    // then: dtest -W waits so for each signalled write, which the peer's ring path acks).
    if (hint_ != 0 && ProgressEngine::inline_poll_context() &&
        unreported_.load(std::memory_order_acquire) == 0 && ++idle_polls_ >= kPollsBeforeRingHint)
        set_hint(0);
    // Inline pollers call this on every empty CQ poll: a few loads when idle.
    if (!quick_check(events)) return;
    pe_.note_work();
    work_.store(false, std::memory_order_release);
    if (events && !socket_done_) {
        // Doorbell bytes, or the end of the peer.
        char buf[256];
        for (;;) {
            ssize_t n = ::recv(link_->sock, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) continue;
            if (n < 0 && errno == EINTR) continue;
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
                peer_gone_.store(true, std::memory_order_release);
            break;
        }
    }
    bool took = false;
    if (base::GateScope in_ep(ep_gate_); in_ep) {
        // Responses first (they free our records and chunks), then requests in order.
        took |= process_resp();
        const bool took_req = process_req();
        took |= took_req;
        // Who serves our req ring tells the peer whether to place its writes itself: our
        // progress thread (the application polls memory, or nothing), or an application
        // polling its CQ, which would find the ring entries at once.
        if (took_req && link_->cma) set_hint(ProgressEngine::inline_poll_context() ? 0 : 1);
        if (peer_close_seen_ && !told_closed_) {
            // Graceful close: deliver what was sent before it. An operation the target
            // was pulling can no longer complete (the peer flushed it when it closed).
            for (int guard = 0; guard < 4096; ++guard) {
                if (cur_.active || cur_.recv_open) release_target();
                if (!process_req()) break;
            }
            if (cur_.active || cur_.recv_open) release_target();
            told_closed_ = true;
            rx_open_.store(false, std::memory_order_release);
            revoke_grants();  // what we granted the peer ends with delivery
            closed_.store(true, std::memory_order_release);
            {
                std::lock_guard lk(mu_);
                fail_all_locked({OpOutcome::Disconnected, {}});
            }
            ep_->rx_llp_closed(CloseKind::Graceful);
        }
    }
    // The locks only when there is something queued behind them: a poller that consumed
    // one inline send takes none (no locks on the poll path). A record or control entry
    // queued after these loads is flushed by whoever queued it (submit, push_ctl).
    bool tell_peer = false;
    if (unsent_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(mu_);
        tell_peer |= flush_unsent_locked();
    }
    if (ctl_pending_.load(std::memory_order_acquire) != 0) {
        std::lock_guard lk(ctl_mu_);
        tell_peer |= flush_ctl_locked();
    }
    // What we consumed is published (our ring indices, then notify_peer()'s RMW on the
    // peer's need_wake) on the next pass of an inline poller, not on the pass that took
    // the entries: that pass ends in the completion the application is waiting for, and
    // the RMW there (which also waits for the index store) was on the path of every
    // small message's one-way latency. The next pass comes within nanoseconds while the
    // application polls; when it stops, its progress thread publishes once its park ends
    // or the producer's stall doorbell wakes it (quick_check reports uncommitted
    // consumption as work, for both). A large backlog is published at once so
    // a streaming producer never waits on it, and so is everything when the peer must be
    // told anyway (we just produced into its rings).
    const bool defer = took && !tell_peer && ProgressEngine::inline_poll_context() &&
                       req_rx_.uncommitted() < kLazyReqSlots &&
                       resp_rx_.uncommitted() < kLazyRespSlots &&
                       !closed_.load(std::memory_order_acquire);
    if (!defer) {
        tell_peer |= req_rx_.commit();
        tell_peer |= resp_rx_.commit();
    }
    if (tell_peer) notify_peer();
    if (peer_gone_.load(std::memory_order_acquire) && !socket_done_) {
        socket_done_ = true;
        pe_.unwatch(token_);  // level-triggered EOF would fire for ever
        stream_end(CloseKind::Abortive);
    }
    report_ready();
}

void Core::stream_end(CloseKind kind) {
    closed_.store(true, std::memory_order_release);
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    if (base::GateScope in_ep(ep_gate_); in_ep) {
        if (cur_.active || cur_.recv_open) release_target();
        if (!told_closed_) {
            told_closed_ = true;
            ep_->rx_llp_closed(kind);
        }
    }
}

void Core::report_ready() {
    // Nothing was queued for a report (every queued record counts in unreported_ before it
    // is visible in ops_): skip the endpoint gate and the lock, which every progress pass
    // with work used to pay.
    if (unreported_.load(std::memory_order_acquire) == 0) return;
    for (;;) {
        base::GateScope in_ep(ep_gate_);
        if (!in_ep) return;
        OpResult r;
        bool have = false;
        {
            std::lock_guard lk(mu_);
            if (!ops_.empty() && ops_.front().ready) {
                r = ops_.front().result;
                ops_.pop_front();
                ++reporting_;
                have = true;
            }
        }
        if (have) ep_->tx_complete(r);
        if (have) {
            std::lock_guard lk(mu_);
            --reporting_;
            unreported_.fetch_sub(1, std::memory_order_acq_rel);
        }
        if (!have) return;
    }
}

bool Core::arm_wakeup() {
    if (!attached_.load(std::memory_order_acquire)) return false;
    // The sleeper's half of the pair in notify_peer(): announce, then re-check. Anything a
    // producer published before its RMW on need_wake is visible to the checks below.
    std::atomic_ref<uint32_t>(me_->need_wake).exchange(1, std::memory_order_acq_rel);
    sync_acquire(my_key_);
    return quick_check(0);
}

// ------------------------------------------------------------------------ engine calls

void Core::terminate(const FaultReport &f) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    push_ctl(terminate_ctl(f));
    notify_peer();
    wake();
}

void Core::close(CloseKind kind) {
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    {
        std::lock_guard lk(mu_);
        fail_all_locked({OpOutcome::Disconnected, {}});
    }
    if (kind == CloseKind::Graceful) {
        Ctl c;
        c.type = L::Type::Close;
        push_ctl(c);
        notify_peer();
    } else {
        // Like a TCP RST: the peer sees the socket end at once.
        ::shutdown(link_->sock, SHUT_RDWR);
    }
    wake();
}

void Core::detach() {
    detached_.store(true, std::memory_order_release);
    rx_open_.store(false, std::memory_order_release);
    revoke_grants();  // what we granted the peer ends with delivery
    closed_.store(true, std::memory_order_release);
    ep_gate_.shut_no_wait();
    // Endpoint calls are short (one copy at most). Our own progress pass may be the caller,
    // from inside the gate: it cannot wait for itself.
    if (ProgressEngine::current() != this) ep_gate_.wait_users();
    std::deque<OpRec> left;
    {
        std::lock_guard lk(mu_);
        left.swap(ops_);
        unsent_.store(0, std::memory_order_release);
        unreported_.store(0, std::memory_order_release);
    }
    if (ep_) {
        if (cur_.active || cur_.recv_open) release_target();
        for (OpRec &o : left)
            ep_->tx_complete(o.ready ? o.result : OpResult{OpOutcome::Disconnected, {}});
    }
    wake();
}

// ---------------------------------------------------------------------------- channel

class ShmChannel final : public Channel {
  public:
    explicit ShmChannel(std::unique_ptr<Core> c) : core_(std::move(c)) {}
    ~ShmChannel() override {
        core_->shutdown_owner();
        std::unique_ptr<Link> link = core_->take_link();
        core_.reset();  // unregistered: nothing runs any more; then unmap and close
    }
    bool asynchronous() const override { return true; }
    void attach(Endpoint *ep) override { core_->attach(ep); }
    void detach() override { core_->detach(); }
    OpResult submit(const OutboundOp &op) override { return core_->submit(op); }
    bool submit_now(const OutboundOp &op, OpResult &out) override {
        return core_->submit_now(op, out);
    }
    void terminate(const FaultReport &f) override { core_->terminate(f); }
    size_t fault_message(const FaultReport &f,
                         std::span<uint8_t, kFaultMessageMax> out) const override {
        return iwarp::terminate_message(f, out);
    }
    void close(CloseKind kind) override { core_->close(kind); }

  private:
    std::unique_ptr<Core> core_;
};

// An adopted connection no QP has claimed: owns the socket and both mappings (Link) until
// then; destroying it closes the socket (the peer sees the connection end) and unmaps.
class UnclaimedLink final : public llp::UnclaimedStream {
  public:
    explicit UnclaimedLink(std::unique_ptr<Link> link) : link_(std::move(link)) {}
    std::unique_ptr<Channel> claim(ri_llp_stream_handle_t, ProgressEngine &pe) override {
        // The responder's deferred hello goes before anything the channel may write on the
        // socket (doorbells); a failure means the peer is gone, which the channel then
        // finds. Our segment is made with the hello: without it there is no channel (the
        // handle is consumed; the link closes here and the peer sees the socket close).
        if (link_->hello.pending) send_hello_now(*link_);
        if (!link_->mine.get()) return nullptr;
        auto core = std::make_unique<Core>(std::move(link_), pe);
        if (!core->ok()) return nullptr;  // the handle is consumed; the link closes with it
        return std::make_unique<ShmChannel>(std::move(core));
    }
    bool send_deferred(ri_llp_stream_handle_t, uint64_t key) override {
        if (key == 0 || link_->hello.key != key) return false;
        return send_hello_now(*link_);
    }

  private:
    std::unique_ptr<Link> link_;
};

}  // namespace

void ensure_registered() {
    register_placement_revoker(&revoke_all_grants);
}

int register_unclaimed(std::unique_ptr<Link> link) {
    ensure_registered();
    int h = link->sock;
    if (h < 0 || h >= (1 << 30)) {  // loopback handles live above 2^30
        link->sock = -1;            // still the caller's
        return -1;
    }
    if (!llp::publish(h, std::make_unique<UnclaimedLink>(std::move(link)))) return -1;
    return h;
}

bool send_deferred_hello(ri_llp_stream_handle_t h, uint64_t key) {
    return llp::send_deferred(h, key);
}

bool is_unclaimed(ri_llp_stream_handle_t h) {
    return llp::is_unclaimed(h);
}

}  // namespace softrnic::transport::shm
