// The RNIC instance behind a face's IA (src/api/common/rnic_instance.hpp): open, the hook
// before the handle is taken, the query with and without port addresses, close.
#include "api/common/rnic_instance.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace {

using softrnic::api::RnicInstance;

TEST(RnicInstance, OpensAUniquelyNamedInstanceAndClosesIt) {
    RnicInstance a, b;
    int os_data = 0;
    ri_vp_handle_t hooked = nullptr;
    ASSERT_TRUE(a.open("test", &os_data, [&](ri_vp_handle_t vp) { hooked = vp; }));
    ASSERT_TRUE(b.open("test", &os_data));
    EXPECT_NE(a.vp(), nullptr);
    EXPECT_NE(a.rnic(), nullptr);
    EXPECT_EQ(hooked, a.vp());  // the hook ran on the opened instance
    EXPECT_NE(a.name(), b.name());
    EXPECT_EQ(a.name().rfind("test-", 0), 0u);
    // A PD on the handle: the handle is usable.
    ri_pd_handle_t pd = nullptr;
    ri_err_data_t e = 0;
    ASSERT_EQ(ri_pd_alloc(a.rnic(), &pd, nullptr, nullptr, &e), RI_RET_SUCCESS);
    EXPECT_EQ(ri_pd_dealloc(a.rnic(), pd, &e), RI_RET_SUCCESS);
    a.close();
    EXPECT_EQ(a.vp(), nullptr);
    EXPECT_EQ(a.rnic(), nullptr);
    a.close();  // harmless twice
    RnicInstance::Attributes attrs;
    EXPECT_FALSE(a.query(attrs));  // closed
}

TEST(RnicInstance, QueryReportsTheAttributesAndWithPortsTheAddresses) {
    RnicInstance r;
    ASSERT_TRUE(r.open("test", nullptr));
    RnicInstance::Attributes with, without;
    ASSERT_TRUE(r.query(with));
    ASSERT_TRUE(r.query(without, false));
    EXPECT_EQ(with.attr.transport_type, RI_RDMA_TRANSPORT_TYPE_IWARP);
    EXPECT_EQ(with.attr.trans_attr.iwarp, nullptr);  // pointed into the query's buffer
    EXPECT_GT(with.attr.max_qps, 0u);
    EXPECT_EQ(with.attr.max_qps, without.attr.max_qps);
    EXPECT_NE(with.iwarp_flags, 0u);
    EXPECT_TRUE(std::any_of(with.ipv4.begin(), with.ipv4.end(),
                            [](const in_addr &a) { return a.s_addr == htonl(INADDR_LOOPBACK); }));
    EXPECT_TRUE(without.ipv4.empty());
    EXPECT_TRUE(without.ipv6.empty());
}

}  // namespace
