// Both asynchronous transports (TCP/iWARP, shared memory) against a scripted endpoint in
// place of the engine: while a connection's receive side tells the endpoint how the stream
// ended (a Terminate received, a malformed stream, the peer's close), an operation submitted
// by another thread must not finish on its own. Finished then, it reached the engine before
// that news and was reported as a lost connection instead (seen as
// TwoProcErrors.SendWithoutReceive reporting LLQ_CONNECTION_LOST rather than the peer's
// Terminate, under load). The endpoint submits from inside its upcall, the one moment the
// race needs, so the tests are deterministic.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "../tcp/loopback_socket_pair.hpp"
#include "transport/llp_registry.hpp"
#include "transport/progress.hpp"
#include "transport/shm/shm.hpp"
#include "transport/tcp/tcp_channel.hpp"
#include "transport/tcp/wire/ddp_rdmap.hpp"
#include "transport/tcp/wire/fpdu.hpp"

namespace tr = softrnic::transport;
namespace shm = softrnic::transport::shm;
namespace tcp = softrnic::transport::tcp;
namespace w = softrnic::transport::tcp::wire;

namespace {

// Stands in for the engine's QP: keeps the records it hands to submit() (as the engine's
// in-flight list does) and, inside the upcall that reports the stream's end, submits one
// more operation the way a consumer's thread posting at that moment would.
class ScriptedEndpoint final : public tr::Endpoint {
  public:
    tr::Channel *channel = nullptr;
    bool submit_in_upcall = true;  // the peer's endpoint only watches
    std::deque<tr::InflightOp> records;
    std::atomic<int> upcalls{0};
    // What the submit made inside the upcall returned, and whether its record was
    // finished when the upcall returned to the channel.
    tr::OpOutcome submitted_in_upcall = tr::OpOutcome::Done;
    bool finished_during_upcall = false;
    std::atomic<bool> reported{false};

    tr::OpResult submit_send() {
        tr::InflightOp &rec = records.emplace_back();
        rec.seq = static_cast<uint32_t>(records.size());
        tr::OutboundOp op;
        op.kind = tr::OpKind::Send;
        op.local = std::span<const tr::IoSpan>(&payload_, 1);
        op.length = payload_.len;
        op.inflight = &rec;
        return channel->submit(op);
    }

    tr::RxStatus rx_tagged_acquire(uint32_t, uint64_t, uint64_t, bool, tr::IoSpan &,
                                   void *&) override {
        return tr::RxStatus::fail(tr::RemoteFault::InvalidStag);
    }
    void rx_tagged_release(void *) override {}
    tr::RxStatus rx_recv_begin(tr::RxRecv &) override {
        return tr::RxStatus::fail(tr::RemoteFault::NoReceiveBuffer);
    }
    tr::RxStatus rx_recv_place(tr::RxRecv &, uint64_t, std::span<const std::byte>) override {
        return tr::RxStatus::success();
    }
    tr::RxStatus rx_recv_end(tr::RxRecv &, tr::OpKind, uint64_t, bool, uint32_t,
                             uint32_t) override {
        return tr::RxStatus::success();
    }
    tr::RxStatus rx_send(tr::OpKind, std::span<const tr::IoSpan>, uint64_t, bool, uint32_t,
                         uint32_t) override {
        return tr::RxStatus::fail(tr::RemoteFault::NoReceiveBuffer);
    }
    void rx_recv_abort(tr::RxRecv &, ri_wc_status_t) override {}
    tr::RxStatus rx_atomic(tr::OpKind, uint32_t, uint64_t, uint64_t, uint64_t,
                           uint64_t &) override {
        return tr::RxStatus::fail(tr::RemoteFault::InvalidStag);
    }
    tr::RxStatus rx_write_immediate(uint64_t, uint32_t, bool) override {
        return tr::RxStatus::fail(tr::RemoteFault::NoReceiveBuffer);
    }
    void rx_terminate(std::span<const uint8_t>) override { submit_during_upcall(); }
    void rx_stream_error(tr::RemoteFault, std::span<const uint8_t>) override {
        submit_during_upcall();
    }
    void rx_llp_closed(tr::CloseKind) override { submit_during_upcall(); }
    void tx_fail_all(tr::OpResult oldest) override {
        bool first = true;
        for (tr::InflightOp &r : records) {
            if (r.finished.load(std::memory_order_acquire) ||
                !r.held.load(std::memory_order_acquire))
                continue;
            r.finish(first ? oldest : tr::OpResult{tr::OpOutcome::Disconnected, {}});
            first = false;
        }
    }
    void tx_report() override { reported.store(true, std::memory_order_release); }

