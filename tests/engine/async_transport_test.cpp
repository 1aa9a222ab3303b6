// The transport seam with an asynchronous transport: operations that complete after
// submit() returns (as TCP/iWARP will). A scripted fake channel stands in for the wire, so
// the engine's side of the contract is checked on its own: completion order, read data
// placed by the transport, atomic results, Terminate and stream loss, and that destroy
// cancels pending work without completions and without keeping memory pinned.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <utility>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "rnicpi/rnicpi.h"
#include "softrnic/softrnic.h"
#include "transport/transport.hpp"

using namespace softrnic::transport;

namespace {

struct Recorded {
    OutboundOp op;
    std::vector<IoSpan> local;
};

class FakeChannel final : public Channel {
  public:
    bool asynchronous() const override { return true; }
    void attach(Endpoint *ep) override { ep_ = ep; }
    void detach() override { ep_ = nullptr; }
    OpResult submit(const OutboundOp &op) override {
        // What runs in the transport's own thread between the engine listing the record
        // and this submit taking it.
        if (before_submit) std::exchange(before_submit, nullptr)();
        op.inflight->held.store(true, std::memory_order_release);
        Recorded r{op, std::vector<IoSpan>(op.local.begin(), op.local.end())};
        r.op.local = {};
        ops.push_back(r);
        recs.push_back(op.inflight);
        if (answer_next) {  // finished by submit itself
            const OpResult r = *answer_next;
            answer_next.reset();
            op.inflight->finish(r);
            recs.back() = nullptr;
            ++next;
            return r;
        }
        return {OpOutcome::Pending, {}};
    }
    void terminate(const FaultReport &) override { terminated = true; }
    void close(CloseKind kind) override {
        closed = true;
        if (on_close) on_close(kind);
        // Contract: when the stream ends, everything still outstanding is finished.
        if (fail_on_close && ep_ && next < ops.size()) {
            ep_->tx_fail_all({OpOutcome::Disconnected, {}});
            next = ops.size();
            ep_->tx_report();
        }
    }
    // Finishes operation `i` (any order) and has the finished ones reported.
    void finish(size_t i, OpResult r) {
        ASSERT_LT(i, recs.size());
        ASSERT_NE(recs[i], nullptr);
        recs[i]->finish(r);
        recs[i] = nullptr;
        ep_->tx_report();
    }
    // Finishes the oldest outstanding operation.
    void complete(OpResult r) {
        ASSERT_LT(next, ops.size());
        finish(next++, r);
    }
    Endpoint *ep_ = nullptr;
    std::function<void(CloseKind)> on_close;  // runs inside close(), as the engine calls it
    std::vector<Recorded> ops;
    std::vector<InflightOp *> recs;
    size_t next = 0;
    bool closed = false, terminated = false;
    bool fail_on_close = true;            // false: leave the records to the engine at detach
    std::optional<OpResult> answer_next;  // submit finishes the next op with this at once
    std::function<void()> before_submit;  // runs once, at the next submit's start
};

std::mutex g_mu;
std::map<int, FakeChannel *> g_fakes;  // handle -> channel, until claimed

std::unique_ptr<Channel> claim_fake(ri_llp_stream_handle_t h, bool &mine, ProgressEngine &) {
    std::lock_guard lk(g_mu);
    auto it = g_fakes.find(h);
    mine = it != g_fakes.end();
    if (!mine) return nullptr;
    std::unique_ptr<Channel> ch(it->second);
    g_fakes.erase(it);
    return ch;
}

std::vector<ri_async_event_type_t> g_events;
std::mutex g_ev_mu;
void on_event(ri_os_data_t, ri_event_record_t *ev) {
    std::lock_guard lk(g_ev_mu);
    g_events.push_back(ev->event_type);
}

class AsyncTransport : public ::testing::Test {
  protected:
    void SetUp() override {
        register_llp_claimer(&claim_fake);
        {
            std::lock_guard lk(g_ev_mu);
            g_events.clear();
        }
        ASSERT_EQ(softrnic_vp_create("async-seam", &vp), RI_RET_SUCCESS);
        ASSERT_EQ(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), RI_RET_SUCCESS);
        ASSERT_EQ(ri_async_set_event_handler(vp, on_event, &err), RI_RET_SUCCESS);
        ASSERT_EQ(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
        ASSERT_EQ(ri_pd_alloc(rnic, &pd, nullptr, nullptr, &err), RI_RET_SUCCESS);
        ri_cq_attr_t ca{64, 0};
        ASSERT_EQ(ri_cq_create(rnic, &ca, &cq, nullptr, nullptr, &err), RI_RET_SUCCESS);
        ri_mr_reg_attr_t ma{reinterpret_cast<uintptr_t>(buf), sizeof buf,
                            static_cast<ri_mem_attr_t>(RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE),
                            pd};
        ASSERT_EQ(ri_mr_reg(rnic, &ma, &mr, &ltag, &rtag, nullptr, nullptr, &err), RI_RET_SUCCESS);
        qp = make_qp();
    }
    void TearDown() override {
        if (qp) EXPECT_EQ(ri_qp_destroy(rnic, qp, &err), RI_RET_SUCCESS);
        if (mr) EXPECT_EQ(ri_mr_dereg(rnic, mr, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_cq_destroy(rnic, cq, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_pd_dealloc(rnic, pd, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_free_hdl(vp, rnic, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_close(vp, &err), RI_RET_SUCCESS);
        EXPECT_EQ(softrnic_vp_destroy(vp), RI_RET_SUCCESS);
    }

    // Hands `q` a fresh fake stream and moves it to RTS.
    void to_rts(ri_qp_handle_t q) {
        fake = new FakeChannel();
        int h = 0x3E000000 + next_handle++;
        {
            std::lock_guard lk(g_mu);
            g_fakes[h] = fake;
        }
        ri_qp_attr_t ma{};
        ma.state = RI_QP_STATE_READY_TO_SEND;
        ma.qp_xport.qp_iwarp.llp_stream_handle = h;
        EXPECT_EQ(ri_qp_modify(rnic, q,
                               static_cast<ri_qp_attr_mask_t>(RI_QP_ATTR_NEXT_STATE |
                                                              RI_QP_ATTR_LLQ_STREAM_HANDLE),
                               &ma, &err),
                  RI_RET_SUCCESS);
    }
    ri_api_return_t to_state(ri_qp_state_t s) {
        ri_qp_attr_t a{};
        a.state = s;
        return ri_qp_modify(rnic, qp, RI_QP_ATTR_NEXT_STATE, &a, &err);
    }

    ri_qp_handle_t make_qp() {
        ri_qp_attr_t qa{};
        qa.scq.scq_handle = cq;
        qa.rcq.rcq_handle = cq;
        qa.pd = pd;
        qa.sq_size = 16;
        qa.rq_size = 16;
        qa.sq_max_sges = 2;
        qa.sq_max_sges_rdmaw = 2;
        qa.rq_max_sges = 2;
        qa.enable_rdma_read = 1;
        qa.enable_rdma_write = 1;
        qa.max_rdma_read_outgoing = 4;
        qa.max_rdma_read_incoming = 4;
        ri_qp_handle_t q = nullptr;
        EXPECT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_SUCCESS);
        to_rts(q);
        return q;
    }

    ri_data_seg_t seg(size_t off, uint32_t len) {
        ri_data_seg_t s{};
        s.addr.vaddr = reinterpret_cast<uintptr_t>(buf + off);
        s.tag.ltag = ltag;
        s.len = len;
        return s;
    }

    bool poll(ri_rc_wc_t &out) {
        ri_wc_t wc;
        uint_t n = 1;
        ri_api_return_t r = ri_cq_poll(rnic, cq, &wc, &n, &err);
        if (r == RI_RET_CQ_EMPTY) return false;
        EXPECT_EQ(r, RI_RET_SUCCESS);
        out = wc.rc_wc;
        return true;
    }

    ri_qp_state_t state() {
        ri_qp_attr_t a{};
        EXPECT_EQ(ri_qp_query(rnic, qp, &a, &err), RI_RET_SUCCESS);
        return a.state;
    }

    static inline int next_handle = 1;
    ri_err_data_t err = 0;
    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;
    ri_pd_handle_t pd = nullptr;
    ri_cq_handle_t cq = nullptr;
    ri_qp_handle_t qp = nullptr;
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t ltag = 0;
    ri_rtag_t rtag = 0;
    FakeChannel *fake = nullptr;  // owned by the QP once claimed
    alignas(64) unsigned char buf[8192] = {};
};

TEST_F(AsyncTransport, CompletionsWaitForTheTransportAndKeepOrder) {
    ri_data_seg_t s = seg(0, 100);
    ASSERT_EQ(ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 1, &s, 0, 1, 0, &err),
              RI_RET_SUCCESS);
    for (uint64_t id = 2; id <= 4; ++id)
        ASSERT_EQ(ri_qp_post_rdma_write(rnic, qp, RI_WR_TYPE_RDMA_WRITE, RI_WR_SIGNALED_FLAG, id,
                                        &s, 0x1000, 0x1234, 1, 0, &err),
                  RI_RET_SUCCESS);
    ri_rc_wc_t wc{};
    EXPECT_FALSE(poll(wc)) << "no completion before the transport reports one";
    ASSERT_EQ(fake->ops.size(), 4u);
    EXPECT_EQ(fake->ops[0].op.kind, OpKind::Send);
    EXPECT_EQ(fake->ops[0].op.length, 100u);
    ASSERT_EQ(fake->ops[0].local.size(), 1u);
    EXPECT_EQ(fake->ops[0].local[0].ptr, reinterpret_cast<std::byte *>(buf));
    EXPECT_EQ(fake->ops[1].op.kind, OpKind::RdmaWrite);
    EXPECT_EQ(fake->ops[1].op.remote_stag, 0x1234u);
    EXPECT_EQ(fake->ops[1].op.remote_to, 0x1000u);
    for (uint64_t id = 1; id <= 4; ++id) {
        fake->complete({OpOutcome::Done, {}});
        ASSERT_TRUE(poll(wc));
        EXPECT_EQ(wc.id, id);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        EXPECT_EQ(wc.op_type, id == 1 ? RI_WC_TYPE_SEND : RI_WC_TYPE_RDMA_WRITE);
        EXPECT_EQ(wc.bytes_transferred, 100u);
    }
    EXPECT_FALSE(poll(wc));
}

// The engine owns the order: a transport may finish operations in any order (a read's
// response after a later send went out), and they still complete in posting order.
TEST_F(AsyncTransport, OperationsFinishedOutOfOrderCompleteInPostingOrder) {
    ri_data_seg_t s = seg(0, 8);
    for (uint64_t id = 1; id <= 3; ++id)
        ASSERT_EQ(
            ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &s, 0, 1, 0, &err),
            RI_RET_SUCCESS);
    ASSERT_EQ(fake->recs.size(), 3u);
    ri_rc_wc_t wc{};
    fake->finish(2, {OpOutcome::Done, {}});
    fake->finish(1, {OpOutcome::Done, {}});
    EXPECT_FALSE(poll(wc)) << "the oldest is still in flight";
    fake->finish(0, {OpOutcome::Done, {}});
    for (uint64_t id = 1; id <= 3; ++id) {
        ASSERT_TRUE(poll(wc));
        EXPECT_EQ(wc.id, id);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    }
    EXPECT_FALSE(poll(wc));
}

// A result submit() returns at once waits behind the operations before it.
TEST_F(AsyncTransport, ResultOfSubmitWaitsForEarlierOperations) {
    ri_data_seg_t s = seg(0, 8);
    ASSERT_EQ(ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 1, &s, 0, 1, 0, &err),
              RI_RET_SUCCESS);
    fake->answer_next = OpResult{OpOutcome::Done, {}};
    ASSERT_EQ(ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 2, &s, 0, 1, 0, &err),
              RI_RET_SUCCESS);
    ri_rc_wc_t wc{};
    EXPECT_FALSE(poll(wc)) << "the second completed before the first";
    fake->finish(0, {OpOutcome::Done, {}});
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 1u);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 2u);
    EXPECT_FALSE(poll(wc));
    // With nothing before it, the answer completes at once.
    fake->answer_next = OpResult{OpOutcome::Done, {}};
    ASSERT_EQ(ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 3, &s, 0, 1, 0, &err),
              RI_RET_SUCCESS);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 3u);
}

