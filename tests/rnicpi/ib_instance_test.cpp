// InfiniBand instances (docs/ib-personality.md §2, §10 step 2) through the public
// interface: softrnic_vp_create_ex, ri_rnic_query's IB layout and size protocol, stable
// GUIDs, GID and P_Key tables, ports brought up by the process-local LID authority,
// ri_rnic_modify, and the default answers of everything not built yet.
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <set>

#include "fixture.hpp"

namespace {

ri_err_data_t err = 0;

// A subnet of this test's own, so that no other test's LIDs meet ours.
std::string own_subnet(const char *tag = "") {
    return "t" + std::to_string(::getpid()) + "-" + rt::unique_name(tag).substr(0, 40);
}

softrnic_vp_config_t ib_config(const std::string &subnet, uint8_t ports = 0) {
    softrnic_vp_config_t c{};
    c.size = sizeof c;
    c.kind = SOFTRNIC_KIND_IB;
    c.num_ports = ports;
    c.subnet = subnet.c_str();
    return c;
}

// The derivation of §2.2, written again here so that the test checks the value itself,
// which depends only on the machine, the subnet and the name: the same in every run.
uint64_t fnv(const std::string &s, uint64_t h) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}
uint64_t expected_node_guid(const std::string &subnet, const std::string &name) {
    std::string machine;
    std::ifstream f("/etc/machine-id");
    if (!(f && std::getline(f, machine) && !machine.empty())) {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        machine = host;
    }
    const std::string zero(1, '\0');
    uint64_t h = fnv(machine + zero + subnet + zero + name, 0xcbf29ce484222325ull);
    return (uint64_t{0x02} << 56) | (h & 0x00FF'FFFF'FFFF'FF00ull);
}

std::vector<ri_event_record_t> g_events;
std::mutex g_events_mu;
void record_event(ri_os_data_t, ri_event_record_t *e) {
    std::lock_guard lk(g_events_mu);
    g_events.push_back(*e);
}

// An opened instance with one privileged RNIC handle.
class Instance {
  public:
    Instance(const std::string &name, const softrnic_vp_config_t *cfg,
             ri_async_event_callback_t cb = nullptr)
        : name_(name) {
        EXPECT_EQ(softrnic_vp_create_ex(name.c_str(), cfg, &vp), RI_RET_SUCCESS) << name;
        if (!vp) return;
        if (cb) {
            EXPECT_EQ(ri_async_set_event_handler(vp, cb, &err), RI_RET_SUCCESS);
        }
        open();
    }
    ~Instance() {
        close();
        if (vp) {
            EXPECT_EQ(softrnic_vp_destroy(vp), RI_RET_SUCCESS);
        }
    }
    void open() {
        EXPECT_EQ(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
    }
    void close() {
        if (!rnic) return;
        EXPECT_EQ(ri_rnic_free_hdl(vp, rnic, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_close(vp, &err), RI_RET_SUCCESS);
        rnic = nullptr;
    }
    // The attributes, with port data when `ports`.
    std::vector<unsigned char> query(bool ports) {
        uint_t size = 0;
        auto flags = static_cast<ri_rnic_query_flags_t>(ports ? RI_QUERY_RNIC_PORT_INFO : 0);
        EXPECT_EQ(ri_rnic_query(rnic, flags, nullptr, &size, &err), RI_RET_BUFFER_TOO_SMALL);
        std::vector<unsigned char> buf(size);
        EXPECT_EQ(
            ri_rnic_query(rnic, flags, reinterpret_cast<ri_rnic_attr_t *>(buf.data()), &size, &err),
            RI_RET_SUCCESS);
        EXPECT_EQ(size, buf.size());
        return buf;
    }
    static const ri_rnic_attr_t &attr(const std::vector<unsigned char> &b) {
        return *reinterpret_cast<const ri_rnic_attr_t *>(b.data());
    }
    static const ri_ib_rnic_attr_t &ib(const std::vector<unsigned char> &b) {
        return *attr(b).trans_attr.ib;
    }
    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;

  private:
    std::string name_;
};

constexpr size_t kPortBytes = sizeof(ri_ib_port_attr_t) + 16 * sizeof(ri_gid_t) + 16 * 2;

// RNICPI L2217-2292 on IB: the size asked for is exact, one byte short is
// BUFFER_TOO_SMALL with the size and an untouched buffer; without port data, port_attrs
// is NULL and num_ports still valid (L7981-7982).
TEST(IbInstance, QuerySizesAndLayout) {
    std::string subnet = own_subnet();
    softrnic_vp_config_t c = ib_config(subnet);
    Instance in(rt::unique_name("q"), &c);
    ASSERT_NE(in.rnic, nullptr);
    for (bool ports : {false, true}) {
        size_t want =
            sizeof(ri_rnic_attr_t) + sizeof(ri_ib_rnic_attr_t) + (ports ? 2 * kPortBytes : 0);
        auto flags = static_cast<ri_rnic_query_flags_t>(ports ? RI_QUERY_RNIC_PORT_INFO : 0);
        uint_t size = 0;
        EXPECT_EQ(ri_rnic_query(in.rnic, flags, nullptr, &size, &err), RI_RET_BUFFER_TOO_SMALL);
        EXPECT_EQ(size, want);
        std::vector<unsigned char> buf(want, 0xA5);
        size = static_cast<uint_t>(want - 1);
        EXPECT_EQ(ri_rnic_query(in.rnic, flags, reinterpret_cast<ri_rnic_attr_t *>(buf.data()),
                                &size, &err),
                  RI_RET_BUFFER_TOO_SMALL);
        EXPECT_EQ(size, want);
        for (unsigned char b : buf)
            ASSERT_EQ(b, 0xA5) << "the buffer was written";
        EXPECT_EQ(ri_rnic_query(in.rnic, flags, nullptr, &size, &err), RI_RET_INVALID_PARAMETER);
        EXPECT_EQ(ri_rnic_query(in.rnic, static_cast<ri_rnic_query_flags_t>(2),
                                reinterpret_cast<ri_rnic_attr_t *>(buf.data()), &size, &err),
                  RI_RET_INVALID_PARAMETER);
        auto b = in.query(ports);
        ASSERT_EQ(b.size(), want);
        const ri_ib_rnic_attr_t &ib = Instance::ib(b);
        EXPECT_EQ(Instance::attr(b).transport_type, RI_RDMA_TRANSPORT_TYPE_IB);
        EXPECT_EQ(ib.num_ports, 2);
        EXPECT_EQ(ib.port_attrs != nullptr, ports);
        for (const void *p :
             {static_cast<const void *>(&ib), static_cast<const void *>(ib.port_attrs)})
            if (p) {
                auto at = static_cast<const unsigned char *>(p);
                EXPECT_TRUE(at >= b.data() && at < b.data() + b.size()) << "outside the buffer";
            }
    }
}

TEST(IbInstance, AttributesAndPorts) {
    std::string subnet = own_subnet();
    softrnic_vp_config_t c = ib_config(subnet);
    std::string name = rt::unique_name("attr");
    Instance in(name, &c);
    ASSERT_NE(in.rnic, nullptr);
    auto b = in.query(true);
    const ri_rnic_attr_t &a = Instance::attr(b);
    const ri_ib_rnic_attr_t &ib = Instance::ib(b);
    EXPECT_EQ(ib.node_guid, expected_node_guid(subnet, name));
    EXPECT_EQ(ib.node_guid >> 56, 0x02u) << "locally administered EUI-64";
    EXPECT_EQ(ib.system_image_guid, ib.node_guid);
    EXPECT_EQ(ib.partition_table_size, 16);
    EXPECT_TRUE(ib.ib_rnic_flags & RI_IB_SI_GUID);
    EXPECT_TRUE(ib.ib_rnic_flags & RI_IB_PORT_ACTIVE_EVENT);
    // Nothing is advertised that the instance refuses: no multicast yet; address handles
    // as many as ri_ah_create makes.
    EXPECT_FALSE(ib.ib_rnic_flags & RI_IB_UD_MULTICAST);
    EXPECT_FALSE(ib.ib_rnic_flags & RI_IB_APM);
    EXPECT_EQ(ib.max_mcgs, 0u);
    EXPECT_EQ(ib.max_multicast_qps, 0u);
    EXPECT_EQ(ib.max_addr_hdls, 16384u);
    // iWARP-only extensions and SAFE_POST_ON_RTS are not IB's (§2.1).
    EXPECT_FALSE(a.rnic_flags & (RI_RNIC_EXT_ZBVA | RI_RNIC_EXT_LIF | RI_RNIC_SAFE_POST_ON_RTS));
    EXPECT_TRUE(a.rnic_flags & RI_RNIC_EXT_SRQ);
    EXPECT_EQ(a.max_qps, 16384u);

    std::set<ri_lid_t> lids;
    for (uint8_t p = 0; p < 2; ++p) {
        const ri_ib_port_attr_t &port = ib.port_attrs[p];
        EXPECT_EQ(port.ib_port_state, RI_IB_LINK_ACTIVE) << int(p);
        EXPECT_GE(port.base_lid, 2) << "LID 1 is the authority's";
        EXPECT_LE(port.base_lid, 0xBFFF);
        lids.insert(port.base_lid);
        EXPECT_EQ(port.sm_lid, 1);
        EXPECT_EQ(port.lmc, 0);
        EXPECT_EQ(port.max_mtu, RI_IB_MTU_4K);
        EXPECT_EQ(port.max_msg_size, 1u << 31);
        EXPECT_EQ(port.max_vls, 1);
        EXPECT_EQ(port.subnet_timeout, 18);
        EXPECT_EQ(port.src_gid_table_size, 16);
        // GID 0: fe80::/64 and the port GUID, node GUID | port number (§2.2, §2.3).
        EXPECT_EQ(port.src_gid_table[0].gid_prefix, 0xFE80'0000'0000'0000ull);
        EXPECT_EQ(port.src_gid_table[0].gid_guid, ib.node_guid | (p + 1u));
        EXPECT_EQ(port.pkey_table[0], 0xFFFF);
        for (int k = 1; k < 16; ++k)
            EXPECT_EQ(port.pkey_table[k], 0) << k;
    }
    EXPECT_EQ(lids.size(), 2u);

    // GIDs 1..: the host's IPv4 addresses, IPv4-mapped, come first.
    std::vector<uint64_t> v4;
    ifaddrs *ifa = nullptr;
    ASSERT_EQ(getifaddrs(&ifa), 0);
    for (ifaddrs *i = ifa; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
            v4.push_back(0x0000'FFFF'0000'0000ull |
                         ntohl(reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr.s_addr));
    freeifaddrs(ifa);
    const ri_gid_t *gids = ib.port_attrs[0].src_gid_table;
    for (uint64_t want : v4) {
        bool found = false;
        for (int k = 1; k < 16; ++k)
            found = found || (gids[k].gid_prefix == 0 && gids[k].gid_guid == want);
        EXPECT_TRUE(found) << std::hex << want;
    }

    char text[512] = {};
    ri_length_t len = sizeof text;
    ASSERT_EQ(ri_rnic_diag(in.rnic, RI_DIAG_RNIC_DETAILS, nullptr,
                           reinterpret_cast<unsigned char *>(text), &len, &err),
              RI_RET_SUCCESS);
    EXPECT_NE(std::string(text).find("InfiniBand software HCA, 2 ports, subnet " + subnet),
              std::string::npos)
        << text;
}

// §2.2: the same (machine, subnet, name) gives the same GUIDs, in another instance and in
// another process; another name or subnet gives others.
TEST(IbInstance, GuidsAreStable) {
    std::string subnet = own_subnet(), other_subnet = own_subnet("o");
    std::string name = rt::unique_name("guid");
    auto node_guid = [&](const std::string &sn, const std::string &n) {
        softrnic_vp_config_t c = ib_config(sn, 1);
        Instance in(n, &c);
        return in.rnic ? Instance::ib(in.query(false)).node_guid : 0;
    };
    uint64_t first = node_guid(subnet, name);
    EXPECT_EQ(first, expected_node_guid(subnet, name));
    EXPECT_EQ(node_guid(subnet, name), first);
    EXPECT_NE(node_guid(subnet, name + "x"), first);
    EXPECT_NE(node_guid(other_subnet, name), first);

    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        softrnic_vp_config_t c = ib_config(subnet, 1);
        ri_vp_handle_t vp = nullptr;
        ri_rnic_handle_t h = nullptr;
        uint64_t guid = 0;
        if (softrnic_vp_create_ex(name.c_str(), &c, &vp) == RI_RET_SUCCESS &&
            ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err) == RI_RET_SUCCESS &&
            ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &h, nullptr, nullptr, &err) ==
                RI_RET_SUCCESS) {
            std::vector<unsigned char> buf(4096);
            uint_t size = static_cast<uint_t>(buf.size());
            if (ri_rnic_query(h, static_cast<ri_rnic_query_flags_t>(0),
                              reinterpret_cast<ri_rnic_attr_t *>(buf.data()), &size,
                              &err) == RI_RET_SUCCESS)
                guid = Instance::ib(buf).node_guid;
        }
        ssize_t w = write(fds[1], &guid, sizeof guid);
        _exit(w == sizeof guid ? 0 : 1);
    }
    ::close(fds[1]);
    pollfd pfd{fds[0], POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 20000), 1) << "child did not answer";
    uint64_t child = 0;
    EXPECT_EQ(read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(child, first);
}

// §2.4 on the process-local authority: ports raise PORT_EVENT when Active, get distinct
// LIDs within a subnet, the same LIDs again after close and open, and another subnet is
// a LID space of its own.
TEST(IbInstance, PortStateEventsAndLids) {
    std::string subnet = own_subnet(), other = own_subnet("o");
    {
        std::lock_guard lk(g_events_mu);
        g_events.clear();
    }
    softrnic_vp_config_t c = ib_config(subnet, 3);
    Instance a(rt::unique_name("a"), &c, record_event);
    ASSERT_NE(a.rnic, nullptr);
    ASSERT_EQ(softrnic_vp_drain_events(a.vp), RI_RET_SUCCESS);
    {
        std::lock_guard lk(g_events_mu);
        ASSERT_EQ(g_events.size(), 3u);
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(g_events[i].event_type, RI_EVENT_PORT_EVENT);
            EXPECT_EQ(g_events[i].event_data.port_event.port_number, i + 1);
            EXPECT_EQ(g_events[i].event_data.port_event.port_state, RI_IB_LINK_ACTIVE);
        }
    }
    auto lids_of = [](Instance &in) {
        auto b = in.query(true);
        std::vector<ri_lid_t> v;
        for (int p = 0; p < Instance::ib(b).num_ports; ++p)
            v.push_back(Instance::ib(b).port_attrs[p].base_lid);
        return v;
    };
    std::vector<ri_lid_t> la = lids_of(a);
    EXPECT_EQ(la, (std::vector<ri_lid_t>{2, 3, 4})) << "lowest LIDs of a fresh subnet";
    softrnic_vp_config_t c2 = ib_config(subnet, 1);
    Instance b(rt::unique_name("b"), &c2);
    EXPECT_EQ(lids_of(b), std::vector<ri_lid_t>{5});
    a.close();
    a.open();
    EXPECT_EQ(lids_of(a), la) << "a port gets its LID back";
    softrnic_vp_config_t c3 = ib_config(other, 1);
    Instance d(rt::unique_name("d"), &c3);
    EXPECT_EQ(lids_of(d), std::vector<ri_lid_t>{2}) << "another subnet, another LID space";
}

// §2.2: a second live port with a live port's GUID gets no LID and stays Init.
TEST(IbInstance, DuplicatePortGuidStaysInit) {
    std::string subnet = own_subnet();
    const uint64_t guids[1] = {0x0200'0000'0000'4201ull};
    softrnic_vp_config_t c = ib_config(subnet, 1);
    c.node_guid = 0x0200'0000'0000'4200ull;
    c.port_guids = guids;
    Instance first(rt::unique_name("1"), &c);
    auto b1 = first.query(true);
    EXPECT_EQ(Instance::ib(b1).node_guid, c.node_guid);
    EXPECT_EQ(Instance::ib(b1).port_attrs[0].src_gid_table[0].gid_guid, guids[0]);
    EXPECT_EQ(Instance::ib(b1).port_attrs[0].ib_port_state, RI_IB_LINK_ACTIVE);
    Instance second(rt::unique_name("2"), &c);
    auto b2 = second.query(true);
    EXPECT_EQ(Instance::ib(b2).port_attrs[0].ib_port_state, RI_IB_LINK_INITIALIZE);
    EXPECT_EQ(Instance::ib(b2).port_attrs[0].base_lid, 0);
    // Once the first is down, the GUID is free again.
    first.close();
    second.close();
    second.open();
    EXPECT_EQ(Instance::ib(second.query(true)).port_attrs[0].ib_port_state, RI_IB_LINK_ACTIVE);
}

TEST(IbInstance, ConfigurationIsChecked) {
    std::string subnet = own_subnet();
    ri_vp_handle_t vp = nullptr;
    auto refused = [&](softrnic_vp_config_t c, const char *why) {
        EXPECT_EQ(softrnic_vp_create_ex(rt::unique_name("bad").c_str(), &c, &vp),
                  RI_RET_INVALID_PARAMETER)
            << why;
    };
    softrnic_vp_config_t c = ib_config(subnet);
    c.size = 4;
    refused(c, "size without kind");
    c = ib_config(subnet);
    c.kind = static_cast<softrnic_rnic_kind_t>(7);
    refused(c, "unknown kind");
    c = ib_config(subnet, 5);
    refused(c, "5 ports");
    c = ib_config(subnet);
    c.active_mtu = 1000;
    refused(c, "MTU 1000");
    const uint64_t zero[2] = {0x0200'0000'0000'0001ull, 0};
    c = ib_config(subnet);
    c.port_guids = zero;
    refused(c, "port GUID 0");
    const uint64_t same[2] = {0x0200'0000'0000'0001ull, 0x0200'0000'0000'0001ull};
    c.port_guids = same;
    refused(c, "equal port GUIDs");
    c = ib_config(subnet);
    c.subnet = "a/b";
    refused(c, "subnet name with '/'");
    c.subnet = "";
    refused(c, "empty subnet name");

    // A caller's older, shorter struct: the fields past `size` are the defaults, whatever
    // lies there.
    c = ib_config(subnet);
    c.size = offsetof(softrnic_vp_config_t, num_ports);
    c.num_ports = 9;
    c.active_mtu = 3;
    {
        const char *old = std::getenv("SOFTRNIC_IB_SUBNET");
        std::string saved = old ? old : "";
        setenv("SOFTRNIC_IB_SUBNET", subnet.c_str(), 1);
        setenv("SOFTRNIC_IB_PORTS", "3", 1);
        Instance in(rt::unique_name("short"), &c);
        EXPECT_EQ(Instance::ib(in.query(false)).num_ports, 3) << "SOFTRNIC_IB_PORTS";
        unsetenv("SOFTRNIC_IB_PORTS");
        if (old)
            setenv("SOFTRNIC_IB_SUBNET", saved.c_str(), 1);
        else
            unsetenv("SOFTRNIC_IB_SUBNET");
    }
    {
        setenv("SOFTRNIC_IB_PORTS", "9", 1);  // invalid: the default, 2
        softrnic_vp_config_t d = ib_config(subnet);
        Instance in(rt::unique_name("env"), &d);
        EXPECT_EQ(Instance::ib(in.query(false)).num_ports, 2);
        unsetenv("SOFTRNIC_IB_PORTS");
    }
    // NULL and SOFTRNIC_KIND_IWARP: iWARP, as softrnic_vp_create.
    softrnic_vp_config_t iw{};
    iw.size = sizeof iw;
    iw.kind = SOFTRNIC_KIND_IWARP;
    for (const softrnic_vp_config_t *cfg : {static_cast<const softrnic_vp_config_t *>(nullptr),
                                            static_cast<const softrnic_vp_config_t *>(&iw)}) {
        Instance in(rt::unique_name("iw"), cfg);
        auto b = in.query(true);
        EXPECT_EQ(Instance::attr(b).transport_type, RI_RDMA_TRANSPORT_TYPE_IWARP);
        EXPECT_EQ(Instance::attr(b).trans_attr.iwarp->num_ports, 1u);
        ri_rnic_modify_req_t req{};
        EXPECT_EQ(ri_rnic_modify(in.rnic, RI_IB_RNIC_ATTR_SI_GUID, &req, &err),
                  RI_RET_XPORT_UNSUPPORTED);
    }
}

// ri_rnic_modify (L2293-2410) on IB: the system image GUID, the Q_Key counter and the
// capability flags; shutdown and InitType are not offered; all or nothing.
TEST(IbInstance, RnicModify) {
    std::string subnet = own_subnet();
    softrnic_vp_config_t c = ib_config(subnet);
    Instance in(rt::unique_name("mod"), &c);
    ASSERT_NE(in.rnic, nullptr);
    const uint64_t node = Instance::ib(in.query(false)).node_guid;
    ri_rnic_modify_req_t req{};
    req.si_guid = 0x0211'2233'4455'6600ull;
    EXPECT_EQ(ri_rnic_modify(in.rnic, RI_IB_RNIC_ATTR_SI_GUID, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_rnic_modify(in.rnic, static_cast<ri_rnic_attr_mask_t>(2), &req, &err),
              RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_rnic_modify(in.rnic, RI_IB_RNIC_ATTR_SI_GUID, &req, &err), RI_RET_SUCCESS);
    EXPECT_EQ(Instance::ib(in.query(false)).system_image_guid, req.si_guid);
    EXPECT_EQ(Instance::ib(in.query(false)).node_guid, node);

    ri_port_modify_req_t ports[2]{};
    req.port_attrs = ports;
    req.port_list_size = 2;
    req.si_guid = 0x0299'0000'0000'0000ull;
    auto modify = [&](uint32_t m0, uint8_t p0, uint32_t m1, uint8_t p1) {
        ports[0] = {static_cast<ri_port_attr_mask_t>(m0), p0, 0};
        ports[1] = {static_cast<ri_port_attr_mask_t>(m1), p1, 0};
        return ri_rnic_modify(in.rnic, RI_IB_RNIC_ATTR_SI_GUID, &req, &err);
    };
    EXPECT_EQ(modify(RI_IB_PORT_ATTR_QKEY_RESET, 1, RI_IB_PORT_ATTR_QKEY_RESET, 3),
              RI_RET_INVALID_PARAMETER);  // no port 3 (L2383)
    EXPECT_EQ(modify(RI_IB_PORT_ATTR_QKEY_RESET, 1, 1u << 8, 2), RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(modify(RI_IB_PORT_ATTR_CAP_FLAG_SM, 1, 0, 2), RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(modify(RI_IB_PORT_ATTR_CAP_SET | RI_IB_PORT_ATTR_CAP_FLAG_SM, 1,
                     RI_IB_PORT_ATTR_SHUTDOWN, 2),
              RI_RET_OP_UNSUPPORTED);
    EXPECT_EQ(modify(RI_IB_PORT_ATTR_INIT_TYPE, 1, 0, 2), RI_RET_OP_UNSUPPORTED);
    auto b = in.query(true);
    EXPECT_EQ(Instance::ib(b).system_image_guid, 0x0211'2233'4455'6600ull) << "all or nothing";
    EXPECT_EQ(Instance::ib(b).port_attrs[0].ib_port_flags, 0);

    EXPECT_EQ(
        modify(
            RI_IB_PORT_ATTR_CAP_SET | RI_IB_PORT_ATTR_CAP_FLAG_SM | RI_IB_PORT_ATTR_CAP_FLAG_DEVMGT,
            RI_IB_ALL_PORTS,
            RI_IB_PORT_ATTR_CAP_SET | RI_IB_PORT_ATTR_CAP_FLAG_VENDOR | RI_IB_PORT_ATTR_QKEY_RESET,
            2),
        RI_RET_SUCCESS);
    b = in.query(true);
    EXPECT_EQ(Instance::ib(b).system_image_guid, 0x0299'0000'0000'0000ull);
    EXPECT_EQ(Instance::ib(b).port_attrs[0].ib_port_flags, RI_IB_PORT_SM | RI_IB_PORT_DEV_MGT);
    EXPECT_EQ(Instance::ib(b).port_attrs[1].ib_port_flags, RI_IB_PORT_VENDOR_CLASS)
        << "CAP_SET clears the flags it does not name (L2386)";
    EXPECT_EQ(Instance::ib(b).port_attrs[1].bad_qkey_count, 0);
    req.si_guid = 0;
    EXPECT_EQ(ri_rnic_modify(in.rnic, RI_IB_RNIC_ATTR_SI_GUID, &req, &err),
              RI_RET_INVALID_PARAMETER);

    ri_rnic_handle_t user = nullptr;
    ASSERT_EQ(ri_rnic_get_hdl(in.vp, RI_CONSUMER_LOCATION_USER, &user, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    req.port_list_size = 0;
    req.si_guid = 1;
    EXPECT_EQ(ri_rnic_modify(user, RI_IB_RNIC_ATTR_SI_GUID, &req, &err), RI_RET_NO_PERMISSION);
    EXPECT_EQ(ri_rnic_free_hdl(in.vp, user, &err), RI_RET_SUCCESS);
}

// What is not built yet keeps its default answer on an IB instance: the IB calls
// XPORT_UNSUPPORTED (IB QPs and the special QPs: ib_qp_state_test.cpp). PDs and CQs are
// transport-neutral and work.
TEST(IbInstance, NotBuiltYetAnswersTheDefault) {
    std::string subnet = own_subnet();
    softrnic_vp_config_t c = ib_config(subnet);
    Instance in(rt::unique_name("def"), &c);
    ASSERT_NE(in.rnic, nullptr);
    ri_pd_handle_t pd = nullptr;
    ASSERT_EQ(ri_pd_alloc(in.rnic, &pd, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_cq_attr_t ca{};
    ca.num_cqe = 16;
    ri_cq_handle_t cq = nullptr;
    ASSERT_EQ(ri_cq_create(in.rnic, &ca, &cq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_qp_attr_t qa{};
    qa.pd = pd;
    qa.scq.scq_handle = cq;
    qa.rcq.rcq_handle = cq;
    qa.sq_size = qa.rq_size = 4;
    qa.sq_max_sges = qa.rq_max_sges = qa.sq_max_sges_rdmaw = 1;
    qa.qp_xport.qp_ib.trans_type = RI_SERVICE_UNRELIABLE_DATAGRAM;
    ri_qp_handle_t qp = nullptr;
    ASSERT_EQ(ri_qp_create(in.rnic, &qa, &qp, nullptr, nullptr, &err), RI_RET_SUCCESS);
    // Address handles are built (ib_ud_test.cpp): an all-zero vector is an invalid one.
    ri_ud_address_vector_t av{};
    ri_address_handle_t ah = nullptr;
    EXPECT_EQ(ri_ah_create(in.rnic, pd, &av, &ah, nullptr, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    ri_gid_t gid{};
    EXPECT_EQ(ri_mcast_attach(in.rnic, 0xC001, &gid, qp, nullptr, nullptr, &err),
              RI_RET_XPORT_UNSUPPORTED);
    // Datagrams are built too: a UD QP in Reset refuses them (L4422).
    EXPECT_EQ(ri_qp_post_datagram(in.rnic, qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, 1, nullptr, 0,
                                  0, nullptr, 1, 0, 0, &err),
              RI_RET_QP_INVALID_STATE);
    char mad_in[256] = {}, mad_out[256] = {};
    EXPECT_EQ(ri_process_sma_mad(in.rnic, 1, mad_in, mad_out, &err), RI_RET_XPORT_UNSUPPORTED);
    EXPECT_EQ(ri_qp_destroy(in.rnic, qp, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_cq_destroy(in.rnic, cq, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_pd_dealloc(in.rnic, pd, &err), RI_RET_SUCCESS);
}

}  // namespace
