// InfiniBand address handles and unreliable datagrams through the public RNICPI calls on IB
// instances (docs/ib-personality.md section 10, step 4): ri_ah_create/query/modify/destroy
// with their checks (RNICPI L6361-6598), and UD sends between the QPs of two IB instances
// of this process.
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace {

// Per thread: IbUd.ConcurrentSenders posts from several.
thread_local ri_err_data_t err = 0;

constexpr unsigned kNext = RI_QP_ATTR_NEXT_STATE;
constexpr unsigned kQkey = RI_QP_ATTR_QKEY;
constexpr unsigned kPkey = RI_QP_ATTR_PRIMARY_PKEY;
constexpr unsigned kPort = RI_QP_ATTR_PORT_NUM;
constexpr unsigned kSpsn = RI_QP_ATTR_SEND_PSN;
constexpr uint32_t kGrh = 40;

// Registered memory of one instance.
struct Buffer {
    std::vector<unsigned char> bytes;
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t ltag = 0;
    ri_data_seg_t sge(uint32_t offset, uint32_t len) {
        ri_data_seg_t s{};
        s.addr.vaddr = reinterpret_cast<ri_addr_t>(bytes.data() + offset);
        s.tag.ltag = ltag;
        s.len = len;
        return s;
    }
};

// A UD QP and what its peers address it by.
struct UdQp {
    ri_qp_handle_t h = nullptr;
    uint32_t qpn = 0;
    uint8_t port = 0;
};

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
        for (auto &b : bufs)
            EXPECT_EQ(ri_mr_dereg(rnic, b->mr, &err), RI_RET_SUCCESS);
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

    Buffer &buffer(size_t size, unsigned char fill = 0) {
        auto b = std::make_unique<Buffer>();
        b->bytes.assign(size, fill);
        ri_mr_reg_attr_t a{};
        a.va = reinterpret_cast<ri_addr_t>(b->bytes.data());
        a.length = size;
        a.mem_attr = rt::MA(rt::kLocalRW);
        a.pd = pd;
        ri_rtag_t rtag = 0;
        EXPECT_EQ(ri_mr_reg(rnic, &a, &b->mr, &b->ltag, &rtag, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
        bufs.push_back(std::move(b));
        return *bufs.back();
    }

    // A UD QP on `port` with Q_Key `qkey`, driven to `to` (Reset, Init, RTR or RTS).
    UdQp ud(uint8_t port, uint32_t qkey, ri_qp_state_t to = RI_QP_STATE_READY_TO_SEND,
            uint32_t sq = 16, uint32_t rq = 16, uint32_t sges = 2, ri_srq_handle_t srq = nullptr) {
        ri_qp_attr_t qa{};
        if (srq) {
            qa.srq_valid = 1;
            qa.srq.srq_handle = srq;
        }
        qa.pd = pd;
        qa.scq.scq_handle = cq;
        qa.rcq.rcq_handle = cq;
        qa.sq_size = sq;
        qa.rq_size = rq;
        qa.sq_max_sges = qa.rq_max_sges = qa.sq_max_sges_rdmaw = sges;
        qa.qp_xport.qp_ib.trans_type = RI_SERVICE_UNRELIABLE_DATAGRAM;
        UdQp q;
        EXPECT_EQ(ri_qp_create(rnic, &qa, &q.h, nullptr, nullptr, &err), RI_RET_SUCCESS);
        if (!q.h) return q;
        qps.push_back(q.h);
        q.qpn = qa.qp_id;
        q.port = port;
        if (to == RI_QP_STATE_IDLE) return q;
        ri_qp_attr_t m{};
        m.state = RI_QP_STATE_INITIALIZED;
        m.qp_xport.qp_ib.primary_av.physical_port = port;
        m.qp_xport.qp_ib.rcv_qkey = qkey;
        EXPECT_EQ(modify(q.h, kNext | kPkey | kPort | kQkey, m), RI_RET_SUCCESS);
        if (to == RI_QP_STATE_INITIALIZED) return q;
        m.state = RI_QP_STATE_READY_TO_RECEIVE;
        EXPECT_EQ(modify(q.h, kNext, m), RI_RET_SUCCESS);
        if (to == RI_QP_STATE_READY_TO_RECEIVE) return q;
        m.state = RI_QP_STATE_READY_TO_SEND;
        m.qp_xport.qp_ib.send_psn = 1;
        EXPECT_EQ(modify(q.h, kNext | kSpsn, m), RI_RET_SUCCESS);
        return q;
    }
    ri_api_return_t modify(ri_qp_handle_t q, unsigned mask, ri_qp_attr_t a) {
        return ri_qp_modify(rnic, q, rt::QM(mask), &a, &err);
    }
    ri_qp_state_t state(ri_qp_handle_t q) {
        ri_qp_attr_t a{};
        EXPECT_EQ(ri_qp_query(rnic, q, &a, &err), RI_RET_SUCCESS);
        return a.state;
    }
    void destroy(ri_qp_handle_t q) {
        EXPECT_EQ(ri_qp_destroy(rnic, q, &err), RI_RET_SUCCESS);
        qps.erase(std::find(qps.begin(), qps.end(), q));
    }

    ri_api_return_t recv(const UdQp &q, Buffer &b, uint32_t offset, uint32_t len, ri_wr_id_t id) {
        ri_data_seg_t s = b.sge(offset, len);
        return ri_qp_post_recv(rnic, q.h, rt::F(0), id, &s, 1, &err);
    }
    ri_api_return_t send(const UdQp &q, ri_address_handle_t to, uint32_t dest_qpn, uint32_t qkey,
                         Buffer &b, uint32_t offset, uint32_t len, ri_wr_id_t id, bool imm = false,
                         uint32_t imm_data = 0) {
        ri_data_seg_t s = b.sge(offset, len);
        return ri_qp_post_datagram(rnic, q.h, imm ? RI_WR_TYPE_SEND_IMMEDIATE : RI_WR_TYPE_SEND,
                                   rt::F(rt::kSig), id, len ? &s : nullptr, len ? 1 : 0, imm_data,
                                   to, dest_qpn, qkey, 0, &err);
    }
    // Every completion now in the CQ (everything in this process completes inline).
    std::vector<ri_wc_t> drain() { return rt::drain_cq(rnic, cq); }

    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;
    ri_pd_handle_t pd = nullptr;
    ri_cq_handle_t cq = nullptr;
    std::vector<ri_address_handle_t> ahs;
    std::vector<ri_qp_handle_t> qps;
    std::vector<std::unique_ptr<Buffer>> bufs;
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

uint32_t raw_flags(const ri_gen_wc_t &w) {
    return static_cast<uint32_t>(w.flags);
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

// ------------------------------------------------------------------------------ datagrams

class IbUd : public ::testing::Test {
  protected:
    std::string subnet_ = test_subnet();
};

uint64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = v << 8 | p[i];
    return v;
}

std::vector<ri_wc_t> of_type(const std::vector<ri_wc_t> &v, ri_wc_type_t t) {
    std::vector<ri_wc_t> out;
    for (const ri_wc_t &w : v)
        if (w.type_wc == t) out.push_back(w);
    return out;
}

// A datagram from a UD QP of one instance reaches the QP with that (LID, QPN) on another
// instance of the process: the payload after the 40-byte GRH area, and the completion's
// datagram fields (RNICPI L3514-3530): source QPN, SLID, SL, path bits, no GRH, the local
// QPN, bytes including the GRH area. The send completes successfully.
TEST_F(IbUd, DeliveredBetweenInstances) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(1, 0x1111), rx = b.ud(2, 0x2222);
    ASSERT_NE(a.lid(1), b.lid(2));
    Buffer &src = a.buffer(4096, 0);
    for (size_t i = 0; i < 300; ++i)
        src.bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    Buffer &dst = b.buffer(4096, 0xEE);
    ASSERT_EQ(b.recv(rx, dst, 0, kGrh + 512, 77), RI_RET_SUCCESS);
    ri_ud_address_vector_t av = local_av(1, b.lid(2));
    ri_address_handle_t ah = a.ah(av);
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2222, src, 0, 300, 5), RI_RET_SUCCESS);

    std::vector<ri_wc_t> sent = a.drain();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].rc_wc.op_type, RI_WC_TYPE_SEND);
    EXPECT_EQ(sent[0].rc_wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(sent[0].rc_wc.id, 5u);
    EXPECT_EQ(sent[0].rc_wc.bytes_transferred, 300u);
    EXPECT_EQ(sent[0].ud_wc.qpn, tx.qpn);  // a UD QP's completions are ri_gen_wc_t

    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 1u);
    const ri_gen_wc_t &w = got[0].ud_wc;
    EXPECT_EQ(w.op_type, RI_WC_TYPE_DATA_RECEIVED);
    EXPECT_EQ(w.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(w.id, 77u);
    EXPECT_EQ(w.bytes_transferred, kGrh + 300);  // the GRH area always counts (L3525)
    EXPECT_EQ(w.qpn, rx.qpn);
    EXPECT_EQ(w.remote_qpn, tx.qpn);
    EXPECT_EQ(w.remote_lid, a.lid(1));
    EXPECT_EQ(w.remote_sl, 3u);
    EXPECT_EQ(w.local_lid_pathbits, 0u);
    EXPECT_EQ(w.grh_present, 0u);
    EXPECT_EQ(w.pkey_index, 0u);
    EXPECT_FALSE(raw_flags(w) & RI_WC_FLAG_IMMEDIATE_DATA);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + kGrh, src.bytes.data(), 300), 0);
    EXPECT_EQ(dst.bytes[kGrh + 300], 0xEE);  // nothing past the message
}

