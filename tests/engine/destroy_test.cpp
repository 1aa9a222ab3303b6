// The engine's destroy calls (Device::destroy_pd/cq/srq/qp), called directly: the in-use
// and ownership codes the RNICPI ops return unchanged, the provider serialisation, and the
// event drain that keeps an event for a destroyed object from running after the call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/device.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kTimeout{10};

// Spins until `done()` holds or kTimeout passes; returns whether it held.
template <class Pred>
bool wait_for(Pred done) {
    const auto deadline = Clock::now() + kTimeout;
    while (!done()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::yield();
    }
    return true;
}

// What the async upcall saw. The upcall is a C function pointer, so its state is global;
// each test resets it.
struct Upcalls {
    std::atomic<void *> block_on{nullptr};  // an upcall with this os_data waits for `release`
    std::atomic<bool> entered{false};       // the blocking upcall has started
    std::atomic<bool> release{false};
    std::atomic<bool> left{false};  // the blocking upcall has returned
    std::atomic<void *> counted{nullptr};
    std::atomic<int> count{0};  // upcalls with os_data == counted
    void reset() {
        block_on.store(nullptr, std::memory_order_relaxed);
        entered.store(false, std::memory_order_relaxed);
        release.store(false, std::memory_order_relaxed);
        left.store(false, std::memory_order_relaxed);
        counted.store(nullptr, std::memory_order_relaxed);
        count.store(0, std::memory_order_relaxed);
    }
};
Upcalls g_upcalls;

void on_async(ri_os_data_t, ri_event_record_t *rec) {
    void *who = rec->event_data.resource_os_data;
    if (who == g_upcalls.counted.load(std::memory_order_acquire))
        g_upcalls.count.fetch_add(1, std::memory_order_acq_rel);
    if (who == g_upcalls.block_on.load(std::memory_order_acquire)) {
        g_upcalls.entered.store(true, std::memory_order_release);
        wait_for([] { return g_upcalls.release.load(std::memory_order_acquire); });
        g_upcalls.left.store(true, std::memory_order_release);
    }
}

// os_data values that mark whose event an upcall is for.
void *const kBlockerOs = reinterpret_cast<void *>(uintptr_t{0xB10C});
void *const kQpOs = reinterpret_cast<void *>(uintptr_t{0x0A0A});

// A device with its event thread running, one consumer handle on it, and a QP on a PD,
// two CQs and an SRQ. The handle is declared first: the device's objects hold uses of it.
class Destroy : public ::testing::Test {
  protected:
    void SetUp() override {
        g_upcalls.reset();
        rnic.magic = RnicHandle::kMagic;
        rnic.dev = &dev;
        rnic.view = View::Privileged;
        other.magic = RnicHandle::kMagic;
        other.dev = &dev;
        other.view = View::Privileged;
        dev.async_cb.store(on_async, std::memory_order_release);
        dev.start_events();

        ASSERT_EQ(dev.create_pd(rnic, nullptr, pd), RI_RET_SUCCESS);
        ri_cq_attr_t ca{};
        ca.num_cqe = 16;
        ASSERT_EQ(dev.create_cq(rnic, ca, nullptr, scq), RI_RET_SUCCESS);
        ASSERT_EQ(dev.create_cq(rnic, ca, nullptr, rcq), RI_RET_SUCCESS);
        ri_srq_attr_t sa{};
        sa.max_wrs = 8;
        sa.max_sgl = 1;
        ASSERT_EQ(dev.create_srq(rnic, *pd, sa, nullptr, srq), RI_RET_SUCCESS);
        ri_qp_attr_t qa{};
        qa.pd = pd->handle;
        qa.sq_size = 8;
        qa.rq_size = 8;
        ASSERT_EQ(dev.create_qp(rnic, {*pd, *scq, *rcq, srq}, qa, kQpOs, qp), RI_RET_SUCCESS);
        pd_h = pd->handle;
        scq_h = scq->handle;
        rcq_h = rcq->handle;
        srq_h = srq->handle;
        qp_h = qp->handle;
    }

    void TearDown() override {
        // Whatever a test left is destroyed in dependency order; a handle already gone
        // answers INVALID_HANDLE, which is fine here.
        g_upcalls.release.store(true, std::memory_order_release);
        dev.destroy_qp(rnic, qp_h, Serialisation::ByConsumer);
        dev.destroy_srq(rnic, srq_h, Serialisation::ByConsumer);
        dev.destroy_cq(rnic, scq_h, Serialisation::ByConsumer);
        dev.destroy_cq(rnic, rcq_h, Serialisation::ByConsumer);
        dev.destroy_pd(rnic, pd_h, Serialisation::ByConsumer);
        dev.stop_events();
        EXPECT_FALSE(rnic.users.in_use()) << "every object gave back its use of the handle";
    }

