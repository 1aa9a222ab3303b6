// Concurrency stress over the loopback transport: bounded op counts, a global watchdog,
// every byte and every completion accounted for. Meant to be run under TSan as well.
//
// RNICPI thread model (L1316-1363): calls on different objects may run concurrently;
// the shared-CQ and SRQ scenarios run in both thread models: consumer-serialised (the
// default: posts on different QPs and the poll of their shared CQ are calls on different
// objects, so they may overlap with no locks anywhere) and provider-serialised
// (vp_locking_ops, L1356, L9012-9020).
#include "fixture.hpp"

#include <condition_variable>
#include <cstdio>

using namespace rt;

namespace {

size_t ops_per_thread() {
    if (const char *e = std::getenv("RNICPI_STRESS_OPS")) {
        long v = std::strtol(e, nullptr, 10);
        if (v > 0) return size_t(v);
    }
    return 20000;
}

// Shared stop flag + first-failure record + 60 s watchdog.
class Harness {
  public:
    explicit Harness(std::chrono::seconds limit = std::chrono::seconds(60)) {
        wd_ = std::thread([this, limit] {
            std::unique_lock<std::mutex> l(m_);
            if (!cv_.wait_for(l, limit, [this] { return done_; })) {
                fired_ = true;
                stop.store(true);
            }
        });
    }
    ~Harness() { finish(); }
    void finish() {
        {
            std::lock_guard<std::mutex> g(m_);
            done_ = true;
        }
        cv_.notify_all();
        if (wd_.joinable()) wd_.join();
    }
    void fail(const std::string &msg) {
        {
            std::lock_guard<std::mutex> g(m_);
            if (first_.empty()) first_ = msg;
            ++failures_;
        }
        stop.store(true);
    }
    bool fired() const { return fired_.load(); }
    std::string first_failure() {
        std::lock_guard<std::mutex> g(m_);
        return first_;
    }
    size_t failures() {
        std::lock_guard<std::mutex> g(m_);
        return failures_;
    }
    std::atomic<bool> stop{false};

  private:
    std::mutex m_;
    std::condition_variable cv_;
    bool done_ = false;
    std::atomic<bool> fired_{false};
    std::string first_;
    size_t failures_ = 0;
    std::thread wd_;
};

std::string fmt(const char *f, unsigned long long a = 0, unsigned long long b = 0,
                unsigned long long c = 0) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), f, a, b, c);
    return buf;
}

// Pattern of slot payloads: a function of (stream, seq).
void payload(uint8_t *p, size_t n, uint64_t stream, uint64_t seq) {
    fill_pattern(p, n, (stream << 40) ^ seq);
}

// Polls up to `max` WCs; returns the count (0 when empty), or -1 on a poll error.
int poll_some(Rnic &r, Cq *c, ri_wc_t *wcs, uint_t max) {
    uint_t n = max;
    ri_err_data_t e = 0;
    ri_api_return_t rr = ri_cq_poll(r.rnic, c->h, wcs, &n, &e);
    if (rr == RI_RET_CQ_EMPTY) return 0;
    if (rr != RI_RET_SUCCESS) return -1;
    return int(n);
}

}  // namespace