// Datagrams with immediate data (IBA 1.2 ch. 9: SEND with immediate on UD), posted through
// ri_qp_post_datagram and through ri_qp_postsq (a SEND_IMMEDIATE read as ri_wr_datagram_t,
// docs/ib-personality.md A10); and a QP reaching another QP of its own instance, port 1
// to port 2, as a dual-port HCA does.
TEST_F(IbUd, ImmediateAndPostsq) {
    IbNode a(subnet_);
    UdQp tx = a.ud(1, 0x10), rx = a.ud(2, 0x20);
    Buffer &src = a.buffer(256, 0x5A);
    Buffer &dst = a.buffer(1024, 0);
    ASSERT_EQ(a.recv(rx, dst, 0, 512, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.recv(rx, dst, 512, 512, 2), RI_RET_SUCCESS);
    ri_address_handle_t ah = a.ah(local_av(1, a.lid(2)));
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x20, src, 0, 16, 10, true, 0xDEADBEEF), RI_RET_SUCCESS);

    ri_data_seg_t s = src.sge(0, 8);
    ri_wr_t wr{};
    wr.wr_datagram.type = RI_WR_TYPE_SEND_IMMEDIATE;
    wr.wr_datagram.flags = rt::F(rt::kSig | RI_WR_SOLICITED_EVENT_FLAG);
    wr.wr_datagram.id = 11;
    wr.wr_datagram.sg_list = &s;
    wr.wr_datagram.num_sgls = 1;
    wr.wr_datagram.imm_data = 0x01020304;
    wr.wr_datagram.remote_node_address = ah;
    wr.wr_datagram.dest_qp = rx.qpn;
    wr.wr_datagram.dest_qkey = 0x20;
    uint_t one = 1;
    ASSERT_EQ(ri_qp_postsq(a.rnic, tx.h, &wr, &one, &err), RI_RET_SUCCESS);
    EXPECT_EQ(one, 1u);

    std::vector<ri_wc_t> recvs = of_type(a.drain(), RI_WC_TYPE_DATA_RECEIVED);
    ASSERT_EQ(recvs.size(), 2u);
    EXPECT_EQ(recvs[0].ud_wc.id, 1u);
    EXPECT_TRUE(raw_flags(recvs[0].ud_wc) & RI_WC_FLAG_IMMEDIATE_DATA);
    EXPECT_EQ(recvs[0].ud_wc.immediate_data, 0xDEADBEEFu);
    EXPECT_EQ(recvs[0].ud_wc.bytes_transferred, kGrh + 16);  // immediate data excluded
    EXPECT_EQ(recvs[0].ud_wc.remote_lid, a.lid(1));
    EXPECT_EQ(recvs[1].ud_wc.id, 2u);
    EXPECT_EQ(recvs[1].ud_wc.immediate_data, 0x01020304u);
    EXPECT_TRUE(raw_flags(recvs[1].ud_wc) & RI_WC_FLAG_SOLICITED_EVENT);
    EXPECT_EQ(recvs[1].ud_wc.bytes_transferred, kGrh + 8);
}

