// Test fixture and helpers for the softrnic RNICPI conformance, data-path and
// stress suites.  Everything here goes through the public ri_* interface
// (rnicpi.h) plus the softrnic access-layer calls (softrnic.h).
//
// Spec references are line numbers of RNICPI 1.0 (see docs/spec-deviations.md)
// written as L1234.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <rnicpi/rnicpi.h>
#include <softrnic/softrnic.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rt {

// Raises this process's soft descriptor limit to at least `need` (up to the hard limit),
// for tests that hold many connections at once (a socket each per process): Debian's
// default soft limit of 1,024 is below what 1,000 connections need. Children forked
// afterwards inherit it. False when the hard limit is too low (the caller skips).
inline bool raise_fd_limit(rlim_t need) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
    if (rl.rlim_cur >= need) return true;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) return false;
    rl.rlim_cur = need;
    return ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

using Clock = std::chrono::steady_clock;
// Upper bound for anything the engine does asynchronously in these tests.
inline constexpr std::chrono::seconds kTimeout{20};

// Every completion now in `cq` (polled until empty), for tests whose operations complete
// inside the post.
inline std::vector<ri_wc_t> drain_cq(ri_rnic_handle_t rnic, ri_cq_handle_t cq) {
    std::vector<ri_wc_t> out;
    ri_wc_t wc[16];
    ri_err_data_t err = 0;
    for (;;) {
        uint_t n = 16;
        ri_api_return_t r = ri_cq_poll(rnic, cq, wc, &n, &err);
        if (r == RI_RET_CQ_EMPTY) break;
        EXPECT_EQ(r, RI_RET_SUCCESS);
        if (r != RI_RET_SUCCESS) break;
        out.insert(out.end(), wc, wc + n);
    }
    return out;
}

inline ri_wr_flags_t F(unsigned v) {
    return static_cast<ri_wr_flags_t>(v);
}
inline ri_mem_attr_t MA(unsigned v) {
    return static_cast<ri_mem_attr_t>(v);
}
inline ri_qp_attr_mask_t QM(unsigned v) {
    return static_cast<ri_qp_attr_mask_t>(v);
}

inline constexpr unsigned kSig = RI_WR_SIGNALED_FLAG;
inline constexpr unsigned kLocalRW = RI_MEM_FLAGS_LOCAL_READ | RI_MEM_FLAGS_LOCAL_WRITE;
inline constexpr unsigned kAllRemote =
    kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ;

// ---------------------------------------------------------------------------
// Unique instance names (softrnic_vp_create wants a unique name <= 63 bytes).
// ---------------------------------------------------------------------------
inline std::string unique_name(const char *tag = "") {
    static std::atomic<unsigned> counter{0};
    std::string base = "t";
    if (const auto *ti = ::testing::UnitTest::GetInstance()->current_test_info()) {
        base = ti->name();
    }
    std::replace(base.begin(), base.end(), '/', '_');
    if (base.size() > 36) base.resize(36);
    std::string n = base + "-" + tag + "-" + std::to_string(counter.fetch_add(1));
    if (n.size() > 63) n.resize(63);
    return n;
}

// ---------------------------------------------------------------------------
// Deterministic pseudo-random byte patterns.
// ---------------------------------------------------------------------------
inline uint64_t splitmix(uint64_t &s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
inline void fill_pattern(void *p, size_t n, uint64_t seed) {
    auto *b = static_cast<uint8_t *>(p);
    uint64_t s = seed * 0x100000001B3ull + 7;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = splitmix(s);
        std::memcpy(b + i, &v, 8);
    }
    if (i < n) {
        uint64_t v = splitmix(s);
        std::memcpy(b + i, &v, n - i);
    }
}
// Index of the first differing byte, or SIZE_MAX when equal.
inline size_t first_diff(const void *a, const void *b, size_t n) {
    if (n == 0 || std::memcmp(a, b, n) == 0) return SIZE_MAX;
    auto *x = static_cast<const uint8_t *>(a);
    auto *y = static_cast<const uint8_t *>(b);
    for (size_t i = 0; i < n; ++i)
        if (x[i] != y[i]) return i;
    return SIZE_MAX;
}

// ---------------------------------------------------------------------------
// A page-aligned buffer with guard zones on both sides (pattern 0xA5) so a
// test can check that nothing outside the registered range was touched.
// ---------------------------------------------------------------------------
class Buf {
  public:
    static constexpr size_t kGuard = 4096;
    static constexpr uint8_t kGuardByte = 0xA5;

    explicit Buf(size_t len, uint8_t fill = 0) : len_(len) {
        size_t total = ((len + 2 * kGuard) + 4095) & ~size_t(4095);
        raw_ = static_cast<uint8_t *>(std::aligned_alloc(4096, total));
        total_ = total;
        std::memset(raw_, kGuardByte, total_);
        std::memset(raw_ + kGuard, fill, len_);
    }
    ~Buf() { std::free(raw_); }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;

