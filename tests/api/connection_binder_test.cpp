// The connection binder (src/api/common/connection_binder.hpp): an established connection
// taken to a QP in RTS, and its stream released on every failure, over TCP and over shm.
#include "api/common/connection_binder.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <thread>

#include "../shm/shm_util.hpp"

namespace {

using namespace std::chrono_literals;
namespace api = softrnic::api;
namespace cm = softrnic::cm;

// One connection set up through two managers (initiator and responder), the streams not
// yet claimed. The managers live as long as the test.
struct Connection {
    st::Slot<cm::Established> cli_est, srv_est;
    std::unique_ptr<cm::ConnectionManager> srv, cli;
    std::optional<cm::Established> cli_side, srv_side;

    void up(st::Xport x, uint16_t ird = 4, uint16_t ord = 4) {
        cm::ConnectionManager *srvp = nullptr;
        srv = std::make_unique<cm::ConnectionManager>(
            [&, this](cm::Event &e) {
                if (auto *r = std::get_if<cm::ConnectRequest>(&e))
                    EXPECT_EQ(srvp->accept(r->id, {}), cm::CmStatus::Ok);
                else if (auto *est = std::get_if<cm::Established>(&e))
                    srv_est.set(std::move(*est));
            },
            st::cm_options(x));
        srvp = srv.get();
        cli = std::make_unique<cm::ConnectionManager>(
            [this](cm::Event &e) {
                if (auto *est = std::get_if<cm::Established>(&e)) cli_est.set(std::move(*est));
            },
            st::cm_options(x));
        ASSERT_TRUE(srv->ok() && cli->ok());
        cm::Address l = st::loopback4();
        auto lid = srv->listen(l.get(), l.len, 4);
        ASSERT_TRUE(lid.ok());
        auto la = srv->local_address(lid.value);
        ASSERT_TRUE(la.ok());
        cm::ConnParams p;
        p.ird = ird;
        p.ord = ord;
        ASSERT_TRUE(cli->connect(la.value.get(), la.value.len, p).ok());
        cli_side = cli_est.wait();
        srv_side = srv_est.wait(5s);
        ASSERT_TRUE(cli_side && srv_side) << "set-up failed";
    }
};

class ConnectionBinder : public ::testing::TestWithParam<st::Xport> {};

TEST_P(ConnectionBinder, BindsBothSidesToRts) {
    Connection c;
    ASSERT_NO_FATAL_FAILURE(c.up(GetParam(), /*ird=*/2, /*ord=*/8));
    ASSERT_TRUE(c.cli_side && c.srv_side);
    rt::Rnic ra("bind-a"), rb("bind-b");
    ASSERT_TRUE(ra.ok() && rb.ok());
    rt::QpOpts o;
    o.ord = 8;
    o.ird = 2;
    rt::Qp *a = ra.new_qp(o);
    rt::Qp *b = rb.new_qp(o);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(api::bind_established(ra.rnic, a->h, *c.cli_side, api::ReadCredits{8, 2}),
              RI_RET_SUCCESS);
    ASSERT_EQ(api::bind_established(rb.rnic, b->h, *c.srv_side, api::ReadCredits{1, 1}),
              RI_RET_SUCCESS);
    EXPECT_EQ(rt::state_of(a), RI_QP_STATE_READY_TO_SEND);
    EXPECT_EQ(rt::state_of(b), RI_QP_STATE_READY_TO_SEND);
    // Claimed: nothing is left to release.
    EXPECT_FALSE(cm::release_unclaimed(c.cli_side->llp));
    EXPECT_FALSE(cm::release_unclaimed(c.srv_side->llp));
}

// A QP that cannot take the stream: it is released, and the peer's connection ends.
TEST_P(ConnectionBinder, AFailedBindReleasesTheStream) {
    Connection c;
    ASSERT_NO_FATAL_FAILURE(c.up(GetParam()));
    ASSERT_TRUE(c.cli_side && c.srv_side);
    rt::Rnic ra("bind-fail-a"), rb("bind-fail-b");
    ASSERT_TRUE(ra.ok() && rb.ok());
    rt::Qp *a = ra.new_qp();
    rt::Qp *b = rb.new_qp();
    ASSERT_TRUE(a && b);
    ASSERT_EQ(api::bind_established(rb.rnic, b->h, *c.srv_side, api::ReadCredits{4, 4}),
              RI_RET_SUCCESS);
    ASSERT_EQ(rt::modify_state(a, RI_QP_STATE_ERROR), RI_RET_SUCCESS);  // refuses RTS
    EXPECT_NE(api::bind_established(ra.rnic, a->h, *c.cli_side, api::ReadCredits{4, 4}),
              RI_RET_SUCCESS);
    EXPECT_FALSE(cm::release_unclaimed(c.cli_side->llp)) << "the stream was not released";
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (rb.recorder().count_events_for(b->os()) == 0 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    EXPECT_GE(rb.recorder().count_events_for(b->os()), 1u) << "the peer did not see the end";
}

TEST_P(ConnectionBinder, NoQpReleasesTheStream) {
    Connection c;
    ASSERT_NO_FATAL_FAILURE(c.up(GetParam()));
    ASSERT_TRUE(c.cli_side && c.srv_side);
    rt::Rnic ra("bind-none");
    ASSERT_TRUE(ra.ok());
    EXPECT_EQ(api::bind_established(ra.rnic, nullptr, *c.cli_side, api::ReadCredits{4, 4}),
              RI_RET_QP_INVALID_HANDLE);
    EXPECT_FALSE(cm::release_unclaimed(c.cli_side->llp));
    api::release_established(*c.srv_side);
    EXPECT_FALSE(cm::release_unclaimed(c.srv_side->llp));
}

INSTANTIATE_TEST_SUITE_P(Transports, ConnectionBinder,
                         ::testing::Values(st::Xport::Tcp, st::Xport::Shm),
                         [](const auto &i) { return std::string(st::xname(i.param)); });

}  // namespace
