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

#include "transport/iwarp/terminate_map.hpp"
#include "transport/llp_registry.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"
#include "transport/tcp/wire/segment.hpp"

// Design notes
//
// Ordering. Every outbound operation gets an OpRec in `ops_` (submission order). A
// Send/Write record becomes ready once the last byte of its last FPDU went to the kernel;
// a Read when its last Read Response segment has been placed. Only the head of `ops_` is
// ever reported, so a later send stays behind an earlier read. Reports are made by the
// progress context (or by detach() after progress stopped calling the endpoint), never
// with `mu_` held: the engine re-enters close() from tx_complete.
// Fast path: when the op is the only one outstanding, nothing is being reported and the
// kernel took all of it inside submit(), submit() returns Done directly (no thread hop).
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

namespace softrnic::transport::tcp {

namespace w = wire;

namespace {

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
size_t encode_term(w::TermCode code, std::span<const uint8_t> offending, bool include_hdr,
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

struct OpRec {
    bool ready = false;
    OpResult result{};
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
    OpRec *op = nullptr;       // send/write: ready when fully written
    OpRec *read_op = nullptr;  // Read Request: joins the outstanding reads when sent
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
    OpRec *op = nullptr;
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

// Progress context: Core::progress(), run by the RNIC instance's ProgressEngine on its
// thread or on a consumer's thread polling a CQ, never two at a time. Everything marked
// "progress only" below is touched only there (or by detach() once progress stopped).
class Core final : public ProgressSource {
  public:
    Core(int fd, const StreamParams &p, ProgressEngine &pe) : fd_(fd), p_(p), pe_(pe) {
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

    ~Core() override {
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
    // ---- endpoint gate: progress brackets every endpoint call (and every
    // write into an op's sink) so detach() can wait for it.
    bool enter_ep() {
        in_ep_.fetch_add(1, std::memory_order_seq_cst);
        if (detached_.load(std::memory_order_seq_cst)) {
            in_ep_.fetch_sub(1, std::memory_order_release);
            return false;
        }
        return true;
    }
    void leave_ep() { in_ep_.fetch_sub(1, std::memory_order_release); }

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
    bool handle_atomic_request(const w::AtomicRequestBody &b, std::span<const uint8_t> ulpdu);
    void report_ready();
    void release_refs();
    void on_stream_end(CloseKind kind);
    void stream_lost();
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
    std::atomic<uint32_t> in_ep_{0};
    std::atomic<bool> rx_open_{true};  // arrivals are delivered
    // Waiting for the initiator's RTR (StreamParams::await_rtr): outbound FPDUs are held.
    // Cleared under mu_; read by progress without it.
    std::atomic<bool> rtr_pending_{false};
    std::atomic<bool> hint_{true};

    // Progress only.
    std::unique_ptr<w::FpduDecoder> dec_;
    w::UntaggedReassembler reasm_;
    RxRecv recv_{};
    bool recv_open_ = false;

    // Guarded by mu_. A plain mutex: the posting thread holds it for one non-blocking
    // sendmsg() at most, progress for queue bookkeeping.
    std::mutex mu_;
    std::deque<OpRec> ops_;
    std::deque<OpRec *> reads_;  // Read Requests on the wire, oldest first
    uint32_t outstanding_reads_ = 0;
    uint32_t reporting_ = 0;
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

// ------------------------------------------------------------------------------- tx side

OpResult Core::submit(const OutboundOp &op) {
    std::lock_guard lk(mu_);
    auto finish_now = [&](OpResult r) -> OpResult {
        // In order: immediate only when nothing older is outstanding or being reported.
        if (ops_.empty() && reporting_ == 0) return r;
        OpRec &rec = ops_.emplace_back();
        rec.ready = true;
        rec.result = r;
        wake();
        return {OpOutcome::Pending, {}};
    };
    if (tx_ != TxState::Open || local_closed_ || detached_.load(std::memory_order_acquire))
        return finish_now({OpOutcome::Disconnected, {}});
    if (op.local.size() > kMaxLocal)
        return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});

    TxMsg m;
    m.nsrc = static_cast<uint32_t>(op.local.size());
    std::copy(op.local.begin(), op.local.end(), m.src.begin());
    m.length = op.length;
    switch (op.kind) {
        case OpKind::Send:
        case OpKind::SendInvalidate: {
            bool inv = op.kind == OpKind::SendInvalidate;
            m.first.opcode =
                inv ? (op.solicited ? w::Opcode::SendSeInvalidate : w::Opcode::SendInvalidate)
                    : (op.solicited ? w::Opcode::SendSe : w::Opcode::Send);
            m.first.inv_stag = inv ? op.remote_stag : 0;
            m.first.qn = static_cast<uint32_t>(w::Queue::Send);
            m.first.msn = send_msn_;
            break;
        }
        case OpKind::RdmaWrite:
        case OpKind::RdmaWriteImmediate:
            if (op.kind == OpKind::RdmaWriteImmediate && !p_.rfc7306)
                return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
            m.first.opcode = w::Opcode::RdmaWrite;
            m.first.stag = op.remote_stag;
            m.first.to = op.remote_to;
            break;
        case OpKind::FetchAdd:
        case OpKind::CompareSwap: {
            if (!p_.rfc7306)
                return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
            w::DdpHeader h{};
            h.opcode = w::Opcode::AtomicRequest;
            h.qn = static_cast<uint32_t>(w::Queue::ReadRequest);  // shared with reads
            h.msn = read_msn_++;
            w::AtomicRequestBody b{};
            bool add = op.kind == OpKind::FetchAdd;
            b.op = add ? w::AtomicOp::FetchAdd : w::AtomicOp::CmpSwap;
            b.request_id = next_atomic_id_++;
            b.stag = op.remote_stag;
            b.to = op.remote_to == kAtomicAtBase ? kAtomicBaseTo : op.remote_to;
            if (add) {
                b.add_swap = op.operand1;  // Add Mask 0: a plain 64-bit add
            } else {
                b.add_swap = op.operand2;
                b.add_swap_mask = ~uint64_t{0};
                b.compare = op.operand1;
                b.compare_mask = ~uint64_t{0};
            }
            m.fixed = true;
            m.hdr_len = w::encode_atomic_request(h, b, m.hdr);
            OpRec &rec = ops_.emplace_back();
            rec.atomic = true;
            rec.atomic_id = b.request_id;
            rec.atomic_result = op.atomic_result;
            m.read_op = &rec;
            m.nsrc = 0;
            msgs_.push_back(m);
            flush_locked();
            return {OpOutcome::Pending, {}};
        }
        case OpKind::RdmaRead: {
            if (op.length > 0xFFFFFFFFu)
                return finish_now(
                    {OpOutcome::Terminated, RemoteFault::Bounds, FaultedOp::ReadResponse});
            w::DdpHeader h{};
            h.opcode = w::Opcode::ReadRequest;
            h.qn = static_cast<uint32_t>(w::Queue::ReadRequest);
            h.msn = read_msn_++;
            w::ReadRequestBody b{};
            uint32_t sink = next_sink_stag_++;
            if (next_sink_stag_ == 0) next_sink_stag_ = 1;
            b.sink_stag = sink;
            b.sink_to = 0;
            b.size = static_cast<uint32_t>(op.length);
            b.src_stag = op.remote_stag;
            b.src_to = op.remote_to;
            m.fixed = true;
            m.hdr_len = w::encode_read_request(h, b, m.hdr);
            OpRec &rec = ops_.emplace_back();
            rec.nsink = m.nsrc;
            rec.sink = m.src;
            rec.length = op.length;
            rec.sink_stag = sink;
            m.read_op = &rec;
            m.nsrc = 0;
            msgs_.push_back(m);
            flush_locked();
            return {OpOutcome::Pending, {}};
        }
        default:
            // Send with immediate: no RFC 7306 form (see the file comment).
            return finish_now({OpOutcome::Terminated, RemoteFault::UnexpectedOpcode});
    }
    w::Segmenter check;
    if (w::Status s = check.start(m.first, m.length, mulpdu_); s != w::Status::Ok)
        return finish_now({OpOutcome::Terminated, iwarp::fault_of(w::term_code(s))});
    if (!w::is_tagged(m.first.opcode)) ++send_msn_;
    OpRec &rec = ops_.emplace_back();
    if (op.kind == OpKind::RdmaWriteImmediate) {
        // The Write carries no completion; the Immediate Data message behind it does.
        msgs_.push_back(m);
        TxMsg im;
        im.fixed = true;
        w::DdpHeader h{};
        h.opcode = op.solicited ? w::Opcode::ImmediateDataSe : w::Opcode::ImmediateData;
        h.qn = static_cast<uint32_t>(w::Queue::Send);
        h.msn = send_msn_++;
        im.hdr_len = w::encode_immediate(h, op.immediate, im.hdr);
        im.op = &rec;
        msgs_.push_back(im);
    } else {
        m.op = &rec;
        msgs_.push_back(m);
    }
    flush_locked();
    if (ops_.size() == 1 && ops_.front().ready && reporting_ == 0) {
        OpResult r = ops_.front().result;
        ops_.pop_front();
        return r;
    }
    if (!ops_.empty() && ops_.front().ready) wake();
    return {OpOutcome::Pending, {}};
}

// The latency path: a Send or Write that fits one FPDU, with nothing queued or being
// reported ahead of it, goes to the kernel from here with no queue record. If the kernel
// takes only part of it, the rest is copied (at most one FPDU) and written by progress, so
// the op is still complete (its memory free) when this returns.
bool Core::submit_now(const OutboundOp &op, OpResult &out) {
    bool send = op.kind == OpKind::Send || op.kind == OpKind::SendInvalidate;
    if ((!send && op.kind != OpKind::RdmaWrite) || op.local.size() > kMaxLocal ||
        op.length >= mulpdu_)
        return false;
    std::lock_guard lk(mu_);
    if (fd_ < 0 || tx_ != TxState::Open || local_closed_ ||
        detached_.load(std::memory_order_acquire) || rtr_pending_.load(std::memory_order_relaxed) ||
        !ops_.empty() || reporting_ != 0 || !msgs_.empty() || !fpdus_.empty())
        return false;
    w::DdpHeader first{};
    if (send) {
        bool inv = op.kind == OpKind::SendInvalidate;
        first.opcode =
            inv ? (op.solicited ? w::Opcode::SendSeInvalidate : w::Opcode::SendInvalidate)
                : (op.solicited ? w::Opcode::SendSe : w::Opcode::Send);
        first.inv_stag = inv ? op.remote_stag : 0;
        first.qn = static_cast<uint32_t>(w::Queue::Send);
        first.msn = send_msn_;
    } else {
        first.opcode = w::Opcode::RdmaWrite;
        first.stag = op.remote_stag;
        first.to = op.remote_to;
    }
    w::Segmenter seg;
    w::SegmentPlan plan;
    if (seg.start(first, op.length, mulpdu_) != w::Status::Ok || !seg.next(plan) || !plan.hdr.last)
        return false;
    uint8_t hdr[w::kMaxHeaderLen];
    size_t hl = w::encode_ddp_header(plan.hdr, hdr);
    std::array<std::span<const uint8_t>, kMaxPieces> pieces;
    size_t npieces = 0;
    for (const IoSpan &sp : op.local)
        if (sp.len) pieces[npieces++] = {reinterpret_cast<const uint8_t *>(sp.ptr), sp.len};
    w::FpduFrame frame;
    if (w::build_fpdu_frame({hdr, hl}, {pieces.data(), npieces}, crc_, frame) != w::Status::Ok)
        return false;
    std::array<struct iovec, kMaxPieces + 2> iov;
    size_t n = w::fpdu_iovecs(frame, {pieces.data(), npieces}, iov);
    if (n == 0) return false;
    msghdr mh{};
    mh.msg_iov = iov.data();
    mh.msg_iovlen = n;
    ssize_t wr = ::sendmsg(fd_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    // Nothing written (full socket, signal, broken stream): the queued path deals with it.
    if (wr <= 0) return false;
    if (send) ++send_msn_;
    size_t total = frame.total() + static_cast<size_t>(op.length);
    if (static_cast<size_t>(wr) < total) {
        Fpdu &f = fpdus_.emplace_back();
        f.owned.reserve(total - static_cast<size_t>(wr));
        size_t skip = static_cast<size_t>(wr);
        for (size_t i = 0; i < n; ++i) {
            auto *b = static_cast<const uint8_t *>(iov[i].iov_base);
            size_t len = iov[i].iov_len;
            size_t k = std::min(skip, len);
            skip -= k;
            f.owned.insert(f.owned.end(), b + k, b + len);
        }
        f.total = f.owned.size();
        queued_bytes_ += f.total;
        update_out_locked();  // progress writes the rest when the socket has room
    }
    out = {OpOutcome::Done, {}};
    return true;
}

void Core::refill_locked() {
    while (!msgs_.empty() && fpdus_.size() < kTxWindowFpdus && queued_bytes_ < kTxWindowBytes) {
        TxMsg &m = msgs_.front();
        Fpdu &f = fpdus_.emplace_back();
        if (m.fixed) {
            if (m.read_op) {
                if (outstanding_reads_ >= ord_) {
                    fpdus_.pop_back();  // ORD reached: hold it and what follows
                    return;
                }
                ++outstanding_reads_;
                reads_.push_back(m.read_op);
            }
            w::build_fpdu_frame({m.hdr.data(), m.hdr_len}, {}, crc_, f.frame);
            f.total = f.frame.total();
            f.terminate = m.terminate;
            f.op = m.op;                // Immediate Data closing a Write with immediate
            f.read_resp = m.read_resp;  // Atomic Response: frees an IRD credit
            queued_bytes_ += f.total;
            msgs_.pop_front();
            continue;
        }
        if (!m.started) {
            m.seg.start(m.first, m.length, mulpdu_);  // checked when queued
            m.started = true;
        }
        w::SegmentPlan plan;
        if (!m.seg.next(plan)) {  // cannot happen: the last segment pops the message
            fpdus_.pop_back();
            msgs_.pop_front();
            continue;
        }
        uint8_t hdr[w::kMaxHeaderLen];
        size_t hl = w::encode_ddp_header(plan.hdr, hdr);
        uint64_t need = plan.length;
        while (need > 0 && m.piece < m.nsrc && f.npieces < kMaxPieces) {
            const IoSpan &s = m.src[m.piece];
            uint64_t n = std::min<uint64_t>(need, s.len - m.piece_off);
            if (n > 0)
                f.pieces[f.npieces++] = {reinterpret_cast<const uint8_t *>(s.ptr) + m.piece_off,
                                         static_cast<size_t>(n)};
            m.piece_off += n;
            need -= n;
            if (m.piece_off == s.len) {
                ++m.piece;
                m.piece_off = 0;
            }
        }
        w::build_fpdu_frame({hdr, hl}, {f.pieces.data(), f.npieces}, crc_, f.frame);
        f.total = f.frame.total() + plan.length;
        queued_bytes_ += f.total;
        if (plan.hdr.last) {
            f.op = m.op;
            f.release_ref = m.release_ref;
            f.read_resp = m.read_resp;
            msgs_.pop_front();
        }
    }
}

void Core::retire_fpdu_locked(Fpdu &f) {
    if (f.op || f.release_ref) hint();
    if (f.op) {
        f.op->ready = true;
        f.op->result = {OpOutcome::Done, {}};
    }
    if (f.release_ref) pending_release_.push_back(f.release_ref);
    if (f.read_resp) --inflight_read_resps_;
    queued_bytes_ -= f.total;
}

void Core::flush_locked() {
    // Before the initiator's RTR nothing may go out but the MPA Reply (the preamble),
    // except when tearing down (a Terminate or the close itself).
    bool held = rtr_pending_.load(std::memory_order_relaxed) && tx_ == TxState::Open;
    if (held && (fpdus_.empty() || !fpdus_.front().preamble)) return;
    while (fd_ >= 0 && tx_ != TxState::Dead) {
        if (held && (fpdus_.empty() || !fpdus_.front().preamble)) break;
        if (!held) refill_locked();
        if (fpdus_.empty()) break;
        std::array<struct iovec, kIovMax> iov;
        size_t n = 0;
        for (const Fpdu &f : fpdus_) {
            if (held && !f.preamble) break;
            if (n + kMaxPieces + 2 > iov.size()) break;
            n += f.iov(&iov[n]);
        }
        msghdr mh{};
        mh.msg_iov = iov.data();
        mh.msg_iovlen = n;
        ssize_t wr = ::sendmsg(fd_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (wr < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            // The stream broke: the receive side sees it too and ends the stream.
            tx_ = TxState::Dead;
            drop_unwritten_locked();
            fail_all_locked({OpOutcome::Disconnected, {}});
            fpdus_.clear();
            queued_bytes_ = 0;
            wake();
            break;
        }
        size_t left = static_cast<size_t>(wr);
        while (left > 0 && !fpdus_.empty()) {
            Fpdu &f = fpdus_.front();
            size_t take = std::min(left, f.total - f.done);
            f.done += take;
            left -= take;
            if (f.done == f.total) {
                retire_fpdu_locked(f);
                fpdus_.pop_front();
            }
        }
    }
    if (fd_ >= 0 && tx_ == TxState::Closing && fpdus_.empty() && msgs_.empty() && !shut_wr_) {
        ::shutdown(fd_, SHUT_WR);
        shut_wr_ = true;
    }
    update_out_locked();
}

void Core::update_out_locked() {
    if (fd_ < 0 || !attached_.load(std::memory_order_acquire)) return;
    bool want = !fpdus_.empty();
    if (want || !msgs_.empty()) hint();  // inline polls retry while anything is queued
    if (want == out_armed_) return;
    if (pe_.watch(token_, fd_, EPOLLIN | EPOLLRDHUP | (want ? uint32_t{EPOLLOUT} : 0u)))
        out_armed_ = want;
}

void Core::own_partial_head_locked() {
    if (fpdus_.empty()) return;
    Fpdu &f = fpdus_.front();
    if (f.done == 0 || f.done == f.total || !f.owned.empty()) return;
    std::array<struct iovec, kMaxPieces + 2> iov;
    size_t n = f.iov(iov.data());
    std::vector<uint8_t> rest;
    rest.reserve(f.total - f.done);
    for (size_t i = 0; i < n; ++i) {
        auto *b = static_cast<const uint8_t *>(iov[i].iov_base);
        rest.insert(rest.end(), b, b + iov[i].iov_len);
    }
    if (f.release_ref) pending_release_.push_back(f.release_ref);
    if (f.read_resp) --inflight_read_resps_;
    queued_bytes_ -= f.total;
    f.release_ref = nullptr;
    f.read_resp = false;
    f.op = nullptr;
    f.npieces = 0;
    f.owned = std::move(rest);
    f.total = f.owned.size();
    f.done = 0;
    queued_bytes_ += f.total;
}

void Core::drop_unwritten_locked() {
    own_partial_head_locked();
    std::deque<Fpdu> keep;
    for (Fpdu &f : fpdus_) {
        if (!f.owned.empty() || f.terminate) {
            keep.push_back(std::move(f));
            continue;
        }
        if (f.release_ref) pending_release_.push_back(f.release_ref);
        if (f.read_resp) --inflight_read_resps_;
        queued_bytes_ -= f.total;
    }
    fpdus_.swap(keep);
    std::deque<TxMsg> keep_msgs;
    for (TxMsg &m : msgs_) {
        if (m.terminate) {
            keep_msgs.push_back(m);
            continue;
        }
        if (m.release_ref) pending_release_.push_back(m.release_ref);
        if (m.read_resp) --inflight_read_resps_;
    }
    msgs_.swap(keep_msgs);
}

void Core::fail_all_locked(OpResult r) {
    bool first = true;
    for (OpRec &o : ops_) {
        if (o.ready) continue;
        o.ready = true;
        o.result = first ? r : OpResult{OpOutcome::Disconnected, {}};
        first = false;
    }
    reads_.clear();
    outstanding_reads_ = 0;
}

void Core::queue_terminate_locked(w::TermCode code, std::span<const uint8_t> offending,
                                  bool include_hdr) {
    local_closed_ = true;
    rx_open_.store(false, std::memory_order_release);
    drop_unwritten_locked();
    fail_all_locked({OpOutcome::Disconnected, {}});
    if (tx_ != TxState::Open || fd_ < 0 || terminate_queued_) {
        if (tx_ == TxState::Open) tx_ = TxState::Closing;
        flush_locked();
        return;
    }
    TxMsg m;
    m.fixed = true;
    m.terminate = true;
    m.hdr_len = encode_term(code, offending, include_hdr, m.hdr);
    msgs_.push_back(m);
    terminate_queued_ = true;
    tx_ = TxState::Closing;
    flush_locked();
}

void Core::close_fd_locked(bool abortive) {
    if (fd_ < 0) return;
    if (abortive) {
        linger lg{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    pe_.unwatch(token_);
    ::close(fd_);
    fd_ = -1;
    tx_ = TxState::Dead;
    rx_open_.store(false, std::memory_order_release);
    fpdus_.clear();  // only owned bytes or Terminates can be left: drop_unwritten ran
    msgs_.clear();
    queued_bytes_ = 0;
}

void Core::terminate(const FaultReport &f) {
    std::lock_guard lk(mu_);
    queue_terminate_locked(iwarp::terminate_code(f), {}, false);
    wake();
}

void Core::close(CloseKind kind) {
    std::lock_guard lk(mu_);
    local_closed_ = true;
    rx_open_.store(false, std::memory_order_release);
    drop_unwritten_locked();
    fail_all_locked({OpOutcome::Disconnected, {}});
    if (kind == CloseKind::Abortive && !terminate_queued_ && tx_ == TxState::Closing) {
        // A graceful close came first (RTS -> Closing with receives outstanding, which the
        // engine ends in Error; uDAPL's disconnect does this). Sends whose completions
        // were reported are in the kernel's send buffer or, for the tail of a partly
        // written FPDU, in ours: a reset would throw them away while a peer slow to read
        // has not got them yet, so the consumer would have been told a message went that
        // never arrives. The close stays graceful: what is queued goes out, then FIN.
        // Only the work not yet written was dropped (and flushed) above.
        flush_locked();
    } else if (kind == CloseKind::Abortive && !terminate_queued_) {
        abort_req_ = true;  // progress closes the fd (it alone reads it)
    } else if (tx_ == TxState::Open) {
        tx_ = TxState::Closing;
        flush_locked();
    }
    wake();
}

void Core::detach() {
    detached_.store(true, std::memory_order_seq_cst);
    rx_open_.store(false, std::memory_order_release);
    if (ProgressEngine::current() != this) {
        // Endpoint calls are short (a copy of at most one receive buffer); yield-wait like
        // the engine's own gates do.
        while (in_ep_.load(std::memory_order_acquire) != 0)
            std::this_thread::yield();
    }
    std::deque<OpRec> left;
    std::vector<void *> refs;
    {
        std::lock_guard lk(mu_);
        local_closed_ = true;
        drop_unwritten_locked();
        left.swap(ops_);
        reads_.clear();
        outstanding_reads_ = 0;
        refs.swap(pending_release_);
        if (tx_ == TxState::Open) {
            tx_ = TxState::Closing;
            flush_locked();
        }
    }
    if (ep_) {
        for (void *r : refs)
            ep_->rx_tagged_release(r);
        if (recv_open_) {
            ep_->rx_recv_abort(recv_, RI_WC_STATUS_WR_FLUSHED_ERROR);
            recv_open_ = false;
        }
        for (OpRec &o : left)
            ep_->tx_complete(o.ready ? o.result : OpResult{OpOutcome::Disconnected, {}});
    }
    wake();
}

// ------------------------------------------------------------------------------ progress

void Core::progress(uint32_t events) {
    if (!attached_.load(std::memory_order_acquire)) return;
    bool readable = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
    bool writable = events & EPOLLOUT;
    bool hinted =
        hint_.load(std::memory_order_acquire) && hint_.exchange(false, std::memory_order_acq_rel);
    if (hinted) {
        std::lock_guard lk(mu_);
        if (abort_req_) {
            abort_req_ = false;
            close_fd_locked(true);
        }
    }
    bool received = readable && do_read();
    if (!hinted && !received && !writable) return;  // nothing came, nothing queued
    {
        std::lock_guard lk(mu_);
        if (writable || !fpdus_.empty() || !msgs_.empty()) flush_locked();
    }
    release_refs();
    report_ready();
}

bool Core::do_read() {
    // One receive buffer per thread, not per connection: every byte of it is fed to the
    // decoder (which keeps partial FPDUs itself) before do_read returns, and a thousand
    // connections would otherwise hold 256 MiB.
    thread_local std::unique_ptr<uint8_t[]> rxbuf =
        std::make_unique_for_overwrite<uint8_t[]>(kRxBuf);
    bool got = false;
    for (int iter = 0; iter < 16; ++iter) {
        if (fd_ < 0) return got;  // only progress closes fd_
        ssize_t n = ::recv(fd_, rxbuf.get(), kRxBuf, MSG_DONTWAIT);
        if (n > 0) {
            got = true;
            std::span<const uint8_t> in(rxbuf.get(), static_cast<size_t>(n));
            while (!in.empty() && rx_open_.load(std::memory_order_acquire)) {
                w::FeedResult r = dec_->feed(in);
                in = in.subspan(r.consumed);
                if (r.state == w::FeedState::Segment) {
                    if (!handle_segment(dec_->segment())) break;
                } else if (r.state == w::FeedState::Error) {
                    protocol_error(w::term_code(dec_->error()), {}, false);
                    break;
                }
            }
            // Anything left after the stream stopped delivering is discarded.
            if (static_cast<size_t>(n) < kRxBuf) return true;
            continue;
        }
        if (n == 0) {
            // A FIN inside an FPDU or a message is no orderly close: the peer died or
            // reset mid-transfer, and what was placed of that message is incomplete.
            if (dec_->mid_fpdu() || reasm_.in_message() || !last_write_done_)
                stream_lost();
            else
                on_stream_end(CloseKind::Graceful);
            return true;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return got;
        on_stream_end(CloseKind::Abortive);
        return true;
    }
    return got;
}

void Core::on_stream_end(CloseKind kind) {
    bool tell;
    {
        std::lock_guard lk(mu_);
        tell = !local_closed_;
        local_closed_ = true;
        drop_unwritten_locked();
        fail_all_locked({OpOutcome::Disconnected, {}});
        close_fd_locked(kind == CloseKind::Abortive);
    }
    release_refs();
    if (enter_ep()) {
        if (recv_open_) {
            ep_->rx_recv_abort(recv_, RI_WC_STATUS_WR_FLUSHED_ERROR);
            recv_open_ = false;
        }
        if (tell) ep_->rx_llp_closed(kind);
        leave_ep();
    }
}

// The stream ended in the middle of an FPDU or message: the connection is lost (LLP
// layer, "connection lost"), the QP goes to Error with its work flushed.
void Core::stream_lost() {
    constexpr w::TermCode kLost{2, 0, 0x01};
    bool tell;
    {
        std::lock_guard lk(mu_);
        tell = !local_closed_;
        local_closed_ = true;
        drop_unwritten_locked();
        fail_all_locked({OpOutcome::Disconnected, {}});
        close_fd_locked(true);
    }
    release_refs();
    if (enter_ep()) {
        abort_open_recv(RI_WC_STATUS_WR_FLUSHED_ERROR);
        if (tell) {
            std::array<uint8_t, w::kUntaggedHeaderLen + w::kTerminateBodyMax> t{};
            const size_t n = encode_term(kLost, {}, false, t);
            ep_->rx_stream_error(iwarp::fault_of(kLost),
                                 iwarp::message_of(std::span<const uint8_t>(t.data(), n)));
        }
        leave_ep();
    }
}

void Core::abort_open_recv(ri_wc_status_t st) {
    if (!recv_open_) return;
    recv_open_ = false;
    if (recv_.wqe) ep_->rx_recv_abort(recv_, st);
}

// A violation the engine does not know about (framing, CRC, DDP/RDMAP sequencing): send
// the Terminate and tell the engine the stream is gone. Called inside the endpoint gate.
void Core::protocol_error(w::TermCode code, std::span<const uint8_t> ulpdu, bool include_hdr) {
    bool tell;
    {
        std::lock_guard lk(mu_);
        tell = !local_closed_;
        queue_terminate_locked(code, ulpdu, include_hdr);
    }
    // The engine raises the event that matches the code (CRC, bad FPDU, DDP/RDMAP version,
    // queue, MSN...), records it as the local Terminate and moves to Error.
    if (enter_ep()) {
        abort_open_recv(RI_WC_STATUS_LOCAL_QP_CATASTROPHIC);
        if (tell) {
            // What was queued above, for the engine's record.
            std::array<uint8_t, w::kUntaggedHeaderLen + w::kTerminateBodyMax> t{};
            const size_t n = encode_term(code, ulpdu, include_hdr, t);
            ep_->rx_stream_error(iwarp::fault_of(code),
                                 iwarp::message_of(std::span<const uint8_t>(t.data(), n)));
        }
        leave_ep();
    }
}

// The engine refused an arrival (RxStatus !ok): it already raised its event and moved to
// Error; we send the Terminate it describes and close.
void Core::engine_failed(const RxStatus &st, std::span<const uint8_t> ulpdu) {
    recv_open_ = recv_open_ && recv_.wqe != nullptr;
    if (recv_open_ && enter_ep()) {
        abort_open_recv(RI_WC_STATUS_LOCAL_QP_CATASTROPHIC);
        leave_ep();
    }
    std::lock_guard lk(mu_);
    queue_terminate_locked(iwarp::terminate_code({st.fault, st.op}), ulpdu, true);
}

bool Core::handle_segment(std::span<const uint8_t> ulpdu) {
    if (!enter_ep()) {
        rx_open_.store(false, std::memory_order_release);
        return false;
    }
    struct Leave {
        Core *c;
        ~Leave() { c->leave_ep(); }
    } leave{this};

    w::Segment s;
    w::Status st = w::decode_segment(ulpdu, s, {p_.rfc7306});
    if (st != w::Status::Ok) {
        protocol_error(w::term_code(st), ulpdu, false);
        return false;
    }
    if (rtr_pending_.load(std::memory_order_acquire)) {
        // The first FPDU must be the RTR we agreed on: a zero-length RDMA Write whose STag
        // is not validated (brief 2.4). It ends the hold on our sends.
        if (s.hdr.opcode != w::Opcode::RdmaWrite || !s.hdr.last || !s.payload.empty()) {
            protocol_error(w::term_code(w::Status::MpaNoMatchingRtr), ulpdu, false);
            return false;
        }
        std::lock_guard lk(mu_);
        rtr_pending_.store(false, std::memory_order_release);
        flush_locked();
        return true;
    }
    w::UntaggedReassembler::Result rr;
    if (!s.hdr.tagged()) {
        st = reasm_.accept(s.hdr, static_cast<uint32_t>(s.payload.size()), rr);
        if (st != w::Status::Ok) {
            protocol_error(w::term_code(st), ulpdu, true);
            return false;
        }
    }
    const auto *payload = reinterpret_cast<const std::byte *>(s.payload.data());
    switch (s.hdr.opcode) {
        case w::Opcode::RdmaWrite: {
            if (last_write_done_) last_write_len_ = 0;
            last_write_len_ += s.payload.size();
            last_write_done_ = s.hdr.last;
            if (s.payload.empty()) return true;
            IoSpan dst{};
            void *ref = nullptr;
            RxStatus rs =
                ep_->rx_tagged_acquire(s.hdr.stag, s.hdr.to, s.payload.size(), false, dst, ref);
            if (!rs.ok) {
                engine_failed(rs, ulpdu);
                return false;
            }
            // The last byte goes last, with release ordering: consumers poll the final
            // byte of an RDMA-written buffer to learn that the rest arrived (dtest -W,
            // perftest-style ping-pong), and memcpy may store its tail first.
            const size_t len = s.payload.size();
            if (len > 1) std::memcpy(dst.ptr, payload, len - 1);
            std::atomic_ref<std::byte>(dst.ptr[len - 1])
                .store(payload[len - 1], std::memory_order_release);
            ep_->rx_tagged_release(ref);
            return true;
        }
        case w::Opcode::Send:
        case w::Opcode::SendSe:
        case w::Opcode::SendInvalidate:
        case w::Opcode::SendSeInvalidate: {
            if (rr.msg_offset == 0) {
                recv_ = {};
                RxStatus rs = ep_->rx_recv_begin(recv_);
                if (!rs.ok) {
                    engine_failed(rs, ulpdu);
                    return false;
                }
                recv_open_ = true;
            }
            if (!s.payload.empty()) {
                RxStatus rs = ep_->rx_recv_place(recv_, rr.msg_offset, {payload, s.payload.size()});
                if (!rs.ok) {
                    engine_failed(rs, ulpdu);
                    return false;
                }
            }
            if (rr.complete) {
                recv_open_ = false;
                bool inv = w::carries_invalidate(s.hdr.opcode);
                bool se = s.hdr.opcode == w::Opcode::SendSe ||
                          s.hdr.opcode == w::Opcode::SendSeInvalidate;
                RxStatus rs = ep_->rx_recv_end(recv_, inv ? OpKind::SendInvalidate : OpKind::Send,
                                               rr.msg_length, se, s.hdr.inv_stag, 0);
                if (!rs.ok) {
                    engine_failed(rs, ulpdu);
                    return false;
                }
            }
            return true;
        }
        case w::Opcode::ReadRequest: {
            const w::ReadRequestBody &b = s.read;
            bool over;
            {
                std::lock_guard lk(mu_);
                over = inflight_read_resps_ >= ird_;
            }
            if (over) {
                protocol_error(kTermIrdExceeded, ulpdu, true);
                return false;
            }
            w::DdpHeader first{};
            first.opcode = w::Opcode::ReadResponse;
            first.stag = b.sink_stag;
            first.to = b.sink_to;
            w::Segmenter check;
            if (w::Status cs = check.start(first, b.size, mulpdu_); cs != w::Status::Ok) {
                protocol_error(w::term_code(cs), ulpdu, true);
                return false;
            }
            TxMsg m;
            m.first = first;
            m.length = b.size;
            m.read_resp = true;
            if (b.size > 0) {
                IoSpan src{};
                void *ref = nullptr;
                RxStatus rs = ep_->rx_tagged_acquire(b.src_stag, b.src_to, b.size, true, src, ref);
                if (!rs.ok) {
                    engine_failed(rs, ulpdu);
                    return false;
                }
                m.src[0] = src;
                m.nsrc = 1;
                m.release_ref = ref;
            }
            std::lock_guard lk(mu_);
            if (tx_ != TxState::Open || local_closed_) {
                if (m.release_ref) pending_release_.push_back(m.release_ref);
                return false;
            }
            ++inflight_read_resps_;
            msgs_.push_back(m);
            flush_locked();
            return true;
        }
        case w::Opcode::ReadResponse: {
            OpRec *rd = nullptr;
            {
                std::lock_guard lk(mu_);
                if (!reads_.empty()) rd = reads_.front();
            }
            if (!rd || rd->atomic || s.hdr.stag != rd->sink_stag) {
                protocol_error(kTermBadSinkStag, ulpdu, true);
                return false;
            }
            uint64_t n = s.payload.size();
            if (s.hdr.to != rd->placed || n > rd->length - rd->placed ||
                (s.hdr.last && rd->placed + n != rd->length)) {
                protocol_error(kTermSinkBounds, ulpdu, true);
                return false;
            }
            // Scatter into the sink list at offset `placed`.
            uint64_t off = rd->placed, done = 0, base = 0;
            for (uint32_t i = 0; i < rd->nsink && done < n; ++i) {
                const IoSpan &sp = rd->sink[i];
                if (off + done < base + sp.len) {
                    uint64_t in = off + done - base;
                    uint64_t k = std::min<uint64_t>(sp.len - in, n - done);
                    std::memcpy(sp.ptr + in, payload + done, k);
                    done += k;
                }
                base += sp.len;
            }
            rd->placed += n;
            if (s.hdr.last) {
                std::lock_guard lk(mu_);
                if (!reads_.empty() && reads_.front() == rd) {
                    reads_.pop_front();
                    --outstanding_reads_;
                    rd->ready = true;
                    rd->result = {OpOutcome::Done, {}};
                    flush_locked();  // a held Read Request may go now
                }
            }
            return true;
        }
        case w::Opcode::Terminate: {
            const RemoteFault fault = iwarp::fault_of(s.term.code);
            bool had_op = false;
            {
                std::lock_guard lk(mu_);
                local_closed_ = true;
                rx_open_.store(false, std::memory_order_release);
                drop_unwritten_locked();
                for (OpRec &o : ops_)
                    had_op = had_op || !o.ready;
                // The oldest unfinished op is the one the peer failed (in-order stream).
                fail_all_locked({OpOutcome::Terminated, fault});
                if (tx_ == TxState::Open) tx_ = TxState::Closing;
                flush_locked();
            }
            abort_open_recv(RI_WC_STATUS_WR_FLUSHED_ERROR);
            // The Terminate itself (with its bytes) goes first; the outstanding ops are
            // reported afterwards as Terminated: the engine completes the oldest with
            // REMOTE_TERMINATION and flushes the rest, raising the event once.
            (void)had_op;
            ep_->rx_terminate(ulpdu.subspan(w::kUntaggedHeaderLen));
            return false;
        }
        case w::Opcode::AtomicRequest:
            return handle_atomic_request(s.atomic_req, ulpdu);
        case w::Opcode::AtomicResponse: {
            OpRec *at = nullptr;
            {
                std::lock_guard lk(mu_);
                if (!reads_.empty()) at = reads_.front();
            }
            if (!at || !at->atomic || at->atomic_id != s.atomic_resp.request_id) {
                protocol_error(kTermUnexpectedResponse, ulpdu, true);
                return false;
            }
            if (at->atomic_result) *at->atomic_result = s.atomic_resp.original;
            std::lock_guard lk(mu_);
            reads_.pop_front();
            --outstanding_reads_;
            at->ready = true;
            at->result = {OpOutcome::Done, {}};
            flush_locked();  // a held Read/Atomic Request may go now
            return true;
        }
        case w::Opcode::ImmediateData:
        case w::Opcode::ImmediateDataSe: {
            // The 32-bit immediate of a Write with immediate travels in the low half.
            uint64_t len = last_write_done_ ? last_write_len_ : 0;
            last_write_len_ = 0;
            last_write_done_ = true;
            RxStatus rs = ep_->rx_write_immediate(len, static_cast<uint32_t>(s.immediate),
                                                  s.hdr.opcode == w::Opcode::ImmediateDataSe);
            if (!rs.ok) {
                engine_failed(rs, ulpdu);
                return false;
            }
            return true;
        }
        default:
            protocol_error(w::term_code(w::Status::RdmapUnexpectedOpcode), ulpdu, false);
            return false;
    }
}

// RFC 7306 Atomic Request at the responder: executed in arrival order (after the Read
// Requests before it were queued), answered on queue 3. Inside the endpoint gate.
bool Core::handle_atomic_request(const w::AtomicRequestBody &b, std::span<const uint8_t> ulpdu) {
    bool add = b.op == w::AtomicOp::FetchAdd;
    // Masked forms (RFC 7306 4.1/4.2) are not offered by the engine: only plain add and CAS.
    if ((add && b.add_swap_mask != 0) ||
        (!add && (b.add_swap_mask != ~uint64_t{0} || b.compare_mask != ~uint64_t{0}))) {
        protocol_error(w::term_code(w::Status::RdmapBadAtomicOpcode), ulpdu, true);
        return false;
    }
    bool over;
    {
        std::lock_guard lk(mu_);
        over = inflight_read_resps_ >= ird_;  // atomics share the IRD with reads
    }
    if (over) {
        protocol_error(kTermIrdExceeded, ulpdu, true);
        return false;
    }
    uint64_t original = 0;
    RxStatus rs = ep_->rx_atomic(add ? OpKind::FetchAdd : OpKind::CompareSwap, b.stag,
                                 b.to == kAtomicBaseTo ? kAtomicAtBase : b.to,
                                 add ? b.add_swap : b.compare, add ? 0 : b.add_swap, original);
    if (!rs.ok) {
        engine_failed(rs, ulpdu);
        return false;
    }
    TxMsg m;
    m.fixed = true;
    w::DdpHeader h{};
    h.opcode = w::Opcode::AtomicResponse;
    h.qn = static_cast<uint32_t>(w::Queue::AtomicResponse);
    std::lock_guard lk(mu_);
    if (tx_ != TxState::Open || local_closed_) return false;
    h.msn = atomic_resp_msn_++;
    m.hdr_len = w::encode_atomic_response(h, {b.request_id, original}, m.hdr);
    m.read_resp = true;
    ++inflight_read_resps_;
    msgs_.push_back(m);
    flush_locked();
    return true;
}

void Core::release_refs() {
    // Taken off the list only inside the gate: once detached, detach() releases them.
    if (!enter_ep()) return;
    {
        std::lock_guard lk(mu_);
        releasing_.swap(pending_release_);  // both keep their capacity: no allocation
    }
    for (void *r : releasing_)
        ep_->rx_tagged_release(r);
    releasing_.clear();
    leave_ep();
}

void Core::report_ready() {
    for (;;) {
        if (!enter_ep()) return;
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
        {
            std::lock_guard lk(mu_);
            if (have) --reporting_;
        }
        leave_ep();
        if (!have) return;
    }
}

// ---------------------------------------------------------------------------- channel

class TcpChannel final : public Channel {
  public:
    explicit TcpChannel(std::unique_ptr<Core> c) : core_(std::move(c)) {}
    ~TcpChannel() override { core_->shutdown_owner(); }
    bool asynchronous() const override { return true; }
    uint32_t capabilities() const override {
        return core_->rfc7306() ? (kCapAtomics | kCapWriteImmediate) : 0;
    }
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

// An adopted socket no QP has claimed: owns the descriptor until then.
class UnclaimedSocket final : public llp::UnclaimedStream {
  public:
    UnclaimedSocket(int fd, StreamParams p) : fd_(fd), p_(std::move(p)) {}
    ~UnclaimedSocket() override {
        if (fd_ >= 0) ::close(fd_);
    }
    std::unique_ptr<Channel> claim(ri_llp_stream_handle_t h, ProgressEngine &pe) override {
        const int fd = std::exchange(fd_, -1);  // the channel owns it now
        auto core = std::make_unique<Core>(h, p_, pe);
        if (!core->ok()) {
            // Nothing claimed it: the handle is consumed but the fd stays the caller's.
            core->disown_fd();
            (void)fd;
            return nullptr;
        }
        return std::make_unique<TcpChannel>(std::move(core));
    }
    bool send_deferred(ri_llp_stream_handle_t h, uint64_t key) override;
    // Leaves the descriptor to the caller (forget_socket).
    void disown() { fd_ = -1; }

  private:
    int fd_;
    StreamParams p_;
};

bool UnclaimedSocket::send_deferred(ri_llp_stream_handle_t h, uint64_t key) {
    if (key == 0 || p_.preamble_key != key) return false;
    std::vector<uint8_t> &pre = p_.preamble;
    size_t off = 0;
    bool failed = false;
    while (off < pre.size()) {
        ssize_t n = ::send(h, pre.data() + off, pre.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += static_cast<size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            // EAGAIN on a fresh socket with a sub-kilobyte Reply does not happen; if it
            // did, the claiming channel writes the rest. Anything else: the peer is gone,
            // and the channel's first read reports it.
            failed = !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
            break;
        }
    }
    if (failed) off = pre.size();
    pre.erase(pre.begin(), pre.begin() + static_cast<std::ptrdiff_t>(off));
    return off > 0 && pre.empty() && !failed;
}

}  // namespace

void ensure_registered() {}

ri_llp_stream_handle_t adopt_socket(int fd, const StreamParams &params) {
    if (fd < 0 || fd >= (1 << 30)) return -1;  // loopback handles live above 2^30
    int type = 0;
    socklen_t sl = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl) != 0 || type != SOCK_STREAM) return -1;
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -1;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // FPDUs are latency-bound
    ensure_registered();
    if (!llp::publish(fd, std::make_unique<UnclaimedSocket>(fd, params))) return -1;
    return fd;
}

bool send_preamble(ri_llp_stream_handle_t h, uint64_t key) {
    return llp::send_deferred(h, key);
}

bool forget_socket(ri_llp_stream_handle_t h) {
    // Only adopted sockets: another transport's handle stays where it is.
    std::unique_ptr<llp::UnclaimedStream> s = llp::take(h, [](const llp::UnclaimedStream &u) {
        return dynamic_cast<const UnclaimedSocket *>(&u) != nullptr;
    });
    if (!s) return false;
    static_cast<UnclaimedSocket *>(s.get())->disown();  // the caller closes the fd
    return true;
}

}  // namespace softrnic::transport::tcp