    uint8_t *data() { return raw_ + kGuard; }
    const uint8_t *data() const { return raw_ + kGuard; }
    size_t size() const { return len_; }
    ri_addr_t va() const { return reinterpret_cast<ri_addr_t>(raw_ + kGuard); }
    void fill(uint64_t seed) { fill_pattern(data(), len_, seed); }
    void set(uint8_t v) { std::memset(data(), v, len_); }
    // True when every byte outside [data, data+len) still holds the guard byte.
    bool guards_intact() const {
        for (size_t i = 0; i < kGuard; ++i)
            if (raw_[i] != kGuardByte) return false;
        for (size_t i = kGuard + len_; i < total_; ++i)
            if (raw_[i] != kGuardByte) return false;
        return true;
    }

  private:
    uint8_t *raw_ = nullptr;
    size_t len_ = 0;
    size_t total_ = 0;
};

// ---------------------------------------------------------------------------
// Callback recorder. Its address is the os_data given to ri_rnic_open, which
// the provider hands back as vp_hdl_os_data in every upcall (L1954-1979,
// L3123-3126).
// ---------------------------------------------------------------------------
struct AsyncEvent {
    ri_async_event_type_t type;
    void *os_data;
};

class Recorder {
  public:
    static void async_cb(ri_os_data_t vp_os, ri_event_record_t *ev) {
        auto *r = static_cast<Recorder *>(vp_os);
        if (r == nullptr || ev == nullptr) return;
        std::lock_guard<std::mutex> g(r->mu_);
        r->events_.push_back({ev->event_type, ev->event_data.resource_os_data});
    }
    static void cq_cb(ri_os_data_t vp_os, ri_os_data_t cq_os) {
        auto *r = static_cast<Recorder *>(vp_os);
        if (r == nullptr) return;
        std::lock_guard<std::mutex> g(r->mu_);
        r->cq_cbs_.push_back(cq_os);
        r->cq_cb_vp_os_ok_ = r->cq_cb_vp_os_ok_ && vp_os == r;
    }
    std::vector<AsyncEvent> events() {
        std::lock_guard<std::mutex> g(mu_);
        return events_;
    }
    size_t count_events(ri_async_event_type_t t, void *os) {
        std::lock_guard<std::mutex> g(mu_);
        return std::count_if(events_.begin(), events_.end(),
                             [&](const AsyncEvent &e) { return e.type == t && e.os_data == os; });
    }
    size_t count_events_for(void *os) {
        std::lock_guard<std::mutex> g(mu_);
        return std::count_if(events_.begin(), events_.end(),
                             [&](const AsyncEvent &e) { return e.os_data == os; });
    }
    size_t count_cq(void *cq_os) {
        std::lock_guard<std::mutex> g(mu_);
        return std::count(cq_cbs_.begin(), cq_cbs_.end(), cq_os);
    }
    size_t total_cq() {
        std::lock_guard<std::mutex> g(mu_);
        return cq_cbs_.size();
    }
    void clear() {
        std::lock_guard<std::mutex> g(mu_);
        events_.clear();
        cq_cbs_.clear();
    }
    std::string describe_events() {
        std::lock_guard<std::mutex> g(mu_);
        std::string s;
        for (auto &e : events_)
            s += std::to_string(int(e.type)) + "@" +
                 std::to_string(reinterpret_cast<uintptr_t>(e.os_data)) + " ";
        return s;
    }

  private:
    std::mutex mu_;
    std::vector<AsyncEvent> events_;
    std::vector<void *> cq_cbs_;
    bool cq_cb_vp_os_ok_ = true;
};

class Rnic;

struct Pd {
    ri_pd_handle_t h = nullptr;
    bool alive = false;
};
struct Cq {
    ri_cq_handle_t h = nullptr;
    ri_cq_attr_t attr{};
    bool alive = false;
    void *os() { return this; }
};
struct Srq {
    ri_srq_handle_t h = nullptr;
    ri_srq_attr_t attr{};
    bool alive = false;
    void *os() { return this; }
};
struct Qp {
    Rnic *owner = nullptr;
    ri_qp_handle_t h = nullptr;
    ri_qp_attr_t attr{};  // create-time output (actual sizes etc.)
    Cq *scq = nullptr;
    Cq *rcq = nullptr;
    Srq *srq = nullptr;
    Pd *pd = nullptr;
    bool alive = false;
    void *os() { return this; }
};
struct Mr {
    ri_mr_handle_t h = nullptr;
    ri_ltag_t ltag = 0;
    ri_rtag_t rtag = 0;
    ri_addr_t va = 0;
    uint64_t len = 0;
    bool alive = false;
};
struct Mw {
    ri_mw_handle_t h = nullptr;
    ri_rtag_t rtag = 0;
    bool alive = false;
};

