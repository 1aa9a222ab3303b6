// dat_bench: `softrnic bench`'s two-process RDMA measurements through uDAPL 2.0 instead of
// RNICPI, so the cost of the DAT layer (libdat2.so.2 -> libdaplsoftrnic.so.2) can be read
// against the same figures measured with ri_* calls (bench/dat_vs_rnicpi.sh runs both).
//
// Every phase mirrors tools/bench/rdma_test.cpp: same buffer layout, same window, same
// credits, same waiting (Spinner: busy-poll, sched_yield() on an empty poll in bandwidth
// runs), same timing points, same warm-up and sizing (twoproc.cpp), same report (report.cpp,
// so `--json` has the same keys). What differs is only the API and what it imposes:
//   - ri_cq_poll on one CQ becomes dat_evd_dequeue (one event per call) on a request EVD
//     (send, RDMA write/read completions) and a receive EVD (receive completions): a DAT
//     EP names the two streams separately. Where softrnic bench's single poll returned
//     both kinds, this program dequeues the receive EVD in the spin loop and reaps the
//     request EVD right after (send ping-pong), or dequeues both per spin (send stream).
//   - The connection is made by the DAT connection model: the server's PSP on an
//     ephemeral qualifier (dat_psp_create_any), dat_ep_connect / dat_cr_accept over
//     127.0.0.1, each side's buffer (VA, RMR context) in the connection private data.
//
// The process forks itself: the child is the server (it reports its PSP qualifier on a
// socketpair that then carries the same control protocol as softrnic bench), the parent
// is the client and prints the report. Every DAT return code is checked; every wait has a
// deadline (a dead peer ends the run with a message, never a hang); the child is reaped.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dat2/udat.h>

#include "bench/cli.hpp"
#include "bench/common.hpp"
#include "bench/foreign_load.hpp"
#include "bench/net.hpp"
#include "bench/report.hpp"
#include "bench/session.hpp"

namespace softrnic::bench {
namespace {

constexpr auto kSetupTimeout = std::chrono::seconds(15);
constexpr DAT_TIMEOUT kDatSetupTimeout = 15u * 1000 * 1000;  // microseconds
constexpr int kProtocol = 1;

// Work request ids (DTO cookies): the kind in the top byte, as in rdma_test.cpp.
constexpr uint64_t kRecv = 1ull << 56;
constexpr uint64_t kSend = 2ull << 56;
constexpr uint64_t kWrite = 3ull << 56;
constexpr uint64_t kRead = 4ull << 56;
constexpr uint64_t kFence = 5ull << 56;  // the 1-byte read that ends a write stream
constexpr uint64_t kKindMask = 0xFFull << 56;

constexpr uint32_t kClientRq = 16;
constexpr uint32_t kMagic = 0x44424E31;  // "DBN1"
constexpr size_t kPrivLen = 4 + 8 + 4 + 1 + 8;
constexpr uint32_t kMaxReadDepth = 128;  // engine limit per QP (IRD and ORD), as softrnic bench

struct DatOptions {
    Options o;
    std::string ia = "softrnic-shm";
    // --evd shared: one EVD for the request and receive streams (softrnic bench's one CQ),
    // to tell the cost of dequeuing two EVDs from the cost of each call.
    bool shared_evd = false;
};

const char *wr_kind(uint64_t id) {
    switch (id & kKindMask) {
        case kRecv:
            return "receive";
        case kSend:
            return "send";
        case kWrite:
            return "RDMA write";
        case kRead:
            return "RDMA read";
        case kFence:
            return "RDMA read (write fence)";
        default:
            return "unknown";
    }
}

void put_be(uint8_t *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i, v >>= 8)
        p[i] = static_cast<uint8_t>(v);
}
uint64_t get_be(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i)
        v = v << 8 | p[i];
    return v;
}

double us(Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

std::string dat_error_text(DAT_RETURN r) {
    const char *major = nullptr, *minor = nullptr;
    dat_strerror(r, &major, &minor);
    char code[32];
    std::snprintf(code, sizeof code, "0x%08x", static_cast<unsigned>(r));
    std::string s = major ? major : "unknown DAT error";
    if (minor && *minor) s += std::string(" / ") + minor;
    return s + " (" + code + ")";
}

void ck(DAT_RETURN r, const char *what) {
    if (r != DAT_SUCCESS) throw BenchError(std::string(what) + " failed: " + dat_error_text(r));
}

// Waits for one event on `evd` (a connection or CR stream) until the set-up deadline.
DAT_EVENT wait_event(DAT_EVD_HANDLE evd, const char *what) {
    DAT_EVENT ev{};
    DAT_COUNT more = 0;
    DAT_RETURN r = dat_evd_wait(evd, kDatSetupTimeout, 1, &ev, &more);
    if (DAT_GET_TYPE(r) == DAT_TIMEOUT_EXPIRED)
        throw BenchError(std::string("no ") + what + " within " +
                         std::to_string(kSetupTimeout.count()) + " s");
    ck(r, (std::string("dat_evd_wait (") + what + ")").c_str());
    return ev;
}

struct Buffer {
    explicit Buffer(size_t n) : size(n) {
        data = static_cast<unsigned char *>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096));
        if (!data) throw BenchError("out of memory for a " + std::to_string(n) + " B buffer");
        std::memset(data, 0, n);
    }
    ~Buffer() { std::free(data); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    unsigned char *data;
    size_t size;
};

// ------------------------------------------------------------------------------- IA

// One IA for the process with its PZ; the server also has the CR EVD and the PSP.
class DatIa {
  public:
    DatIa(const std::string &name, bool server) {
        try {
            ck(dat_ia_open(const_cast<char *>(name.c_str()), 16, &async_, &ia), "dat_ia_open");
            ck(dat_pz_create(ia, &pz), "dat_pz_create");
            DAT_IA_ATTR ia_attr{};
            ck(dat_ia_query(ia, nullptr, DAT_IA_FIELD_ALL, &ia_attr,
                            static_cast<DAT_PROVIDER_ATTR_MASK>(0), nullptr),
               "dat_ia_query");
            max_rd_in = ia_attr.max_rdma_read_per_ep_in;
            max_rd_out = ia_attr.max_rdma_read_per_ep_out;
            if (server) {
                ck(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd),
                   "dat_evd_create (CR)");
                ck(dat_psp_create_any(ia, &qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
                   "dat_psp_create_any");
            }
        } catch (...) {
            abandon();
            throw;
        }
    }
    ~DatIa() { abandon(); }
    DatIa(const DatIa &) = delete;
    DatIa &operator=(const DatIa &) = delete;