  private:
    void submit_during_upcall() {
        if (!submit_in_upcall) return;
        const tr::OpResult r = submit_send();
        submitted_in_upcall = r.outcome;
        finished_during_upcall = records.back().finished.load(std::memory_order_acquire);
        upcalls.fetch_add(1, std::memory_order_release);
    }
    std::byte data_[8]{};
    tr::IoSpan payload_{data_, sizeof data_};
};

// The connection under test (`ours_`, with the scripted endpoint) and what stands for its
// peer: a raw socket for TCP, a second connection for shm.
class RxEnding : public ::testing::Test {
  protected:
    void TearDown() override {
        for (std::unique_ptr<tr::Channel> *c : {&channel_, &peer_channel_}) {
            if (*c) (*c)->detach();
            c->reset();
        }
        if (peer_ >= 0) ::close(peer_);
    }
    std::unique_ptr<tr::Channel> claim(ri_llp_stream_handle_t h) {
        std::unique_ptr<tr::llp::UnclaimedStream> s = tr::llp::take(h);
        EXPECT_TRUE(s);
        if (!s) return nullptr;
        std::unique_ptr<tr::Channel> c = s->claim(h, progress_);
        EXPECT_TRUE(c && c->asynchronous());
        return c;
    }
    void attach_ours(std::unique_ptr<tr::Channel> c) {
        channel_ = std::move(c);
        ASSERT_TRUE(channel_);
        ep_.channel = channel_.get();
        channel_->attach(&ep_);
    }
    // A TCP connection whose peer is the raw socket peer_ (no MPA exchange: the stream
    // parameters are handed over as the connection manager would after one, no CRC).
    void tcp_with_raw_peer() {
        int ours = -1;
        ASSERT_TRUE(rt_tcp::loopback_socket_pair(ours, peer_));
        const ri_llp_stream_handle_t h = tcp::adopt_socket(ours, tcp::StreamParams{});
        ASSERT_GE(h, 0);
        attach_ours(claim(h));
    }
    // Two shm connections over a socket pair, after the transport's own handshake.
    void shm_pair() {
        int sv[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        shm::Handshake ha, hb;
        ASSERT_TRUE(ha.start(sv[0], false));
        ASSERT_TRUE(hb.start(sv[1], false));
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        shm::Handshake::Step a = shm::Handshake::Step::NeedMore, b = a;
        while (a == shm::Handshake::Step::NeedMore || b == shm::Handshake::Step::NeedMore) {
            ASSERT_LT(std::chrono::steady_clock::now(), until) << "handshake";
            if (a == shm::Handshake::Step::NeedMore) a = ha.receive(sv[0]);
            if (b == shm::Handshake::Step::NeedMore) b = hb.receive(sv[1]);
        }
        ASSERT_EQ(a, shm::Handshake::Step::Done);
        ASSERT_EQ(b, shm::Handshake::Step::Done);
        const ri_llp_stream_handle_t h0 = ha.adopt(sv[0]), h1 = hb.adopt(sv[1]);
        ASSERT_GE(h0, 0);
        ASSERT_GE(h1, 0);
        attach_ours(claim(h0));
        peer_channel_ = claim(h1);
        ASSERT_TRUE(peer_channel_);
        peer_ep_.submit_in_upcall = false;
        peer_ep_.channel = peer_channel_.get();
        peer_channel_->attach(&peer_ep_);
    }

    // An RDMAP Terminate as the peer sends it (no CRC: none was negotiated).
    static std::vector<uint8_t> terminate_fpdu() {
        w::TerminateSpec t{};
        t.code = w::TermCode{0, 0, 0x00};  // RDMAP, local catastrophic
        std::vector<uint8_t> ulpdu(w::terminate_len(t));
        const size_t hl = w::encode_terminate(t, ulpdu);
        std::vector<uint8_t> out(hl + 16);
        size_t n = 0;
        EXPECT_EQ(w::encode_fpdu(std::span<const uint8_t>(ulpdu.data(), hl),
                                 std::span<const uint8_t>(), false, std::span<uint8_t>(out), n),
                  w::Status::Ok);
        out.resize(n);
        return out;
    }
    void peer_writes(const std::vector<uint8_t> &b) {
        ASSERT_EQ(::send(peer_, b.data(), b.size(), MSG_NOSIGNAL), static_cast<ssize_t>(b.size()));
    }
    // Waits (bounded) for the upcall and the report of the record submitted in it.
    void expect_record_held_through_upcall() {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (ep_.upcalls.load(std::memory_order_acquire) == 0 ||
               !ep_.records.back().finished.load(std::memory_order_acquire)) {
            ASSERT_LT(std::chrono::steady_clock::now(), until) << "no upcall, or never finished";
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        EXPECT_EQ(ep_.upcalls.load(), 1);
        EXPECT_EQ(ep_.submitted_in_upcall, tr::OpOutcome::Pending)
            << "an operation submitted while the engine is being told how the stream ended "
               "finished by itself, ahead of that news";
        EXPECT_FALSE(ep_.finished_during_upcall);
        // Finished once the endpoint knows, as flushed work, and reported.
        EXPECT_EQ(ep_.records.back().result.outcome, tr::OpOutcome::Disconnected);
        const auto until_report = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!ep_.reported.load(std::memory_order_acquire)) {
            ASSERT_LT(std::chrono::steady_clock::now(), until_report) << "never reported";
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    tr::ProgressEngine progress_;
    ScriptedEndpoint ep_, peer_ep_;
    std::unique_ptr<tr::Channel> channel_, peer_channel_;
    int peer_ = -1;
};

TEST_F(RxEnding, TcpSubmitDuringTheTerminateUpcallWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(tcp_with_raw_peer());
    peer_writes(terminate_fpdu());
    expect_record_held_through_upcall();
}

TEST_F(RxEnding, TcpSubmitDuringTheStreamErrorUpcallWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(tcp_with_raw_peer());
    std::vector<uint8_t> f = terminate_fpdu();
    f[2] = static_cast<uint8_t>(f[2] & ~0x03);  // DDP version 0: a malformed stream
    peer_writes(f);
    expect_record_held_through_upcall();
}

TEST_F(RxEnding, TcpSubmitDuringTheCloseUpcallWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(tcp_with_raw_peer());
    ::shutdown(peer_, SHUT_WR);  // FIN with nothing outstanding: the orderly end
    expect_record_held_through_upcall();
}

TEST_F(RxEnding, ShmSubmitDuringTheTerminateUpcallWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(shm_pair());
    peer_channel_->terminate({tr::RemoteFault::NoReceiveBuffer, tr::FaultedOp::Send, 0, 0, false});
    expect_record_held_through_upcall();
}

TEST_F(RxEnding, ShmSubmitDuringTheCloseUpcallWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(shm_pair());
    peer_channel_->close(tr::CloseKind::Graceful);
    expect_record_held_through_upcall();
}

TEST_F(RxEnding, ShmSubmitDuringTheLossUpcallWaitsForIt) {
    ASSERT_NO_FATAL_FAILURE(shm_pair());
    peer_channel_->close(tr::CloseKind::Abortive);  // the socket ends at once, like an RST
    expect_record_held_through_upcall();
}

}  // namespace