struct QpOpts {
    uint32_t sq = 64;
    uint32_t rq = 64;
    uint32_t sq_sges = 0;        // 0: RNIC max_sgl_send_recvqp
    uint32_t sq_sges_rdmaw = 0;  // 0: RNIC max_sgl_rdma_write
    uint32_t rq_sges = 0;        // 0: RNIC max_sgl_send_recvqp
    Cq *scq = nullptr;           // nullptr: a fresh CQ
    Cq *rcq = nullptr;           // nullptr: a fresh CQ
    Srq *srq = nullptr;
    Pd *pd = nullptr;  // nullptr: the default PD
    int ord = -1;      // -1: min(4, max_ord_per_qp)
    int ird = -1;      // -1: min(4, max_ird_per_qp)
    bool rd = true;
    bool wr = true;
    bool bind = false;
    bool fastreg = false;
};

// ---------------------------------------------------------------------------
// One software RNIC instance: VP, open, handlers, RNIC handle, default PD,
// plus ownership of everything created through it (destroyed in reverse
// order by the destructor, asserting success).
// ---------------------------------------------------------------------------
class Rnic {
  public:
    explicit Rnic(const char *tag = "", softrnic_vp_view_t hdl_view = SOFTRNIC_VIEW_PRIVILEGED) {
        name_ = unique_name(tag);
        ri_api_return_t r = softrnic_vp_create(name_.c_str(), &vp);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "softrnic_vp_create(" << name_ << ")";
        if (r != RI_RET_SUCCESS) return;
        created_ = true;
        r = ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, &rec, &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_rnic_open";
        if (r != RI_RET_SUCCESS) return;
        opened_ = true;
        EXPECT_EQ(ri_async_set_event_handler(vp, &Recorder::async_cb, &err), RI_RET_SUCCESS);
        handler_id = 0;
        EXPECT_EQ(ri_cq_set_event_handler(vp, &handler_id, &Recorder::cq_cb, &err), RI_RET_SUCCESS);
        EXPECT_NE(handler_id, 0u);
        ri_vp_handle_t hv = softrnic_vp_view(vp, hdl_view);
        EXPECT_NE(hv, nullptr);
        hdl_vp = hv ? hv : vp;
        r = ri_rnic_get_hdl(hdl_vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, this, &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_rnic_get_hdl";
        if (r != RI_RET_SUCCESS) return;
        have_hdl_ = true;
        query_attrs();
        default_pd = new_pd();
        ok_ = default_pd != nullptr && attr_ != nullptr;
    }

    ~Rnic() { teardown(); }
    Rnic(const Rnic &) = delete;
    Rnic &operator=(const Rnic &) = delete;

    bool ok() const { return ok_; }
    const ri_rnic_attr_t &attr() const { return *attr_; }
    Recorder &recorder() { return rec; }

    void drain() { EXPECT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS); }