    // Frees everything in order, checking each return code (the normal end of a run).
    void close() {
        if (psp) ck(dat_psp_free(std::exchange(psp, DAT_HANDLE_NULL)), "dat_psp_free");
        if (cr_evd) ck(dat_evd_free(std::exchange(cr_evd, DAT_HANDLE_NULL)), "dat_evd_free (CR)");
        if (pz) ck(dat_pz_free(std::exchange(pz, DAT_HANDLE_NULL)), "dat_pz_free");
        if (ia) {
            // Kept on failure, so the destructor's abrupt close still releases it.
            DAT_RETURN r = dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG);
            if (r == DAT_SUCCESS) ia = DAT_HANDLE_NULL;
            ck(r, "dat_ia_close");
        }
    }

    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cr_evd = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL qual = 0;
    DAT_COUNT max_rd_in = 0, max_rd_out = 0;

  private:
    // Error path: an abrupt close takes whatever is left with it.
    void abandon() {
        if (ia) dat_ia_close(std::exchange(ia, DAT_HANDLE_NULL), DAT_CLOSE_ABRUPT_FLAG);
        psp = cr_evd = pz = DAT_HANDLE_NULL;
    }
    DAT_EVD_HANDLE async_ = DAT_HANDLE_NULL;
};

// --------------------------------------------------------------------------- session

// One connected EP for one (operation, size), with its own EVDs and LMR: the DAT twin of
// RdmaSession (rdma_test.cpp), phase for phase.
class DatSession final : public Session {
  public:
    DatSession(DatIa &ia, Op op, size_t size, unsigned window, WaitPolicy wait, bool server,
               bool shared_evd, const AbortCheck *abort);
    ~DatSession() override { abandon(); }

    std::vector<uint8_t> private_data() const;
    // Client: connects to the server's PSP; server: accepts the next connection request.
    void connect(const std::string &host, DAT_CONN_QUAL qual);
    void accept();
    // Disconnects and frees everything, checking each return code.
    void close();

    PhaseResult run(Phase phase, uint64_t n) override;
    bool has(Phase) const override { return true; }
    bool passive(Phase phase) const override {
        return op_ == Op::Read || (op_ == Op::Write && phase == Phase::Bw);
    }

  private:
    void abandon();
    void take_peer(const void *pd, DAT_COUNT len);
    // One completion from `evd` into *id, or false when it is empty. Throws on a failed
    // completion or an unexpected event.
    bool dq(DAT_EVD_HANDLE evd, uint64_t *id = nullptr);
    void drain_sq(Spinner &spin);
    // Takes the send completions that are already there (never waits). With one EVD for
    // both streams the receive wait takes them instead, as softrnic bench's CQ poll does.
    void reap_sq() {
        if (req_ == rcv_) return;
        while (sq_outstanding_ > 0 && dq(req_)) {
        }
    }
    static bool is_recv(uint64_t id) { return (id & kKindMask) == kRecv; }
    DAT_LMR_TRIPLET iov(size_t off, size_t len) const {
        DAT_LMR_TRIPLET t{};
        t.virtual_address = reinterpret_cast<uintptr_t>(buf_->data + off);
        t.segment_length = static_cast<DAT_SEG_LENGTH>(len);
        t.lmr_context = lctx_;
        return t;
    }
    DAT_RMR_TRIPLET remote(size_t off, size_t len) const {
        DAT_RMR_TRIPLET t{};
        t.virtual_address = peer_va_ + off;
        t.segment_length = static_cast<DAT_SEG_LENGTH>(len);
        t.rmr_context = peer_rctx_;
        return t;
    }
    static DAT_DTO_COOKIE cookie(uint64_t id) {
        DAT_DTO_COOKIE c;
        c.as_64 = id;
        return c;
    }
    void post_send(uint64_t id, size_t off, size_t len) {
        DAT_LMR_TRIPLET t = iov(off, len);
        ck(dat_ep_post_send(ep_, 1, &t, cookie(id), DAT_COMPLETION_DEFAULT_FLAG),
           "dat_ep_post_send");
        ++sq_outstanding_;
    }
    void post_recv(uint64_t id, size_t off, size_t len) {
        DAT_LMR_TRIPLET t = iov(off, len);
        ck(dat_ep_post_recv(ep_, 1, &t, cookie(id), DAT_COMPLETION_DEFAULT_FLAG),
           "dat_ep_post_recv");
    }
    void post_write(uint64_t id, size_t off, size_t len, size_t remote_off) {
        DAT_LMR_TRIPLET t = iov(off, len);
        DAT_RMR_TRIPLET r = remote(remote_off, len);
        ck(dat_ep_post_rdma_write(ep_, 1, &t, cookie(id), &r, DAT_COMPLETION_DEFAULT_FLAG),
           "dat_ep_post_rdma_write");
        ++sq_outstanding_;
    }
    void post_read(uint64_t id, size_t off, size_t len, size_t remote_off) {
        DAT_LMR_TRIPLET t = iov(off, len);
        DAT_RMR_TRIPLET r = remote(remote_off, len);
        ck(dat_ep_post_rdma_read(ep_, 1, &t, cookie(id), &r, DAT_COMPLETION_DEFAULT_FLAG),
           "dat_ep_post_rdma_read");
        ++sq_outstanding_;
    }
    uint8_t next_flag() { return static_cast<uint8_t>(flag_seq_++ % 255 + 1); }

    PhaseResult send_lat(uint64_t n);
    PhaseResult send_bw(uint64_t n);
    PhaseResult write_lat(uint64_t n);
    PhaseResult one_sided_bw(uint64_t n, bool write);
    PhaseResult read_lat(uint64_t n);

