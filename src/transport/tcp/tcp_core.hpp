// Internal to the TCP transport: the channel core shared by its source files
// (tcp_tx.cpp, tcp_rx.cpp, tcp_channel.cpp).
#pragma once

#include "transport/tcp/tcp_channel.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "transport/async_channel.hpp"
#include "transport/iwarp/terminate_map.hpp"
#include "transport/llp_registry.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/segment.hpp"

// Design notes
//
// Ordering. Every outbound operation the engine submits comes with its record
// (InflightOp, in the engine's one ordered list); our TcpOp lives in it. A Send/Write record
// is finished once the last byte of its last FPDU went to the kernel; a Read when its last
// Read Response segment has been placed. The engine completes records in submission order,
// so a later send stays behind an earlier read. Reports are asked for by the progress context
// (InflightRecords::report), never with `mu_` held: the engine re-enters close() from them.
// Fast path: when the kernel took all of an op inside submit(), submit() returns Done, and
// the engine completes it at once if nothing is ahead of it (no thread hop).
//
// Memory. FPDUs are built lazily from queued messages (at most kTxWindowFpdus or
// kTxWindowBytes materialized), each referencing the op's local spans: payload goes out
// by sendmsg() straight from user memory. Before an op is reported as failed, a partially
// written FPDU of it is copied (its remainder, <= 64 KiB) so the stream stays framed for
// a Terminate, and its unwritten FPDUs are dropped.
//
// Receive. recv() into one fixed 256 KiB buffer, the streaming FPDU decoder (CRC), strict
// decode_segment(), UntaggedReassembler for MSN/MO. Tagged data is copied from that
// buffer into the target (one copy). Nothing is allocated from a length on the wire.
//
// Read Requests: sink STag is a per-channel sequence number and sink TO the offset in the
// sink list, so a Read Response is checked against the oldest outstanding read (responses
// come in request order, RFC 5040 5.2). ORD is enforced by holding the Read Request (and
// everything after it, to keep message order) until a response completes; IRD overflow at
// the responder is a Terminate DDP/untagged/0x02.
//
// RFC 7306 (atomics, immediate data) is used only when the ULP agreed on it with the peer
// (StreamParams::rfc7306; MPA has no capability bit). Without it capabilities() reports
// none, so the engine refuses such WRs at post time, and the decoder treats opcodes 8-11
// as unexpected (Terminate 0x02060000, as siw does). With it:
//   - Fetch-and-add / compare-and-swap: an Atomic Request on queue 1 sharing MSNs, ORD
//     and IRD with Read Requests; answered in order on queue 3. Add Mask 0 (plain 64-bit
//     add), swap/compare masks all ones (plain CAS): other masks are refused. RNICPI's
//     atomic WR has no remote address (its target is the first 8 bytes of the rtag's
//     region); that is sent as TO kAtomicBaseTo (see docs/spec-deviations.md).
//   - RDMA Write with immediate: the Write, then an Immediate Data message (32-bit value in
//     the low half of the 8 bytes) consuming a receive, reported with the length of the
//     Write that preceded it. Send with immediate has no RFC 7306 form: not offered.

