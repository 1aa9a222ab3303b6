#include "bench/rdma_test.hpp"

#include <atomic>
#include <cstring>

#include "loopback_session.hpp"

namespace softrnic::bench {

using tools::AlignedBuffer;

namespace {

void ck(ri_api_return_t r, const char *what) {
    if (r != RI_RET_SUCCESS)
        throw BenchError(std::string(what) + " failed: RNICPI return code " + std::to_string(r));
}

// Work request ids: the kind in the top byte.
constexpr uint64_t kRecv = 1ull << 56;
constexpr uint64_t kSend = 2ull << 56;
constexpr uint64_t kWrite = 3ull << 56;
constexpr uint64_t kRead = 4ull << 56;
constexpr uint64_t kFence = 5ull << 56;  // the 1-byte read that ends a write stream
constexpr uint64_t kKindMask = 0xFFull << 56;

constexpr uint32_t kClientRq = 16;
constexpr unsigned kPollBatch = 32;
constexpr uint32_t kMagic = 0x53524231;  // "SRB1"
constexpr size_t kPrivLen = 4 + 8 + 4 + 1 + 8;

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

}  // namespace

// ----------------------------------------------------------------------------- Rnic

Rnic::Rnic(const std::string &name) {
    ri_err_data_t err = 0;
    ck(softrnic_vp_create(name.c_str(), &vp), "softrnic_vp_create");
    try {
        ck(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), "ri_rnic_open");
        ck(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
           "ri_rnic_get_hdl");
        ck(ri_pd_alloc(rnic, &pd, nullptr, nullptr, &err), "ri_pd_alloc");
    } catch (...) {
        close();
        throw;
    }
}

Rnic::~Rnic() {
    close();
}

void Rnic::close() {
    ri_err_data_t err = 0;
    if (pd) ri_pd_dealloc(rnic, pd, &err);
    if (rnic) ri_rnic_free_hdl(vp, rnic, &err);
    if (vp) {
        ri_rnic_close(vp, &err);
        softrnic_vp_destroy(vp);
    }
    pd = nullptr;
    rnic = nullptr;
    vp = nullptr;
}

// ---------------------------------------------------------------------------- QpSet

QpSet::QpSet(Rnic &rnic, size_t n) : r_(rnic) {
    ri_err_data_t err = 0;
    try {
        ri_cq_attr_t ca{};
        ca.num_cqe = 256;  // nothing is posted: only the CQ the QPs need
        ck(ri_cq_create(r_.rnic, &ca, &cq_, nullptr, nullptr, &err), "ri_cq_create");
        qps_.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            // dtestcm's endpoints: one request, one receive, one segment, 4 reads each way.
            ri_qp_attr_t qa{};
            qa.scq.scq_handle = cq_;
            qa.rcq.rcq_handle = cq_;
            qa.pd = r_.pd;
            qa.sq_size = 1;
            qa.rq_size = 1;
            qa.sq_max_sges = 1;
            qa.sq_max_sges_rdmaw = 1;
            qa.rq_max_sges = 1;
            qa.enable_rdma_read = 1;
            qa.enable_rdma_write = 1;
            qa.max_rdma_read_outgoing = 4;
            qa.max_rdma_read_incoming = 4;
            ri_qp_handle_t qp = nullptr;
            ck(ri_qp_create(r_.rnic, &qa, &qp, nullptr, nullptr, &err), "ri_qp_create");
            qps_.push_back(qp);
        }
    } catch (...) {
        close();
        throw;
    }
}

QpSet::~QpSet() {
    close();
}

void QpSet::close() {
    ri_err_data_t err = 0;
    for (ri_qp_handle_t qp : qps_)
        ri_qp_destroy(r_.rnic, qp, &err);
    qps_.clear();
    if (cq_) ri_cq_destroy(r_.rnic, cq_, &err);
    cq_ = nullptr;
}