// An address vector with a GRH: the receive says so, and the first 40 bytes of the buffer
// are the GRH (IBA 1.2 ch. 8: version 6, traffic class, flow label, payload length, next
// header 0x1B, hop limit, SGID and DGID, big-endian).
TEST_F(IbUd, GrhFilled) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(2, 0x77), rx = b.ud(1, 0x99);
    Buffer &src = a.buffer(64, 0x42);
    Buffer &dst = b.buffer(256, 0);
    ASSERT_EQ(b.recv(rx, dst, 0, 256, 3), RI_RET_SUCCESS);
    ri_ud_address_vector_t av = local_av(2, b.lid(1));
    av.av_common.send_global_routing_hdr_flg = 1;
    av.av_common.source_gid_index = 0;
    av.av_common.hop_limit = 64;
    av.av_common.traffic_class = 0x12;
    av.av_common.flow_label = 0x12345;
    av.av_common.dgid = b.port(1).src_gid_table[0];
    ri_address_handle_t ah = a.ah(av);
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x99, src, 0, 64, 1), RI_RET_SUCCESS);
    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ud_wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(got[0].ud_wc.grh_present, 1u);
    const unsigned char *g = dst.bytes.data();
    EXPECT_EQ(g[0] >> 4, 6);
    EXPECT_EQ(((g[0] & 0xF) << 4) | (g[1] >> 4), 0x12);
    EXPECT_EQ(((g[1] & 0xF) << 16) | (g[2] << 8) | g[3], 0x12345);
    EXPECT_EQ((g[4] << 8) | g[5], 64 + 24);  // BTH + DETH + ICRC after the GRH
    EXPECT_EQ(g[6], 0x1B);
    EXPECT_EQ(g[7], 64);
    EXPECT_EQ(be64(g + 8), a.port(2).src_gid_table[0].gid_prefix);
    EXPECT_EQ(be64(g + 16), a.port(2).src_gid_table[0].gid_guid);
    EXPECT_EQ(be64(g + 24), b.port(1).src_gid_table[0].gid_prefix);
    EXPECT_EQ(be64(g + 32), b.port(1).src_gid_table[0].gid_guid);
    EXPECT_EQ(std::memcmp(g + kGrh, src.bytes.data(), 64), 0);
}