namespace softrnic::transport::tcp::detail {

namespace w = wire;

constexpr size_t kMaxLocal = 9;  // engine: kMaxSge (8) + 1
constexpr size_t kMaxPieces = kMaxLocal;
constexpr size_t kRxBuf = 256 * 1024;
constexpr size_t kTxWindowFpdus = 256;
constexpr size_t kTxWindowBytes = 2u << 20;
constexpr int kIovMax = 1024;
constexpr uint32_t kMulpduMin = 128;
constexpr uint32_t kMulpduMax = 65534;

constexpr w::TermCode kTermUnexpectedResponse{0, 2, 0x06};  // response nobody asked for
// Wire TO of an atomic aimed at the base of the rtag's region (RNICPI has no address):
// 8-byte aligned and far above any user-space address.
constexpr uint64_t kAtomicBaseTo = ~uint64_t{7};
constexpr w::TermCode kTermIrdExceeded{1, 2, 0x02};  // untagged: no buffer (RFC 5040 6.3)
constexpr w::TermCode kTermBadSinkStag{1, 1, 0x00};  // tagged: invalid STag
constexpr w::TermCode kTermSinkBounds{1, 1, 0x01};   // tagged: base or bounds

// The Terminate sent for `code`, quoting the offending segment's headers when asked and
// trustworthy (RFC 5040 4.8). Returns its length.
inline size_t encode_term(w::TermCode code, std::span<const uint8_t> offending, bool include_hdr,
                          std::span<uint8_t> out) {
    w::TerminateSpec t{};
    t.code = code;
    if (include_hdr && offending.size() >= w::kTaggedHeaderLen) {
        t.offending = offending;
        t.offending_len = static_cast<uint16_t>(std::min<size_t>(offending.size(), 0xFFFF));
        t.include_ddp_header = true;
        t.include_rdma_header = true;  // only honoured for a Read Request
    }
    size_t n = w::encode_terminate(t, out);
    if (n == 0) {
        t = {};
        t.code = code;
        n = w::encode_terminate(t, out);
    }
    return n;
}

// A socket error that means the peer stopped answering or cannot be reached (TCP gave up
// retransmitting or probing, or the route failed), as opposed to a reset by the peer.
inline bool peer_unreachable(int err) {
    return err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN ||
           err == ENETDOWN;
}

// Our part of an operation in flight, kept in its record (InflightOp::state).
struct TcpOp {
    // RDMA Read sink.
    std::array<IoSpan, kMaxLocal> sink{};
    uint32_t nsink = 0;
    uint64_t length = 0;
    uint64_t placed = 0;
    uint32_t sink_stag = 0;
    // Atomic (RFC 7306): answered in order with the reads; `atomic_id` echoes back.
    bool atomic = false;
    uint32_t atomic_id = 0;
    uint64_t *atomic_result = nullptr;
};

// One queued outbound message, segmented lazily.
struct TxMsg {
    bool fixed = false;  // single FPDU whose ULPDU is `hdr` (Read Request, Terminate)
    std::array<uint8_t, w::kMaxHeaderLen + w::kTerminateBodyMax> hdr{};
    size_t hdr_len = 0;
    w::DdpHeader first{};
    uint64_t length = 0;
    std::array<IoSpan, kMaxLocal> src{};
    uint32_t nsrc = 0;
    bool started = false;
    w::Segmenter seg;
    uint32_t piece = 0;
    uint64_t piece_off = 0;
    InflightOp *op = nullptr;       // send/write: finished when fully written
    InflightOp *read_op = nullptr;  // Read Request: joins the outstanding reads when sent
    void *release_ref = nullptr;
    bool read_resp = false;
    bool terminate = false;
};

struct Fpdu {
    w::FpduFrame frame;
    std::array<std::span<const uint8_t>, kMaxPieces> pieces{};
    uint32_t npieces = 0;
    std::vector<uint8_t> owned;  // set once detached from user memory
    size_t total = 0;
    size_t done = 0;
    InflightOp *op = nullptr;
    void *release_ref = nullptr;
    bool read_resp = false;
    bool terminate = false;
    bool preamble = false;  // StreamParams::preamble: goes out even before the RTR

