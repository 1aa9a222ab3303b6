// The connection manager's transport policy: SOFTRNIC_TRANSPORT and Options -> what
// listen() offers and connect() tries (src/cm/transport_policy.hpp).
#include "cm/transport_policy.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace cm = softrnic::cm;
namespace d = softrnic::cm::detail;

namespace {

cm::Options with(cm::Transport t, bool shm_cma = true) {
    cm::Options o;
    o.transport = t;
    o.shm_cma = shm_cma;
    return o;
}

TEST(CmPolicy, EnvValues) {
    EXPECT_EQ(d::transport_from_env_value(nullptr), cm::Transport::Auto);
    EXPECT_EQ(d::transport_from_env_value("auto"), cm::Transport::Auto);
    EXPECT_EQ(d::transport_from_env_value("shm"), cm::Transport::Shm);
    EXPECT_EQ(d::transport_from_env_value("tcp"), cm::Transport::Tcp);
    // Unknown values (including other spellings) mean auto.
    EXPECT_EQ(d::transport_from_env_value(""), cm::Transport::Auto);
    EXPECT_EQ(d::transport_from_env_value("TCP"), cm::Transport::Auto);
    EXPECT_EQ(d::transport_from_env_value("rdma"), cm::Transport::Auto);
}

TEST(CmPolicy, OptionsOverrideTheEnvironment) {
    EXPECT_EQ(d::resolve_policy(with(cm::Transport::Env), "tcp", true).mode, cm::Transport::Tcp);
    EXPECT_EQ(d::resolve_policy(with(cm::Transport::Env), "shm", true).mode, cm::Transport::Shm);
    EXPECT_EQ(d::resolve_policy(with(cm::Transport::Env), nullptr, true).mode, cm::Transport::Auto);
    EXPECT_EQ(d::resolve_policy(with(cm::Transport::Tcp), "shm", true).mode, cm::Transport::Tcp);
    EXPECT_EQ(d::resolve_policy(with(cm::Transport::Shm), "tcp", true).mode, cm::Transport::Shm);
    EXPECT_EQ(d::resolve_policy(with(cm::Transport::Auto), "tcp", true).mode, cm::Transport::Auto);
}

TEST(CmPolicy, WhatEachModeOffersAndTries) {
    auto a = d::resolve_policy(with(cm::Transport::Auto), nullptr, true);
    EXPECT_TRUE(a.offers_shm());
    EXPECT_TRUE(a.tries_shm());
    EXPECT_TRUE(a.falls_back_to_tcp());
    auto s = d::resolve_policy(with(cm::Transport::Shm), nullptr, true);
    EXPECT_TRUE(s.offers_shm());
    EXPECT_TRUE(s.tries_shm());
    EXPECT_FALSE(s.falls_back_to_tcp());
    auto t = d::resolve_policy(with(cm::Transport::Tcp), nullptr, true);
    EXPECT_FALSE(t.offers_shm());
    EXPECT_FALSE(t.tries_shm());
    EXPECT_TRUE(t.falls_back_to_tcp());
}

TEST(CmPolicy, CmaNeedsTheOptionAndTheEnvironment) {
    EXPECT_TRUE(d::resolve_policy(with(cm::Transport::Auto, true), nullptr, true).shm_cma);
    EXPECT_FALSE(d::resolve_policy(with(cm::Transport::Auto, false), nullptr, true).shm_cma);
    EXPECT_FALSE(d::resolve_policy(with(cm::Transport::Auto, true), nullptr, false).shm_cma);
}

// The manager reports the resolved choice: explicit options as given, Env from the
// process environment (this suite runs with and without SOFTRNIC_TRANSPORT=tcp).
TEST(CmPolicy, ManagerReportsTheResolvedChoice) {
    auto handler = [](cm::Event &) {};
    for (cm::Transport t : {cm::Transport::Auto, cm::Transport::Shm, cm::Transport::Tcp}) {
        cm::ConnectionManager m(handler, with(t));
        ASSERT_TRUE(m.ok());
        EXPECT_EQ(m.transport(), t);
    }
    cm::ConnectionManager m(handler, with(cm::Transport::Env));
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m.transport(), d::transport_from_env_value(std::getenv("SOFTRNIC_TRANSPORT")));
}

}  // namespace