// A Q_Key that is not the receiver's: dropped and counted in the receiving port's
// Q_Key violation counter (bad_qkey_count); the send still completes successfully, and
// the receive WQE stays for the next datagram.
TEST_F(IbUd, WrongQkeyDroppedAndCounted) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(1, 0x1), rx = b.ud(1, 0x5555);
    Buffer &src = a.buffer(64, 0);
    src.bytes[0] = 1;
    src.bytes[1] = 2;
    Buffer &dst = b.buffer(256, 0);
    ASSERT_EQ(b.recv(rx, dst, 0, 256, 9), RI_RET_SUCCESS);
    ri_address_handle_t ah = a.ah(local_av(1, b.lid(1)));
    b.query();
    const uint16_t before = b.port(1).bad_qkey_count;
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x5554, src, 0, 1, 1), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sent = a.drain();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].rc_wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_TRUE(b.drain().empty());
    b.query();
    EXPECT_EQ(b.port(1).bad_qkey_count, before + 1);
    EXPECT_EQ(b.port(2).bad_qkey_count, 0u);
    // The right key: the same WQE takes it.
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x5555, src, 1, 1, 2), RI_RET_SUCCESS);
    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ud_wc.id, 9u);
    EXPECT_EQ(dst.bytes[kGrh], 2);
}

// A WR Q_Key with the high bit set sends the QP's own Q_Key instead (IBA 1.2 ch. 10,
// privileged Q_Keys; docs/ib-personality.md 4.6).
TEST_F(IbUd, PrivilegedQkeySendsTheQpsOwn) {
    IbNode a(subnet_);
    UdQp same = a.ud(1, 0x4242), other = a.ud(1, 0x1234), rx = a.ud(2, 0x4242);
    Buffer &src = a.buffer(64, 7);
    Buffer &dst = a.buffer(256, 0);
    ASSERT_EQ(a.recv(rx, dst, 0, 256, 1), RI_RET_SUCCESS);
    ri_address_handle_t ah = a.ah(local_av(1, a.lid(2)));
    a.query();
    const uint16_t before = a.port(2).bad_qkey_count;
    // From a QP whose own key is not the receiver's: dropped.
    ASSERT_EQ(a.send(other, ah, rx.qpn, 0x80000000u, src, 0, 4, 1), RI_RET_SUCCESS);
    EXPECT_TRUE(of_type(a.drain(), RI_WC_TYPE_DATA_RECEIVED).empty());
    a.query();
    EXPECT_EQ(a.port(2).bad_qkey_count, before + 1);
    // From one whose own key is: delivered, though the WR named another.
    ASSERT_EQ(a.send(same, ah, rx.qpn, 0x80000001u, src, 0, 4, 2), RI_RET_SUCCESS);
    EXPECT_EQ(of_type(a.drain(), RI_WC_TYPE_DATA_RECEIVED).size(), 1u);
}

// A datagram longer than the port's MTU completes LOCAL_LENGTH_ERROR and moves the UD QP to
// SQE (docs/ib-personality.md 4.4, 7.4): later sends complete flushed until SQE -> RTS, and
// then a datagram of exactly the MTU goes through.
TEST_F(IbUd, AboveMtuIsALocalLengthError) {
    IbNode a(subnet_, 256), b(subnet_, 256);
    UdQp tx = a.ud(1, 0x1), rx = b.ud(1, 0x2);
    Buffer &src = a.buffer(512, 3);
    Buffer &dst = b.buffer(1024, 0);
    ASSERT_EQ(b.recv(rx, dst, 0, 1024, 1), RI_RET_SUCCESS);
    ri_address_handle_t ah = a.ah(local_av(1, b.lid(1)));
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 257, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 8, 2), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sent = a.drain();
    ASSERT_EQ(sent.size(), 2u);
    EXPECT_EQ(sent[0].rc_wc.op_status, RI_WC_STATUS_LOCAL_LENGTH_ERROR);
    EXPECT_EQ(sent[1].rc_wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
    EXPECT_EQ(a.state(tx.h), RI_QP_STATE_SEND_QUEUE_ERROR);
    EXPECT_TRUE(b.drain().empty());
    ri_qp_attr_t m{};
    m.state = RI_QP_STATE_READY_TO_SEND;
    ASSERT_EQ(a.modify(tx.h, kNext, m), RI_RET_SUCCESS);
    EXPECT_EQ(a.state(tx.h), RI_QP_STATE_READY_TO_SEND);
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 256, 3), RI_RET_SUCCESS);
    sent = a.drain();
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].rc_wc.op_status, RI_WC_STATUS_SUCCESS);
    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ud_wc.bytes_transferred, kGrh + 256);
}