// The stream ends after the engine listed an operation and before the transport's submit
// took it (the transport's thread failing everything it holds): that record is not the
// failing's to finish. Its submit finds the stream ended and finishes it itself. Finished
// and reported in between, it was freed under that submit (ASan: heap-use-after-free in
// InflightOp::finish from TcpConnection::submit, TcpErrors.BadStagWrite under load).
TEST_F(AsyncTransport, AStreamEndingBeforeSubmitLeavesItsRecordToSubmit) {
    ri_data_seg_t s = seg(0, 8);
    ASSERT_EQ(ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 1, &s, 0, 1, 0, &err),
              RI_RET_SUCCESS);
    std::vector<uint64_t> completed_before_submit;
    FakeChannel *f = fake;
    f->before_submit = [&] {
        f->ep_->tx_fail_all({OpOutcome::Disconnected, {}});
        f->next = f->ops.size();
        f->ep_->tx_report();
        for (ri_rc_wc_t wc{}; poll(wc);)
            completed_before_submit.push_back(wc.id);
    };
    f->answer_next = OpResult{OpOutcome::Disconnected, {}};  // submit finds the stream ended
    ASSERT_EQ(ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 2, &s, 0, 1, 0, &err),
              RI_RET_SUCCESS);
    EXPECT_EQ(completed_before_submit, std::vector<uint64_t>{1})
        << "the operation not yet handed to the transport was finished by the failing";
    std::vector<uint64_t> after;
    for (ri_rc_wc_t wc{}; poll(wc);)
        after.push_back(wc.id);
    EXPECT_EQ(after, std::vector<uint64_t>{2}) << "its own submit completes it, once";
}

