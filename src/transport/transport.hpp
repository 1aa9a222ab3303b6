// The transport seam.
//
// The engine owns RDMA semantics (queues, STags, protection checks, completions); a
// transport owns the wire (in-process loopback here; TCP/iWARP and shared memory later).
// They meet in two small interfaces:
//   - Channel: what the engine asks of the transport for one connected QP (submit an
//     outbound operation, close the stream);
//   - Endpoint: what the transport asks of the engine when traffic arrives for that QP
//     (resolve a tagged buffer, take and fill a receive WQE, run an atomic, a Terminate or
//     a close arrived).
// A connected LLP stream handle (RNICPI L1720-1781) is turned into a Channel by the
// transport that issued it, found through the registry below, so the engine never knows
// which transport it talks to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <variant>

#include "rnicpi/rnicpi.h"
#include "transport/progress.hpp"

namespace softrnic::transport {

// A piece of resolved local memory (after LTag checks by the engine).
struct IoSpan {
    std::byte *ptr;
    uint64_t len;
};

// What went wrong, in no wire's words: the engine reports the faults it finds at the
// responder, a transport the ones it finds in the peer's stream, and each transport says
// them on its wire (an iWARP Terminate, src/transport/iwarp/; an IB NAK later).
enum class RemoteFault : uint8_t {
    None,
    // Found by the engine.
    InvalidStag,       // unknown, invalid or wrong-key STag
    Bounds,            // outside the region or window (or a misaligned atomic target)
    Access,            // the STag lacks the right
    NotAssociated,     // STag of another protection domain or QP
    Wrap,              // tagged offset wraps
    CannotInvalidate,  // Send with Invalidate of an STag that cannot be invalidated
    UnexpectedOpcode,  // an operation this QP does not accept (RDMA Read/Write disabled)
    NoReceiveBuffer,   // untagged message with no receive posted
    MessageTooLong,    // untagged message longer than the receive
    Catastrophic,      // the QP cannot go on (local memory fault, QP moved to Terminate)
    // Found by a transport in the peer's stream.
    ConnectionLost,
    Crc,
    Framing,          // framing or header length
    DdpVersion,       // data-placement protocol version
    InvalidQueue,     // untagged queue number
    InvalidSequence,  // message sequence number out of range
    InvalidOffset,    // message offset out of order
    RdmaVersion,      // RDMA protocol version
};

// The arriving operation a fault is reported against: what a transport needs to quote it.
enum class FaultedOp : uint8_t {
    None,  // nothing to quote
    Write,
    ReadResponse,
    ReadRequest,
    Atomic,
    Send,
    SendInvalidate,
    WriteImmediate,
};

// A fault with what it hit: the STag and tagged offset of a tagged operation, Read Request
// source or atomic target, or the STag a Send with Invalidate named.
struct FaultReport {
    RemoteFault fault = RemoteFault::None;
    FaultedOp op = FaultedOp::None;
    uint32_t stag = 0;
    uint64_t to = 0;
    bool site_known = true;  // false: stag and to are unknown, the operation is only named
};

// Largest fault message a QP records for ri_qp_query (terminate_buffer, RNICPI L8583).
inline constexpr size_t kFaultMessageMax = 52;

// Outcome of an arrival handled by the engine at the responder.
struct RxStatus {
    bool ok = true;
    RemoteFault fault = RemoteFault::None;  // when !ok: what the transport tells the peer
    FaultedOp op = FaultedOp::None;
    static RxStatus success() { return {}; }
    static RxStatus fail(RemoteFault f, FaultedOp op = FaultedOp::None) { return {false, f, op}; }
};

enum class OpKind : uint8_t {
    Send,
    SendInvalidate,
    SendImmediate,
    RdmaWrite,
    RdmaWriteImmediate,
    RdmaRead,
    FetchAdd,
    CompareSwap,
};

// remote_to of an atomic that targets the first 8 bytes of the STag's region or window.
inline constexpr uint64_t kAtomicAtBase = ~uint64_t{0};

// Where a datagram goes (an InfiniBand UD send): the address handle (the personality's
// own object), the destination QP number and its Q_Key. Connected streams have none.
struct DatagramDest {
    const void *address_handle = nullptr;
    uint32_t remote_qpn = 0;
    uint32_t q_key = 0;
};

// Where an arriving datagram came from, for its receive completion (the ri_gen_wc fields,
// rnicpi.h). Connected streams have none.
struct DatagramSource {
    uint32_t remote_qpn = 0;
    ri_lid_t remote_lid = 0;
    uint8_t remote_sl = 0;
    uint8_t local_lid_pathbits = 0;
    uint16_t ether_type = 0;
    bool grh_present = false;
    uint32_t pkey_index = 0;
};

// The 40 bytes a UD receive buffer reserves ahead of the payload for the GRH (RNICPI
// L3525, L4636-4639), present or not.
inline constexpr uint32_t kGrhBytes = 40;

// A datagram arriving at a UD QP (Endpoint::rx_datagram): where it came from, the keys it
// carries, its GRH when the sender's address vector had one, and its payload, addressable
// in this process (the sender's gather list: the receiver copies it once).
struct DatagramArrival {
    DatagramSource source;  // pkey_index is the receiver's to fill
    uint32_t q_key = 0;
    ri_pkey_t pkey = 0;
    const std::byte *grh = nullptr;  // kGrhBytes when source.grh_present
    std::span<const IoSpan> payload;
    uint64_t length = 0;
    bool has_immediate = false;
    uint32_t immediate = 0;
    bool solicited = false;
};

// What became of an arriving datagram: the transport counts the drops where IBA has them
// counted (the port's Q_Key and P_Key violation counters).
enum class DatagramVerdict : uint8_t {
    Delivered,     // a receive WQE completed (successfully, or with a local error)
    NotReceiving,  // no UD QP in RTR, RTS, SQD or SQE: dropped
    BadQkey,       // dropped, a Q_Key violation
    BadPkey,       // dropped, a P_Key violation
    NoReceive,     // dropped: no receive WQE posted (IBA: silently)
};

enum class OpOutcome : uint8_t {
    Done,         // completed; the WR completes with success
    Pending,      // the transport will report completion later (asynchronous transports)
    Terminated,   // the peer refused it (fault says why)
    Disconnected  // the stream is gone
};

struct OpResult {
    OpOutcome outcome = OpOutcome::Done;
    RemoteFault fault = RemoteFault::None;
    FaultedOp op = FaultedOp::None;
};

// One operation of an asynchronous channel while it is in flight. The engine owns these
// records: it keeps them in the QP's one list of operations in flight, in submission order,
// lends each to the transport from Channel::submit until the transport finishes it, and
// completes them in that order (Endpoint::tx_report). The transport keeps whatever else it
// needs of an operation in `state` (make_state, state_as), so nothing of the order lives on its
// side of the seam.
//
// Rules for the transport: it finishes a record once (finish()), and under the same lock as its
// calls to Endpoint::tx_fail_all; after finishing it touches neither the record nor the
// operation's local memory (the engine may complete it at once).
struct InflightOp {
    static constexpr size_t kStateBytes = 256;
    // Set by the transport when its submit() takes the record (under its lock). The engine
    // lists a record before it calls submit(); a stream that ends in between must not finish
    // it (Endpoint::tx_fail_all skips it): submit() will find the stream ended and finish it
    // itself, and a record finished and reported before its submit ran would be freed under it.
    std::atomic<bool> held{false};
    // Consecutive over a QP's records (mod 2^32): a key the transport may put on its wire and
    // find the record by again (Endpoint::tx_record).
    uint32_t seq = 0;
    std::atomic<bool> finished{false};
    OpResult result{};
    alignas(16) std::byte state[kStateBytes];

