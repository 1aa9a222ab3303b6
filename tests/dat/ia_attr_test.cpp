// The provider-specific attributes dat_ia_query reports (uDAPL L2489): the IB extension
// operations offered, and DAT_IB_TRANSPORT_MTU, with the value softrnic's
// transports carry in one piece (src/api/dat/provider/transport_mtu.hpp), as unmodified
// consumers read it (dtestsrq: the first entry named exactly so, its value through
// strtol(value, NULL, 10)).
#include <gtest/gtest.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include "api/dat/provider/transport_mtu.hpp"

namespace {

using softrnic::dapl::ib_mtu_over_tcp;
using softrnic::dapl::kIbMtus;

// MTU of `name` as the provider reads it (SIOCGIFMTU); 0 if unknown.
uint32_t interface_mtu(const char *name) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    ifreq req{};
    std::strncpy(req.ifr_name, name, IFNAMSIZ - 1);
    const int r = ::ioctl(fd, SIOCGIFMTU, &req);
    ::close(fd);
    return r == 0 && req.ifr_mtu > 0 ? uint32_t(req.ifr_mtu) : 0;
}

// The value of `name` among the IA's provider-specific attributes, asked for with only
// the mask bit dtestsrq sets; "(absent)" if it has none. `count` gets how many there are.
std::string specific_attr(const char *ia_name, const char *attr, DAT_COUNT *count) {
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    EXPECT_EQ(dat_ia_open(const_cast<char *>(ia_name), 8, &async, &ia), DAT_SUCCESS);
    if (ia == DAT_HANDLE_NULL) return "(no IA)";
    DAT_PROVIDER_ATTR pa{};
    EXPECT_EQ(dat_ia_query(ia, nullptr, static_cast<DAT_IA_ATTR_MASK>(0), nullptr,
                           DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR, &pa),
              DAT_SUCCESS);
    std::string value = "(absent)";
    *count = pa.num_provider_specific_attr;
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; ++i)
        if (std::strcmp(pa.provider_specific_attr[i].name, attr) == 0)
            value = pa.provider_specific_attr[i].value;
    EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    return value;
}

// How dtestsrq reads it: decimal, and it must be an IB MTU value.
void expect_ib_mtu_text(const std::string &value) {
    const long parsed = std::strtol(value.c_str(), nullptr, 10);
    EXPECT_TRUE(std::find(kIbMtus.begin(), kIbMtus.end(), uint32_t(parsed)) != kIbMtus.end())
        << value;
    EXPECT_EQ(std::to_string(parsed), value);
}

TEST(DatIaQuery, ShmIaReportsTheLargestIbMtu) {
    DAT_COUNT count = 0;
    const std::string v = specific_attr("softrnic-shm", "DAT_IB_TRANSPORT_MTU", &count);
    EXPECT_EQ(v, "4096");
    EXPECT_EQ(count, 4);
    expect_ib_mtu_text(v);
}

// The IB extension's reliable-connection operations, announced as OFED providers do
// (dtestx skips the atomics unless both say TRUE).
TEST(DatIaQuery, EveryIaAnnouncesTheRcExtensionOperations) {
    for (const char *name : {"softrnic-shm", "softrnic-tcp", "softrnic"}) {
        SCOPED_TRACE(name);
        DAT_COUNT count = 0;
        for (const char *attr :
             {"DAT_IB_FETCH_AND_ADD", "DAT_IB_CMP_AND_SWAP", "DAT_IB_IMMED_DATA"})
            EXPECT_EQ(specific_attr(name, attr, &count), "TRUE") << attr;
        EXPECT_EQ(count, 4);
    }
}

// The shipped dat.conf puts these IAs on lo: what one TCP segment there carries.
TEST(DatIaQuery, TcpCapableIasReportTheirInterfacesIbMtu) {
    const uint32_t lo_mtu = interface_mtu("lo");
    ASSERT_GT(lo_mtu, 0u);
    const std::string want = std::to_string(ib_mtu_over_tcp(lo_mtu));
    for (const char *name : {"softrnic-tcp", "softrnic"}) {
        SCOPED_TRACE(name);
        DAT_COUNT count = 0;
        const std::string v = specific_attr(name, "DAT_IB_TRANSPORT_MTU", &count);
        EXPECT_EQ(v, want);
        EXPECT_EQ(count, 4);
        expect_ib_mtu_text(v);
    }
}

// Send payload of one segment = ((MTU - 52) & ~7) - 24; the largest IB value that fits.
TEST(DatIaQuery, IbMtuOverTcpIsTheLargestIbValueOneSegmentCarries) {
    static_assert(ib_mtu_over_tcp(65536) == 4096);  // lo
    static_assert(ib_mtu_over_tcp(9000) == 4096);   // jumbo frames
    static_assert(ib_mtu_over_tcp(4172) == 4096);   // exactly 4096 of payload
    static_assert(ib_mtu_over_tcp(4171) == 2048);
    static_assert(ib_mtu_over_tcp(1500) == 1024);  // Ethernet: 1424 bytes of payload
    static_assert(ib_mtu_over_tcp(576) == 256);
    static_assert(ib_mtu_over_tcp(68) == 256);  // IPv4's minimum: still the smallest value
    static_assert(ib_mtu_over_tcp(0) == 256);
    SUCCEED();
}

}  // namespace