// The transport finds the records it holds by their consecutive sequence numbers (the shm
// transport's key on its wire), and no longer once it finished them.
TEST_F(AsyncTransport, TransportFindsItsRecordsBySequence) {
    ri_data_seg_t s = seg(0, 8);
    for (uint64_t id = 1; id <= 3; ++id)
        ASSERT_EQ(
            ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &s, 0, 1, 0, &err),
            RI_RET_SUCCESS);
    ASSERT_EQ(fake->recs.size(), 3u);
    const uint32_t first = fake->recs[0]->seq;
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(fake->recs[i]->seq, first + i);
        EXPECT_EQ(fake->ep_->tx_record(first + i), fake->recs[i]);
    }
    EXPECT_EQ(fake->ep_->tx_record(first + 3), nullptr);
    EXPECT_EQ(fake->ep_->tx_record(first - 1), nullptr);
    fake->finish(1, {OpOutcome::Done, {}});
    EXPECT_EQ(fake->ep_->tx_record(first + 1), nullptr) << "finished: no longer the transport's";
    EXPECT_EQ(fake->ep_->tx_record(first + 2), fake->recs[2]);
}

// What the transport still held when it was detached is the engine's to complete: in
// posting order, with the result of those finished, flushed otherwise.
TEST_F(AsyncTransport, RecordsLeftAtDetachCompleteInOrder) {
    fake->fail_on_close = false;
    ri_data_seg_t s = seg(0, 8);
    for (uint64_t id = 1; id <= 3; ++id)
        ASSERT_EQ(
            ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &s, 0, 1, 0, &err),
            RI_RET_SUCCESS);
    fake->finish(1, {OpOutcome::Done, {}});
    ri_rc_wc_t wc{};
    EXPECT_FALSE(poll(wc));
    ASSERT_EQ(to_state(RI_QP_STATE_ERROR), RI_RET_SUCCESS);
    EXPECT_FALSE(poll(wc)) << "still the transport's until it is detached";
    ASSERT_EQ(to_state(RI_QP_STATE_IDLE), RI_RET_SUCCESS);
    const ri_wc_status_t want[] = {RI_WC_STATUS_WR_FLUSHED_ERROR, RI_WC_STATUS_SUCCESS,
                                   RI_WC_STATUS_WR_FLUSHED_ERROR};
    for (uint64_t id = 1; id <= 3; ++id) {
        ASSERT_TRUE(poll(wc));
        EXPECT_EQ(wc.id, id);
        EXPECT_EQ(wc.op_status, want[id - 1]);
    }
    EXPECT_FALSE(poll(wc));
}