    RnicHandle rnic{};
    RnicHandle other{};
    Device dev{"destroy-test"};
    Pd *pd = nullptr;
    Cq *scq = nullptr;
    Cq *rcq = nullptr;
    Srq *srq = nullptr;
    Qp *qp = nullptr;
    void *pd_h = nullptr, *scq_h = nullptr, *rcq_h = nullptr, *srq_h = nullptr, *qp_h = nullptr;
};

// RNICPI L2662, L3040 (CQ_INUSE), L4928: nothing a QP uses can go while the QP exists;
// once it is gone they all can, SRQ before the PD it uses.
TEST_F(Destroy, InUseObjectsAreRefusedUntilTheirUsersAreGone) {
    for (Serialisation by : {Serialisation::ByConsumer, Serialisation::ByProvider}) {
        EXPECT_EQ(dev.destroy_pd(rnic, pd_h, by), RI_RET_PD_INUSE);
        EXPECT_EQ(dev.destroy_cq(rnic, scq_h, by), RI_RET_CQ_INUSE);
        EXPECT_EQ(dev.destroy_cq(rnic, rcq_h, by), RI_RET_CQ_INUSE);
        EXPECT_EQ(dev.destroy_srq(rnic, srq_h, by), RI_RET_SRQ_INUSE);
    }
    EXPECT_NE(dev.pds.lookup(pd_h), nullptr) << "a refused destroy leaves the object";

    EXPECT_EQ(dev.destroy_qp(rnic, qp_h, Serialisation::ByProvider), RI_RET_SUCCESS);
    EXPECT_EQ(dev.qps.lookup(qp_h), nullptr);
    EXPECT_EQ(dev.destroy_pd(rnic, pd_h, Serialisation::ByConsumer), RI_RET_PD_INUSE)
        << "the SRQ still uses the PD";
    EXPECT_EQ(dev.destroy_srq(rnic, srq_h, Serialisation::ByConsumer), RI_RET_SUCCESS);
    EXPECT_EQ(dev.destroy_cq(rnic, scq_h, Serialisation::ByConsumer), RI_RET_SUCCESS);
    EXPECT_EQ(dev.destroy_cq(rnic, rcq_h, Serialisation::ByProvider), RI_RET_SUCCESS);
    EXPECT_EQ(dev.destroy_pd(rnic, pd_h, Serialisation::ByProvider), RI_RET_SUCCESS);
    EXPECT_FALSE(rnic.users.in_use());
}

// A handle that is not the caller's, or no longer names anything, gets the kind's
// INVALID_HANDLE code, and the object stays.
TEST_F(Destroy, ForeignAndStaleHandlesAreInvalid) {
    const Serialisation by = Serialisation::ByConsumer;
    EXPECT_EQ(dev.destroy_qp(other, qp_h, by), RI_RET_QP_INVALID_HANDLE);
    EXPECT_NE(dev.qps.lookup(qp_h), nullptr);
    EXPECT_EQ(qp->state.load(std::memory_order_acquire), RI_QP_STATE_IDLE)
        << "a refused destroy must not tear the QP down";
    EXPECT_EQ(dev.destroy_srq(other, srq_h, by), RI_RET_SRQ_INVALID_HANDLE);
    EXPECT_EQ(dev.destroy_cq(other, scq_h, by), RI_RET_CQ_INVALID_HANDLE);
    EXPECT_EQ(dev.destroy_pd(other, pd_h, by), RI_RET_PD_INVALID_HANDLE);
    // A handle of another kind is not taken for this one.
    EXPECT_EQ(dev.destroy_cq(rnic, qp_h, by), RI_RET_CQ_INVALID_HANDLE);
    EXPECT_EQ(dev.destroy_pd(rnic, scq_h, by), RI_RET_PD_INVALID_HANDLE);

    EXPECT_EQ(dev.destroy_qp(rnic, qp_h, by), RI_RET_SUCCESS);
    EXPECT_EQ(dev.destroy_qp(rnic, qp_h, by), RI_RET_QP_INVALID_HANDLE);
    EXPECT_EQ(dev.destroy_srq(rnic, srq_h, by), RI_RET_SUCCESS);
    EXPECT_EQ(dev.destroy_srq(rnic, srq_h, by), RI_RET_SRQ_INVALID_HANDLE);
    EXPECT_EQ(dev.destroy_cq(rnic, scq_h, by), RI_RET_SUCCESS);
    EXPECT_EQ(dev.destroy_cq(rnic, scq_h, by), RI_RET_CQ_INVALID_HANDLE);
}