// No receive posted: the datagram is dropped silently (IBA 1.2 ch. 9); a receive posted
// afterwards gets the next datagram, not the dropped one.
TEST_F(IbUd, NoReceiveIsASilentDrop) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(1, 0x1), rx = b.ud(1, 0x2);
    Buffer &src = a.buffer(64, 0);
    src.bytes[0] = 0xA1;
    src.bytes[1] = 0xB2;
    Buffer &dst = b.buffer(256, 0);
    ri_address_handle_t ah = a.ah(local_av(1, b.lid(1)));
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 1, 1), RI_RET_SUCCESS);
    EXPECT_EQ(a.drain().size(), 1u);
    EXPECT_TRUE(b.drain().empty());
    ASSERT_EQ(b.recv(rx, dst, 0, 256, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 1, 1, 2), RI_RET_SUCCESS);
    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(dst.bytes[kGrh], 0xB2);
    EXPECT_EQ(b.state(rx.h), RI_QP_STATE_READY_TO_SEND);
}

// Nothing receives at a QP that is not yet in RTR, at an unknown QPN or LID, or at a
// destroyed QP; the sends complete successfully all the same.
TEST_F(IbUd, UnreachableDestinationsDrop) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(1, 0x1);
    UdQp init = b.ud(1, 0x2, RI_QP_STATE_INITIALIZED);
    UdQp gone = b.ud(1, 0x2);
    Buffer &src = a.buffer(64, 1);
    Buffer &dst = b.buffer(1024, 0);
    ASSERT_EQ(b.recv(init, dst, 0, 256, 1), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(gone, dst, 256, 256, 2), RI_RET_SUCCESS);
    b.destroy(gone.h);
    ri_address_handle_t ah = a.ah(local_av(1, b.lid(1)));
    ri_address_handle_t nowhere = a.ah(local_av(1, 0xBFF0));
    ASSERT_EQ(a.send(tx, ah, init.qpn, 0x2, src, 0, 8, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, gone.qpn, 0x2, src, 0, 8, 2), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, init.qpn ^ 0x800000, 0x2, src, 0, 8, 3), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, nowhere, init.qpn, 0x2, src, 0, 8, 4), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sent = a.drain();
    ASSERT_EQ(sent.size(), 4u);
    for (const ri_wc_t &w : sent)
        EXPECT_EQ(w.rc_wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_TRUE(b.drain().empty());
    // RTR receives (IBA 1.2 table 91: arrivals are legal in RTR).
    ri_qp_attr_t m{};
    m.state = RI_QP_STATE_READY_TO_RECEIVE;
    ASSERT_EQ(b.modify(init.h, kNext, m), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, init.qpn, 0x2, src, 0, 8, 5), RI_RET_SUCCESS);
    EXPECT_EQ(b.drain().size(), 1u);
}

// A receive buffer smaller than 40 bytes plus the payload: the WQE completes
// LOCAL_LENGTH_ERROR and the receiving QP goes to Error (a receive completed in error).
TEST_F(IbUd, ReceiveTooSmall) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(1, 0x1), rx = b.ud(1, 0x2);
    Buffer &src = a.buffer(64, 1);
    Buffer &dst = b.buffer(256, 0);
    ASSERT_EQ(b.recv(rx, dst, 0, kGrh + 15, 1), RI_RET_SUCCESS);
    ri_address_handle_t ah = a.ah(local_av(1, b.lid(1)));
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 16, 1), RI_RET_SUCCESS);
    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].ud_wc.op_status, RI_WC_STATUS_LOCAL_LENGTH_ERROR);
    EXPECT_EQ(b.state(rx.h), RI_QP_STATE_ERROR);
}