TEST_F(AsyncTransport, ReadDataAndAtomicResultArriveThroughTheTransport) {
    ri_data_seg_t sink[2] = {seg(0, 16), seg(4096, 16)};
    ASSERT_EQ(ri_qp_post_rdma_read(rnic, qp, RI_WR_TYPE_RDMA_READ, RI_WR_SIGNALED_FLAG, 7, sink,
                                   0x2000, 2, 0x55, &err),
              RI_RET_SUCCESS);
    ri_data_seg_t res = seg(256, 8);
    ASSERT_EQ(ri_qp_post_atomic(rnic, qp, RI_WR_TYPE_FETCH_AND_ADD, RI_WR_SIGNALED_FLAG, 8, 0x66, 5,
                                0, &res, &err),
              RI_RET_SUCCESS);
    ASSERT_EQ(fake->ops.size(), 2u);
    // The transport places the read response into the sink spans it was given.
    ASSERT_EQ(fake->ops[0].local.size(), 2u);
    EXPECT_EQ(fake->ops[0].op.length, 32u);
    for (const IoSpan &sp : fake->ops[0].local)
        std::memset(sp.ptr, 0xAB, sp.len);
    fake->complete({OpOutcome::Done, {}});
    // The atomic response carries the original value.
    ASSERT_NE(fake->ops[1].op.atomic_result, nullptr);
    *fake->ops[1].op.atomic_result = 41;
    fake->complete({OpOutcome::Done, {}});
    ri_rc_wc_t wc{};
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 7u);
    EXPECT_EQ(wc.op_type, RI_WC_TYPE_RDMA_READ);
    EXPECT_EQ(wc.bytes_transferred, 32u);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 8u);
    EXPECT_EQ(wc.op_type, RI_WC_TYPE_FETCH_AND_ADD);
    EXPECT_EQ(buf[0], 0xAB);
    EXPECT_EQ(buf[4096 + 15], 0xAB);
    EXPECT_EQ(buf[16], 0) << "nothing written past the sink";
    uint64_t got = 0;
    std::memcpy(&got, buf + 256, 8);
    EXPECT_EQ(got, 41u);
}