    DatIa &ia_;
    Op op_;
    size_t size_;
    unsigned window_;
    WaitPolicy wait_;
    bool server_;
    const AbortCheck *abort_;
    size_t slot_;     // size rounded up: send area at 0, receive area at slot_
    size_t ctrl_;     // small control area after both
    uint32_t rq_;     // receives kept posted
    uint32_t group_;  // server: receives per credit message (send Bw)
    uint64_t flag_seq_ = 0;
    uint64_t sq_outstanding_ = 0;  // signalled request-queue DTOs not yet dequeued
    DAT_VADDR peer_va_ = 0;
    DAT_RMR_CONTEXT peer_rctx_ = 0;
    DAT_EVD_HANDLE req_ = DAT_HANDLE_NULL, rcv_ = DAT_HANDLE_NULL, conn_ = DAT_HANDLE_NULL;
    DAT_LMR_HANDLE lmr_ = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx_ = 0;
    DAT_RMR_CONTEXT rctx_ = 0;
    DAT_EP_HANDLE ep_ = DAT_HANDLE_NULL;
    std::unique_ptr<Buffer> buf_;
};

DatSession::DatSession(DatIa &ia, Op op, size_t size, unsigned window, WaitPolicy wait, bool server,
                       bool shared_evd, const AbortCheck *abort)
    : ia_(ia), op_(op), size_(size), window_(window), wait_(wait), server_(server), abort_(abort) {
    if (size == 0 || size > (size_t{1} << 30)) throw BenchError("message size out of range");
    slot_ = (std::max<size_t>(size, 64) + 63) / 64 * 64;
    ctrl_ = 2 * slot_;
    group_ = window_;
    rq_ = server_ ? 2 * window_ : kClientRq;
    const uint32_t sq = window_ + 16;
    const uint32_t rq = std::max<uint32_t>(rq_, kClientRq);
    const uint32_t rd = std::min<uint32_t>(std::max<uint32_t>(window_, 1), kMaxReadDepth);
    try {
        // softrnic bench's one CQ holds 2 * (sq + rq) + 64; here each stream has its own
        // EVD (or, with --evd shared, one for both), deep enough for everything its queues
        // can have outstanding.
        if (shared_evd) {
            ck(dat_evd_create(ia_.ia, DAT_COUNT(2 * (sq + rq)), DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
                              &req_),
               "dat_evd_create (request and receive)");
            rcv_ = req_;
        } else {
            ck(dat_evd_create(ia_.ia, DAT_COUNT(2 * sq), DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_),
               "dat_evd_create (request)");
            ck(dat_evd_create(ia_.ia, DAT_COUNT(2 * rq), DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &rcv_),
               "dat_evd_create (receive)");
        }
        // A connection EVD per session: no event of an old connection can reach a new one.
        ck(dat_evd_create(ia_.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_),
           "dat_evd_create (connection)");
        buf_ = std::make_unique<Buffer>(ctrl_ + 4096);
        std::memset(buf_->data, 0x5A, slot_);  // the send area; the rest stays zero
        DAT_REGION_DESCRIPTION region{};
        region.for_va = buf_->data;
        DAT_VLEN reg_size = 0;
        DAT_VADDR reg_addr = 0;
        ck(dat_lmr_create(ia_.ia, DAT_MEM_TYPE_VIRTUAL, region, buf_->size, ia_.pz,
                          DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr_, &lctx_, &rctx_, &reg_size,
                          &reg_addr),
           "dat_lmr_create");
        DAT_EP_ATTR a{};
        a.service_type = DAT_SERVICE_TYPE_RC;
        a.max_message_size = 1u << 30;
        a.max_rdma_size = 1u << 30;
        a.qos = DAT_QOS_BEST_EFFORT;
        a.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
        a.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
        a.max_recv_dtos = DAT_COUNT(rq);
        a.max_request_dtos = DAT_COUNT(sq);
        a.max_recv_iov = 1;
        a.max_request_iov = 1;
        a.max_rdma_read_in = std::min<DAT_COUNT>(DAT_COUNT(rd), ia_.max_rd_in);
        a.max_rdma_read_out = std::min<DAT_COUNT>(DAT_COUNT(rd), ia_.max_rd_out);
        a.srq_soft_hw = DAT_HW_DEFAULT;
        a.max_rdma_read_iov = 1;
        a.max_rdma_write_iov = 1;
        ck(dat_ep_create(ia_.ia, ia_.pz, rcv_, req_, conn_, &a, &ep_), "dat_ep_create");
        // Receives go in before the connection exists, so the first message can never
        // find an empty queue.
        for (uint32_t i = 0; i < rq_; ++i)
            post_recv(kRecv | i, slot_, slot_);
    } catch (...) {
        abandon();
        throw;
    }
}

void DatSession::abandon() {
    if (ep_) {
        dat_ep_disconnect(ep_, DAT_CLOSE_ABRUPT_FLAG);
        dat_ep_free(std::exchange(ep_, DAT_HANDLE_NULL));
    }
    if (lmr_) dat_lmr_free(std::exchange(lmr_, DAT_HANDLE_NULL));
    if (rcv_ == req_) rcv_ = DAT_HANDLE_NULL;  // --evd shared: one EVD
    for (DAT_EVD_HANDLE *e : {&conn_, &rcv_, &req_})
        if (*e) dat_evd_free(std::exchange(*e, DAT_HANDLE_NULL));
}

void DatSession::close() {
    if (ep_) {
        ck(dat_ep_disconnect(ep_, DAT_CLOSE_ABRUPT_FLAG), "dat_ep_disconnect");
        ck(dat_ep_free(std::exchange(ep_, DAT_HANDLE_NULL)), "dat_ep_free");
    }
    if (lmr_) ck(dat_lmr_free(std::exchange(lmr_, DAT_HANDLE_NULL)), "dat_lmr_free");
    if (conn_) ck(dat_evd_free(std::exchange(conn_, DAT_HANDLE_NULL)), "dat_evd_free (connection)");
    if (rcv_ == req_) rcv_ = DAT_HANDLE_NULL;  // --evd shared: one EVD
    if (rcv_) ck(dat_evd_free(std::exchange(rcv_, DAT_HANDLE_NULL)), "dat_evd_free (receive)");
    if (req_) ck(dat_evd_free(std::exchange(req_, DAT_HANDLE_NULL)), "dat_evd_free (request)");
}