// ---------------------------------------------------------------------------
// 4 QP pairs across two instances. Per pair: a sender thread posts (unsignalled) RDMA
// Writes into a slot ring on the receiver and a Send announcing each slot; a receiver
// thread polls its CQ, checks the slot content (write-before-send ordering), reposts
// the receive and returns a credit.
// ---------------------------------------------------------------------------
TEST(RnicpiStress, PairsWriteThenSend) {
    constexpr int kPairs = 4;
    constexpr uint32_t kSlots = 32;  // receives posted == ring slots (credits)
    constexpr size_t kSlotBytes = 256;
    constexpr size_t kMsg = 16;
    constexpr uint32_t kSignalEvery = 16;
    const size_t N = ops_per_thread();

    Rnic ra("sa"), rb("sb");
    ASSERT_TRUE(ra.ok() && rb.ok());
    struct PairState {
        std::unique_ptr<Pair> p;
        std::unique_ptr<Buf> src, ring, smsg, rmsg;
        Mr *msrc = nullptr, *mring = nullptr, *msmsg = nullptr, *mrmsg = nullptr;
        std::atomic<int64_t> credits{kSlots};
        uint64_t sent = 0, received = 0, signaled_wcs = 0, expected_signaled = 0;
    };
    std::vector<std::unique_ptr<PairState>> ps;
    for (int i = 0; i < kPairs; ++i) {
        auto s = std::make_unique<PairState>();
        QpOpts oa, ob;
        oa.sq = 128;
        ob.rq = kSlots;
        s->p = std::make_unique<Pair>(ra, rb, oa, ob);
        ASSERT_TRUE(s->p->ok());
        s->src = std::make_unique<Buf>(kSlots * kSlotBytes);
        s->ring = std::make_unique<Buf>(kSlots * kSlotBytes);
        s->smsg = std::make_unique<Buf>(kSlots * kMsg);
        s->rmsg = std::make_unique<Buf>(kSlots * kMsg);
        s->msrc = ra.reg(*s->src, kLocalRW);
        s->msmsg = ra.reg(*s->smsg, kLocalRW);
        s->mring = rb.reg(*s->ring, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
        s->mrmsg = rb.reg(*s->rmsg, kLocalRW);
        ASSERT_TRUE(s->msrc && s->msmsg && s->mring && s->mrmsg);
        for (uint32_t j = 0; j < kSlots; ++j) {
            ri_data_seg_t rs = sge(s->rmsg->data() + j * kMsg, kMsg, s->mrmsg->ltag);
            ASSERT_EQ(post_recv(s->p->b, j, &rs, 1), RI_RET_SUCCESS);
        }
        ASSERT_NO_FATAL_FAILURE(s->p->up());
        ps.push_back(std::move(s));
    }

    Harness h;
    auto sender = [&](int pi) {
        PairState &s = *ps[pi];
        Qp *qa = s.p->a;
        ri_wc_t wcs[16];
        auto reap = [&]() -> bool {
            int n = poll_some(ra, qa->scq, wcs, 16);
            if (n < 0) {
                h.fail("sender poll error");
                return false;
            }
            for (int k = 0; k < n; ++k) {
                const ri_rc_wc_t &w = wcs[k].rc_wc;
                if (w.op_status != RI_WC_STATUS_SUCCESS || w.op_type != RI_WC_TYPE_SEND ||
                    w.qp_os_data != qa->os()) {
                    h.fail(fmt("sender %llu: bad WC status %llu type %llu", pi, w.op_status,
                               w.op_type));
                    return false;
                }
                ++s.signaled_wcs;
            }
            return true;
        };
        for (uint64_t i = 0; i < N && !h.stop.load(); ++i) {
            while (s.credits.load(std::memory_order_acquire) <= 0) {
                if (h.stop.load()) return;
                if (!reap()) return;
                std::this_thread::yield();
            }
            s.credits.fetch_sub(1, std::memory_order_acq_rel);
            uint32_t slot = uint32_t(i % kSlots);
            uint8_t *sp = s.src->data() + slot * kSlotBytes;
            payload(sp, kSlotBytes, pi, i);
            uint8_t *mp = s.smsg->data() + slot * kMsg;
            uint64_t hdr[2] = {i, 0x5EED0000ull + uint64_t(pi)};
            std::memcpy(mp, hdr, kMsg);
            ri_data_seg_t ws = sge(sp, kSlotBytes, s.msrc->ltag);
            ri_data_seg_t ms = sge(mp, kMsg, s.msmsg->ltag);
            bool sig = (i % kSignalEvery) == kSignalEvery - 1 || i == N - 1;
            ri_wr_t w[2] = {write_wr(RI_WR_TYPE_RDMA_WRITE, 0, i * 2, &ws, 1,
                                     s.ring->va() + slot * kSlotBytes, s.mring->rtag),
                            send_wr(RI_WR_TYPE_SEND, sig ? kSig : 0, i * 2 + 1, &ms, 1)};
            uint_t done = 0;
            while (done < 2) {
                uint_t n = 2 - done;
                ri_api_return_t rr = post_wr(qa, w + done, n, &n);
                done += n;
                if (rr == RI_RET_QP_CAPACITY_EXCEEDED) {
                    if (!reap()) return;
                    if (h.stop.load()) return;
                    std::this_thread::yield();
                    continue;
                }
                if (rr != RI_RET_SUCCESS) {
                    h.fail(fmt("sender %llu: post returned %llu at op %llu", pi, rr, i));
                    return;
                }
            }
            if (sig) ++s.expected_signaled;
            ++s.sent;
            if (!reap()) return;
        }
        while (s.signaled_wcs < s.expected_signaled && !h.stop.load()) {
            if (!reap()) return;
            std::this_thread::yield();
        }
    };
    auto receiver = [&](int pi) {
        PairState &s = *ps[pi];
        Qp *qb = s.p->b;
        ri_wc_t wcs[16];
        std::vector<uint8_t> want(kSlotBytes);
        while (s.received < N && !h.stop.load()) {
            int n = poll_some(rb, qb->rcq, wcs, 16);
            if (n < 0) {
                h.fail("receiver poll error");
                return;
            }
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            for (int k = 0; k < n; ++k) {
                const ri_rc_wc_t &w = wcs[k].rc_wc;
                if (w.op_status != RI_WC_STATUS_SUCCESS || w.op_type != RI_WC_TYPE_DATA_RECEIVED ||
                    w.bytes_transferred != kMsg || w.id >= kSlots || w.qp_os_data != qb->os()) {
                    h.fail(fmt("receiver %llu: bad WC status %llu id %llu", pi, w.op_status, w.id));
                    return;
                }
                uint64_t hdr[2];
                std::memcpy(hdr, s.rmsg->data() + w.id * kMsg, kMsg);
                if (hdr[0] != s.received || hdr[1] != 0x5EED0000ull + uint64_t(pi)) {
                    h.fail(
                        fmt("receiver %llu: got seq %llu, expected %llu", pi, hdr[0], s.received));
                    return;
                }
                uint32_t slot = uint32_t(hdr[0] % kSlots);
                payload(want.data(), kSlotBytes, pi, hdr[0]);
                if (std::memcmp(s.ring->data() + slot * kSlotBytes, want.data(), kSlotBytes) != 0) {
                    h.fail(fmt("receiver %llu: slot data of seq %llu not visible at the send", pi,
                               hdr[0]));
                    return;
                }
                ++s.received;
                ri_data_seg_t rs = sge(s.rmsg->data() + w.id * kMsg, kMsg, s.mrmsg->ltag);
                if (post_recv(qb, w.id, &rs, 1) != RI_RET_SUCCESS) {
                    h.fail("receiver: repost failed");
                    return;
                }
                s.credits.fetch_add(1, std::memory_order_acq_rel);
            }
        }
    };
    std::vector<std::thread> th;
    for (int i = 0; i < kPairs; ++i) {
        th.emplace_back(sender, i);
        th.emplace_back(receiver, i);
    }
    for (auto &t : th)
        t.join();
    h.finish();
    EXPECT_FALSE(h.fired()) << "watchdog: not finished within 60 s";
    EXPECT_EQ(h.failures(), 0u) << h.first_failure();
    for (int i = 0; i < kPairs; ++i) {
        PairState &s = *ps[i];
        EXPECT_EQ(s.sent, N) << "pair " << i;
        EXPECT_EQ(s.received, N) << "pair " << i;
        EXPECT_EQ(s.signaled_wcs, s.expected_signaled) << "pair " << i;
        EXPECT_TRUE(cq_empty(ra, s.p->a->scq));
        EXPECT_TRUE(cq_empty(rb, s.p->b->rcq));
        EXPECT_EQ(state_of(s.p->a), RI_QP_STATE_READY_TO_SEND);
        EXPECT_EQ(state_of(s.p->b), RI_QP_STATE_READY_TO_SEND);
        EXPECT_TRUE(s.ring->guards_intact());
        EXPECT_TRUE(s.rmsg->guards_intact());
    }
    ra.drain();
    rb.drain();
    EXPECT_TRUE(ra.rec.events().empty()) << ra.rec.describe_events();
    EXPECT_TRUE(rb.rec.events().empty()) << rb.rec.describe_events();
}

// ---------------------------------------------------------------------------
// One CQ shared by 4 QPs; 4 threads post signalled RDMA Writes on their own QP while a
// single thread polls the shared CQ. Per-QP completion order and exact counts are
// checked, and every written byte is verified at the end.
// ---------------------------------------------------------------------------
void shared_cq_many_posters(softrnic_vp_view_t view) {
    constexpr int kQps = 4;
    constexpr size_t kLen = 64;
    const size_t N = ops_per_thread();

    Rnic ra("ca", view), rb("cb", view);
    ASSERT_TRUE(ra.ok() && rb.ok());
    Cq *shared = ra.new_cq(uint32_t(std::min<size_t>(ra.attr().max_cqes_per_cq, 4 * 128 + 64)));
    ASSERT_NE(shared, nullptr);
    struct QpState {
        std::unique_ptr<Pair> p;
        std::unique_ptr<Buf> src, dst;
        Mr *ms = nullptr, *md = nullptr;
        std::atomic<uint64_t> completed{0};
        uint64_t posted = 0;
        uint64_t next_id = 0;  // poller-owned
    };
    std::vector<std::unique_ptr<QpState>> qs;
    for (int i = 0; i < kQps; ++i) {
        auto s = std::make_unique<QpState>();
        QpOpts oa;
        oa.sq = 128;
        oa.scq = shared;
        s->p = std::make_unique<Pair>(ra, rb, oa);
        ASSERT_TRUE(s->p->ok());
        s->src = std::make_unique<Buf>(N * kLen);
        s->dst = std::make_unique<Buf>(N * kLen);
        for (size_t k = 0; k < N; ++k)
            payload(s->src->data() + k * kLen, kLen, 100 + i, k);
        s->ms = ra.reg(*s->src, kLocalRW);
        s->md = rb.reg(*s->dst, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
        ASSERT_TRUE(s->ms && s->md);
        ASSERT_NO_FATAL_FAILURE(s->p->up());
        qs.push_back(std::move(s));
    }
    const uint32_t sq = qs[0]->p->a->attr.sq_size;

    Harness h;
    auto poster = [&](int qi) {
        QpState &s = *qs[qi];
        Qp *q = s.p->a;
        for (uint64_t i = 0; i < N && !h.stop.load(); ++i) {
            while (s.posted - s.completed.load(std::memory_order_acquire) >= sq) {
                if (h.stop.load()) return;
                std::this_thread::yield();
            }
            ri_data_seg_t ws = sge(s.src->data() + i * kLen, kLen, s.ms->ltag);
            for (;;) {
                ri_api_return_t rr =
                    post_write(q, kSig, i, &ws, 1, s.dst->va() + i * kLen, s.md->rtag);
                if (rr == RI_RET_SUCCESS) break;
                if (rr != RI_RET_QP_CAPACITY_EXCEEDED) {
                    h.fail(fmt("poster %llu: post returned %llu at %llu", qi, rr, i));
                    return;
                }
                if (h.stop.load()) return;
                std::this_thread::yield();
            }
            ++s.posted;
        }
    };
    std::atomic<uint64_t> total{0};
    auto poller = [&] {
        ri_wc_t wcs[32];
        while (total.load() < kQps * N && !h.stop.load()) {
            int n = poll_some(ra, shared, wcs, 32);
            if (n < 0) {
                h.fail("poller: poll error");
                return;
            }
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            for (int k = 0; k < n; ++k) {
                const ri_rc_wc_t &w = wcs[k].rc_wc;
                int qi = -1;
                for (int j = 0; j < kQps; ++j)
                    if (w.qp_os_data == qs[j]->p->a->os()) qi = j;
                if (qi < 0 || w.op_status != RI_WC_STATUS_SUCCESS ||
                    w.op_type != RI_WC_TYPE_RDMA_WRITE || w.bytes_transferred != kLen ||
                    w.cq_os_data != shared->os()) {
                    h.fail(fmt("poller: bad WC qp %llu status %llu type %llu", uint64_t(qi + 1),
                               w.op_status, w.op_type));
                    return;
                }
                QpState &s = *qs[qi];
                if (w.id != s.next_id) {
                    h.fail(fmt("poller: QP %llu completion id %llu, expected %llu", qi, w.id,
                               s.next_id));
                    return;
                }
                ++s.next_id;
                s.completed.fetch_add(1, std::memory_order_acq_rel);
                total.fetch_add(1);
            }
        }
    };
    std::vector<std::thread> th;
    th.emplace_back(poller);
    for (int i = 0; i < kQps; ++i)
        th.emplace_back(poster, i);
    for (auto &t : th)
        t.join();
    h.finish();
    EXPECT_FALSE(h.fired()) << "watchdog: not finished within 60 s";
    EXPECT_EQ(h.failures(), 0u) << h.first_failure();
    EXPECT_EQ(total.load(), kQps * N);
    for (int i = 0; i < kQps; ++i) {
        QpState &s = *qs[i];
        EXPECT_EQ(s.posted, N);
        EXPECT_EQ(s.completed.load(), N);
        EXPECT_EQ(first_diff(s.dst->data(), s.src->data(), N * kLen), SIZE_MAX) << "QP " << i;
        EXPECT_TRUE(s.dst->guards_intact());
    }
    EXPECT_TRUE(cq_empty(ra, shared));
}

// ---------------------------------------------------------------------------
// One SRQ shared by 3 QPs (one receive CQ); 3 sender threads on the peer QPs send
// concurrently, one thread polls the receive CQ and reposts to the SRQ. Credits bound
// the sends by the receives posted, so no send can find the SRQ empty.
// ---------------------------------------------------------------------------
void srq_shared_by_concurrent_senders(softrnic_vp_view_t view) {
    constexpr int kQps = 3;
    constexpr uint32_t kBufs = 96;
    constexpr size_t kMsg = 48;
    constexpr uint32_t kSignalEvery = 8;
    const size_t N = ops_per_thread();

    Rnic ra("qa", view), rb("qb", view);
    ASSERT_TRUE(ra.ok() && rb.ok());
    ASSERT_GT(rb.attr().max_srq, 0u);
    Srq *srq = rb.new_srq(kBufs, 1);
    ASSERT_NE(srq, nullptr);
    Cq *rcq = rb.new_cq(uint32_t(std::min<size_t>(rb.attr().max_cqes_per_cq, kBufs * 2)));
    ASSERT_NE(rcq, nullptr);
    Buf rbufs(kBufs * kMsg);
    Mr *mrb = rb.reg(rbufs, kLocalRW);
    ASSERT_NE(mrb, nullptr);
    for (uint32_t j = 0; j < kBufs; ++j) {
        ri_data_seg_t rs = sge(rbufs.data() + j * kMsg, kMsg, mrb->ltag);
        ASSERT_EQ(post_srq_recv(rb, srq, j, &rs, 1), RI_RET_SUCCESS);
    }
    struct SenderState {
        std::unique_ptr<Pair> p;
        std::unique_ptr<Buf> src;
        Mr *ms = nullptr;
        uint32_t ring = 0;  // source slots: actual sq_size + kSignalEvery
        uint64_t sent = 0, wcs = 0, expected_wcs = 0;
        uint64_t next_seq = 0;  // receiver-owned
        uint64_t got = 0;       // receiver-owned
    };
    std::vector<std::unique_ptr<SenderState>> ss;
    for (int i = 0; i < kQps; ++i) {
        auto s = std::make_unique<SenderState>();
        QpOpts oa, ob;
        oa.sq = 64;
        ob.srq = srq;
        ob.rcq = rcq;
        s->p = std::make_unique<Pair>(ra, rb, oa, ob);
        ASSERT_TRUE(s->p->ok());
        s->ring = s->p->a->attr.sq_size + kSignalEvery;
        s->src = std::make_unique<Buf>(s->ring * kMsg);
        s->ms = ra.reg(*s->src, kLocalRW);
        ASSERT_NE(s->ms, nullptr);
        ASSERT_NO_FATAL_FAILURE(s->p->up());
        ss.push_back(std::move(s));
    }
    std::atomic<int64_t> credits{kBufs};
    Harness h;
    auto sender = [&](int si) {
        SenderState &s = *ss[si];
        Qp *q = s.p->a;
        ri_wc_t wcs[16];
        auto reap = [&]() -> bool {
            int n = poll_some(ra, q->scq, wcs, 16);
            if (n < 0) {
                h.fail("sender poll error");
                return false;
            }
            for (int k = 0; k < n; ++k) {
                if (wcs[k].rc_wc.op_status != RI_WC_STATUS_SUCCESS) {
                    h.fail(fmt("sender %llu: WC status %llu", si, wcs[k].rc_wc.op_status));
                    return false;
                }
                ++s.wcs;
            }
            return true;
        };
        for (uint64_t i = 0; i < N && !h.stop.load(); ++i) {
            for (;;) {
                int64_t c = credits.load(std::memory_order_acquire);
                if (c > 0 && credits.compare_exchange_weak(c, c - 1, std::memory_order_acq_rel))
                    break;
                if (h.stop.load()) return;
                if (!reap()) return;
                std::this_thread::yield();
            }
            // A source slot is reused after sq_size + kSignalEvery sends: by then the SQ
            // bound (slots freed only by polled signalled WCs) says the WR is finished.
            uint8_t *p = s.src->data() + (i % s.ring) * kMsg;
            payload(p, kMsg, 200 + si, i);
            uint64_t hdr[2] = {uint64_t(si), i};
            std::memcpy(p, hdr, 16);
            ri_data_seg_t ds = sge(p, kMsg, s.ms->ltag);
            bool sig = (i % kSignalEvery) == kSignalEvery - 1 || i == N - 1;
            for (;;) {
                ri_api_return_t rr = post_send(q, RI_WR_TYPE_SEND, sig ? kSig : 0, i, &ds, 1);
                if (rr == RI_RET_SUCCESS) break;
                if (rr != RI_RET_QP_CAPACITY_EXCEEDED) {
                    h.fail(fmt("sender %llu: post returned %llu", si, rr));
                    return;
                }
                if (!reap()) return;
                if (h.stop.load()) return;
                std::this_thread::yield();
            }
            if (sig) ++s.expected_wcs;
            ++s.sent;
            if (!reap()) return;
        }
        while (s.wcs < s.expected_wcs && !h.stop.load()) {
            if (!reap()) return;
            std::this_thread::yield();
        }
    };
    uint64_t received = 0;
    auto receiver = [&] {
        ri_wc_t wcs[32];
        std::vector<uint8_t> want(kMsg);
        while (received < kQps * N && !h.stop.load()) {
            int n = poll_some(rb, rcq, wcs, 32);
            if (n < 0) {
                h.fail("receiver poll error");
                return;
            }
            if (n == 0) {
                std::this_thread::yield();
                continue;
            }
            for (int k = 0; k < n; ++k) {
                const ri_rc_wc_t &w = wcs[k].rc_wc;
                if (w.op_status != RI_WC_STATUS_SUCCESS || w.op_type != RI_WC_TYPE_DATA_RECEIVED ||
                    w.bytes_transferred != kMsg || w.id >= kBufs || w.cq_os_data != rcq->os()) {
                    h.fail(fmt("receiver: bad WC status %llu type %llu id %llu", w.op_status,
                               w.op_type, w.id));
                    return;
                }
                const uint8_t *m = rbufs.data() + w.id * kMsg;
                uint64_t hdr[2];
                std::memcpy(hdr, m, 16);
                if (hdr[0] >= uint64_t(kQps) || w.qp_os_data != ss[hdr[0]]->p->b->os()) {
                    h.fail(
                        fmt("receiver: message from sender %llu arrived on the wrong QP", hdr[0]));
                    return;
                }
                SenderState &s = *ss[hdr[0]];
                if (hdr[1] != s.next_seq) {
                    h.fail(fmt("receiver: sender %llu seq %llu, expected %llu", hdr[0], hdr[1],
                               s.next_seq));
                    return;
                }
                payload(want.data(), kMsg, 200 + hdr[0], hdr[1]);
                std::memcpy(want.data(), hdr, 16);
                if (std::memcmp(m, want.data(), kMsg) != 0) {
                    h.fail(fmt("receiver: payload mismatch sender %llu seq %llu", hdr[0], hdr[1]));
                    return;
                }
                ++s.next_seq;
                ++s.got;
                ++received;
                ri_data_seg_t rs = sge(rbufs.data() + w.id * kMsg, kMsg, mrb->ltag);
                if (ri_api_return_t rr = post_srq_recv(rb, srq, w.id, &rs, 1);
                    rr != RI_RET_SUCCESS) {
                    h.fail(fmt("receiver: SRQ repost failed with %llu", rr));
                    return;
                }
                credits.fetch_add(1, std::memory_order_acq_rel);
            }
        }
    };
    std::vector<std::thread> th;
    th.emplace_back(receiver);
    for (int i = 0; i < kQps; ++i)
        th.emplace_back(sender, i);
    for (auto &t : th)
        t.join();
    h.finish();
    EXPECT_FALSE(h.fired()) << "watchdog: not finished within 60 s";
    EXPECT_EQ(h.failures(), 0u) << h.first_failure();
    EXPECT_EQ(received, kQps * N);
    for (int i = 0; i < kQps; ++i) {
        EXPECT_EQ(ss[i]->sent, N);
        EXPECT_EQ(ss[i]->got, N);
        EXPECT_EQ(ss[i]->wcs, ss[i]->expected_wcs);
        EXPECT_EQ(state_of(ss[i]->p->b), RI_QP_STATE_READY_TO_SEND);
    }
    EXPECT_TRUE(cq_empty(rb, rcq));
    EXPECT_TRUE(rbufs.guards_intact());
    rb.drain();
    EXPECT_TRUE(rb.rec.events().empty()) << rb.rec.describe_events();
}

TEST(RnicpiStress, SharedCqManyPosters) {
    shared_cq_many_posters(SOFTRNIC_VIEW_PRIVILEGED);
}
TEST(RnicpiStress, SharedCqManyPostersVpLocking) {
    shared_cq_many_posters(SOFTRNIC_VIEW_PRIVILEGED_VP_LOCKING);
}
TEST(RnicpiStress, SrqSharedByConcurrentSenders) {
    srq_shared_by_concurrent_senders(SOFTRNIC_VIEW_PRIVILEGED);
}
TEST(RnicpiStress, SrqSharedByConcurrentSendersVpLocking) {
    srq_shared_by_concurrent_senders(SOFTRNIC_VIEW_PRIVILEGED_VP_LOCKING);
}