TEST_F(AsyncTransport, TerminateFailsTheWrAndFlushesTheRest) {
    ri_data_seg_t s = seg(0, 8);
    for (uint64_t id = 1; id <= 3; ++id)
        ASSERT_EQ(
            ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &s, 0, 1, 0, &err),
            RI_RET_SUCCESS);
    fake->complete({OpOutcome::Done, {}});
    fake->complete({OpOutcome::Terminated, RemoteFault::InvalidStag});
    ri_rc_wc_t wc{};
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 1u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 2u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_REMOTE_TERMINATION_ERROR);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 3u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_FALSE(poll(wc));
    EXPECT_TRUE(fake->closed);
    EXPECT_EQ(state(), RI_QP_STATE_ERROR);
    ASSERT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS);
    std::lock_guard lk(g_ev_mu);
    ASSERT_EQ(g_events.size(), 1u);
    EXPECT_EQ(g_events[0], RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED);
}

// A peer Terminate that the transport delivers itself (with its bytes) before reporting
// the outstanding WRs: the event is raised once, the Terminate's header is kept for
// ri_qp_query, the oldest WR fails with it and the rest are flushed.
TEST_F(AsyncTransport, PeerTerminateThenOutstandingWrsRaisesOnce) {
    ri_data_seg_t s = seg(0, 8);
    for (uint64_t id = 1; id <= 3; ++id)
        ASSERT_EQ(
            ri_qp_post_send(rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &s, 0, 1, 0, &err),
            RI_RET_SUCCESS);
    // Terminate control word (RDMAP, remote protection, invalid STag, D bit), the 2-byte
    // DDP segment length, then a copied 14-byte tagged header.
    const uint8_t msg[] = {0x01, 0x00, 0x40, 0x00, 0x00, 0x0e, 0xc1, 0x40, 0x12, 0x34,
                           0x56, 0x78, 0,    0,    0,    0,    0,    0,    0x10, 0x00};
    fake->ep_->rx_terminate(std::span<const uint8_t>(msg, sizeof msg));
    fake->complete({OpOutcome::Terminated, RemoteFault::InvalidStag});
    fake->complete({OpOutcome::Terminated, RemoteFault::InvalidStag});
    fake->complete({OpOutcome::Disconnected, {}});
    ri_rc_wc_t wc{};
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 1u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_REMOTE_TERMINATION_ERROR);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 2u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    ASSERT_TRUE(poll(wc));
    EXPECT_EQ(wc.id, 3u);
    EXPECT_EQ(wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_EQ(state(), RI_QP_STATE_ERROR);
    ri_qp_attr_t a{};
    ASSERT_EQ(ri_qp_query(rnic, qp, &a, &err), RI_RET_SUCCESS);
    EXPECT_FALSE(a.qp_xport.qp_iwarp.is_terminate_local);
    EXPECT_GT(a.qp_xport.qp_iwarp.terminate_msg_length, 4u) << "the copied header is kept";
    ASSERT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS);
    std::lock_guard lk(g_ev_mu);
    ASSERT_EQ(g_events.size(), 1u);
    EXPECT_EQ(g_events[0], RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED);
}