    // Entries for the unwritten part; returns the count (<= kMaxPieces + 2).
    size_t iov(struct iovec *out) const {
        std::array<struct iovec, kMaxPieces + 2> all;
        size_t n;
        if (!owned.empty()) {
            all[0] = {const_cast<uint8_t *>(owned.data()), owned.size()};
            n = 1;
        } else {
            n = w::fpdu_iovecs(frame, {pieces.data(), npieces}, all);
        }
        size_t skip = done, k = 0;
        for (size_t i = 0; i < n; ++i) {
            if (skip >= all[i].iov_len) {
                skip -= all[i].iov_len;
                continue;
            }
            out[k++] = {static_cast<uint8_t *>(all[i].iov_base) + skip, all[i].iov_len - skip};
            skip = 0;
        }
        return k;
    }
};

enum class TxState : uint8_t { Open, Closing, Dead };

// Progress context: TcpConnection::progress(), run by the RNIC instance's ProgressEngine on its
// thread or on a consumer's thread polling a CQ, never two at a time. Everything marked
// "progress only" below is touched only there (or by detach() once progress stopped).
class TcpConnection final : public ProgressSource {
  public:
    TcpConnection(int fd, const StreamParams &p, ProgressEngine &pe) : fd_(fd), p_(p), pe_(pe) {
        crc_ = p.crc;
        uint32_t rx_cap = p.mulpdu_rx_cap ? std::min<uint32_t>(p.mulpdu_rx_cap, 0xFFFF) : 0xFFFF;
        dec_ = std::make_unique<w::FpduDecoder>(w::FpduDecoderConfig{p.crc, rx_cap});
        uint32_t m = p.mulpdu_tx;
        if (m == 0) {
            int mss = 0;
            socklen_t sl = sizeof mss;
            if (::getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl) == 0 && mss > 0)
                m = w::siw_mulpdu_for_mss(static_cast<uint32_t>(mss));
            if (m == 0) m = w::mulpdu_for_emss(1460);
        }
        mulpdu_ = std::clamp(m, kMulpduMin, kMulpduMax);
        ord_ = std::max<uint32_t>(p.ord, 1);
        ird_ = p.ird;
        reasm_.set_expected_msn(w::Queue::ReadRequest, std::max<uint32_t>(p.rx_read_msn_base, 1));
        rtr_pending_.store(p.await_rtr, std::memory_order_relaxed);
        if (!p_.preamble.empty()) {
            Fpdu f;
            f.owned = std::move(p_.preamble);
            f.total = f.owned.size();
            f.preamble = true;
            queued_bytes_ += f.total;
            fpdus_.push_back(std::move(f));
            p_.preamble = {};
        }
        token_ = pe_.add(this);
    }

    ~TcpConnection() override {
        // Registered until here: no progress() runs after remove() returns.
        if (token_.valid()) pe_.remove(token_);
        if (fd_ >= 0) ::close(fd_);
    }

    bool ok() const { return token_.valid(); }
    bool rfc7306() const { return p_.rfc7306; }
    void disown_fd() { fd_ = -1; }

    void attach(Endpoint *ep) {
        ep_ = ep;
        attached_.store(true, std::memory_order_release);
        std::lock_guard lk(mu_);
        recs_.attach(ep);
        out_armed_ = !fpdus_.empty();
        uint32_t events = EPOLLIN | EPOLLRDHUP | (out_armed_ ? uint32_t{EPOLLOUT} : 0u);
        if (fd_ >= 0 && !pe_.watch(token_, fd_, events))
            abort_req_ = true;  // cannot be watched: treat as a broken stream
        wake();
    }

    // Called by the owning channel's destructor.
    void shutdown_owner() {
        if (attached_.load(std::memory_order_acquire) && !detached_.load(std::memory_order_acquire))
            detach();
    }

    void progress(uint32_t events) override;

    OpResult submit(const OutboundOp &op);
    bool submit_now(const OutboundOp &op, OpResult &out);
    void terminate(const FaultReport &f);
    void close(CloseKind kind);
    void detach();

  private:
    // Progress makes every endpoint call (and every write into an op's sink) inside
    // ep_gate_ (an EndpointGate::Scope), so detach() can wait for it.

    // Every change made outside progress that progress must act on (a queued op, a close,
    // an abort request, a reference to release) sets the hint; an idle inline poll then
    // costs a recv() and a few loads instead of five mutex round trips.
    void hint() { hint_.store(true, std::memory_order_release); }
    void wake() {
        hint();
        pe_.wake(token_);
    }