std::vector<uint8_t> DatSession::private_data() const {
    std::vector<uint8_t> p(kPrivLen);
    put_be(&p[0], kMagic, 4);
    put_be(&p[4], reinterpret_cast<uintptr_t>(buf_->data), 8);
    put_be(&p[12], rctx_, 4);
    p[16] = static_cast<uint8_t>(op_);
    put_be(&p[17], size_, 8);
    return p;
}

void DatSession::take_peer(const void *pd, DAT_COUNT len) {
    const auto *p = static_cast<const uint8_t *>(pd);
    if (!p || len < DAT_COUNT(kPrivLen) || get_be(&p[0], 4) != kMagic)
        throw BenchError("the peer's connection private data is not a dat_bench peer's");
    if (p[16] != static_cast<uint8_t>(op_) || get_be(&p[17], 8) != size_)
        throw BenchError("the peer set up a different test");
    peer_va_ = get_be(&p[4], 8);
    peer_rctx_ = static_cast<DAT_RMR_CONTEXT>(get_be(&p[12], 4));
}

void DatSession::connect(const std::string &host, DAT_CONN_QUAL qual) {
    SockAddr a = resolve(host, 0, false);
    auto pd = private_data();
    ck(dat_ep_connect(ep_, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a.storage), qual, kDatSetupTimeout,
                      DAT_COUNT(pd.size()), pd.data(), DAT_QOS_BEST_EFFORT,
                      DAT_CONNECT_DEFAULT_FLAG),
       "dat_ep_connect");
    DAT_EVENT ev = wait_event(conn_, "connection event");
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        throw BenchError("connecting to the server: connection event " +
                         std::to_string(ev.event_number) + " instead of ESTABLISHED");
    const auto &d = ev.event_data.connect_event_data;
    take_peer(d.private_data, d.private_data_size);
}

void DatSession::accept() {
    DAT_EVENT ev = wait_event(ia_.cr_evd, "connection request");
    if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
        throw BenchError("CR EVD: event " + std::to_string(ev.event_number) +
                         " instead of CONNECTION_REQUEST");
    DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM p{};
    DAT_RETURN r = dat_cr_query(
        cr,
        static_cast<DAT_CR_PARAM_MASK>(DAT_CR_FIELD_PRIVATE_DATA_SIZE | DAT_CR_FIELD_PRIVATE_DATA),
        &p);
    if (r != DAT_SUCCESS) {
        dat_cr_reject(cr, 0, nullptr);
        ck(r, "dat_cr_query");
    }
    try {
        take_peer(p.private_data, p.private_data_size);
    } catch (...) {
        dat_cr_reject(cr, 0, nullptr);
        throw;
    }
    auto pd = private_data();
    ck(dat_cr_accept(cr, ep_, DAT_COUNT(pd.size()), pd.data()), "dat_cr_accept");
    ev = wait_event(conn_, "connection event");
    if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        throw BenchError("accepting the client: connection event " +
                         std::to_string(ev.event_number) + " instead of ESTABLISHED");
}

bool DatSession::dq(DAT_EVD_HANDLE evd, uint64_t *id) {
    DAT_EVENT ev;
    DAT_RETURN r = dat_evd_dequeue(evd, &ev);
    if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) return false;
    ck(r, "dat_evd_dequeue");
    if (ev.event_number != DAT_DTO_COMPLETION_EVENT)
        throw BenchError("unexpected event " + std::to_string(ev.event_number) + " on the " +
                         (evd == rcv_ ? "receive" : "request") + " EVD");
    const DAT_DTO_COMPLETION_EVENT_DATA &d = ev.event_data.dto_completion_event_data;
    if (d.status != DAT_DTO_SUCCESS)
        throw BenchError(std::string(wr_kind(d.user_cookie.as_64)) +
                         " completion failed, DAT status " + std::to_string(d.status) + " (" +
                         op_name(op_) + " test, " + std::to_string(size_) + " B, " +
                         (server_ ? "server" : "client") + " side)");
    if (id) *id = d.user_cookie.as_64;
    if ((d.user_cookie.as_64 & kKindMask) != kRecv) --sq_outstanding_;
    return true;
}

void DatSession::drain_sq(Spinner &spin) {
    while (sq_outstanding_ > 0) {
        if (dq(req_))
            spin.progressed();
        else
            spin.spin();
    }
}

// ---------------------------------------------------------------------------- phases

PhaseResult DatSession::run(Phase phase, uint64_t n) {
    switch (op_) {
        case Op::Send:
            return phase == Phase::Lat ? send_lat(n) : send_bw(n);
        case Op::Write:
            return phase == Phase::Lat ? write_lat(n) : one_sided_bw(n, true);
        default:
            return phase == Phase::Lat ? read_lat(n) : one_sided_bw(n, false);
    }
}

PhaseResult DatSession::send_lat(uint64_t n) {
    PhaseResult res;
    if (!server_) res.lat_us.reserve(n);
    Spinner spin("a send/recv ping-pong reply", abort_, wait_.lat_yield);
    // Only the receive EVD is polled while waiting (the reply is what ends the wait); the
    // send's completion is reaped after the reply, outside the timed span on the client
    // and after the answer went out on the server.
    auto wait_recv = [&] {
        uint64_t id = 0;
        for (;;) {
            if (dq(rcv_, &id)) {
                spin.progressed();
                if (is_recv(id)) return;  // else a send completion (--evd shared)
                continue;
            }
            spin.spin();
        }
    };
    auto t_start = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        if (server_) {
            wait_recv();
            post_recv(kRecv | i, slot_, slot_);
            post_send(kSend | i, 0, size_);
            reap_sq();
        } else {
            auto t0 = Clock::now();
            post_send(kSend | i, 0, size_);
            wait_recv();
            auto t1 = Clock::now();
            post_recv(kRecv | i, slot_, slot_);
            reap_sq();
            res.lat_us.push_back(us(t1 - t0) / 2);
        }
    }
    res.seconds = seconds_since(t_start);
    res.ops = n;
    res.bytes = n * size_;
    drain_sq(spin);  // no completion left behind for the next phase
    return res;
}

