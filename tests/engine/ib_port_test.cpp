// The InfiniBand port seam (transport/ib_port.hpp) and the process-local LID authority:
// what the public interface cannot show (the active MTU, the helpers' edges).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "transport/ib/local_subnet.hpp"
#include "transport/ib_port.hpp"

namespace softrnic::transport::ib {
namespace {

std::string subnet_of_this_test() {
    return "engine-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

TEST(IbPort, MtuConversions) {
    EXPECT_EQ(mtu_from_bytes(256), RI_IB_MTU_256);
    EXPECT_EQ(mtu_from_bytes(4096), RI_IB_MTU_4K);
    EXPECT_EQ(mtu_from_bytes(0), 0);
    EXPECT_EQ(mtu_from_bytes(8192), 0);
    EXPECT_EQ(mtu_from_bytes(1000), 0);
    for (uint32_t b : {256u, 512u, 1024u, 2048u, 4096u})
        EXPECT_EQ(mtu_bytes(mtu_from_bytes(b)), b);
    EXPECT_EQ(mtu_bytes(static_cast<ri_ib_mtu_t>(6)), 0u);
}

TEST(IbPort, SubnetNames) {
    EXPECT_TRUE(valid_subnet_name("u1000"));
    EXPECT_TRUE(valid_subnet_name("a.b_c-D9"));
    EXPECT_TRUE(valid_subnet_name(std::string(63, 'x')));
    EXPECT_FALSE(valid_subnet_name(std::string(64, 'x')));
    EXPECT_FALSE(valid_subnet_name(""));
    EXPECT_FALSE(valid_subnet_name("a/b"));
    EXPECT_FALSE(valid_subnet_name("a b"));
    EXPECT_EQ(default_subnet(), "u" + std::to_string(::getuid()));
}

// FNV-1a-64's published test vectors: the derivation rests on them.
TEST(IbPort, Fnv1aVectors) {
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(IbPort, PortsFollowTheirHca) {
    HcaConfig c;
    c.name = "hca";
    c.subnet = subnet_of_this_test();
    c.num_ports = 2;
    c.active_mtu = RI_IB_MTU_1K;
    Hca hca(c);
    EXPECT_EQ(hca.node_guid(), derive_node_guid(c.subnet, "hca"));
    EXPECT_EQ(hca.node_guid() & 0xFF, 0u) << "the low byte is the port number's";
    PortAttributes p1 = hca.port(1);
    EXPECT_EQ(p1.guid, hca.node_guid() | 1);
    EXPECT_EQ(p1.active_mtu, RI_IB_MTU_1K);
    EXPECT_EQ(p1.state, RI_IB_LINK_DOWN);
    EXPECT_EQ(p1.lid, 0);
    EXPECT_EQ(hca.port(3).number, 0) << "no port 3";
    EXPECT_EQ(hca.attach(), (std::vector<uint8_t>{1, 2}));
    EXPECT_TRUE(hca.attach().empty()) << "attached already";
    EXPECT_EQ(hca.port(2).state, RI_IB_LINK_ACTIVE);
    EXPECT_EQ(hca.port(1).lid, kFirstPortLid);
    EXPECT_EQ(hca.port(2).lid, kFirstPortLid + 1);
    EXPECT_EQ(hca.port(2).sm_lid, kAuthorityLid);
    hca.detach();
    EXPECT_EQ(hca.port(1).state, RI_IB_LINK_DOWN);
    EXPECT_EQ(hca.port(1).lid, 0);
    // The authority gives the GUID its LID back, and holds no live port for it any more.
    auto grant = local_attach(c.subnet, hca.node_guid() | 1);
    ASSERT_TRUE(grant.has_value());
    EXPECT_EQ(grant->lid, kFirstPortLid);
    EXPECT_FALSE(local_attach(c.subnet, hca.node_guid() | 1).has_value()) << "live twice";
    local_detach(c.subnet, hca.node_guid() | 1);
}

}  // namespace
}  // namespace softrnic::transport::ib