    void finish(OpResult r) {
        result = r;
        finished.store(true, std::memory_order_release);
    }
    template <class T>
    T &make_state() {
        static_assert(sizeof(T) <= kStateBytes && alignof(T) <= 16);
        static_assert(std::is_trivially_destructible_v<T>, "records are dropped, never destroyed");
        return *::new (static_cast<void *>(state)) T();
    }
    template <class T>
    T &state_as() {
        return *std::launder(reinterpret_cast<T *>(state));
    }
};

// One outbound data-transfer WR, validated and with local memory resolved by the engine.
struct OutboundOp {
    OpKind kind = OpKind::Send;
    bool solicited = false;
    std::span<const IoSpan> local;  // gather list (send, write) or scatter list (read sink)
    uint64_t length = 0;            // total of `local`
    uint32_t remote_stag = 0;       // write/read/atomic target; send-with-invalidate STag
    uint64_t remote_to = 0;
    uint32_t immediate = 0;
    uint64_t operand1 = 0;  // atomics: add value, or compare value
    uint64_t operand2 = 0;  // atomics: swap value
    uint64_t *atomic_result = nullptr;
    const DatagramDest *dest = nullptr;  // datagram QPs only
    InflightOp *inflight = nullptr;      // Channel::submit of an asynchronous channel only
};

// Responder-side receive context: one receive WQE taken for an arriving untagged message.
struct RxRecv {
    void *wqe = nullptr;  // engine-private
    uint64_t capacity = 0;
    const DatagramSource *source = nullptr;  // datagrams: the completion's source fields
};

enum class CloseKind : uint8_t { Graceful, Abortive };

// Implemented by the engine's QP.
class Endpoint {
  public:
    virtual ~Endpoint() = default;
    // Tagged placement or read source: checks STag, PD, rights, bounds; on success `out`
    // points at the memory and the STag stays pinned until rx_tagged_release.
    virtual RxStatus rx_tagged_acquire(uint32_t stag, uint64_t to, uint64_t len, bool for_read,
                                       IoSpan &out, void *&ref) = 0;
    virtual void rx_tagged_release(void *ref) = 0;
    // The whole range of the STag that `ref` (from rx_tagged_acquire, still held) pins:
    // its first tagged offset, its length and the address of that first byte, for a
    // transport that lets its peer place later writes into that range itself. The engine
    // notes the grant and withdraws it (revoke_remote_placement) when the STag changes.
    // False: nothing may be granted (the STag is no longer valid, or no support).
    virtual bool rx_tagged_grant(void *ref, uint64_t &to, uint64_t &len, std::byte *&host) {
        (void)ref, (void)to, (void)len, (void)host;
        return false;
    }
    // Untagged message: take the next receive WQE (queue or SRQ), place, finish.
    virtual RxStatus rx_recv_begin(RxRecv &r) = 0;
    virtual RxStatus rx_recv_place(RxRecv &r, uint64_t offset, std::span<const std::byte> data) = 0;
    virtual RxStatus rx_recv_end(RxRecv &r, OpKind kind, uint64_t total_len, bool solicited,
                                 uint32_t invalidate_stag, uint32_t immediate) = 0;
    // Resolves bytes [offset, offset + len) of the receive WQE taken by rx_recv_begin into
    // local spans, with the checks rx_recv_place makes, so that the transport can place
    // the bytes itself (e.g. a single cross-process copy). Span i stays pinned until
    // rx_tagged_release(refs[i]). On failure the WQE completes with the fault and the QP
    // goes to Terminate, as with rx_recv_place. `n` gets the span count; n == 0 with
    // len > 0 means "not supported here": place with rx_recv_place instead.
    virtual RxStatus rx_recv_map(RxRecv &r, uint64_t offset, uint64_t len, std::span<IoSpan> out,
                                 std::span<void *> refs, size_t &n) {
        (void)r, (void)offset, (void)len, (void)out, (void)refs;
        n = 0;
        return RxStatus::success();
    }
    // A whole untagged message whose payload is addressable in this process (loopback, or
    // a transport that already holds the message): begin, place and end in one call.
    virtual RxStatus rx_send(OpKind kind, std::span<const IoSpan> payload, uint64_t total_len,
                             bool solicited, uint32_t invalidate_stag, uint32_t immediate) = 0;
    // Abandons a taken WQE after a failed placement; it completes with an error.
    virtual void rx_recv_abort(RxRecv &r, ri_wc_status_t status) = 0;
    virtual RxStatus rx_atomic(OpKind kind, uint32_t stag, uint64_t to, uint64_t op1, uint64_t op2,
                               uint64_t &original) = 0;
    // Inbound write with immediate data: consumes a receive WQE after placement.
    virtual RxStatus rx_write_immediate(uint64_t length, uint32_t immediate, bool solicited) = 0;
    // The peer ended the stream with a fault message (an iWARP Terminate: `msg` is its
    // body as on the wire, recorded for ri_qp_query). When an rx_* call above returns !ok
    // the engine has already raised its own event and moved to Terminate; the transport
    // then tells the peer the fault the status describes.
    virtual void rx_terminate(std::span<const uint8_t> msg) = 0;
    // The transport found the peer's stream malformed (framing, CRC, header or sequence
    // error). The engine raises the event of `fault`, records `msg` (the message the
    // transport sends the peer) as the local one and moves to Error; the transport sends it
    // and closes.
    virtual void rx_stream_error(RemoteFault fault, std::span<const uint8_t> msg) = 0;
    // The stream closed under us.
    virtual void rx_llp_closed(CloseKind kind) = 0;
    // Operations in flight on an asynchronous channel (InflightOp). The QP's record with
    // sequence number `seq`, while the transport holds it (not finished); nullptr otherwise.
    virtual InflightOp *tx_record(uint32_t seq) {
        (void)seq;
        return nullptr;
    }
    // Finishes every record the transport holds: the oldest with `oldest`, the others as
    // Disconnected. After a peer's Terminate, report it through rx_terminate (its bytes) and
    // fail with Terminated: the oldest completes with REMOTE_TERMINATION, later ones flushed,
    // and the event is raised once. Called under the lock the transport finishes records
    // under.
    virtual void tx_fail_all(OpResult oldest) { (void)oldest; }
    // A datagram for this UD QP (InfiniBand): key checks, a receive WQE, the GRH area and
    // the payload, a completion with the source fields. Never raises an error on the QP
    // for the sender's sake: a UD receiver drops what it cannot take.
    virtual DatagramVerdict rx_datagram(const DatagramArrival &a) {
        (void)a;
        return DatagramVerdict::NotReceiving;
    }
    // An InfiniBand RC requester asks its responder whether it is paired with it
    // (docs/ib-personality.md 4.3): an RC QP in RTR, RTS or SQD whose destination QPN is
    // `src_qpn`, whose primary path's DLID is `slid`, and whose P_Key matches `pkey`. A
    // responder that is not answers nothing: the requester hears silence.
    // `rnr_timer` gets the responder's minimum RNR timer (the RNR NAK's timer field).
    virtual bool rx_rc_accepts(ri_lid_t slid, uint32_t src_qpn, ri_pkey_t pkey,
                               uint8_t &rnr_timer) {
        (void)slid, (void)src_qpn, (void)pkey, (void)rnr_timer;
        return false;
    }
    // Completes the finished records at the head of the list, in submission order. The
    // transport calls it from its progress context with none of its locks held (the engine
    // may call close() from here), inside its endpoint gate, after finishing records.
    virtual void tx_report() {}
};

// Implemented by a transport for one connected stream.
class Channel {
  public:
    virtual ~Channel() = default;
    // True when submit() may return Pending. The engine then gives every submit() a record
    // (OutboundOp::inflight, InflightOp) in its list of operations in flight; the transport
    // finishes each once and has the finished ones reported (Endpoint::tx_report). When the
    // stream ends it finishes those it holds (Endpoint::tx_fail_all). Once detach() returns
    // it touches none of them, and the engine completes what is left.
    virtual bool asynchronous() const { return false; }
    // Optional operations the stream can carry (a TCP peer that has not agreed to RFC 7306
    // gets no atomics or immediate data); the engine refuses the others at post time.
    static constexpr uint32_t kCapAtomics = 1;
    static constexpr uint32_t kCapWriteImmediate = 2;
    static constexpr uint32_t kCapSendImmediate = 4;
    static constexpr uint32_t kCapAll = kCapAtomics | kCapWriteImmediate | kCapSendImmediate;
    virtual uint32_t capabilities() const { return kCapAll; }
    // Starts delivery of arrivals to `ep`. Called once, when the QP enters RTS.
    virtual void attach(Endpoint *ep) = 0;
    // Stops delivery and waits until no call into the endpoint is in progress.
    virtual void detach() = 0;
    // An asynchronous channel returns Pending, or the operation's result after finishing its
    // record with it (the engine completes it at once when nothing is ahead of it).
    virtual OpResult submit(const OutboundOp &op) = 0;
    // An asynchronous transport's synchronous fast path: either carries `op` out entirely
    // now (true; `out` is Done, Terminated or Disconnected, never Pending) or declines
    // without any effect (false), and the engine calls submit() with a record. The engine
    // calls it only while nothing is in flight on the QP, so completing at once keeps the
    // order; it saves the record for the small operations that go out in one piece.
    virtual bool submit_now(const OutboundOp &op, OpResult &out) {
        (void)op;
        (void)out;
        return false;
    }
    // Tells the peer about `f` (an iWARP Terminate) and closes the stream.
    virtual void terminate(const FaultReport &f) = 0;
    // The message terminate(f) sends, or this stream's wire sends when an arrival fails
    // with `f`, for the QP's record (ri_qp_query, RNICPI L8583). Returns its length; 0
    // when the wire has no such message.
    virtual size_t fault_message(const FaultReport &f,
                                 std::span<uint8_t, kFaultMessageMax> out) const {
        (void)f, (void)out;
        return 0;
    }
    virtual void close(CloseKind kind) = 0;
};

namespace ib {
class Hca;
}

// How a QP reaches its transport: a connected LLP stream (iWARP, RNICPI L1720-1781), or an
// InfiniBand RC path (docs/ib-personality.md 4.3): the instance's ports, the port it leaves
// from, the destination (DLID and QPN from the QP's primary path and destination QPN), the
// source QPN and P_Key the responder checks, and the requester's retry counts (IBA 1.2
// ch. 9).
struct StreamBinding {
    ri_llp_stream_handle_t llp = 0;
};
struct IbPathBinding {
    ib::Hca *hca = nullptr;
    uint8_t port = 0;
    ri_lid_t dlid = 0;
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    ri_pkey_t pkey = 0;
    uint8_t ack_timeout = 0;
    uint8_t retry_count = 0;
    uint8_t rnr_retry = 0;  // 7: retried without limit
};
using QpBinding = std::variant<StreamBinding, IbPathBinding>;

// Turns LLP stream handles into channels: the handles transports published in the LLP
// registry (llp_registry.hpp) first, then any registered claimer (tests register one). `progress`
// is the claiming RNIC instance's progress engine: an asynchronous channel registers its
// stream there, so every connection of an instance shares one progress thread.
using LlpClaimer = std::unique_ptr<Channel> (*)(ri_llp_stream_handle_t h, bool &mine,
                                                ProgressEngine &progress);
void register_llp_claimer(LlpClaimer claimer);
// Returns the channel for `h`, or nullptr with `known` false when no transport issued it.
std::unique_ptr<Channel> claim_llp(ri_llp_stream_handle_t h, bool &known, ProgressEngine &progress);
// The same for a QP's binding: a connected stream, or an InfiniBand RC path (the IB
// transport's in-process RC channel, transport/ib/rc_channel.hpp).
std::unique_ptr<Channel> claim(const QpBinding &binding, bool &known, ProgressEngine &progress);

// Placement by the initiator. A transport may let its peers write into this process's
// memory themselves (shm: the peer's process_vm_writev), within STag ranges this engine
// validated for their connection (Endpoint::rx_tagged_grant). Whatever changes what a
// granted STag accepts (invalidate, bind, fast-register, dereg, rereg, dealloc) calls
// revoke_remote_placement() (engine::withdraw_grants) once the change is visible to new
// local checks: every grant is withdrawn, and the peers' writes already under way have
// finished when it returns. A channel withdraws its own grants when it stops delivering
// (close, Terminate, detach). Without a registered revoker, or with no grant given, it is
// a fence and one atomic load.
using PlacementRevoker = void (*)();
void register_placement_revoker(PlacementRevoker revoker);
void revoke_remote_placement();

}  // namespace softrnic::transport