PhaseResult DatSession::write_lat(uint64_t n) {
    PhaseResult res;
    if (!server_) res.lat_us.reserve(n);
    Spinner spin("an RDMA write ping-pong reply", abort_, wait_.lat_yield);
    unsigned char *send_flag = buf_->data + size_ - 1;
    std::atomic_ref<unsigned char> recv_flag(buf_->data[slot_ + size_ - 1]);
    auto wait_flag = [&](unsigned char v) {
        while (recv_flag.load(std::memory_order_acquire) != v) {
            if (wait_.lat_memory) {
                spin.spin();
                continue;
            }
            // Dequeue our own write completions too (and give a transport that progresses
            // inside the provider's CQ poll its chance), as softrnic bench does with
            // ri_cq_poll.
            if (dq(req_))
                spin.progressed();
            else
                spin.spin();
        }
        spin.progressed();
    };
    // --lat-wait memory: our write's completion at once, as dtest -W takes it.
    auto own_completion = [&] {
        if (!wait_.lat_memory) return;
        while (!dq(req_))
            spin.spin();
    };
    auto t_start = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        unsigned char v = next_flag();
        if (server_) {
            wait_flag(v);
            *send_flag = v;
            post_write(kWrite | i, 0, size_, slot_);
            own_completion();
        } else {
            *send_flag = v;
            auto t0 = Clock::now();
            post_write(kWrite | i, 0, size_, slot_);
            own_completion();
            wait_flag(v);
            auto t1 = Clock::now();
            res.lat_us.push_back(us(t1 - t0) / 2);
        }
    }
    res.seconds = seconds_since(t_start);
    res.ops = n;
    res.bytes = n * size_;
    drain_sq(spin);
    return res;
}

PhaseResult DatSession::read_lat(uint64_t n) {
    PhaseResult res;
    if (server_) return res;  // passive
    res.lat_us.reserve(n);
    Spinner spin("an RDMA read completion", abort_, wait_.lat_yield);
    auto t_start = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        post_read(kRead | i, slot_, size_, 0);
        while (!dq(req_))
            spin.spin();
        spin.progressed();
        res.lat_us.push_back(us(Clock::now() - t0));
    }
    res.seconds = seconds_since(t_start);
    res.ops = n;
    res.bytes = n * size_;
    return res;
}

PhaseResult DatSession::one_sided_bw(uint64_t n, bool write) {
    PhaseResult res;
    if (server_) return res;  // passive
    Spinner spin(write ? "RDMA write completions" : "RDMA read completions", abort_,
                 wait_.bw_yield);
    uint64_t posted = 0, done = 0;
    auto t0 = Clock::now();
    while (done < n) {
        while (posted < n && posted - done < window_) {
            if (write)
                post_write(kWrite | posted, 0, size_, slot_);
            else
                post_read(kRead | posted, slot_, size_, 0);
            ++posted;
        }
        if (dq(req_)) {
            ++done;
            spin.progressed();
        } else {
            spin.spin();
        }
    }
    if (write) {
        // A write completes once its bytes are with the transport; a read behind it
        // completes only after the peer placed them all.
        post_read(kFence, ctrl_ + 64, 1, slot_);
        while (!dq(req_))
            spin.spin();
    }
    res.seconds = seconds_since(t0);
    res.ops = n;
    res.bytes = n * size_;
    return res;
}

PhaseResult DatSession::send_bw(uint64_t n) {
    PhaseResult res;
    Spinner spin(server_ ? "streamed sends" : "send completions and credits", abort_,
                 wait_.bw_yield);
    const uint64_t credits_expected = (n + group_ - 1) / group_;
    auto t0 = Clock::now();
    if (server_) {
        // Repost every receive at once; one credit message per `group_` receives (and one
        // for the last), so the client never has more sends in flight than receives here.
        // Each pass dequeues both streams, as softrnic bench's one CQ poll sees both: the
        // credits' completions must be taken even while receives keep arriving, or the
        // request queue fills.
        uint64_t got = 0, id = 0;
        while (got < n) {
            bool any = false;
            if (dq(rcv_, &id)) {
                any = true;
                if (is_recv(id)) {
                    post_recv(kRecv | got, slot_, slot_);
                    ++got;
                    if (got % group_ == 0 || got == n) post_send(kSend | got, ctrl_, 8);
                }
            }
            if (req_ != rcv_ && sq_outstanding_ > 0 && dq(req_)) any = true;
            if (any)
                spin.progressed();
            else
                spin.spin();
        }
    } else {
        // The server keeps 2 * window receives posted (rq_ on its side).
        const uint64_t server_rq = 2ull * window_;
        uint64_t posted = 0, done = 0, credits = 0;
        while (credits < credits_expected || done < n) {
            uint64_t consumed = std::min<uint64_t>(credits * group_, n);
            while (posted < n && posted - done < window_ && posted < consumed + server_rq) {
                post_send(kSend | posted, 0, size_);
                ++posted;
            }
            // One dequeue of each stream per pass: softrnic bench's one poll sees both.
            bool got = false;
            uint64_t id = 0;
            auto take = [&](uint64_t wr) {
                got = true;
                if (is_recv(wr)) {
                    ++credits;
                    post_recv(kRecv | credits, slot_, slot_);
                } else {
                    ++done;
                }
            };
            if ((req_ == rcv_ || done < posted) && dq(req_, &id)) take(id);
            if (req_ != rcv_ && dq(rcv_, &id)) take(id);
            if (got)
                spin.progressed();
            else
                spin.spin();
        }
    }
    res.seconds = seconds_since(t0);
    res.ops = n;
    res.bytes = n * size_;
    drain_sq(spin);  // the server's last credits
    return res;
}

// ------------------------------------------------------------------------------ server

Op parse_op(const std::string &s) {
    if (s == "send") return Op::Send;
    if (s == "write") return Op::Write;
    if (s == "read") return Op::Read;
    throw BenchError("unknown operation '" + s + "'");
}

uint64_t parse_count(const std::string &s, const char *what) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || !end || *end || errno) throw BenchError(std::string("bad ") + what);
    return v;
}