// The post-time checks of a datagram WR (L4416-4460): state, type (A10), address handle
// (another consumer's, another PD's, destroyed), SGE count, QPN range; and the address
// handle is read at post time: modified between two sends, each goes where its vector said;
// destroyed after a post, the posted send is not affected.
TEST_F(IbUd, PostChecksAndAddressHandleUse) {
    IbNode a(subnet_), b(subnet_);
    UdQp tx = a.ud(1, 0x1), rx1 = b.ud(1, 0x2), rx2 = b.ud(2, 0x2);
    UdQp init = a.ud(1, 0x1, RI_QP_STATE_INITIALIZED);
    Buffer &src = a.buffer(64, 1);
    Buffer &dst = b.buffer(1024, 0);
    ri_address_handle_t ah = a.ah(local_av(1, b.lid(1)));
    EXPECT_EQ(a.send(init, ah, rx1.qpn, 0x2, src, 0, 8, 1), RI_RET_QP_INVALID_STATE);
    ri_address_handle_t foreign = b.ah(local_av(1, a.lid(1)));
    EXPECT_EQ(a.send(tx, foreign, rx1.qpn, 0x2, src, 0, 8, 1), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(a.send(tx, nullptr, rx1.qpn, 0x2, src, 0, 8, 1), RI_RET_ADDRESS_HANDLE_INVALID);
    ri_pd_handle_t pd2 = nullptr;
    ASSERT_EQ(ri_pd_alloc(a.rnic, &pd2, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_ud_address_vector_t av = local_av(1, b.lid(1));
    ri_address_handle_t other_pd = nullptr;
    ASSERT_EQ(ri_ah_create(a.rnic, pd2, &av, &other_pd, nullptr, nullptr, &err), RI_RET_SUCCESS);
    EXPECT_EQ(a.send(tx, other_pd, rx1.qpn, 0x2, src, 0, 8, 1), RI_RET_ADDRESS_HANDLE_INVALID);
    EXPECT_EQ(ri_ah_destroy(a.rnic, other_pd, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_pd_dealloc(a.rnic, pd2, &err), RI_RET_SUCCESS);
    EXPECT_EQ(a.send(tx, ah, 0x1000000, 0x2, src, 0, 8, 1), RI_RET_INVALID_PARAMETER);
    ri_data_seg_t s[3] = {src.sge(0, 1), src.sge(1, 1), src.sge(2, 1)};
    EXPECT_EQ(ri_qp_post_datagram(a.rnic, tx.h, RI_WR_TYPE_SEND, rt::F(rt::kSig), 1, s, 3, 0, ah,
                                  rx1.qpn, 0x2, 0, &err),
              RI_RET_RNIC_SG_LIMIT_EXCEEDED);
    EXPECT_EQ(ri_qp_post_datagram(a.rnic, tx.h, RI_WR_TYPE_RDMA_WRITE, rt::F(rt::kSig), 1, s, 1, 0,
                                  ah, rx1.qpn, 0x2, 0, &err),
              RI_RET_WR_INVALID_TYPE);
    EXPECT_TRUE(a.drain().empty());  // nothing was posted

    ASSERT_EQ(b.recv(rx1, dst, 0, 256, 1), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(rx2, dst, 256, 256, 2), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, rx1.qpn, 0x2, src, 0, 8, 1), RI_RET_SUCCESS);
    ri_ud_address_vector_t to2 = local_av(1, b.lid(2));
    ASSERT_EQ(ri_ah_modify(a.rnic, ah, &to2, &err), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(tx, ah, rx2.qpn, 0x2, src, 0, 8, 2), RI_RET_SUCCESS);
    ASSERT_EQ(ri_ah_destroy(a.rnic, ah, &err), RI_RET_SUCCESS);
    a.forget_ah(ah);
    EXPECT_EQ(a.send(tx, ah, rx2.qpn, 0x2, src, 0, 8, 3), RI_RET_ADDRESS_HANDLE_INVALID);
    std::vector<ri_wc_t> got = b.drain();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].ud_wc.qpn, rx1.qpn);
    EXPECT_EQ(got[1].ud_wc.qpn, rx2.qpn);
    EXPECT_EQ(a.drain().size(), 2u);
}

// RC QPs take no datagrams; in RTS their sends are RC operations (ib_rc_test.cpp), here to
// a QP number nobody has: retry exceeded. A datagram to the RC QP's number is dropped.
TEST_F(IbUd, RcTakesNoDatagrams) {
    IbNode a(subnet_);
    ri_qp_attr_t qa{};
    qa.pd = a.pd;
    qa.scq.scq_handle = a.cq;
    qa.rcq.rcq_handle = a.cq;
    qa.sq_size = qa.rq_size = 4;
    qa.sq_max_sges = qa.rq_max_sges = qa.sq_max_sges_rdmaw = 1;
    qa.qp_xport.qp_ib.trans_type = RI_SERVICE_RELIABLE_CONNECTION;
    ri_qp_handle_t rc = nullptr;
    ASSERT_EQ(ri_qp_create(a.rnic, &qa, &rc, nullptr, nullptr, &err), RI_RET_SUCCESS);
    a.qps.push_back(rc);
    ri_address_handle_t ah = a.ah(local_av(1, a.lid(2)));
    EXPECT_EQ(ri_qp_post_datagram(a.rnic, rc, RI_WR_TYPE_SEND, rt::F(rt::kSig), 1, nullptr, 0, 0,
                                  ah, 5, 5, 0, &err),
              RI_RET_WR_INVALID_TYPE);
    EXPECT_EQ(ri_qp_post_datagram(a.rnic, a.pd, RI_WR_TYPE_SEND, rt::F(rt::kSig), 1, nullptr, 0, 0,
                                  ah, 5, 5, 0, &err),
              RI_RET_QP_INVALID_HANDLE);
    ri_qp_attr_t m{};
    ri_ib_qp_attr_t &ib = m.qp_xport.qp_ib;
    m.state = RI_QP_STATE_INITIALIZED;
    ib.primary_av.physical_port = 1;
    m.enable_rdma_read = 1;
    ASSERT_EQ(a.modify(rc, kNext | kPkey | kPort | RI_QP_ATTR_ENABLE_RDMA_READ, m), RI_RET_SUCCESS);
    m.state = RI_QP_STATE_READY_TO_RECEIVE;
    ib.primary_av.path_mtu = RI_IB_MTU_1K;
    ib.primary_av.av.dlid = a.lid(2);
    ib.primary_av.local_ack_timeout = 1;  // the retry clock: 4.096 us x 2 x (0 + 1)
    ib.dest_qpn = 0x42;
    ASSERT_EQ(
        a.modify(rc,
                 kNext | RI_QP_ATTR_PRIMARY_PATH | RI_QP_ATTR_DEST_QPID | RI_QP_ATTR_RECV_PSN |
                     RI_QP_ATTR_MAX_RDMA_READ_INCOMING | RI_QP_ATTR_MIN_RNR_TIMER,
                 m),
        RI_RET_SUCCESS);
    m.state = RI_QP_STATE_READY_TO_SEND;
    ASSERT_EQ(a.modify(rc, kNext | kSpsn | RI_QP_ATTR_MAX_RDMA_READ_OUTGOING, m), RI_RET_SUCCESS);
    EXPECT_EQ(
        ri_qp_post_send(a.rnic, rc, RI_WR_TYPE_SEND, rt::F(rt::kSig), 1, nullptr, 0, 0, 0, &err),
        RI_RET_SUCCESS);
    std::vector<ri_wc_t> wc = a.drain();
    for (auto until = rt::Clock::now() + rt::kTimeout; wc.empty() && rt::Clock::now() < until;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        wc = a.drain();
    }
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].rc_wc.op_status, RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED);
    // A datagram addressed to the RC QP's number (bound on its port from RTR) is not taken.
    UdQp ud = a.ud(2, 0x11);
    ri_qp_attr_t rq{};
    ASSERT_EQ(ri_qp_query(a.rnic, rc, &rq, &err), RI_RET_SUCCESS);
    Buffer &buf = a.buffer(64);
    ri_address_handle_t to_rc = a.ah(local_av(2, a.lid(1)));
    ASSERT_EQ(a.send(ud, to_rc, rq.qp_id, 0x11, buf, 0, 8, 9), RI_RET_SUCCESS);
    wc = a.drain();
    ASSERT_EQ(wc.size(), 1u);  // the UD send only: nothing reached the RC QP
    EXPECT_EQ(wc[0].ud_wc.op_status, RI_WC_STATUS_SUCCESS);
}