std::vector<uint8_t> QpSet::private_data(bool server) {
    // dtestcm sends 1..48 and its server answers each byte plus one.
    std::vector<uint8_t> p(48);
    for (size_t i = 0; i < p.size(); ++i)
        p[i] = static_cast<uint8_t>(i + (server ? 2 : 1));
    return p;
}

bool QpSet::peer_data_ok(const std::vector<uint8_t> &peer, bool peer_is_server) {
    return peer == private_data(peer_is_server);
}

void QpSet::start(size_t i, Link link) {
    if (i >= qps_.size()) throw BenchError("more connections than QPs");
    ri_err_data_t err = 0;
    ri_qp_attr_t qa{};
    qa.state = RI_QP_STATE_READY_TO_SEND;
    qa.qp_xport.qp_iwarp.llp_stream_handle = link.llp();
    ck(ri_qp_modify(
           r_.rnic, qps_[i],
           static_cast<ri_qp_attr_mask_t>(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE),
           &qa, &err),
       "ri_qp_modify(RTS)");
    link.claimed();
}

// ---------------------------------------------------------------------- RdmaSession

RdmaSession::RdmaSession(Rnic &rnic, Op op, size_t size, unsigned window, WaitPolicy wait,
                         bool server, const AbortCheck *abort)
    : r_(rnic), op_(op), size_(size), window_(window), wait_(wait), server_(server), abort_(abort) {
    if (size == 0 || size > (size_t{1} << 30)) throw BenchError("message size out of range");
    slot_ = (std::max<size_t>(size, 64) + 63) / 64 * 64;
    ctrl_ = 2 * slot_;
    group_ = window_;
    rq_ = server_ ? 2 * window_ : kClientRq;
    const uint32_t sq = window_ + 16;
    const uint32_t rq = std::max<uint32_t>(rq_, kClientRq);
    const uint32_t rd = std::min<uint32_t>(std::max<uint32_t>(window_, 1), 128);
    ri_err_data_t err = 0;
    try {
        ri_cq_attr_t ca{};
        ca.num_cqe = 2 * (sq + rq) + 64;
        ck(ri_cq_create(r_.rnic, &ca, &cq_, nullptr, nullptr, &err), "ri_cq_create");
        ri_qp_attr_t qa{};
        qa.scq.scq_handle = cq_;
        qa.rcq.rcq_handle = cq_;
        qa.pd = r_.pd;
        qa.sq_size = sq;
        qa.rq_size = rq;
        qa.sq_max_sges = 1;
        qa.sq_max_sges_rdmaw = 1;
        qa.rq_max_sges = 1;
        qa.enable_rdma_read = 1;
        qa.enable_rdma_write = 1;
        qa.max_rdma_read_outgoing = rd;
        qa.max_rdma_read_incoming = rd;
        ck(ri_qp_create(r_.rnic, &qa, &qp_, nullptr, nullptr, &err), "ri_qp_create");
        buf_ = std::make_unique<AlignedBuffer>(ctrl_ + 4096);
        std::memset(buf_->data, 0x5A, slot_);  // the send area; the rest stays zero
        ri_mr_reg_attr_t ma{};
        ma.va = reinterpret_cast<uintptr_t>(buf_->data);
        ma.length = buf_->size;
        ma.mem_attr = static_cast<ri_mem_attr_t>(RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE);
        ma.pd = r_.pd;
        ck(ri_mr_reg(r_.rnic, &ma, &mr_, &ltag_, &rtag_, nullptr, nullptr, &err), "ri_mr_reg");
        // Receives go in before the connection exists (allowed in Idle), so the first
        // message can never find an empty queue.
        for (uint32_t i = 0; i < rq_; ++i)
            post_recv(kRecv | i, slot_, slot_);
    } catch (...) {
        close();
        throw;
    }
}

RdmaSession::~RdmaSession() {
    close();
}

