// Regressions from a review of the engine: each test reproduces one defect that was found
// (a hang, an overflow, a privilege escalation over read-only memory, a deadlock, a stuck
// send queue, a lost race) and fails on the code before its fix.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "fixture.hpp"

using namespace rt;

namespace {

ri_err_data_t err = 0;

// A send with invalidate naming the sender's own source region (same instance, same PD):
// the responder's invalidation used to wait for the STag's users, among them the very
// thread that was delivering the send. It must complete, and invalidate the region.
TEST(RnicpiRegression, SendInvalidateOfTheSendersOwnSourceDoesNotHang) {
    Rnic r("inv-own");
    ASSERT_TRUE(r.ok());
    Pair p(r, r);
    ASSERT_TRUE(p.ok());
    Buf src(64), dst(64);
    src.fill(0x11);
    Mr *ms = r.reg(src, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    Mr *md = r.reg(dst, kLocalRW);
    ASSERT_TRUE(ms && md);
    ri_data_seg_t rs = sge(dst.data(), 64, md->ltag);
    ASSERT_EQ(post_recv(p.b, 1, &rs, 1), RI_RET_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(p.up());
    ri_data_seg_t ss = sge(src.data(), 64, ms->ltag);
    ASSERT_EQ(post_send(p.a, RI_WR_TYPE_SEND_INVALIDATE, kSig, 2, &ss, 1, ms->rtag),
              RI_RET_SUCCESS);
    ri_rc_wc_t sw = must_poll(r, p.a->scq), rw = must_poll(r, p.b->rcq);
    EXPECT_EQ(sw.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rw.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rw.invalidated_rtag, ms->rtag);
    EXPECT_EQ(std::memcmp(dst.data(), src.data(), 64), 0);
    ri_mr_info_t info{};
    ASSERT_EQ(ri_mr_query(r.rnic, ms->h, &info, &err), RI_RET_SUCCESS);
    EXPECT_EQ(info.stag_state, RI_STAG_STATE_INVALID);
}

// address_offset + length used to wrap, registering a region of length 2^64-1 that a peer
// could then read the whole address space through.
TEST(RnicpiRegression, PhysicalRegistrationLengthCannotWrap) {
    Rnic r("phys-wrap");
    ASSERT_TRUE(r.ok());
    Buf page(8192);
    ri_phys_addr_t pg = (reinterpret_cast<uintptr_t>(page.data()) + 4095) & ~uintptr_t{4095};
    ri_mr_reg_phys_attr_t a{};
    a.common.va = 0;
    a.common.length = ~uint64_t{0};
    a.common.mem_attr = MA(kLocalRW | RI_MEM_FLAGS_REMOTE_READ | RI_MEM_FLAGS_ZBVA);
    a.common.pd = r.default_pd->h;
    a.phys_buf_list = &pg;
    a.nbufs = 1;
    a.pble_size = 4096;
    a.address_offset = 1;
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t lt = 0;
    ri_rtag_t rt = 0;
    EXPECT_EQ(ri_mr_reg_phys(r.rnic, &a, &mr, &lt, &rt, nullptr, nullptr, &err),
              RI_RET_MEM_INVALID_LENGTH);
    a.common.length = 4095;  // exactly what is left after the offset
    ASSERT_EQ(ri_mr_reg_phys(r.rnic, &a, &mr, &lt, &rt, nullptr, nullptr, &err), RI_RET_SUCCESS);
    r.adopt_mr(mr, lt, rt);
}

// The same overflow through fast-register: the WR must fail, not register 2^64-1 bytes.
TEST(RnicpiRegression, FastRegisterLengthCannotWrap) {
    Rnic r("fmr-wrap");
    ASSERT_TRUE(r.ok());
    QpOpts o;
    o.fastreg = true;
    Pair p(r, r, o);
    ASSERT_TRUE(p.ok());
    ASSERT_NO_FATAL_FAILURE(p.up());
    uint_t pbl = 4;
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t lt = 0x07;
    ri_rtag_t rt = 0;
    ASSERT_EQ(ri_ltag_alloc(r.rnic, &pbl, r.default_pd->h, MA(kLocalRW | RI_MEM_FLAGS_REMOTE_READ),
                            &mr, &lt, &rt, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    r.adopt_mr(mr, lt, rt);
    Buf page(8192);
    ri_phys_addr_t pg = (reinterpret_cast<uintptr_t>(page.data()) + 4095) & ~uintptr_t{4095};
    ri_wr_t w;
    std::memset(&w, 0, sizeof w);
    w.wr_fmr.type = RI_WR_TYPE_FAST_REGISTER;
    w.wr_fmr.flags = F(kSig);
    w.wr_fmr.id = 5;
    w.wr_fmr.attr.common.length = ~uint64_t{0};
    w.wr_fmr.attr.common.mem_attr = MA(kLocalRW | RI_MEM_FLAGS_ZBVA);
    w.wr_fmr.attr.common.pd = r.default_pd->h;
    w.wr_fmr.attr.phys_buf_list = &pg;
    w.wr_fmr.attr.nbufs = 1;
    w.wr_fmr.attr.pble_size = 4096;
    w.wr_fmr.attr.address_offset = 1;
    w.wr_fmr.ltag = (lt & ~0xFFu) | 0x42;
    w.wr_fmr.mr_handle = mr;
    ASSERT_EQ(post_wr(p.a, &w), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(r, p.a->scq);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_INVALID_FMR_LENGTH_ERROR);
}

// Read-only memory must never become writable through rereg (access only), reg_shared or
// a memory window: each used to hand a peer write or atomic access to a PROT_READ page,
// and the peer's write then crashed this process.
class ReadOnlyPage : public ::testing::Test {
  protected:
    void SetUp() override {
        long ps = sysconf(_SC_PAGESIZE);
        len = static_cast<size_t>(ps);
        page = mmap(nullptr, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(page, MAP_FAILED);
    }
    void TearDown() override { munmap(page, len); }
    void *page = nullptr;
    size_t len = 0;
};

TEST_F(ReadOnlyPage, RegisterForWriteIsRefused) {
    Rnic r("ro-reg");
    ASSERT_TRUE(r.ok());
    ri_mr_reg_attr_t a{reinterpret_cast<uintptr_t>(page), len,
                       MA(kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE), r.default_pd->h};
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t lt = 0;
    ri_rtag_t rt = 0;
    EXPECT_EQ(ri_mr_reg(r.rnic, &a, &mr, &lt, &rt, nullptr, nullptr, &err),
              RI_RET_MEM_INVALID_ADDRESS);
}

TEST_F(ReadOnlyPage, ReregAccessUpgradeIsRefused) {
    Rnic r("ro-rereg");
    ASSERT_TRUE(r.ok());
    Mr *m = r.reg(page, len, RI_MEM_FLAGS_LOCAL_READ | RI_MEM_FLAGS_REMOTE_READ);
    ASSERT_NE(m, nullptr);
    ri_mr_reg_attr_t na{};
    na.mem_attr = MA(kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ri_mr_handle_t out = nullptr;
    ri_ltag_t lt = m->ltag;
    ri_rtag_t rt = 0;
    EXPECT_EQ(
        ri_mr_rereg(r.rnic, m->h, RI_MR_REREG_ACCESS, &na, &out, &lt, &rt, nullptr, nullptr, &err),
        RI_RET_MEM_INVALID_ACCESS);
    r.forget(m);  // a failed rereg frees the region (L3787-3788)
    ri_mr_info_t info{};
    EXPECT_EQ(ri_mr_query(r.rnic, m->h, &info, &err), RI_RET_MR_INVALID_HANDLE);
}

TEST_F(ReadOnlyPage, SharedRegistrationWithWriteIsRefused) {
    Rnic r("ro-shared");
    ASSERT_TRUE(r.ok());
    Mr *m = r.reg(page, len, RI_MEM_FLAGS_LOCAL_READ);
    ASSERT_NE(m, nullptr);
    ri_mr_reg_attr_t na{reinterpret_cast<uintptr_t>(page), 0,
                        MA(kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE), r.default_pd->h};
    ri_mr_handle_t out = nullptr;
    ri_ltag_t lt = 0;
    ri_rtag_t rt = 0;
    EXPECT_EQ(ri_mr_reg_shared(r.rnic, m->h, &na, &out, &lt, &rt, nullptr, nullptr, &err),
              RI_RET_MEM_INVALID_ACCESS);
}

TEST_F(ReadOnlyPage, WindowCannotGrantAtomicsOverARegionWithoutLocalWrite) {
    Rnic r("ro-bind");
    ASSERT_TRUE(r.ok());
    QpOpts o;
    o.bind = true;
    Pair p(r, r, o, o);
    ASSERT_TRUE(p.ok());
    ASSERT_NO_FATAL_FAILURE(p.up());
    Mr *m = r.reg(page, len, RI_MEM_FLAGS_LOCAL_READ | RI_MEM_FLAGS_BINDING);
    ASSERT_NE(m, nullptr);
    Mw *w = r.new_mw(RI_MW_TYPE_2);
    ASSERT_NE(w, nullptr);
    ri_wr_t b;
    std::memset(&b, 0, sizeof b);
    b.wr_bind.type = RI_WR_TYPE_BIND;
    b.wr_bind.flags = F(kSig);
    b.wr_bind.id = 9;
    b.wr_bind.mw_handle = w->h;
    b.wr_bind.rtag = w->rtag;
    b.wr_bind.mr_handle = m->h;
    b.wr_bind.ltag = m->ltag;
    b.wr_bind.vaddr = reinterpret_cast<uintptr_t>(page);
    b.wr_bind.length = 8;
    b.wr_bind.mem_attr = MA(RI_MEM_FLAGS_ATOMICS);
    ASSERT_EQ(post_wr(p.a, &b), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(r, p.a->scq);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_INVALID_BIND_MR_ERROR);
}

// Provider-serialised view: destroying a CQ drained the event thread while holding the
// handle's lock, so a CQ handler polling through the same handle deadlocked.
std::atomic<bool> g_destroying{false};
std::atomic<int> g_polls{0};
ri_rnic_handle_t g_rnic = nullptr;
ri_cq_handle_t g_cq = nullptr;
void polling_handler(ri_os_data_t, ri_os_data_t) {
    for (int i = 0; i < 2000 && !g_destroying.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the destroy is waiting now
    ri_wc_t wc[4];
    uint_t n = 4;
    ri_err_data_t e = 0;
    ri_cq_poll(g_rnic, g_cq, wc, &n, &e);  // takes the handle's lock
    g_polls.fetch_add(1);
}

TEST(RnicpiRegression, DestroyDoesNotDeadlockWithAHandlerUsingTheSameHandle) {
    Rnic r("vp-lock", SOFTRNIC_VIEW_PRIVILEGED_VP_LOCKING);
    ASSERT_TRUE(r.ok());
    ri_cq_event_handler_id_t id = 0;
    ASSERT_EQ(ri_cq_set_event_handler(r.vp, &id, polling_handler, &err), RI_RET_SUCCESS);
    ri_cq_attr_t ca{16, id};
    ASSERT_EQ(ri_cq_create(r.rnic, &ca, &g_cq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    g_rnic = r.rnic;
    Cq *other = r.new_cq(16, false);
    ASSERT_NE(other, nullptr);
    QpOpts o;
    Cq wrapped;
    wrapped.h = g_cq;
    o.scq = &wrapped;
    Pair p(r, r, o);
    ASSERT_TRUE(p.ok());
    ASSERT_NO_FATAL_FAILURE(p.up());
    ASSERT_EQ(ri_cq_req_notification(r.rnic, g_cq, RI_CMPLT_NOTIFY_ANY, &err), RI_RET_SUCCESS);
    Buf src(8);
    Mr *ms = r.reg(src, kLocalRW);
    Buf dst(8);
    Mr *md = r.reg(dst, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_TRUE(ms && md);
    ri_data_seg_t s = sge(src.data(), 8, ms->ltag);
    ASSERT_EQ(post_write(p.a, kSig, 1, &s, 1, md->va, md->rtag), RI_RET_SUCCESS);  // fires
    g_destroying.store(true);
    EXPECT_EQ(r.destroy(other), RI_RET_SUCCESS);  // drains: the handler must get the lock
    EXPECT_EQ(g_polls.load(), 1);
    EXPECT_EQ(r.destroy(p.a), RI_RET_SUCCESS);
    EXPECT_EQ(ri_cq_destroy(r.rnic, g_cq, &err), RI_RET_SUCCESS);
}

// A QP reusing the slot of a QP that was reset twice inherited an incarnation number the
// old QP had used, so the old QP's unpolled completions retired the new QP's send queue
// past its head and every post failed with QP_CAPACITY_EXCEEDED.
TEST(RnicpiRegression, StaleCompletionsDoNotBlockANewQpInTheSameSlot) {
    Rnic r("stale-sq");
    ASSERT_TRUE(r.ok());
    Cq *cq = r.new_cq(64, false);
    ASSERT_NE(cq, nullptr);
    QpOpts o;
    o.scq = cq;
    o.rcq = cq;
    o.sq = 8;
    Qp *a = r.new_qp(o);
    ASSERT_NE(a, nullptr);
    Buf src(8);
    Mr *ms = r.reg(src, kLocalRW);
    ri_data_seg_t s = sge(src.data(), 8, ms->ltag);
    ASSERT_EQ(modify_state(a, RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    ASSERT_EQ(modify_state(a, RI_QP_STATE_IDLE), RI_RET_SUCCESS);
    ASSERT_EQ(modify_state(a, RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    for (int i = 0; i < 5; ++i)
        ASSERT_EQ(post_send(a, RI_WR_TYPE_SEND, kSig, i, &s, 1), RI_RET_SUCCESS);
    ASSERT_EQ(modify_state(a, RI_QP_STATE_IDLE), RI_RET_SUCCESS);
    ASSERT_EQ(r.destroy(a), RI_RET_SUCCESS);
    Qp *b = r.new_qp(o);  // takes the freed slot
    ASSERT_NE(b, nullptr);
    auto stale = poll_n(r, cq, 5);  // the old QP's flushed completions, polled now
    EXPECT_EQ(stale.size(), 5u);
    ASSERT_EQ(modify_state(b, RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    EXPECT_EQ(post_send(b, RI_WR_TYPE_SEND, kSig, 77, &s, 1), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(r, cq);
    EXPECT_EQ(wc.id, 77u);
}

// A bind racing a dereg of its region: either the dereg sees the window (WINDOWS_BOUND) or
// the bind fails; never a successful dereg with a valid window left over freed memory.
TEST(RnicpiRegression, BindRacingDeregNeverLeavesAWindowOverAFreedRegion) {
    Rnic r("bind-race");
    ASSERT_TRUE(r.ok());
    QpOpts o;
    o.bind = true;
    Pair p(r, r, o, o);
    ASSERT_TRUE(p.ok());
    ASSERT_NO_FATAL_FAILURE(p.up());
    Buf mem(4096);
    Mw *w = r.new_mw(RI_MW_TYPE_1);
    ASSERT_NE(w, nullptr);
    int both_succeeded = 0, rounds = 3000;
    for (int i = 0; i < rounds; ++i) {
        ri_mr_reg_attr_t a{reinterpret_cast<uintptr_t>(mem.data()), mem.size(),
                           MA(kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_BINDING),
                           r.default_pd->h};
        ri_mr_handle_t mr = nullptr;
        ri_ltag_t lt = 0;
        ri_rtag_t rt = 0;
        ASSERT_EQ(ri_mr_reg(r.rnic, &a, &mr, &lt, &rt, nullptr, nullptr, &err), RI_RET_SUCCESS);
        std::atomic<bool> go{false};
        ri_api_return_t dereg_rc = RI_RET_FAIL;
        std::thread t([&] {
            while (!go.load()) {
            }
            ri_err_data_t e = 0;
            dereg_rc = ri_mr_dereg(r.rnic, mr, &e);
        });
        ri_wr_t b;
        std::memset(&b, 0, sizeof b);
        b.wr_bind.type = RI_WR_TYPE_BIND;
        b.wr_bind.flags = F(kSig);
        b.wr_bind.id = uint64_t(i);
        b.wr_bind.mw_handle = w->h;
        b.wr_bind.rtag = w->rtag;
        b.wr_bind.mr_handle = mr;
        b.wr_bind.ltag = lt;
        b.wr_bind.vaddr = a.va;
        b.wr_bind.length = 64;
        b.wr_bind.mem_attr = MA(RI_MEM_FLAGS_REMOTE_WRITE);
        go.store(true);
        ri_api_return_t pr = post_wr(p.a, &b);
        t.join();
        bool bound = false;
        if (pr == RI_RET_SUCCESS) {
            ri_rc_wc_t wc = must_poll(r, p.a->scq);
            bound = wc.op_status == RI_WC_STATUS_SUCCESS;
            if (!bound) break;  // the QP is in Error now; the invariant held so far
        }
        if (dereg_rc == RI_RET_SUCCESS && bound) {
            ri_stag_state_t st = RI_STAG_STATE_INVALID;
            ASSERT_EQ(ri_mw_query(r.rnic, w->h, nullptr, &st, nullptr, nullptr, nullptr, &err),
                      RI_RET_SUCCESS);
            if (st == RI_STAG_STATE_VALID) ++both_succeeded;
        }
        if (dereg_rc == RI_RET_WINDOWS_BOUND) {
            // Unbind (zero-length bind of the type 1 window), then free the region.
            b.wr_bind.length = 0;
            ASSERT_EQ(post_wr(p.a, &b), RI_RET_SUCCESS);
            ASSERT_EQ(must_poll(r, p.a->scq).op_status, RI_WC_STATUS_SUCCESS);
            ASSERT_EQ(ri_mr_dereg(r.rnic, mr, &err), RI_RET_SUCCESS);
        } else {
            ASSERT_EQ(dereg_rc, RI_RET_SUCCESS);
        }
    }
    EXPECT_EQ(both_succeeded, 0) << "a valid window survived the dereg of its region";
}

// A narrow (type 2) window bound through a QP is invalidated when that QP is destroyed;
// a QP that never bound one is destroyed without walking the STag table.
TEST(RnicpiRegression, DestroyingAQpInvalidatesTheNarrowWindowsBoundThroughIt) {
    Rnic r("mwq");
    ASSERT_TRUE(r.ok());
    QpOpts ob;
    ob.bind = true;
    Pair p(r, r, {}, ob);
    ASSERT_TRUE(p.ok());
    Buf region(4096);
    Mr *mr = r.reg(region, kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_BINDING);
    ASSERT_TRUE(mr);
    ASSERT_NO_FATAL_FAILURE(p.up());
    Mw *mw = r.new_mw(RI_MW_TYPE_2);
    ASSERT_NE(mw, nullptr);
    ri_wr_t w;
    std::memset(&w, 0, sizeof(w));
    w.wr_bind.type = RI_WR_TYPE_BIND;
    w.wr_bind.flags = F(kSig);
    w.wr_bind.id = 7;
    w.wr_bind.mw_handle = mw->h;
    w.wr_bind.rtag = (mw->rtag & ~0xFFu) | 0x21u;
    w.wr_bind.mr_handle = mr->h;
    w.wr_bind.ltag = mr->ltag;
    w.wr_bind.vaddr = region.va();
    w.wr_bind.length = 512;
    w.wr_bind.mem_attr = MA(RI_MEM_FLAGS_REMOTE_WRITE);
    ASSERT_EQ(post_wr(p.b, &w), RI_RET_SUCCESS);
    ri_rc_wc_t wc = must_poll(r, p.b->scq);
    ASSERT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    ri_stag_state_t st{};
    ASSERT_EQ(ri_mw_query(r.rnic, mw->h, nullptr, &st, nullptr, nullptr, nullptr, &r.err),
              RI_RET_SUCCESS);
    EXPECT_EQ(st, RI_STAG_STATE_VALID);
    ASSERT_EQ(r.destroy(p.a), RI_RET_SUCCESS);  // never bound a window: the window stays
    ASSERT_EQ(ri_mw_query(r.rnic, mw->h, nullptr, &st, nullptr, nullptr, nullptr, &r.err),
              RI_RET_SUCCESS);
    EXPECT_EQ(st, RI_STAG_STATE_VALID);
    ASSERT_EQ(r.destroy(p.b), RI_RET_SUCCESS);
    ASSERT_EQ(ri_mw_query(r.rnic, mw->h, nullptr, &st, nullptr, nullptr, nullptr, &r.err),
              RI_RET_SUCCESS);
    EXPECT_EQ(st, RI_STAG_STATE_INVALID) << "a window bound through a destroyed QP stayed valid";
}

}  // namespace