// Senders on two threads into one receiving QP: every datagram lands once (for
// ThreadSanitizer: the fabric's lock, the receive queue and the CQ under concurrent
// arrivals), and destroying a receiver waits out deliveries into it.
TEST_F(IbUd, ConcurrentSenders) {
    constexpr int kPerThread = 100;  // both CQs hold 256
    IbNode a(subnet_), b(subnet_);
    UdQp tx1 = a.ud(1, 0x1, RI_QP_STATE_READY_TO_SEND, 512, 16);
    UdQp tx2 = a.ud(2, 0x1, RI_QP_STATE_READY_TO_SEND, 512, 16);
    UdQp rx = b.ud(1, 0x9, RI_QP_STATE_READY_TO_SEND, 16, 2 * kPerThread);
    Buffer &src = a.buffer(64, 1);
    Buffer &dst = b.buffer(2 * kPerThread * 64, 0);
    for (int i = 0; i < 2 * kPerThread; ++i)
        ASSERT_EQ(b.recv(rx, dst, i * 64, 64, i), RI_RET_SUCCESS);
    ri_address_handle_t ah1 = a.ah(local_av(1, b.lid(1)));
    ri_address_handle_t ah2 = a.ah(local_av(2, b.lid(1)));
    auto run = [&](UdQp q, ri_address_handle_t ah) {
        for (int i = 0; i < kPerThread; ++i)
            EXPECT_EQ(a.send(q, ah, rx.qpn, 0x9, src, 0, 8, i), RI_RET_SUCCESS);
    };
    std::thread t1(run, tx1, ah1), t2(run, tx2, ah2);
    t1.join();
    t2.join();
    std::vector<ri_wc_t> got = b.drain();
    EXPECT_EQ(got.size(), 2u * kPerThread);
    for (const ri_wc_t &w : got)
        EXPECT_EQ(w.ud_wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(a.drain().size(), 2u * kPerThread);

    // Deliveries racing a destroy of their receiver: none crashes, none after it.
    UdQp rx2 = b.ud(1, 0x9, RI_QP_STATE_READY_TO_SEND, 16, 64);
    for (int i = 0; i < 64; ++i)
        ASSERT_EQ(b.recv(rx2, dst, i * 64, 64, i), RI_RET_SUCCESS);
    std::atomic<bool> stop{false};
    std::thread t3([&] {
        while (!stop.load(std::memory_order_acquire))
            (void)a.send(tx1, ah1, rx2.qpn, 0x9, src, 0, 8, 1);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    b.destroy(rx2.h);
    stop.store(true, std::memory_order_release);
    t3.join();
    (void)a.drain();
    (void)b.drain();
}

// The MTU bound is the port's active MTU (4096 by default): a datagram of exactly 4096 bytes
// goes, one byte more does not.
TEST_F(IbUd, DefaultMtuBoundary) {
    IbNode a(subnet_);
    UdQp tx = a.ud(1, 0x1), rx = a.ud(2, 0x2);
    Buffer &src = a.buffer(4097, 9);
    Buffer &dst = a.buffer(kGrh + 4096, 0);
    ASSERT_EQ(a.recv(rx, dst, 0, kGrh + 4096, 1), RI_RET_SUCCESS);
    ri_address_handle_t ah = a.ah(local_av(1, a.lid(2)));
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 4096, 1), RI_RET_SUCCESS);
    std::vector<ri_wc_t> wcs = a.drain();
    ASSERT_EQ(wcs.size(), 2u);
    for (const ri_wc_t &w : wcs)
        EXPECT_EQ(w.ud_wc.op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(of_type(wcs, RI_WC_TYPE_DATA_RECEIVED).at(0).ud_wc.bytes_transferred, kGrh + 4096);
    ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 4097, 2), RI_RET_SUCCESS);
    wcs = a.drain();
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].ud_wc.op_status, RI_WC_STATUS_LOCAL_LENGTH_ERROR);
    EXPECT_EQ(wcs[0].ud_wc.qpn, tx.qpn);
}