    // --- objects -----------------------------------------------------------
    Pd *new_pd() {
        auto p = std::make_unique<Pd>();
        ri_api_return_t r = ri_pd_alloc(rnic, &p->h, nullptr, p.get(), &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_pd_alloc";
        if (r != RI_RET_SUCCESS) return nullptr;
        p->alive = true;
        pds_.push_back(std::move(p));
        return pds_.back().get();
    }
    Cq *new_cq(uint32_t n = 256, bool with_handler = true) {
        auto c = std::make_unique<Cq>();
        c->attr.num_cqe = n;
        c->attr.handler_id = with_handler ? handler_id : 0;
        ri_api_return_t r = ri_cq_create(rnic, &c->attr, &c->h, nullptr, c.get(), &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_cq_create(" << n << ")";
        if (r != RI_RET_SUCCESS) return nullptr;
        c->alive = true;
        cqs_.push_back(std::move(c));
        return cqs_.back().get();
    }
    Srq *new_srq(uint32_t max_wrs, uint32_t max_sgl = 1, uint32_t lowat = 0, Pd *pd = nullptr) {
        auto s = std::make_unique<Srq>();
        s->attr.max_wrs = max_wrs;
        s->attr.max_sgl = max_sgl;
        s->attr.lowat = lowat;
        s->attr.pd = (pd ? pd : default_pd)->h;
        ri_api_return_t r = ri_srq_create(rnic, &s->attr, &s->h, nullptr, s.get(), &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_srq_create";
        if (r != RI_RET_SUCCESS) return nullptr;
        s->alive = true;
        srqs_.push_back(std::move(s));
        return srqs_.back().get();
    }
    // Fills a create attribute block from options (no call made).
    ri_qp_attr_t qp_attr_for(const QpOpts &o, Cq *scq, Cq *rcq) {
        ri_qp_attr_t a{};
        a.scq.scq_handle = scq ? scq->h : nullptr;
        a.rcq.rcq_handle = rcq ? rcq->h : nullptr;
        a.srq.srq_handle = o.srq ? o.srq->h : nullptr;
        a.srq_valid = o.srq != nullptr;
        a.pd = (o.pd ? o.pd : default_pd)->h;
        a.sq_size = o.sq;
        a.rq_size = o.rq;
        a.sq_max_sges = o.sq_sges ? o.sq_sges : attr().max_sgl_send_recvqp;
        a.sq_max_sges_rdmaw = o.sq_sges_rdmaw ? o.sq_sges_rdmaw : attr().max_sgl_rdma_write;
        a.rq_max_sges = o.rq_sges ? o.rq_sges : attr().max_sgl_send_recvqp;
        a.state = RI_QP_STATE_IDLE;
        a.enable_rdma_read = o.rd;
        a.enable_rdma_write = o.wr;
        a.max_rdma_read_outgoing =
            o.ord >= 0 ? uint32_t(o.ord) : std::min<uint32_t>(4, attr().max_ord_per_qp);
        a.max_rdma_read_incoming =
            o.ird >= 0 ? uint32_t(o.ird) : std::min<uint32_t>(4, attr().max_ird_per_qp);
        a.enable_stag0_fastreg = o.fastreg;
        a.qp_xport.qp_iwarp.enable_bind = o.bind;
        a.qp_xport.qp_iwarp.mpa_attrs.crc_enabled = 1;
        a.qp_xport.qp_iwarp.mpa_attrs.ddp_rdma_version = 1;
        return a;
    }
    Qp *new_qp(const QpOpts &o = {}) {
        auto q = std::make_unique<Qp>();
        q->owner = this;
        q->scq = o.scq ? o.scq : new_cq();
        q->rcq = o.rcq ? o.rcq : new_cq();
        q->srq = o.srq;
        q->pd = o.pd ? o.pd : default_pd;
        if (!q->scq || !q->rcq) return nullptr;
        q->attr = qp_attr_for(o, q->scq, q->rcq);
        ri_api_return_t r = ri_qp_create(rnic, &q->attr, &q->h, nullptr, q.get(), &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_qp_create";
        if (r != RI_RET_SUCCESS) return nullptr;
        q->alive = true;
        qps_.push_back(std::move(q));
        return qps_.back().get();
    }
    Mr *reg(const void *p, uint64_t len, unsigned mem_attr, Pd *pd = nullptr) {
        auto m = std::make_unique<Mr>();
        ri_mr_reg_attr_t a{};
        a.va = reinterpret_cast<ri_addr_t>(p);
        a.length = len;
        a.mem_attr = MA(mem_attr);
        a.pd = (pd ? pd : default_pd)->h;
        m->va = a.va;
        m->len = len;
        ri_api_return_t r = ri_mr_reg(rnic, &a, &m->h, &m->ltag, &m->rtag, nullptr, m.get(), &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_mr_reg";
        if (r != RI_RET_SUCCESS) return nullptr;
        m->alive = true;
        mrs_.push_back(std::move(m));
        return mrs_.back().get();
    }
    Mr *reg(Buf &b, unsigned mem_attr, Pd *pd = nullptr) {
        return reg(b.data(), b.size(), mem_attr, pd);
    }
    // Adopts an MR created by the test itself (e.g. ri_ltag_alloc, rereg).
    Mr *adopt_mr(ri_mr_handle_t h, ri_ltag_t l, ri_rtag_t rt) {
        auto m = std::make_unique<Mr>();
        m->h = h;
        m->ltag = l;
        m->rtag = rt;
        m->alive = true;
        mrs_.push_back(std::move(m));
        return mrs_.back().get();
    }
    Mw *new_mw(ri_mw_type_t type, Pd *pd = nullptr) {
        auto w = std::make_unique<Mw>();
        ri_api_return_t r = ri_mw_alloc(rnic, (pd ? pd : default_pd)->h, type, &w->h, &w->rtag,
                                        nullptr, w.get(), &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_mw_alloc";
        if (r != RI_RET_SUCCESS) return nullptr;
        w->alive = true;
        mws_.push_back(std::move(w));
        return mws_.back().get();
    }

    // Explicit destruction (the object is then skipped at teardown).
    ri_api_return_t destroy(Qp *q) {
        ri_api_return_t r = ri_qp_destroy(rnic, q->h, &err);
        if (r == RI_RET_SUCCESS) q->alive = false;
        return r;
    }
    ri_api_return_t destroy(Cq *c) {
        ri_api_return_t r = ri_cq_destroy(rnic, c->h, &err);
        if (r == RI_RET_SUCCESS) c->alive = false;
        return r;
    }
    ri_api_return_t destroy(Srq *s) {
        ri_api_return_t r = ri_srq_destroy(rnic, s->h, &err);
        if (r == RI_RET_SUCCESS) s->alive = false;
        return r;
    }
    ri_api_return_t destroy(Mr *m) {
        ri_api_return_t r = ri_mr_dereg(rnic, m->h, &err);
        if (r == RI_RET_SUCCESS) m->alive = false;
        return r;
    }
    ri_api_return_t destroy(Mw *w) {
        ri_api_return_t r = ri_mw_dealloc(rnic, w->h, &err);
        if (r == RI_RET_SUCCESS) w->alive = false;
        return r;
    }
    ri_api_return_t destroy(Pd *p) {
        ri_api_return_t r = ri_pd_dealloc(rnic, p->h, &err);
        if (r == RI_RET_SUCCESS) p->alive = false;
        return r;
    }
    // Forget an object that the provider already destroyed implicitly
    // (e.g. an MR that a failed rereg freed, L3787-3788).
    void forget(Mr *m) { m->alive = false; }

    void teardown() {
        if (torn_down_) return;
        torn_down_ = true;
        if (have_hdl_) {
            for (auto it = qps_.rbegin(); it != qps_.rend(); ++it)
                if ((*it)->alive) {
                    EXPECT_EQ(destroy(it->get()), RI_RET_SUCCESS) << "teardown ri_qp_destroy";
                }
            for (auto it = mws_.rbegin(); it != mws_.rend(); ++it)
                if ((*it)->alive) {
                    EXPECT_EQ(destroy(it->get()), RI_RET_SUCCESS) << "teardown ri_mw_dealloc";
                }
            for (auto it = mrs_.rbegin(); it != mrs_.rend(); ++it)
                if ((*it)->alive) {
                    EXPECT_EQ(destroy(it->get()), RI_RET_SUCCESS) << "teardown ri_mr_dereg";
                }
            for (auto it = srqs_.rbegin(); it != srqs_.rend(); ++it)
                if ((*it)->alive) {
                    EXPECT_EQ(destroy(it->get()), RI_RET_SUCCESS) << "teardown ri_srq_destroy";
                }
            for (auto it = cqs_.rbegin(); it != cqs_.rend(); ++it)
                if ((*it)->alive) {
                    EXPECT_EQ(destroy(it->get()), RI_RET_SUCCESS) << "teardown ri_cq_destroy";
                }
            for (auto it = pds_.rbegin(); it != pds_.rend(); ++it)
                if ((*it)->alive) {
                    EXPECT_EQ(destroy(it->get()), RI_RET_SUCCESS) << "teardown ri_pd_dealloc";
                }
            EXPECT_EQ(ri_rnic_free_hdl(hdl_vp, rnic, &err), RI_RET_SUCCESS)
                << "teardown ri_rnic_free_hdl";
        }
        if (opened_) {
            EXPECT_EQ(ri_rnic_close(vp, &err), RI_RET_SUCCESS) << "teardown ri_rnic_close";
        }
        if (created_) {
            EXPECT_EQ(softrnic_vp_destroy(vp), RI_RET_SUCCESS) << "teardown softrnic_vp_destroy";
        }
    }

    ri_vp_handle_t vp = nullptr;
    ri_vp_handle_t hdl_vp = nullptr;  // view used for ri_rnic_get_hdl
    ri_rnic_handle_t rnic = nullptr;
    ri_cq_event_handler_id_t handler_id = 0;
    Pd *default_pd = nullptr;
    Recorder rec;
    ri_err_data_t err = 0;
    std::string name_;

  private:
    void query_attrs() {
        uint_t sz = 1;
        std::vector<uint64_t> small(1);
        ri_api_return_t r =
            ri_rnic_query(rnic, static_cast<ri_rnic_query_flags_t>(0),
                          reinterpret_cast<ri_rnic_attr_t *>(small.data()), &sz, &err);
        EXPECT_EQ(r, RI_RET_BUFFER_TOO_SMALL) << "ri_rnic_query size probe";
        EXPECT_GE(sz, sizeof(ri_rnic_attr_t));
        attr_buf_.assign((sz + 7) / 8 + 1, 0);
        uint_t sz2 = sz;
        r = ri_rnic_query(rnic, static_cast<ri_rnic_query_flags_t>(0),
                          reinterpret_cast<ri_rnic_attr_t *>(attr_buf_.data()), &sz2, &err);
        EXPECT_EQ(r, RI_RET_SUCCESS) << "ri_rnic_query";
        if (r == RI_RET_SUCCESS) attr_ = reinterpret_cast<const ri_rnic_attr_t *>(attr_buf_.data());
    }

    bool created_ = false, opened_ = false, have_hdl_ = false, ok_ = false, torn_down_ = false;
    std::vector<uint64_t> attr_buf_;
    const ri_rnic_attr_t *attr_ = nullptr;
    std::vector<std::unique_ptr<Pd>> pds_;
    std::vector<std::unique_ptr<Cq>> cqs_;
    std::vector<std::unique_ptr<Srq>> srqs_;
    std::vector<std::unique_ptr<Qp>> qps_;
    std::vector<std::unique_ptr<Mr>> mrs_;
    std::vector<std::unique_ptr<Mw>> mws_;
};

// ---------------------------------------------------------------------------
// QP helpers.
// ---------------------------------------------------------------------------
inline ri_qp_attr_t query(Qp *q) {
    ri_qp_attr_t a{};
    ri_err_data_t e = 0;
    EXPECT_EQ(ri_qp_query(q->owner->rnic, q->h, &a, &e), RI_RET_SUCCESS) << "ri_qp_query";
    return a;
}
inline ri_qp_state_t state_of(Qp *q) {
    return query(q).state;
}

inline ri_api_return_t modify_state(Qp *q, ri_qp_state_t s) {
    ri_qp_attr_t a{};
    a.state = s;
    ri_err_data_t e = 0;
    return ri_qp_modify(q->owner->rnic, q->h, RI_QP_ATTR_NEXT_STATE, &a, &e);
}

// Polls ri_qp_query until the QP reaches `s` or the timeout expires.
inline bool wait_state(Qp *q, ri_qp_state_t s, std::chrono::milliseconds to = kTimeout) {
    auto deadline = Clock::now() + to;
    while (Clock::now() < deadline) {
        ri_qp_attr_t a{};
        ri_err_data_t e = 0;
        if (ri_qp_query(q->owner->rnic, q->h, &a, &e) == RI_RET_SUCCESS && a.state == s)
            return true;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
}

// Connects two IDLE QPs with an in-process loopback LLP pair and moves both to
// RTS (L1742-1757: the QP owns the stream after a successful transition).
inline void connect(Qp *a, Qp *b) {
    ri_llp_stream_handle_t ea{}, eb{};
    ASSERT_EQ(softrnic_loopback_pair(&ea, &eb), RI_RET_SUCCESS);
    ri_err_data_t e = 0;
    ri_qp_attr_t at{};
    at.state = RI_QP_STATE_READY_TO_SEND;
    at.qp_xport.qp_iwarp.llp_stream_handle = ea;
    ri_api_return_t ra = ri_qp_modify(
        a->owner->rnic, a->h, QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &at, &e);
    if (ra != RI_RET_SUCCESS) softrnic_loopback_close(ea);
    ri_qp_attr_t bt{};
    bt.state = RI_QP_STATE_READY_TO_SEND;
    bt.qp_xport.qp_iwarp.llp_stream_handle = eb;
    ri_api_return_t rb = ri_qp_modify(
        b->owner->rnic, b->h, QM(RI_QP_ATTR_NEXT_STATE | RI_QP_ATTR_LLQ_STREAM_HANDLE), &bt, &e);
    if (rb != RI_RET_SUCCESS) softrnic_loopback_close(eb);
    ASSERT_EQ(ra, RI_RET_SUCCESS) << "modify A -> RTS";
    ASSERT_EQ(rb, RI_RET_SUCCESS) << "modify B -> RTS";
}

inline ri_data_seg_t sge(const void *p, uint32_t len, ri_ltag_t tag) {
    ri_data_seg_t s{};
    s.addr.vaddr = reinterpret_cast<ri_addr_t>(p);
    s.tag.ltag = tag;
    s.len = len;
    return s;
}
inline ri_data_seg_t sge_va(ri_addr_t va, uint32_t len, ri_ltag_t tag) {
    ri_data_seg_t s{};
    s.addr.vaddr = va;
    s.tag.ltag = tag;
    s.len = len;
    return s;
}

inline ri_api_return_t post_wr(Qp *q, ri_wr_t *wr, uint_t n = 1, uint_t *posted = nullptr) {
    ri_err_data_t e = 0;
    uint_t num = n;
    ri_api_return_t r = ri_qp_postsq(q->owner->rnic, q->h, wr, &num, &e);
    if (posted) *posted = num;
    return r;
}

inline ri_wr_t send_wr(ri_wr_type_t type, unsigned flags, uint64_t id, ri_data_seg_t *sg, uint_t n,
                       ri_rtag_t inv_rtag = 0, uint32_t imm = 0) {
    ri_wr_t w;
    std::memset(&w, 0, sizeof(w));
    w.wr_send.type = type;
    w.wr_send.flags = F(flags);
    w.wr_send.id = id;
    w.wr_send.sg_list = sg;
    w.wr_send.num_sgls = n;
    w.wr_send.rtag = inv_rtag;
    w.wr_send.imm_data = imm;
    return w;
}
inline ri_wr_t write_wr(ri_wr_type_t type, unsigned flags, uint64_t id, ri_data_seg_t *sg, uint_t n,
                        uint64_t raddr, ri_rtag_t rtag, uint32_t imm = 0) {
    ri_wr_t w;
    std::memset(&w, 0, sizeof(w));
    w.wr_rdma_write.type = type;
    w.wr_rdma_write.flags = F(flags);
    w.wr_rdma_write.id = id;
    w.wr_rdma_write.sg_list = sg;
    w.wr_rdma_write.num_sgls = n;
    w.wr_rdma_write.rdma_addr = raddr;
    w.wr_rdma_write.rtag = rtag;
    w.wr_rdma_write.imm_data = imm;
    return w;
}
inline ri_wr_t read_wr(ri_wr_type_t type, unsigned flags, uint64_t id, ri_data_seg_t *sg, uint_t n,
                       uint64_t raddr, ri_rtag_t rtag) {
    ri_wr_t w;
    std::memset(&w, 0, sizeof(w));
    w.wr_rdma_read.type = type;
    w.wr_rdma_read.flags = F(flags);
    w.wr_rdma_read.id = id;
    w.wr_rdma_read.sg_list = sg;
    w.wr_rdma_read.num_sgls = n;
    w.wr_rdma_read.rdma_addr = raddr;
    w.wr_rdma_read.rtag = rtag;
    return w;
}

inline ri_api_return_t post_send(Qp *q, ri_wr_type_t type, unsigned flags, uint64_t id,
                                 ri_data_seg_t *sg, uint_t n, ri_rtag_t inv_rtag = 0,
                                 uint32_t imm = 0) {
    ri_wr_t w = send_wr(type, flags, id, sg, n, inv_rtag, imm);
    return post_wr(q, &w);
}
inline ri_api_return_t post_write(Qp *q, unsigned flags, uint64_t id, ri_data_seg_t *sg, uint_t n,
                                  uint64_t raddr, ri_rtag_t rtag,
                                  ri_wr_type_t type = RI_WR_TYPE_RDMA_WRITE, uint32_t imm = 0) {
    ri_wr_t w = write_wr(type, flags, id, sg, n, raddr, rtag, imm);
    return post_wr(q, &w);
}
inline ri_api_return_t post_read(Qp *q, unsigned flags, uint64_t id, ri_data_seg_t *sg, uint_t n,
                                 uint64_t raddr, ri_rtag_t rtag,
                                 ri_wr_type_t type = RI_WR_TYPE_RDMA_READ) {
    ri_wr_t w = read_wr(type, flags, id, sg, n, raddr, rtag);
    return post_wr(q, &w);
}
inline ri_api_return_t post_recv(Qp *q, uint64_t id, ri_data_seg_t *sg, uint_t n,
                                 unsigned flags = 0) {
    ri_wr_recv_t w{};
    w.flags = F(flags);
    w.id = id;
    w.sg_list = sg;
    w.num_sgls = n;
    uint_t num = 1;
    ri_err_data_t e = 0;
    return ri_qp_postrq(q->owner->rnic, q->h, &w, &num, &e);
}
inline ri_api_return_t post_srq_recv(Rnic &r, Srq *s, uint64_t id, ri_data_seg_t *sg, uint_t n) {
    ri_wr_recv_t w{};
    w.flags = F(0);
    w.id = id;
    w.sg_list = sg;
    w.num_sgls = n;
    uint_t num = 1;
    ri_err_data_t e = 0;
    return ri_srq_post(r.rnic, s->h, &w, &num, &e);
}

// ---------------------------------------------------------------------------
// CQ helpers.
// ---------------------------------------------------------------------------
inline ri_api_return_t poll_raw(Rnic &r, Cq *c, ri_wc_t *wcs, uint_t *n) {
    ri_err_data_t e = 0;
    return ri_cq_poll(r.rnic, c->h, wcs, n, &e);
}

// Waits for one completion on `c`. Returns false on timeout.
inline bool poll_one(Rnic &r, Cq *c, ri_rc_wc_t *out, std::chrono::milliseconds to = kTimeout) {
    auto deadline = Clock::now() + to;
    for (;;) {
        ri_wc_t wc;
        std::memset(&wc, 0, sizeof(wc));
        uint_t n = 1;
        ri_api_return_t rr = poll_raw(r, c, &wc, &n);
        if (rr == RI_RET_SUCCESS && n == 1) {
            *out = wc.rc_wc;
            return true;
        }
        if (rr != RI_RET_SUCCESS && rr != RI_RET_CQ_EMPTY) {
            ADD_FAILURE() << "ri_cq_poll returned " << rr;
            return false;
        }
        if (Clock::now() >= deadline) return false;
        std::this_thread::yield();
    }
}
inline ri_rc_wc_t must_poll(Rnic &r, Cq *c) {
    ri_rc_wc_t wc{};
    EXPECT_TRUE(poll_one(r, c, &wc)) << "timed out waiting for a completion";
    return wc;
}
inline std::vector<ri_rc_wc_t> poll_n(Rnic &r, Cq *c, size_t n,
                                      std::chrono::milliseconds to = kTimeout) {
    std::vector<ri_rc_wc_t> v;
    auto deadline = Clock::now() + to;
    while (v.size() < n && Clock::now() < deadline) {
        ri_rc_wc_t wc{};
        if (poll_one(r, c, &wc, std::chrono::milliseconds(50))) v.push_back(wc);
    }
    EXPECT_EQ(v.size(), n) << "completions received before timeout";
    return v;
}
// True when the CQ holds no completion right now (one poll gives CQ_EMPTY).
inline bool cq_empty(Rnic &r, Cq *c) {
    ri_wc_t wc;
    std::memset(&wc, 0, sizeof(wc));
    uint_t n = 1;
    ri_api_return_t rr = poll_raw(r, c, &wc, &n);
    if (rr == RI_RET_SUCCESS && n == 1) {
        ADD_FAILURE() << "unexpected completion: id=" << wc.rc_wc.id << " type=" << wc.rc_wc.op_type
                      << " status=" << wc.rc_wc.op_status;
        return false;
    }
    return rr == RI_RET_CQ_EMPTY;
}

// Waits (draining the event thread) until `count(pred)` reaches `n`.
template <class Fn>
inline bool wait_for(Rnic &r, Fn pred, std::chrono::milliseconds to = kTimeout) {
    auto deadline = Clock::now() + to;
    for (;;) {
        r.drain();
        if (pred()) return true;
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}
inline bool wait_event(Rnic &r, ri_async_event_type_t t, void *os,
                       std::chrono::milliseconds to = kTimeout) {
    return wait_for(
        r, [&] { return r.rec.count_events(t, os) >= 1; }, to);
}

// Expectation helper for a successful WC.
#define EXPECT_WC(wc, type_, status_, id_, bytes_)           \
    do {                                                     \
        EXPECT_EQ((wc).op_type, (type_));                    \
        EXPECT_EQ((wc).op_status, (status_));                \
        EXPECT_EQ((wc).id, uint64_t(id_));                   \
        EXPECT_EQ((wc).bytes_transferred, uint32_t(bytes_)); \
    } while (0)

// ---------------------------------------------------------------------------
// A connected pair of QPs (same or different RNIC instances) with a scratch
// 64-byte remote-readable region on B used for "sync" reads: an RDMA Read
// from A completes only after B processed every message A sent before it
// (in-order delivery on the stream), which lets a test assert that a
// receive-side CQE exists without consuming it.
// ---------------------------------------------------------------------------
struct Pair {
    Rnic &ra;
    Rnic &rb;
    Qp *a = nullptr;
    Qp *b = nullptr;
    std::unique_ptr<Buf> scratch_a, scratch_b;
    Mr *sa = nullptr, *sb = nullptr;

    Pair(Rnic &x, Rnic &y, const QpOpts &oa = {}, const QpOpts &ob = {}) : ra(x), rb(y) {
        a = ra.new_qp(oa);
        b = rb.new_qp(ob);
        scratch_a = std::make_unique<Buf>(64);
        scratch_b = std::make_unique<Buf>(64);
        sa = ra.reg(*scratch_a, kAllRemote);
        sb = rb.reg(*scratch_b, kAllRemote);
    }
    bool ok() const { return a && b && sa && sb; }
    void up() { connect(a, b); }
    // RDMA Read of 8 bytes from B's scratch region, polled on A's SQ CQ. Completions of
    // A's earlier WRs that come first are kept in `skipped` (all must be successes).
    std::vector<ri_rc_wc_t> skipped;
    void sync_ab(uint64_t id = 0xFEEDF00Dull) {
        ri_data_seg_t s = sge(scratch_a->data(), 8, sa->ltag);
        ASSERT_EQ(post_read(a, kSig, id, &s, 1, scratch_b->va(), sb->rtag), RI_RET_SUCCESS);
        for (;;) {
            ri_rc_wc_t wc{};
            ASSERT_TRUE(poll_one(ra, a->scq, &wc));
            if (wc.id != id) {
                EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS) << "earlier WR id " << wc.id;
                skipped.push_back(wc);
                continue;
            }
            ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
            ASSERT_EQ(wc.op_type, RI_WC_TYPE_RDMA_READ);
            return;
        }
    }
};

}  // namespace rt