void RdmaSession::close() {
    ri_err_data_t err = 0;
    if (qp_) ri_qp_destroy(r_.rnic, qp_, &err);
    if (mr_) ri_mr_dereg(r_.rnic, mr_, &err);
    if (cq_) ri_cq_destroy(r_.rnic, cq_, &err);
    qp_ = nullptr;
    mr_ = nullptr;
    cq_ = nullptr;
}

std::vector<uint8_t> RdmaSession::private_data() const {
    std::vector<uint8_t> p(kPrivLen);
    put_be(&p[0], kMagic, 4);
    put_be(&p[4], reinterpret_cast<uintptr_t>(buf_->data), 8);
    put_be(&p[12], rtag_, 4);
    p[16] = static_cast<uint8_t>(op_);
    put_be(&p[17], size_, 8);
    return p;
}

void RdmaSession::start(Link link) {
    const auto &p = link.peer_data();
    if (p.size() < kPrivLen || get_be(&p[0], 4) != kMagic)
        throw BenchError("the peer's connection private data is not a softrnic bench peer's");
    if (p[16] != static_cast<uint8_t>(op_) || get_be(&p[17], 8) != size_)
        throw BenchError("the peer set up a different test");
    peer_va_ = get_be(&p[4], 8);
    peer_rtag_ = static_cast<uint32_t>(get_be(&p[12], 4));
    ri_err_data_t err = 0;
    ri_qp_attr_t qa{};
    qa.state = RI_QP_STATE_READY_TO_SEND;
    qa.qp_xport.qp_iwarp.llp_stream_handle = link.llp();
    ck(ri_qp_modify(
           r_.rnic, qp_,
           static_cast<ri_qp_attr_mask_t>(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE),
           &qa, &err),
       "ri_qp_modify(RTS)");
    link.claimed();
}

bool RdmaSession::passive(Phase phase) const {
    return op_ == Op::Read || (op_ == Op::Write && phase == Phase::Bw);
}

// --------------------------------------------------------------------------- posting

void RdmaSession::post_send(uint64_t id, size_t off, size_t len) {
    ri_err_data_t err = 0;
    ri_data_seg_t s{};
    s.addr.vaddr = reinterpret_cast<uintptr_t>(buf_->data + off);
    s.tag.ltag = ltag_;
    s.len = static_cast<uint32_t>(len);
    ck(ri_qp_post_send(r_.rnic, qp_, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &s, 0, 1, 0, &err),
       "ri_qp_post_send");
    ++sq_outstanding_;
}

void RdmaSession::post_recv(uint64_t id, size_t off, size_t len) {
    ri_err_data_t err = 0;
    ri_data_seg_t s{};
    s.addr.vaddr = reinterpret_cast<uintptr_t>(buf_->data + off);
    s.tag.ltag = ltag_;
    s.len = static_cast<uint32_t>(len);
    ck(ri_qp_post_recv(r_.rnic, qp_, static_cast<ri_wr_flags_t>(0), id, &s, 1, &err),
       "ri_qp_post_recv");
}

void RdmaSession::post_write(uint64_t id, size_t off, size_t len, size_t remote_off) {
    ri_err_data_t err = 0;
    ri_data_seg_t s{};
    s.addr.vaddr = reinterpret_cast<uintptr_t>(buf_->data + off);
    s.tag.ltag = ltag_;
    s.len = static_cast<uint32_t>(len);
    ck(ri_qp_post_rdma_write(r_.rnic, qp_, RI_WR_TYPE_RDMA_WRITE, RI_WR_SIGNALED_FLAG, id, &s,
                             peer_va_ + remote_off, peer_rtag_, 1, 0, &err),
       "ri_qp_post_rdma_write");
    ++sq_outstanding_;
}