std::vector<std::string> words_of(const std::string &line, size_t min_words) {
    auto w = split_words(line);
    if (w.size() < min_words) throw BenchError("malformed control message '" + line + "'");
    return w;
}

// The forked child. Control protocol on the socketpair (client -> server, each answered),
// the one of softrnic bench (twoproc.cpp) minus its raw TCP references:
//   (server first)                  HELLO <protocol> <PSP qualifier>
//   SETUP <op> <size> <window> <lat wait> <bw wait>
//                                   -> OK (server waits for the connection) ... READY
//   PHASE lat|bw <n>                -> GO, then both sides run n operations
//   TEARDOWN                        -> OK
//   BYE                             -> OK
// A failing server answers ERR <message> (at once, or while the client spins) and exits.
int run_server(const DatOptions &d, int fd) {
    ControlChannel ctl{Fd(fd)};
    // Only the client's end of the connection stops a phase here: a control line waiting
    // is the client's next request, which it may send while this side still drains its
    // last completions.
    AbortCheck abort = [&] {
        char c;
        ssize_t r = ::recv(ctl.fd(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            throw BenchError("the client closed the control connection");
    };
    std::unique_ptr<DatSession> session;
    std::optional<DatIa> ia;
    try {
        ia.emplace(d.ia, true);
        ctl.send("HELLO " + std::to_string(kProtocol) + " " + std::to_string(ia->qual));
        for (;;) {
            std::string line = ctl.recv_or_eof();
            if (line.empty()) throw BenchError("the client closed the control connection");
            auto w = words_of(line, 1);
            if (w[0] == "SETUP") {
                if (session) session->close();
                session.reset();
                w = words_of(line, 6);
                size_t size = parse_count(w[2], "size");
                auto window = static_cast<unsigned>(parse_count(w[3], "window"));
                WaitPolicy wait = WaitPolicy::from_words(w[4], w[5]);
                session = std::make_unique<DatSession>(*ia, parse_op(w[1]), size, window, wait,
                                                       true, d.shared_evd, &abort);
                ctl.send("OK");
                session->accept();
                ctl.send("READY");
            } else if (w[0] == "PHASE") {
                w = words_of(line, 3);
                Phase ph = w[1] == "lat" ? Phase::Lat : Phase::Bw;
                uint64_t n = parse_count(w[2], "count");
                if (!session) throw BenchError("PHASE without a test set up");
                ctl.send("GO");
                if (!session->passive(ph)) session->run(ph, n);
            } else if (w[0] == "TEARDOWN") {
                if (session) session->close();
                session.reset();
                ctl.send("OK");
            } else if (w[0] == "BYE") {
                if (session) session->close();
                session.reset();
                ia->close();
                ctl.send("OK");
                return 0;
            } else {
                throw BenchError("unknown control message '" + line + "'");
            }
        }
    } catch (const std::exception &e) {
        session.reset();
        ia.reset();
        try {
            ctl.send(std::string("ERR ") + e.what());
        } catch (...) {
        }
        std::fprintf(stderr, "dat_bench server: %s\n", e.what());
        return 1;
    }
}

// ------------------------------------------------------------------------------ client

// The forked server process. stop() waits for it (it exits once the control connection
// closes or BYE is answered) and kills it after a grace period.
class ServerChild {
  public:
    ServerChild(const DatOptions &d, Fd &client_end) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            throw BenchError(std::string("socketpair: ") + std::strerror(errno));
        Fd mine(sv[0]), theirs(sv[1]);
        std::fflush(nullptr);  // nothing buffered may be written twice
        pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ < 0) throw BenchError(std::string("fork: ") + std::strerror(errno));
        if (pid_ == 0) {
            // No DAT state exists yet (the IA is opened after the fork), so the child
            // starts clean. It dies with the parent.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            mine.reset();
            int rc = run_server(d, theirs.release());
            std::fflush(nullptr);
            ::_exit(rc);
        }
        client_end = std::move(mine);
    }
    ~ServerChild() { stop(std::chrono::seconds(5)); }
    ServerChild(const ServerChild &) = delete;
    ServerChild &operator=(const ServerChild &) = delete;

    // True when the server exited with status 0.
    bool stop(std::chrono::milliseconds grace) { return reap_child(pid_, grace); }

  private:
    pid_t pid_ = -1;
};

class Client {
  public:
    Client(const DatOptions &d, ControlChannel &ctl) : d_(d), o_(d.o), ctl_(ctl) {
        abort_ = [this] {
            if (!ctl_.pending()) return;
            std::string msg = "closed the control connection";
            try {
                msg = ctl_.recv(std::chrono::milliseconds(200));
                if (msg.rfind("ERR ", 0) == 0) msg = msg.substr(4);
            } catch (const BenchError &) {
            }
            throw BenchError("server: " + msg);
        };
    }
    // Runs every (operation, size) --rounds times; fills `rep` (rows, sizing, notes).
    void run(Report &rep);

  private:
    std::vector<std::string> expect(const std::string &word,
                                    std::chrono::milliseconds timeout = kSetupTimeout) {
        std::string line = ctl_.recv(timeout);
        auto w = split_words(line);
        if (!w.empty() && w[0] == "ERR")
            throw BenchError("server: " + line.substr(std::min<size_t>(4, line.size())));
        if (w.empty() || w[0] != word)
            throw BenchError("unexpected control message '" + line + "' (wanted " + word + ")");
        return w;
    }
    PhaseResult run_phase(Session &s, Phase ph, uint64_t n) {
        ctl_.send(std::string("PHASE ") + (ph == Phase::Lat ? "lat " : "bw ") + std::to_string(n));
        expect("GO");
        return s.run(ph, n);
    }
    // Warm-up and sizing: twoproc.cpp's rules.
    uint64_t warm_count(Phase ph, size_t size) const {
        if (o_.iters) return std::clamp<uint64_t>(o_.iters / 10, 1, 1000);
        if (ph == Phase::Lat) return size >= (size_t{1} << 20) ? 20 : size >= 65536 ? 50 : 200;
        uint64_t k = size >= (size_t{1} << 20) ? 64 : size >= 65536 ? 256 : 2000;
        return std::max<uint64_t>(k, 2ull * o_.window);
    }
    uint64_t sized_count(Phase ph, size_t size, const PhaseResult &warm) const {
        uint64_t lo = ph == Phase::Lat ? 100 : 4ull * o_.window;
        uint64_t hi = std::max(lo, default_iters(size));
        if (warm.ops == 0 || warm.seconds <= 0) return lo;
        double per_op = warm.seconds / static_cast<double>(warm.ops);
        double n = o_.seconds / per_op;
        return std::clamp<uint64_t>(static_cast<uint64_t>(n), lo, hi);
    }
    Measurement run_spec(Op op, size_t size);