    bool do_read();
    bool handle_segment(std::span<const uint8_t> ulpdu);
    // Arrivals after decoding and reassembly, one per RDMAP opcode (kRxByOpcode); inside
    // the endpoint gate. False: stop reading (the stream is over).
    using RxHandler = bool (TcpConnection::*)(const w::Segment &s, std::span<const uint8_t> ulpdu,
                                              const w::UntaggedReassembler::Result &rr);
    static const RxHandler kRxByOpcode[16];
    bool rx_write(const w::Segment &s, std::span<const uint8_t> ulpdu,
                  const w::UntaggedReassembler::Result &rr);
    bool rx_send(const w::Segment &s, std::span<const uint8_t> ulpdu,
                 const w::UntaggedReassembler::Result &rr);
    bool rx_read_request(const w::Segment &s, std::span<const uint8_t> ulpdu,
                         const w::UntaggedReassembler::Result &rr);
    bool rx_read_response(const w::Segment &s, std::span<const uint8_t> ulpdu,
                          const w::UntaggedReassembler::Result &rr);
    bool rx_terminate(const w::Segment &s, std::span<const uint8_t> ulpdu,
                      const w::UntaggedReassembler::Result &rr);
    bool rx_atomic_request(const w::Segment &s, std::span<const uint8_t> ulpdu,
                           const w::UntaggedReassembler::Result &rr);
    bool rx_atomic_response(const w::Segment &s, std::span<const uint8_t> ulpdu,
                            const w::UntaggedReassembler::Result &rr);
    bool rx_immediate(const w::Segment &s, std::span<const uint8_t> ulpdu,
                      const w::UntaggedReassembler::Result &rr);
    bool rx_unexpected(const w::Segment &s, std::span<const uint8_t> ulpdu,
                       const w::UntaggedReassembler::Result &rr);
    bool handle_atomic_request(const w::AtomicRequestBody &b, std::span<const uint8_t> ulpdu);
    void report_ready();
    OpResult finish_submit_locked(InflightOp &rec, OpResult r);
    OpResult end_submit_locked();
    void release_refs();
    void on_stream_end(CloseKind kind);
    void stream_lost();
    // The receive side told the engine how the stream ended (InflightRecords::rx_ending).
    void finish_rx_ending();
    void protocol_error(w::TermCode code, std::span<const uint8_t> ulpdu, bool include_hdr);
    void engine_failed(const RxStatus &st, std::span<const uint8_t> ulpdu);
    void abort_open_recv(ri_wc_status_t st);

    // ---- under mu_
    void refill_locked();
    void flush_locked();
    void retire_fpdu_locked(Fpdu &f);
    void own_partial_head_locked();
    void drop_unwritten_locked();
    void fail_all_locked(OpResult r);
    void queue_terminate_locked(w::TermCode code, std::span<const uint8_t> offending,
                                bool include_hdr);
    void close_fd_locked(bool abortive);
    void update_out_locked();

    int fd_;
    StreamParams p_;
    bool crc_ = false;
    uint32_t mulpdu_ = 0;
    uint32_t ord_ = 1;
    uint32_t ird_ = 0;
    ProgressEngine &pe_;
    ProgressEngine::Token token_{};
    Endpoint *ep_ = nullptr;  // set once, before attached_ is published
    std::atomic<bool> attached_{false};
    std::atomic<bool> detached_{false};
    EndpointGate ep_gate_;
    std::atomic<bool> rx_open_{true};  // arrivals are delivered
    // Waiting for the initiator's RTR (StreamParams::await_rtr): outbound FPDUs are held.
    // Cleared under mu_; read by progress without it.
    std::atomic<bool> rtr_pending_{false};
    std::atomic<bool> hint_{true};
    // The error a sendmsg() failed with (0: none): set under mu_, read by progress.
    std::atomic<int> tx_errno_{0};

    // Progress only.
    std::unique_ptr<w::FpduDecoder> dec_;
    w::UntaggedReassembler reasm_;
    RxRecv recv_{};
    bool recv_open_ = false;

    // Guarded by mu_. A plain mutex: the posting thread holds it for one non-blocking
    // sendmsg() at most, progress for queue bookkeeping.
    std::mutex mu_;
    InflightRecords recs_;
    std::deque<InflightOp *> reads_;  // Read and Atomic Requests on the wire, oldest first
    uint32_t outstanding_reads_ = 0;
    std::deque<TxMsg> msgs_;
    std::deque<Fpdu> fpdus_;
    size_t queued_bytes_ = 0;
    std::vector<void *> pending_release_;
    uint32_t inflight_read_resps_ = 0;
    TxState tx_ = TxState::Open;
    bool shut_wr_ = false;
    bool terminate_queued_ = false;
    bool local_closed_ = false;  // the engine closed/terminated, or we sent a Terminate
    bool abort_req_ = false;
    bool out_armed_ = false;
    uint32_t send_msn_ = 1;
    uint32_t read_msn_ = 1;
    uint32_t next_sink_stag_ = 1;
    uint32_t next_atomic_id_ = 1;
    uint32_t atomic_resp_msn_ = 1;  // responder: queue 3 has its own MSN sequence

    // Progress only: references being released (swapped with pending_release_).
    std::vector<void *> releasing_;
    // Progress only: the Write an Immediate Data message reports the length of.
    uint64_t last_write_len_ = 0;
    bool last_write_done_ = true;
};

}  // namespace softrnic::transport::tcp::detail