// RNICPI L4043: an event for the QP queued before the destroy is not delivered at all,
// and the destroy returns only once everything queued before it has been delivered.
TEST_F(Destroy, QueuedEventForADestroyedQpIsNeverDelivered) {
    g_upcalls.block_on.store(kBlockerOs, std::memory_order_release);
    g_upcalls.counted.store(kQpOs, std::memory_order_release);
    // The event thread is held inside an RNIC-wide upcall, with the QP's event behind it.
    dev.raise(RI_EVENT_RNIC_LOCAL_CATASTROPHIC_ERROR, nullptr, ObjKind::Pd, kBlockerOs);
    ASSERT_TRUE(wait_for([] { return g_upcalls.entered.load(std::memory_order_acquire); }));
    dev.raise(RI_EVENT_QP_LLQ_CONNECTION_RESET, qp_h, ObjKind::Qp, kQpOs);

    std::atomic<bool> returned{false};
    ri_api_return_t ret = RI_RET_FAIL;
    bool blocker_done_at_return = false;
    std::thread destroyer([&] {
        ret = dev.destroy_qp(rnic, qp_h, Serialisation::ByProvider);
        blocker_done_at_return = g_upcalls.left.load(std::memory_order_acquire);
        returned.store(true, std::memory_order_release);
    });
    // The QP leaves its table before the drain; only then is the event thread let go.
    ASSERT_TRUE(wait_for([&] { return dev.qps.lookup(qp_h) == nullptr; }));
    EXPECT_FALSE(returned.load(std::memory_order_acquire))
        << "destroy_qp returned while an event queued before it was still being delivered";
    g_upcalls.release.store(true, std::memory_order_release);
    destroyer.join();
    EXPECT_EQ(ret, RI_RET_SUCCESS);
    EXPECT_TRUE(blocker_done_at_return) << "the drain waits for earlier events";
    EXPECT_EQ(g_upcalls.count.load(std::memory_order_acquire), 0)
        << "an event for the destroyed QP was delivered";
}

// RNICPI L4043: an upcall for the QP that is already running when the destroy comes in has
// finished by the time the destroy returns.
TEST_F(Destroy, RunningUpcallForAQpFinishesBeforeDestroyReturns) {
    g_upcalls.block_on.store(kQpOs, std::memory_order_release);
    g_upcalls.counted.store(kQpOs, std::memory_order_release);
    dev.raise(RI_EVENT_QP_LLQ_CONNECTION_RESET, qp_h, ObjKind::Qp, kQpOs);
    ASSERT_TRUE(wait_for([] { return g_upcalls.entered.load(std::memory_order_acquire); }));

    std::atomic<bool> returned{false};
    bool upcall_done_at_return = false;
    std::thread destroyer([&] {
        EXPECT_EQ(dev.destroy_qp(rnic, qp_h, Serialisation::ByConsumer), RI_RET_SUCCESS);
        upcall_done_at_return = g_upcalls.left.load(std::memory_order_acquire);
        returned.store(true, std::memory_order_release);
    });
    ASSERT_TRUE(wait_for([&] { return dev.qps.lookup(qp_h) == nullptr; }));
    EXPECT_FALSE(returned.load(std::memory_order_acquire));
    g_upcalls.release.store(true, std::memory_order_release);
    destroyer.join();
    EXPECT_TRUE(upcall_done_at_return) << "destroy_qp returned while the QP's upcall ran";
    EXPECT_EQ(g_upcalls.count.load(std::memory_order_acquire), 1);
    // Nothing more for it is raised from a later event either.
    dev.raise(RI_EVENT_QP_LLQ_CONNECTION_RESET, qp_h, ObjKind::Qp, kQpOs);
    dev.events.drain();
    EXPECT_EQ(g_upcalls.count.load(std::memory_order_acquire), 1);
}

// Provider-serialised: the destroy waits for the handle's lock (a call on the handle in
// progress elsewhere); consumer-serialised: it takes no lock.
TEST_F(Destroy, ProviderSerialisationTakesTheHandleLock) {
    std::atomic<bool> held{false}, let_go{false};
    std::thread holder([&] {
        std::lock_guard lk(rnic.serial);
        held.store(true, std::memory_order_release);
        wait_for([&] { return let_go.load(std::memory_order_acquire); });
    });
    ASSERT_TRUE(wait_for([&] { return held.load(std::memory_order_acquire); }));

    // Consumer-serialised: goes ahead while another thread holds the lock.
    EXPECT_EQ(dev.destroy_qp(rnic, qp_h, Serialisation::ByConsumer), RI_RET_SUCCESS);

    std::atomic<bool> returned{false};
    std::thread destroyer([&] {
        EXPECT_EQ(dev.destroy_srq(rnic, srq_h, Serialisation::ByProvider), RI_RET_SUCCESS);
        returned.store(true, std::memory_order_release);
    });
    // While the lock is held, the provider-serialised destroy must not have run.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(returned.load(std::memory_order_acquire));
    EXPECT_NE(dev.srqs.lookup(srq_h), nullptr);
    let_go.store(true, std::memory_order_release);
    holder.join();
    destroyer.join();
    EXPECT_EQ(dev.srqs.lookup(srq_h), nullptr);
}

}  // namespace
}  // namespace softrnic::engine