void RdmaSession::post_read(uint64_t id, size_t off, size_t len, size_t remote_off) {
    ri_err_data_t err = 0;
    ri_data_seg_t s{};
    s.addr.vaddr = reinterpret_cast<uintptr_t>(buf_->data + off);
    s.tag.ltag = ltag_;
    s.len = static_cast<uint32_t>(len);
    ck(ri_qp_post_rdma_read(r_.rnic, qp_, RI_WR_TYPE_RDMA_READ, RI_WR_SIGNALED_FLAG, id, &s,
                            peer_va_ + remote_off, 1, peer_rtag_, &err),
       "ri_qp_post_rdma_read");
    ++sq_outstanding_;
}

unsigned RdmaSession::poll(Wc *out, unsigned max) {
    ri_wc_t wc[kPollBatch];
    ri_err_data_t err = 0;
    uint_t n = std::min(max, kPollBatch);
    ri_api_return_t r = ri_cq_poll(r_.rnic, cq_, wc, &n, &err);
    if (r == RI_RET_CQ_EMPTY) return 0;
    ck(r, "ri_cq_poll");
    for (uint_t i = 0; i < n; ++i) {
        const ri_rc_wc_t &c = wc[i].rc_wc;
        if (c.op_status != RI_WC_STATUS_SUCCESS)
            throw BenchError(std::string(wr_kind(c.id)) + " work completion failed, status " +
                             std::to_string(c.op_status) + " (" + op_name(op_) + " test, " +
                             std::to_string(size_) + " B, " + (server_ ? "server" : "client") +
                             " side)");
        out[i] = {c.id, c.bytes_transferred};
        if ((c.id & kKindMask) != kRecv) --sq_outstanding_;
    }
    return n;
}

void RdmaSession::drain_sq(Spinner &spin) {
    Wc wc[kPollBatch];
    while (sq_outstanding_ > 0) {
        if (poll(wc, kPollBatch))
            spin.progressed();
        else
            spin.spin();
    }
}

// ---------------------------------------------------------------------------- phases

PhaseResult RdmaSession::run(Phase phase, uint64_t n) {
    switch (op_) {
        case Op::Send:
            return phase == Phase::Lat ? send_lat(n) : send_bw(n);
        case Op::Write:
            return phase == Phase::Lat ? write_lat(n) : one_sided_bw(n, true);
        default:
            return phase == Phase::Lat ? read_lat(n) : one_sided_bw(n, false);
    }
}

PhaseResult RdmaSession::send_lat(uint64_t n) {
    PhaseResult res;
    if (!server_) res.lat_us.reserve(n);
    Spinner spin("a send/recv ping-pong reply", abort_, wait_.lat_yield);
    Wc wc[kPollBatch];
    auto wait_recv = [&] {
        for (;;) {
            unsigned k = poll(wc, kPollBatch);
            bool got = false;
            for (unsigned i = 0; i < k; ++i)
                if ((wc[i].id & kKindMask) == kRecv) got = true;
            if (got) {
                spin.progressed();
                return;
            }
            if (k)
                spin.progressed();
            else
                spin.spin();
        }
    };
    auto t_start = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        if (server_) {
            wait_recv();
            post_recv(kRecv | i, slot_, slot_);
            post_send(kSend | i, 0, size_);
        } else {
            auto t0 = Clock::now();
            post_send(kSend | i, 0, size_);
            wait_recv();
            auto t1 = Clock::now();
            post_recv(kRecv | i, slot_, slot_);
            res.lat_us.push_back(us(t1 - t0) / 2);
        }
    }
    res.seconds = seconds_since(t_start);
    res.ops = n;
    res.bytes = n * size_;
    drain_sq(spin);  // no completion left behind for the next phase
    return res;
}