    const DatOptions &d_;
    const Options &o_;
    ControlChannel &ctl_;
    std::optional<DatIa> ia_;
    DAT_CONN_QUAL qual_ = 0;
    AbortCheck abort_;
};

Measurement Client::run_spec(Op op, size_t size) {
    ctl_.send(std::string("SETUP ") + op_name(op) + " " + std::to_string(size) + " " +
              std::to_string(o_.window) + " " + o_.wait.lat_word() +
              (o_.wait.bw_yield ? " yield" : " spin"));
    expect("OK");
    DatSession s(*ia_, op, size, o_.window, o_.wait, false, d_.shared_evd, &abort_);
    s.connect("127.0.0.1", qual_);
    expect("READY");
    Measurement m;
    for (Phase ph : {Phase::Lat, Phase::Bw}) {
        PhaseResult warm = run_phase(s, ph, warm_count(ph, size));
        uint64_t n = o_.iters ? o_.iters : sized_count(ph, size, warm);
        PhaseResult r = run_phase(s, ph, n);
        if (ph == Phase::Lat) {
            m.has_lat = true;
            m.mean_us = mean(r.lat_us);
            m.p50_us = percentile(r.lat_us, 0.5);
            m.p99_us = percentile(r.lat_us, 0.99);
            m.lat_iters = n;
        } else {
            m.has_bw = true;
            m.gbps = static_cast<double>(r.bytes) / r.seconds / 1e9;
            m.mops = static_cast<double>(r.ops) / r.seconds / 1e6;
            m.bw_iters = n;
        }
    }
    s.close();
    ctl_.send("TEARDOWN");
    expect("OK");
    return m;
}

const char *op_label(Op op) {
    switch (op) {
        case Op::Send:
            return "send/recv";
        case Op::Write:
            return "RDMA write";
        default:
            return "RDMA read";
    }
}

void Client::run(Report &rep) {
    ia_.emplace(d_.ia, false);
    auto hello = expect("HELLO", std::chrono::seconds(30));
    if (hello.size() < 3 || hello[1] != std::to_string(kProtocol))
        throw BenchError("malformed HELLO from the server");
    qual_ = parse_count(hello[2], "PSP qualifier");

    rep.rounds = o_.rounds ? o_.rounds : 3;
    rep.window = o_.window;
    rep.sizing = o_.iters
                     ? std::to_string(o_.iters) + " operations per measurement, after a warm-up"
                     : "each measurement sized to ~" + std::to_string(o_.seconds).substr(0, 4) +
                           " s by its warm-up";
    struct Spec {
        Op op;
        size_t size;
    };
    std::vector<Spec> plan;
    for (Op op : o_.ops)
        for (size_t size : o_.sizes) {
            Row row;
            row.name = op_name(op);
            row.label = op_label(op);
            row.size = size;
            row.lat_kind = op == Op::Read ? "round-trip" : "one-way";
            plan.push_back({op, size});
            rep.rows.push_back(row);
        }
    Progress progress(rep.rounds * plan.size(), o_.progress);
    for (unsigned r = 0; r < rep.rounds; ++r) {
        for (size_t k = 0; k < plan.size(); ++k) {
            size_t i = r % 2 ? plan.size() - 1 - k : k;  // reverse order every other round
            progress.step("round " + std::to_string(r + 1) + ": " + rep.rows[i].label + " " +
                          format_size(plan[i].size));
            rep.rows[i].rounds.push_back(run_spec(plan[i].op, plan[i].size));
        }
    }
    progress.finish();
    ctl_.send("BYE");
    expect("OK");
    ia_->close();
    ia_.reset();
}

int run(const DatOptions &d) {
    std::optional<ForeignLoad> load;
    Fd client_end;
    Report rep;
    rep.tool = "dat_bench";
    rep.transport = d.ia.rfind("softrnic-", 0) == 0 ? d.ia.substr(9) : d.ia;
    rep.describe = "uDAPL 2.0 IA '" + d.ia + "' (libdat2.so.2 -> its provider" +
                   (d.shared_evd ? "; one EVD for requests and receives)" : ")");
    rep.where = "client and server processes on 127.0.0.1 (server forked by this command)";
    bool server_ok = true;
    {
        load.emplace();
        ServerChild child(d, client_end);
        {
            ControlChannel ctl(std::move(client_end));
            Client c(d, ctl);
            c.run(rep);
        }  // the control connection closes here: the server exits if it has not already
        server_ok = child.stop(std::chrono::seconds(5));
    }
    if (!server_ok) throw BenchError("the server process did not exit cleanly");
    const double foreign = load->cpus();
    rep.foreign_cpus = foreign;
    const std::string w = std::to_string(d.o.window);
    rep.notes = {
        "Same phases, waiting, credits and timing as softrnic bench (rdma_test.cpp), through",
        "dat_* calls: DTOs posted with DAT_COMPLETION_DEFAULT_FLAG, completions taken with",
        d.shared_evd ? "dat_evd_dequeue from one EVD for both streams (--evd shared)."
                     : "dat_evd_dequeue from a request EVD and a receive EVD (one event per call).",
        "latency:   one-way = round trip / 2 of a ping-pong whose waiting side busy-polls: its",
        "           receive EVD for send/recv; the last byte of its buffer (plus the request",
        "           EVD) for RDMA write. round-trip = one RDMA read, post to completion.",
        "bandwidth: GB/s = 1e9 B/s, " + w + " operations in flight, timed by the client until",
        "           the data is known placed: send = the server's last credit (it reposts each",
        "           receive and credits every " + w + "), write = a 1-byte RDMA read behind the",
        "           writes, read = the completions. The server is passive for write/read."};
    if (foreign >= 0.2) {
        char b[200];
        std::snprintf(b, sizeof b,
                      "WARNING:   other processes kept %.1f CPUs busy on average during this run:"
                      " the figures are noisy.",
                      foreign);
        rep.notes.push_back(b);
        rep.warnings.push_back(b);
    }
    if (d.o.json)
        print_json(rep);
    else
        print_table(rep);
    return 0;
}