// A UD QP on a shared receive queue takes its receives from the SRQ.
TEST_F(IbUd, SharedReceiveQueue) {
    IbNode a(subnet_);
    ri_srq_attr_t sa{};
    sa.max_wrs = 8;
    sa.max_sgl = 1;
    sa.pd = a.pd;
    ri_srq_handle_t srq = nullptr;
    ASSERT_EQ(ri_srq_create(a.rnic, &sa, &srq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    {
        UdQp tx = a.ud(1, 0x1), rx = a.ud(2, 0x2, RI_QP_STATE_READY_TO_SEND, 16, 16, 1, srq);
        Buffer &src = a.buffer(64, 0x33);
        Buffer &dst = a.buffer(256, 0);
        ri_data_seg_t s = dst.sge(0, 256);
        ASSERT_EQ(ri_srq_post_recv(a.rnic, srq, rt::F(0), 42, &s, 1, &err), RI_RET_SUCCESS);
        ri_address_handle_t ah = a.ah(local_av(1, a.lid(2)));
        ASSERT_EQ(a.send(tx, ah, rx.qpn, 0x2, src, 0, 32, 1), RI_RET_SUCCESS);
        std::vector<ri_wc_t> got = of_type(a.drain(), RI_WC_TYPE_DATA_RECEIVED);
        ASSERT_EQ(got.size(), 1u);
        EXPECT_EQ(got[0].ud_wc.id, 42u);
        EXPECT_EQ(got[0].ud_wc.qpn, rx.qpn);
        EXPECT_EQ(got[0].ud_wc.remote_qpn, tx.qpn);
        EXPECT_EQ(dst.bytes[kGrh + 31], 0x33);
        a.destroy(rx.h);
    }
    EXPECT_EQ(ri_srq_destroy(a.rnic, srq, &err), RI_RET_SUCCESS);
}

}  // namespace