// A malformed stream reported by the transport: the matching event, a local Terminate
// record, Error.
TEST_F(AsyncTransport, StreamErrorRaisesTheMatchingEvent) {
    const uint8_t crc_msg[] = {0x20, 0x02, 0x00, 0x00};     // what the transport sends
    fake->ep_->rx_stream_error(RemoteFault::Crc, crc_msg);  // MPA CRC error
    EXPECT_EQ(state(), RI_QP_STATE_ERROR);
    ri_qp_attr_t a{};
    ASSERT_EQ(ri_qp_query(rnic, qp, &a, &err), RI_RET_SUCCESS);
    EXPECT_TRUE(a.qp_xport.qp_iwarp.is_terminate_local);
    EXPECT_EQ(static_cast<uint8_t>(a.qp_xport.qp_iwarp.terminate_buffer[0]), 0x20);
    EXPECT_FALSE(fake->closed) << "the transport sends the Terminate and closes itself";
    ASSERT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS);
    std::lock_guard lk(g_ev_mu);
    ASSERT_EQ(g_events.size(), 1u);
    EXPECT_EQ(g_events[0], RI_EVENT_QP_LLQ_INTEGRITY_ERROR_CRC);
}

// The stream's end (or a Terminate) reported while this end's graceful close holds the
// receive gate (RTS -> Closing -> Idle with nothing posted): a transport's progress may be
// inside its endpoint calls when the close starts (the shm transport's was, for dapltest's
// server, which reuses its EP for every client). That arrival cannot enter the gate; its
// error transition used to stay pending, and after reset (Idle) and a new stream the first
// arrival finished it: the new stream was closed and its receives flushed.
TEST_F(AsyncTransport, ArrivalDuringGracefulCloseDoesNotReachTheNextStream) {
    for (bool terminate : {false, true}) {
        SCOPED_TRACE(terminate ? "Terminate" : "stream end");
        fake->on_close = [f = fake, terminate](CloseKind kind) {
            if (kind != CloseKind::Graceful) return;
            if (terminate)
                f->ep_->rx_terminate({});
            else
                f->ep_->rx_llp_closed(CloseKind::Abortive);
        };
        ASSERT_EQ(to_state(RI_QP_STATE_CLOSING), RI_RET_SUCCESS);
        EXPECT_EQ(state(), RI_QP_STATE_IDLE);
        ASSERT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS);
        if (!terminate) {
            // The end of the stream answered our close: not a reset.
            std::lock_guard lk(g_ev_mu);
            EXPECT_EQ(g_events, std::vector<ri_async_event_type_t>{RI_EVENT_QP_LLQ_CLOSE_COMPLETE});
        }
        // dat_ep_disconnect, then dat_ep_reset: Error (flush), then Idle.
        ASSERT_EQ(to_state(RI_QP_STATE_ERROR), RI_RET_SUCCESS);
        ASSERT_EQ(to_state(RI_QP_STATE_IDLE), RI_RET_SUCCESS);
        ASSERT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS);
        {
            std::lock_guard lk(g_ev_mu);
            g_events.clear();
        }
        // The next connection: a receive, then the peer's first message.
        ri_data_seg_t r = seg(0, 64);
        ASSERT_EQ(ri_qp_post_recv(rnic, qp, static_cast<ri_wr_flags_t>(0), 5, &r, 1, &err),
                  RI_RET_SUCCESS);
        to_rts(qp);
        std::memset(buf + 4096, 0x5A, 64);
        IoSpan msg{reinterpret_cast<std::byte *>(buf + 4096), 64};
        RxStatus st = fake->ep_->rx_send(OpKind::Send, {&msg, 1}, 64, false, 0, 0);
        EXPECT_TRUE(st.ok);
        ri_rc_wc_t wc{};
        ASSERT_TRUE(poll(wc));
        EXPECT_EQ(wc.id, 5u);
        EXPECT_EQ(wc.op_status, RI_WC_STATUS_SUCCESS);
        EXPECT_EQ(wc.bytes_transferred, 64u);
        EXPECT_EQ(buf[63], 0x5A);
        EXPECT_FALSE(fake->closed) << "the new stream was closed";
        EXPECT_EQ(state(), RI_QP_STATE_READY_TO_SEND);
        ASSERT_EQ(softrnic_vp_drain_events(vp), RI_RET_SUCCESS);
        std::lock_guard lk(g_ev_mu);
        EXPECT_TRUE(g_events.empty()) << g_events.size() << " events";
    }
}

TEST_F(AsyncTransport, DestroyCancelsPendingWorkAndReleasesMemory) {
    ri_data_seg_t sink = seg(0, 64);
    ASSERT_EQ(ri_qp_post_rdma_read(rnic, qp, RI_WR_TYPE_RDMA_READ, RI_WR_SIGNALED_FLAG, 9, &sink,
                                   0x2000, 1, 0x55, &err),
              RI_RET_SUCCESS);
    ASSERT_EQ(ri_qp_destroy(rnic, qp, &err), RI_RET_SUCCESS);
    qp = nullptr;
    ri_rc_wc_t wc{};
    EXPECT_FALSE(poll(wc)) << "destroy cancels without completions (L4033-4043)";
    // The read's sink is no longer pinned: dereg returns instead of waiting on it.
    EXPECT_EQ(ri_mr_dereg(rnic, mr, &err), RI_RET_SUCCESS);
    mr = nullptr;
}

}  // namespace