PhaseResult RdmaSession::write_lat(uint64_t n) {
    PhaseResult res;
    if (!server_) res.lat_us.reserve(n);
    Spinner spin("an RDMA write ping-pong reply", abort_, wait_.lat_yield);
    Wc wc[kPollBatch];
    unsigned char *send_flag = buf_->data + size_ - 1;
    std::atomic_ref<unsigned char> recv_flag(buf_->data[slot_ + size_ - 1]);
    auto wait_flag = [&](unsigned char v) {
        while (recv_flag.load(std::memory_order_acquire) != v) {
            if (wait_.lat_memory) {
                spin.spin();
                continue;
            }
            // Drain our own write completions too (and give a transport that progresses
            // inside ri_cq_poll its chance).
            if (poll(wc, kPollBatch))
                spin.progressed();
            else
                spin.spin();
        }
        spin.progressed();
    };
    // --lat-wait memory: our write's completion at once, as dtest -W takes it.
    auto own_completion = [&] {
        if (!wait_.lat_memory) return;
        while (!poll(wc, 1))
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

PhaseResult RdmaSession::read_lat(uint64_t n) {
    PhaseResult res;
    if (server_) return res;  // passive
    res.lat_us.reserve(n);
    Spinner spin("an RDMA read completion", abort_, wait_.lat_yield);
    Wc wc[kPollBatch];
    auto t_start = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        post_read(kRead | i, slot_, size_, 0);
        for (;;) {
            unsigned k = poll(wc, kPollBatch);
            if (k) break;
            spin.spin();
        }
        spin.progressed();
        res.lat_us.push_back(us(Clock::now() - t0));
    }
    res.seconds = seconds_since(t_start);
    res.ops = n;
    res.bytes = n * size_;
    return res;
}

PhaseResult RdmaSession::one_sided_bw(uint64_t n, bool write) {
    PhaseResult res;
    if (server_) return res;  // passive
    Spinner spin(write ? "RDMA write completions" : "RDMA read completions", abort_,
                 wait_.bw_yield);
    Wc wc[kPollBatch];
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
        unsigned k = poll(wc, kPollBatch);
        if (k) {
            done += k;
            spin.progressed();
        } else {
            spin.spin();
        }
    }
    if (write) {
        // A write completes once its bytes are with the transport; a read behind it
        // completes only after the peer placed them all.
        post_read(kFence, ctrl_ + 64, 1, slot_);
        for (;;) {
            unsigned k = poll(wc, kPollBatch);
            if (k) break;
            spin.spin();
        }
    }
    res.seconds = seconds_since(t0);
    res.ops = n;
    res.bytes = n * size_;
    return res;
}

PhaseResult RdmaSession::send_bw(uint64_t n) {
    PhaseResult res;
    Spinner spin(server_ ? "streamed sends" : "send completions and credits", abort_,
                 wait_.bw_yield);
    Wc wc[kPollBatch];
    const uint64_t credits_expected = (n + group_ - 1) / group_;
    auto t0 = Clock::now();
    if (server_) {
        // Repost every receive at once; one credit message per `group_` receives (and one
        // for the last), so the client never has more sends in flight than receives here.
        uint64_t got = 0;
        while (got < n) {
            unsigned k = poll(wc, kPollBatch);
            if (!k) {
                spin.spin();
                continue;
            }
            spin.progressed();
            for (unsigned i = 0; i < k; ++i) {
                if ((wc[i].id & kKindMask) != kRecv) continue;
                post_recv(kRecv | got, slot_, slot_);
                ++got;
                if (got % group_ == 0 || got == n) post_send(kSend | got, ctrl_, 8);
            }
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
            unsigned k = poll(wc, kPollBatch);
            if (!k) {
                spin.spin();
                continue;
            }
            spin.progressed();
            for (unsigned i = 0; i < k; ++i) {
                if ((wc[i].id & kKindMask) == kRecv) {
                    ++credits;
                    post_recv(kRecv | credits, slot_, slot_);
                } else {
                    ++done;
                }
            }
        }
    }
    res.seconds = seconds_since(t0);
    res.ops = n;
    res.bytes = n * size_;
    drain_sq(spin);  // the server's last credits
    return res;
}

}  // namespace softrnic::bench