// --------------------------------------------------------------------------- options

void usage(FILE *out) {
    std::fprintf(
        out,
        "usage: dat_bench [options]\n"
        "softrnic bench's send/recv, RDMA write and RDMA read measurements through uDAPL 2.0\n"
        "(dat_* calls, libdat2.so.2 and the provider its dat.conf names): latency p50/p99 and\n"
        "bandwidth with a window of operations in flight, between this process and a server\n"
        "process it forks, connected over 127.0.0.1.\n"
        "  --ia NAME          IA to open (default softrnic-shm; softrnic-tcp, softrnic)\n"
        "  --evd E            split (default): a request EVD and a receive EVD per EP;\n"
        "                     shared: one EVD for both (diagnostic: softrnic bench's one CQ)\n"
        "  --size N[,N...]    message sizes in bytes (default 8,64,4096,65536,1048576)\n"
        "  --ops LIST         any of send,write,read (default all three)\n"
        "  --iters N          operations per measurement (default: sized by --time)\n"
        "  --time S           seconds per measurement when --iters is not given (default 0.2)\n"
        "  --window N         operations in flight in bandwidth runs (default 32)\n"
        "  --bw-wait W        yield (default) or spin, as softrnic bench\n"
        "  --lat-wait W       spin (default), yield or memory, as softrnic bench\n"
        "  --rounds N         repeat the list N times, alternating its order (default 3)\n"
        "  --json             machine-readable output (softrnic bench's format)\n"
        "  --no-progress      never draw the progress bar\n"
        "  --no-ref           accepted for symmetry with softrnic bench (no references here)\n"
        "DAT_OVERRIDE names the dat.conf; when it is unset, this build tree's provider\n"
        "configuration is used (%s).\n",
        DAT_BENCH_DEFAULT_CONF);
}

// Returns -1 when the options are good, else the exit code.
int parse(int argc, char **argv, DatOptions &d) {
    Options &o = d.o;
    bool sizes_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= argc) return std::nullopt;
            return std::string(argv[++i]);
        };
        auto bad = [&](const std::string &v) {
            std::fprintf(stderr, "dat_bench: bad value '%s' for %s\n", v.c_str(), a.c_str());
            return 2;
        };
        bool takes_value = a == "--ia" || a == "--evd" || a == "--size" || a == "--ops" ||
                           a == "--iters" || a == "--time" || a == "--window" || a == "--bw-wait" ||
                           a == "--lat-wait" || a == "--rounds";
        std::string v;
        if (takes_value) {
            auto got = value();
            if (!got) {
                std::fprintf(stderr, "dat_bench: %s needs a value\n", a.c_str());
                return 2;
            }
            v = *got;
        }
        uint64_t n = 0;
        if (a == "--ia") {
            if (v.empty()) return bad(v);
            d.ia = v;
        } else if (a == "--evd") {
            if (v != "split" && v != "shared") return bad(v);
            d.shared_evd = v == "shared";
        } else if (a == "--size") {
            if (!sizes_given) o.sizes.clear();
            sizes_given = true;
            for (const std::string &tok : split_list(v)) {
                if (!parse_u64(tok, n) || n == 0 || n > (1ull << 30)) return bad(tok);
                o.sizes.push_back(static_cast<size_t>(n));
            }
        } else if (a == "--ops") {
            o.ops.clear();
            for (const std::string &tok : split_list(v)) {
                if (tok == "send")
                    o.ops.push_back(Op::Send);
                else if (tok == "write")
                    o.ops.push_back(Op::Write);
                else if (tok == "read")
                    o.ops.push_back(Op::Read);
                else
                    return bad(tok);
            }
        } else if (a == "--iters") {
            if (!parse_u64(v, n) || n == 0) return bad(v);
            o.iters = n;
        } else if (a == "--time") {
            char *end = nullptr;
            o.seconds = std::strtod(v.c_str(), &end);
            if (!end || *end || !(o.seconds > 0) || o.seconds > 600) return bad(v);
        } else if (a == "--window") {
            if (!parse_u64(v, n) || n == 0 || n > 1024) return bad(v);
            o.window = static_cast<unsigned>(n);
        } else if (a == "--bw-wait") {
            if (v != "yield" && v != "spin") return bad(v);
            o.wait.bw_yield = v == "yield";
        } else if (a == "--lat-wait") {
            if (v != "yield" && v != "spin" && v != "memory") return bad(v);
            o.wait.lat_yield = v == "yield";
            o.wait.lat_memory = v == "memory";
        } else if (a == "--rounds") {
            if (!parse_u64(v, n) || n == 0 || n > 1000) return bad(v);
            o.rounds = static_cast<unsigned>(n);
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--no-progress") {
            o.progress = false;
        } else if (a == "--no-ref") {
            o.refs = false;
        } else if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "dat_bench: unknown option '%s' (see dat_bench --help)\n",
                         a.c_str());
            return 2;
        }
    }
    return -1;
}

}  // namespace
}  // namespace softrnic::bench

int main(int argc, char **argv) {
    namespace sb = softrnic::bench;
    sb::DatOptions d;
    if (int rc = sb::parse(argc, argv, d); rc >= 0) return rc;
    // The registry reads DAT_OVERRIDE at the first dat_ia_open (after the fork, in both
    // processes), so setting it here reaches the server too.
    if (!std::getenv("DAT_OVERRIDE")) ::setenv("DAT_OVERRIDE", DAT_BENCH_DEFAULT_CONF, 1);
    try {
        return sb::run(d);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "dat_bench: %s\n", e.what());
        return 1;
    }
}
