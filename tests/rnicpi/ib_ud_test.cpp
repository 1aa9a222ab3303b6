// InfiniBand address handles and unreliable datagrams through the public RNICPI calls on IB
// instances (docs/ib-personality.md section 10, step 4): ri_ah_create/query/modify/destroy
// with their checks (RNICPI L6361-6598), and UD sends between the QPs of two IB instances
// of this process.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace {

ri_err_data_t err = 0;

// An opened IB instance (two ports on `subnet`) with a kernel RNIC handle, a PD and a CQ.
struct IbNode {
    IbNode(const std::string &subnet, uint16_t mtu = 0) {
        softrnic_vp_config_t c{};
        c.size = sizeof c;
        c.kind = SOFTRNIC_KIND_IB;
        c.num_ports = 2;
        c.active_mtu = mtu;
        c.subnet = subnet.c_str();
        EXPECT_EQ(softrnic_vp_create_ex(rt::unique_name("ibud").c_str(), &c, &vp), RI_RET_SUCCESS);
        if (!vp) return;
        EXPECT_EQ(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
        EXPECT_EQ(ri_pd_alloc(rnic, &pd, nullptr, nullptr, &err), RI_RET_SUCCESS);
        ri_cq_attr_t ca{};
        ca.num_cqe = 256;
        EXPECT_EQ(ri_cq_create(rnic, &ca, &cq, nullptr, nullptr, &err), RI_RET_SUCCESS);
        query();
    }
    ~IbNode() {
        if (!vp) return;
        for (ri_address_handle_t a : ahs)
            EXPECT_EQ(ri_ah_destroy(rnic, a, &err), RI_RET_SUCCESS);
        for (ri_qp_handle_t q : qps)
            EXPECT_EQ(ri_qp_destroy(rnic, q, &err), RI_RET_SUCCESS);
        for (auto &[mr, buf] : mrs) {
            (void)buf;
            EXPECT_EQ(ri_mr_dereg(rnic, mr, &err), RI_RET_SUCCESS);
        }
        if (cq) {
            EXPECT_EQ(ri_cq_destroy(rnic, cq, &err), RI_RET_SUCCESS);
        }
        if (pd) {
            EXPECT_EQ(ri_pd_dealloc(rnic, pd, &err), RI_RET_SUCCESS);
        }
        EXPECT_EQ(ri_rnic_free_hdl(vp, rnic, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_close(vp, &err), RI_RET_SUCCESS);
        EXPECT_EQ(softrnic_vp_destroy(vp), RI_RET_SUCCESS);
    }

    // The attributes with port data (GID tables, LIDs, counters).
    void query() {
        uint_t size = 0;
        auto flags = static_cast<ri_rnic_query_flags_t>(RI_QUERY_RNIC_PORT_INFO);
        ASSERT_EQ(ri_rnic_query(rnic, flags, nullptr, &size, &err), RI_RET_BUFFER_TOO_SMALL);
        attr_buf.assign(size, 0);
        ASSERT_EQ(ri_rnic_query(rnic, flags, reinterpret_cast<ri_rnic_attr_t *>(attr_buf.data()),
                                &size, &err),
                  RI_RET_SUCCESS);
    }
    const ri_ib_rnic_attr_t &ib() const {
        return *reinterpret_cast<const ri_rnic_attr_t *>(attr_buf.data())->trans_attr.ib;
    }
    const ri_ib_port_attr_t &port(uint8_t n) const { return ib().port_attrs[n - 1]; }
    ri_lid_t lid(uint8_t n) const { return port(n).base_lid; }

    ri_address_handle_t ah(const ri_ud_address_vector_t &av) {
        ri_address_handle_t a = nullptr;
        EXPECT_EQ(ri_ah_create(rnic, pd, const_cast<ri_ud_address_vector_t *>(&av), &a, nullptr,
                               nullptr, &err),
                  RI_RET_SUCCESS);
        if (a) ahs.push_back(a);
        return a;
    }
    void forget_ah(ri_address_handle_t a) { ahs.erase(std::find(ahs.begin(), ahs.end(), a)); }

    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;
    ri_pd_handle_t pd = nullptr;
    ri_cq_handle_t cq = nullptr;
    std::vector<ri_address_handle_t> ahs;
    std::vector<ri_qp_handle_t> qps;
    std::vector<std::pair<ri_mr_handle_t, std::vector<unsigned char> *>> mrs;
    std::vector<unsigned char> attr_buf;
};

std::string test_subnet() {
    return "ud" + std::to_string(::getpid()) + "-" + rt::unique_name("s").substr(0, 40);
}

// A valid vector: port `port` to `dlid`, no GRH.
ri_ud_address_vector_t local_av(uint8_t port, ri_lid_t dlid) {
    ri_ud_address_vector_t v{};
    v.physical_port = port;
    v.av_common.dlid = dlid;
    v.av_common.sl = 3;
    return v;
}

bool same(const ri_ud_address_vector_t &x, const ri_ud_address_vector_t &y) {
    return std::memcmp(&x, &y, sizeof x) == 0;
}

class IbAh : public ::testing::Test {
  protected:
    std::string subnet_ = test_subnet();
};

// --------------------------------------------------------------------------- address handles

// Create, query (the vector and PD it was created with, L6534), modify (the new vector is
// what query returns), destroy; the handle is invalid afterwards (L6579).
TEST_F(IbAh, Lifecycle) {
    IbNode n(subnet_);
    ASSERT_NE(n.ib().max_addr_hdls, 0u);
    ri_ud_address_vector_t av = local_av(1, n.lid(2));
    ri_address_handle_t ah = nullptr;
    ASSERT_EQ(ri_ah_create(n.rnic, n.pd, &av, &ah, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ASSERT_NE(ah, nullptr);

    ri_ud_address_vector_t got{};
    ri_pd_handle_t pd = nullptr;
    ASSERT_EQ(ri_ah_query(n.rnic, ah, &got, &pd, &err), RI_RET_SUCCESS);
    EXPECT_TRUE(same(got, av));
    EXPECT_EQ(pd, n.pd);

    ri_ud_address_vector_t av2 = local_av(2, n.lid(1));
    av2.av_common.send_global_routing_hdr_flg = 1;
    av2.av_common.source_gid_index = 0;
    av2.av_common.hop_limit = 64;
    av2.av_common.traffic_class = 7;
    av2.av_common.flow_label = 0xABCDE;
    av2.av_common.dgid = n.port(1).src_gid_table[0];
    av2.av_common.max_static_rate = 3;
    ASSERT_EQ(ri_ah_modify(n.rnic, ah, &av2, &err), RI_RET_SUCCESS);
    ASSERT_EQ(ri_ah_query(n.rnic, ah, &got, &pd, &err), RI_RET_SUCCESS);
    EXPECT_TRUE(same(got, av2));
    EXPECT_EQ(pd, n.pd);

    ASSERT_EQ(ri_ah_destroy(n.rnic, ah, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_ah_query(n.rnic, ah, &got, &pd, &err), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(ri_ah_modify(n.rnic, ah, &av, &err), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(ri_ah_destroy(n.rnic, ah, &err), RI_RET_ADDRESS_HANDLE_INVALID);
}

// The argument checks and their codes (L6409-6418, L6449-6455, L6484-6490, L6575-6580).
TEST_F(IbAh, Arguments) {
    IbNode n(subnet_);
    ri_ud_address_vector_t av = local_av(1, n.lid(2));
    ri_address_handle_t ah = nullptr;
    EXPECT_EQ(ri_ah_create(n.rnic, n.pd, nullptr, &ah, nullptr, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_ah_create(n.rnic, n.pd, &av, nullptr, nullptr, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    // Not a PD: a CQ handle, and a PD of no kind at all.
    EXPECT_EQ(ri_ah_create(n.rnic, n.cq, &av, &ah, nullptr, nullptr, &err),
              RI_RET_PD_INVALID_HANDLE);
    EXPECT_EQ(ri_ah_create(n.rnic, nullptr, &av, &ah, nullptr, nullptr, &err),
              RI_RET_PD_INVALID_HANDLE);
    ah = n.ah(av);
    ASSERT_NE(ah, nullptr);
    ri_ud_address_vector_t got{};
    ri_pd_handle_t pd = nullptr;
    EXPECT_EQ(ri_ah_query(n.rnic, ah, nullptr, &pd, &err), RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_ah_query(n.rnic, ah, &got, nullptr, &err), RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_ah_modify(n.rnic, ah, nullptr, &err), RI_RET_INVALID_PARAMETER);
    // Handles that are no address handle: a PD, null, a forged value.
    EXPECT_EQ(ri_ah_query(n.rnic, n.pd, &got, &pd, &err), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(ri_ah_destroy(n.rnic, nullptr, &err), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(ri_ah_destroy(n.rnic, reinterpret_cast<ri_address_handle_t>(uintptr_t{0x7001}), &err),
              RI_RET_ADDRESS_HANDLE_INVALID);
}

// Every invalid vector is INVALID_PARAMETER at create (L6415) and at modify (L6615), and a
// refused modify leaves the handle's vector as it was.
TEST_F(IbAh, InvalidVectors) {
    IbNode n(subnet_);
    const ri_ud_address_vector_t good = local_av(1, n.lid(2));
    ri_address_handle_t ah = n.ah(good);
    ASSERT_NE(ah, nullptr);
    // An empty entry of port 1's GID table, if the host leaves one (index 0 never is).
    int empty_gid = -1;
    for (int i = 15; i > 0 && empty_gid < 0; --i)
        if (n.port(1).src_gid_table[i].gid_prefix == 0 && n.port(1).src_gid_table[i].gid_guid == 0)
            empty_gid = i;
    ri_gid_t mgid{};
    mgid.gid_prefix = 0xFF12'401B'FFFF'0000ull;
    mgid.gid_guid = 1;

    struct Case {
        const char *what;
        void (*edit)(ri_ud_address_vector_t &, const IbNode &, int, const ri_gid_t &);
    };
    const Case cases[] = {
        {"port 0", [](auto &v, auto &, int, auto &) { v.physical_port = 0; }},
        {"port 3 of 2", [](auto &v, auto &, int, auto &) { v.physical_port = 3; }},
        {"DLID 0", [](auto &v, auto &, int, auto &) { v.av_common.dlid = 0; }},
        {"permissive DLID", [](auto &v, auto &, int, auto &) { v.av_common.dlid = 0xFFFF; }},
        {"SL 16", [](auto &v, auto &, int, auto &) { v.av_common.sl = 16; }},
        {"path bits with LMC 0",
         [](auto &v, auto &, int, auto &) { v.av_common.source_path_bits = 1; }},
        {"static rate 19", [](auto &v, auto &, int, auto &) { v.av_common.max_static_rate = 19; }},
        {"GRH, SGID index 16",
         [](auto &v, auto &n, int, auto &) {
             v.av_common.send_global_routing_hdr_flg = 1;
             v.av_common.dgid = n.port(2).src_gid_table[0];
             v.av_common.source_gid_index = 16;
         }},
        {"GRH, flow label of 21 bits",
         [](auto &v, auto &n, int, auto &) {
             v.av_common.send_global_routing_hdr_flg = 1;
             v.av_common.dgid = n.port(2).src_gid_table[0];
             v.av_common.flow_label = 0x100000;
         }},
        {"GRH, zero DGID",
         [](auto &v, auto &, int, auto &) { v.av_common.send_global_routing_hdr_flg = 1; }},
        {"GRH, multicast DLID with a unicast DGID",
         [](auto &v, auto &n, int, auto &) {
             v.av_common.send_global_routing_hdr_flg = 1;
             v.av_common.dgid = n.port(2).src_gid_table[0];
             v.av_common.dlid = 0xC001;
         }},
        {"GRH, unicast DLID with a multicast DGID",
         [](auto &v, auto &, int, auto &m) {
             v.av_common.send_global_routing_hdr_flg = 1;
             v.av_common.dgid = m;
         }},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        ri_ud_address_vector_t v = good;
        c.edit(v, n, empty_gid, mgid);
        ri_address_handle_t bad = nullptr;
        EXPECT_EQ(ri_ah_create(n.rnic, n.pd, &v, &bad, nullptr, nullptr, &err),
                  RI_RET_INVALID_PARAMETER);
        EXPECT_EQ(ri_ah_modify(n.rnic, ah, &v, &err), RI_RET_INVALID_PARAMETER);
        ri_ud_address_vector_t got{};
        ri_pd_handle_t pd = nullptr;
        ASSERT_EQ(ri_ah_query(n.rnic, ah, &got, &pd, &err), RI_RET_SUCCESS);
        EXPECT_TRUE(same(got, good));
    }
    if (empty_gid > 0) {
        ri_ud_address_vector_t v = good;
        v.av_common.send_global_routing_hdr_flg = 1;
        v.av_common.dgid = n.port(2).src_gid_table[0];
        v.av_common.source_gid_index = static_cast<uint8_t>(empty_gid);
        ri_address_handle_t bad = nullptr;
        EXPECT_EQ(ri_ah_create(n.rnic, n.pd, &v, &bad, nullptr, nullptr, &err),
                  RI_RET_INVALID_PARAMETER);
    }
    // Valid extremes: SL 15, the highest unicast LID, a multicast DLID with a multicast
    // DGID, and without a GRH a multicast DLID alone.
    ri_ud_address_vector_t v = good;
    v.av_common.sl = 15;
    v.av_common.dlid = 0xBFFF;
    v.av_common.max_static_rate = 18;
    EXPECT_NE(n.ah(v), nullptr);
    v.av_common.dlid = 0xC000;
    EXPECT_NE(n.ah(v), nullptr);
    v.av_common.send_global_routing_hdr_flg = 1;
    v.av_common.dgid = mgid;
    EXPECT_NE(n.ah(v), nullptr);
}

// An address handle uses its PD (ri_pd_dealloc refuses, PD_INUSE) and belongs to the RNIC
// handle it was made on (another handle of the instance does not see it; the owner cannot
// be freed while it has one, RNIC_INUSE).
TEST_F(IbAh, OwnershipAndPd) {
    IbNode n(subnet_);
    ri_address_handle_t ah = n.ah(local_av(1, n.lid(2)));
    ASSERT_NE(ah, nullptr);
    EXPECT_EQ(ri_pd_dealloc(n.rnic, n.pd, &err), RI_RET_PD_INUSE);
    EXPECT_EQ(ri_rnic_free_hdl(n.vp, n.rnic, &err), RI_RET_RNIC_INUSE);

    ri_rnic_handle_t other = nullptr;
    ASSERT_EQ(ri_rnic_get_hdl(n.vp, RI_CONSUMER_LOCATION_KERNEL, &other, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    ri_ud_address_vector_t got{};
    ri_pd_handle_t pd = nullptr;
    EXPECT_EQ(ri_ah_query(other, ah, &got, &pd, &err), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(ri_ah_destroy(other, ah, &err), RI_RET_ADDRESS_HANDLE_INVALID);
    // Nor may it name the first handle's PD.
    ri_ud_address_vector_t av = local_av(1, n.lid(2));
    ri_address_handle_t ah2 = nullptr;
    EXPECT_EQ(ri_ah_create(other, n.pd, &av, &ah2, nullptr, nullptr, &err),
              RI_RET_PD_INVALID_HANDLE);
    EXPECT_EQ(ri_rnic_free_hdl(n.vp, other, &err), RI_RET_SUCCESS);

    ASSERT_EQ(ri_ah_destroy(n.rnic, ah, &err), RI_RET_SUCCESS);
    n.forget_ah(ah);
    // The PD is free again (the destructor deallocates it).
}

}  // namespace
