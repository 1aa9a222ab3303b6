// InfiniBand RC traffic between the RC QPs of one process (docs/ib-personality.md section 10,
// step 4, the RC part): two IB instances of one subnet, or two QPs of one instance, driven
// through Reset -> Init -> RTR -> RTS with each other's LID and QPN as their path. Every
// operation with its data checked; the responder faults as IB completion statuses (NAKs)
// and events; a peer that is not there (retry exceeded); no receive posted (RNR).
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace {

ri_err_data_t err = 0;

constexpr unsigned kNext = RI_QP_ATTR_NEXT_STATE;
constexpr unsigned kOrd = RI_QP_ATTR_MAX_RDMA_READ_OUTGOING;
constexpr unsigned kIrd = RI_QP_ATTR_MAX_RDMA_READ_INCOMING;
constexpr unsigned kRd = RI_QP_ATTR_ENABLE_RDMA_READ;
constexpr unsigned kWr = RI_QP_ATTR_ENABLE_RDMA_WRITE;
constexpr unsigned kAt = RI_QP_ATTR_ENABLE_ATOMICS;
constexpr unsigned kDest = RI_QP_ATTR_DEST_QPID;
constexpr unsigned kSpsn = RI_QP_ATTR_SEND_PSN;
constexpr unsigned kRpsn = RI_QP_ATTR_RECV_PSN;
constexpr unsigned kRnr = RI_QP_ATTR_MIN_RNR_TIMER;
constexpr unsigned kPath = RI_QP_ATTR_PRIMARY_PATH;
constexpr unsigned kPkey = RI_QP_ATTR_PRIMARY_PKEY;
constexpr unsigned kPort = RI_QP_ATTR_PORT_NUM;
constexpr unsigned kRemoteAll =
    rt::kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ | RI_MEM_FLAGS_ATOMICS;

// Asynchronous events of every instance of the test (they arrive on the event threads).
std::vector<ri_event_record_t> g_events;
std::mutex g_mu;
std::condition_variable g_cv;
void on_event(ri_os_data_t, ri_event_record_t *e) {
    std::lock_guard lk(g_mu);
    g_events.push_back(*e);
    g_cv.notify_all();
}
bool wait_event(ri_async_event_type_t type) {
    std::unique_lock lk(g_mu);
    return g_cv.wait_for(lk, rt::kTimeout, [&] {
        return std::any_of(g_events.begin(), g_events.end(),
                           [&](const ri_event_record_t &e) { return e.event_type == type; });
    });
}
size_t count_events(ri_async_event_type_t type) {
    std::lock_guard lk(g_mu);
    return static_cast<size_t>(
        std::count_if(g_events.begin(), g_events.end(),
                      [&](const ri_event_record_t &e) { return e.event_type == type; }));
}

struct Buffer {
    std::vector<unsigned char> bytes;
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t ltag = 0;
    ri_rtag_t rtag = 0;
    ri_data_seg_t sge(uint32_t offset, uint32_t len) {
        ri_data_seg_t s{};
        s.addr.vaddr = reinterpret_cast<ri_addr_t>(bytes.data() + offset);
        s.tag.ltag = ltag;
        s.len = len;
        return s;
    }
    uint64_t va(uint32_t offset = 0) const {
        return reinterpret_cast<uint64_t>(bytes.data() + offset);
    }
};

// How an RC QP is set up.
struct RcOptions {
    bool read = true, write = true, atomic = true;  // the responder's access flags
    uint8_t retry_count = 7;
    uint8_t rnr_retry = 3;
    uint8_t local_ack_timeout = 14;
    bool signal_completions = false;
};

struct RcQp {
    ri_qp_handle_t h = nullptr;
    uint32_t qpn = 0;
    uint8_t port = 0;
};

// An opened IB instance (two ports on `subnet`) with a PD and one CQ.
struct IbNode {
    explicit IbNode(const std::string &subnet) {
        softrnic_vp_config_t c{};
        c.size = sizeof c;
        c.kind = SOFTRNIC_KIND_IB;
        c.num_ports = 2;
        c.subnet = subnet.c_str();
        EXPECT_EQ(softrnic_vp_create_ex(rt::unique_name("ibrc").c_str(), &c, &vp), RI_RET_SUCCESS);
        if (!vp) return;
        EXPECT_EQ(ri_async_set_event_handler(vp, on_event, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
        EXPECT_EQ(ri_pd_alloc(rnic, &pd, nullptr, nullptr, &err), RI_RET_SUCCESS);
        ri_cq_attr_t ca{};
        ca.num_cqe = 256;
        EXPECT_EQ(ri_cq_create(rnic, &ca, &cq, nullptr, nullptr, &err), RI_RET_SUCCESS);
        uint_t size = 0;
        auto flags = static_cast<ri_rnic_query_flags_t>(RI_QUERY_RNIC_PORT_INFO);
        EXPECT_EQ(ri_rnic_query(rnic, flags, nullptr, &size, &err), RI_RET_BUFFER_TOO_SMALL);
        attr_buf.assign(size, 0);
        EXPECT_EQ(ri_rnic_query(rnic, flags, reinterpret_cast<ri_rnic_attr_t *>(attr_buf.data()),
                                &size, &err),
                  RI_RET_SUCCESS);
    }
    ~IbNode() {
        if (!vp) return;
        for (ri_qp_handle_t q : qps)
            EXPECT_EQ(ri_qp_destroy(rnic, q, &err), RI_RET_SUCCESS);
        for (auto &b : bufs)
            EXPECT_EQ(ri_mr_dereg(rnic, b->mr, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_cq_destroy(rnic, cq, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_pd_dealloc(rnic, pd, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_free_hdl(vp, rnic, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_close(vp, &err), RI_RET_SUCCESS);
        EXPECT_EQ(softrnic_vp_destroy(vp), RI_RET_SUCCESS);
    }

    ri_lid_t lid(uint8_t n) const {
        const auto *a = reinterpret_cast<const ri_rnic_attr_t *>(attr_buf.data());
        return a->trans_attr.ib->port_attrs[n - 1].base_lid;
    }

    Buffer &buffer(size_t size, unsigned char fill = 0, unsigned attr = kRemoteAll) {
        auto b = std::make_unique<Buffer>();
        b->bytes.assign(size, fill);
        ri_mr_reg_attr_t a{};
        a.va = reinterpret_cast<ri_addr_t>(b->bytes.data());
        a.length = size;
        a.mem_attr = rt::MA(attr);
        a.pd = pd;
        EXPECT_EQ(ri_mr_reg(rnic, &a, &b->mr, &b->ltag, &b->rtag, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
        bufs.push_back(std::move(b));
        return *bufs.back();
    }

    // An RC QP on `port`, in Reset.
    RcQp rc(uint8_t port, const RcOptions &o = {}) {
        ri_qp_attr_t qa{};
        qa.pd = pd;
        qa.scq.scq_handle = cq;
        qa.rcq.rcq_handle = cq;
        qa.sq_size = 16;
        qa.rq_size = 16;
        qa.sq_max_sges = qa.rq_max_sges = qa.sq_max_sges_rdmaw = 2;
        qa.qp_xport.qp_ib.trans_type = RI_SERVICE_RELIABLE_CONNECTION;
        qa.qp_xport.qp_ib.signal_completions = o.signal_completions;
        RcQp q;
        EXPECT_EQ(ri_qp_create(rnic, &qa, &q.h, nullptr, nullptr, &err), RI_RET_SUCCESS);
        if (!q.h) return q;
        qps.push_back(q.h);
        q.qpn = qa.qp_id;
        q.port = port;
        return q;
    }

    // Drives `q` from Reset to `to` (Init, RTR or RTS) with `dlid`/`dest_qpn` as its path.
    void connect(const RcQp &q, ri_lid_t dlid, uint32_t dest_qpn, const RcOptions &o = {},
                 ri_qp_state_t to = RI_QP_STATE_READY_TO_SEND) {
        connect_from(RI_QP_STATE_IDLE, q, dlid, dest_qpn, o, to);
    }
    // The same from `from` (Reset, Init or RTR).
    void connect_from(ri_qp_state_t from, const RcQp &q, ri_lid_t dlid, uint32_t dest_qpn,
                      const RcOptions &o = {}, ri_qp_state_t to = RI_QP_STATE_READY_TO_SEND) {
        ri_qp_attr_t m{};
        m.state = RI_QP_STATE_INITIALIZED;
        m.enable_rdma_read = o.read;
        m.enable_rdma_write = o.write;
        ri_ib_qp_attr_t &ib = m.qp_xport.qp_ib;
        ib.enable_atomic = o.atomic;
        ib.primary_av.physical_port = q.port;
        ib.primary_av.pkey_index = 0;
        if (from == RI_QP_STATE_IDLE) {
            ASSERT_EQ(modify(q.h, kNext | kPkey | kPort | kRd | kWr | kAt, m), RI_RET_SUCCESS);
        }
        if (to == RI_QP_STATE_INITIALIZED) return;
        m.state = RI_QP_STATE_READY_TO_RECEIVE;
        ib.primary_av.path_mtu = RI_IB_MTU_4K;
        ib.primary_av.local_ack_timeout = o.local_ack_timeout;
        ib.primary_av.retry_count = o.retry_count;
        ib.primary_av.rnr_retry_count = o.rnr_retry;
        ib.primary_av.av.dlid = dlid;
        ib.dest_qpn = dest_qpn;
        ib.rcv_psn = 0x100;
        ib.min_rnrnak_timer = 1;
        m.max_rdma_read_incoming = 4;
        if (from != RI_QP_STATE_READY_TO_RECEIVE) {
            ASSERT_EQ(modify(q.h, kNext | kPath | kDest | kRpsn | kIrd | kRnr, m), RI_RET_SUCCESS);
        }
        if (to == RI_QP_STATE_READY_TO_RECEIVE) return;
        m.state = RI_QP_STATE_READY_TO_SEND;
        ib.send_psn = 0x200;
        m.max_rdma_read_outgoing = 4;
        ASSERT_EQ(modify(q.h, kNext | kSpsn | kOrd, m), RI_RET_SUCCESS);
    }
    ri_api_return_t modify(ri_qp_handle_t q, unsigned mask, ri_qp_attr_t a) {
        return ri_qp_modify(rnic, q, rt::QM(mask), &a, &err);
    }
    ri_qp_state_t state(const RcQp &q) {
        ri_qp_attr_t a{};
        EXPECT_EQ(ri_qp_query(rnic, q.h, &a, &err), RI_RET_SUCCESS);
        return a.state;
    }

    ri_api_return_t recv(const RcQp &q, Buffer &b, uint32_t offset, uint32_t len, ri_wr_id_t id) {
        ri_data_seg_t s = b.sge(offset, len);
        return ri_qp_post_recv(rnic, q.h, rt::F(0), id, &s, 1, &err);
    }
    ri_api_return_t post(const RcQp &q, ri_wr_t &wr) {
        uint_t n = 1;
        return ri_qp_postsq(rnic, q.h, &wr, &n, &err);
    }
    ri_api_return_t send(const RcQp &q, ri_data_seg_t *sg, uint32_t n, ri_wr_id_t id,
                         bool imm = false, uint32_t imm_data = 0, unsigned flags = rt::kSig) {
        ri_wr_t wr{};
        wr.wr_send.type = imm ? RI_WR_TYPE_SEND_IMMEDIATE : RI_WR_TYPE_SEND;
        wr.wr_send.flags = rt::F(flags);
        wr.wr_send.id = id;
        wr.wr_send.sg_list = sg;
        wr.wr_send.num_sgls = n;
        wr.wr_send.imm_data = imm_data;
        return post(q, wr);
    }
    ri_api_return_t write(const RcQp &q, ri_data_seg_t *sg, uint32_t n, ri_rtag_t rtag,
                          uint64_t addr, ri_wr_id_t id, bool imm = false, uint32_t imm_data = 0) {
        ri_wr_t wr{};
        wr.wr_rdma_write.type = imm ? RI_WR_TYPE_RDMA_WRITE_IMMEDIATE : RI_WR_TYPE_RDMA_WRITE;
        wr.wr_rdma_write.flags = rt::F(rt::kSig);
        wr.wr_rdma_write.id = id;
        wr.wr_rdma_write.sg_list = sg;
        wr.wr_rdma_write.num_sgls = n;
        wr.wr_rdma_write.rtag = rtag;
        wr.wr_rdma_write.rdma_addr = addr;
        wr.wr_rdma_write.imm_data = imm_data;
        return post(q, wr);
    }
    ri_api_return_t read(const RcQp &q, ri_data_seg_t *sg, uint32_t n, ri_rtag_t rtag,
                         uint64_t addr, ri_wr_id_t id) {
        ri_wr_t wr{};
        wr.wr_rdma_read.type = RI_WR_TYPE_RDMA_READ;
        wr.wr_rdma_read.flags = rt::F(rt::kSig);
        wr.wr_rdma_read.id = id;
        wr.wr_rdma_read.sg_list = sg;
        wr.wr_rdma_read.num_sgls = n;
        wr.wr_rdma_read.rtag = rtag;
        wr.wr_rdma_read.rdma_addr = addr;
        return post(q, wr);
    }
    ri_api_return_t atomic(const RcQp &q, ri_wr_type_t type, ri_rtag_t rtag, uint64_t op1,
                           uint64_t op2, const ri_data_seg_t &result, ri_wr_id_t id) {
        ri_wr_t wr{};
        wr.wr_atomic.type = type;
        wr.wr_atomic.flags = rt::F(rt::kSig);
        wr.wr_atomic.id = id;
        wr.wr_atomic.rtag = rtag;
        wr.wr_atomic.atomic_operand1 = op1;
        wr.wr_atomic.atomic_operand2 = op2;
        wr.wr_atomic.atomic_result = result;
        return post(q, wr);
    }

    // Polls until `n` completions came (or the test's bound passed): what the RC channel
    // holds (silence, RNR) completes from the progress thread, on its timer.
    std::vector<ri_wc_t> wait(size_t n) {
        std::vector<ri_wc_t> out;
        const auto until = rt::Clock::now() + rt::kTimeout;
        while (out.size() < n && rt::Clock::now() < until) {
            std::vector<ri_wc_t> more = drain();
            out.insert(out.end(), more.begin(), more.end());
            if (out.size() < n) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        return out;
    }
    // Every completion now in the CQ (what the responder takes or NAKs at once completes
    // inside the post).
    std::vector<ri_wc_t> drain() { return rt::drain_cq(rnic, cq); }

    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;
    ri_pd_handle_t pd = nullptr;
    ri_cq_handle_t cq = nullptr;
    std::vector<ri_qp_handle_t> qps;
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<unsigned char> attr_buf;
};

std::string test_subnet() {
    return "rc" + std::to_string(::getpid()) + "-" + rt::unique_name("s").substr(0, 40);
}

// Two instances of one subnet, an RC QP on port 1 of each, paired with each other.
class IbRc : public ::testing::Test {
  protected:
    void SetUp() override {
        std::lock_guard lk(g_mu);
        g_events.clear();
    }
    void pair(const RcOptions &oa = {}, const RcOptions &ob = {}) {
        qa = a.rc(1, oa);
        qb = b.rc(1, ob);
        a.connect(qa, b.lid(1), qb.qpn, oa);
        b.connect(qb, a.lid(1), qa.qpn, ob);
        ASSERT_EQ(a.state(qa), RI_QP_STATE_READY_TO_SEND);
        ASSERT_EQ(b.state(qb), RI_QP_STATE_READY_TO_SEND);
    }
    std::string subnet_ = test_subnet();
    IbNode a{subnet_};
    IbNode b{subnet_};
    RcQp qa, qb;
};

ri_qp_attr_t to_state(ri_qp_state_t s) {
    ri_qp_attr_t a{};
    a.state = s;
    return a;
}

const ri_rc_wc_t &rc(const ri_wc_t &w) {
    return w.rc_wc;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<unsigned char>(seed + i * 7);
    return v;
}

// ------------------------------------------------------------------------------ traffic

// SEND (two gather SGEs) and SEND with immediate data: the bytes land in the posted
// receive, the receive completion carries the length and the immediate data, the send
// completion its length.
TEST_F(IbRc, SendAndSendImmediate) {
    pair();
    Buffer &src = a.buffer(4096);
    Buffer &dst = b.buffer(4096, 0xEE);
    const auto data = pattern(3000, 3);
    std::memcpy(src.bytes.data(), data.data(), data.size());
    ASSERT_EQ(b.recv(qb, dst, 0, 2048, 11), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(qb, dst, 2048, 2048, 12), RI_RET_SUCCESS);
    ri_data_seg_t sg[2] = {src.sge(0, 1000), src.sge(1000, 500)};
    ASSERT_EQ(a.send(qa, sg, 2, 1), RI_RET_SUCCESS);
    ri_data_seg_t one = src.sge(1500, 100);
    ASSERT_EQ(a.send(qa, &one, 1, 2, true, 0xCAFEF00D), RI_RET_SUCCESS);

    std::vector<ri_wc_t> sw = a.drain();
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(sw[0]).op_type, RI_WC_TYPE_SEND);
    EXPECT_EQ(rc(sw[0]).id, 1u);
    EXPECT_EQ(rc(sw[0]).bytes_transferred, 1500u);
    EXPECT_EQ(rc(sw[1]).id, 2u);
    EXPECT_EQ(rc(sw[1]).op_status, RI_WC_STATUS_SUCCESS);

    std::vector<ri_wc_t> rw = b.drain();
    ASSERT_EQ(rw.size(), 2u);
    EXPECT_EQ(rc(rw[0]).op_type, RI_WC_TYPE_DATA_RECEIVED);
    EXPECT_EQ(rc(rw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(rw[0]).id, 11u);
    EXPECT_EQ(rc(rw[0]).bytes_transferred, 1500u);
    EXPECT_FALSE(static_cast<uint32_t>(rc(rw[0]).flags) & RI_WC_FLAG_IMMEDIATE_DATA);
    EXPECT_EQ(rc(rw[1]).id, 12u);
    EXPECT_EQ(rc(rw[1]).bytes_transferred, 100u);
    EXPECT_TRUE(static_cast<uint32_t>(rc(rw[1]).flags) & RI_WC_FLAG_IMMEDIATE_DATA);
    EXPECT_EQ(rc(rw[1]).immediate_data, 0xCAFEF00Du);
    EXPECT_EQ(std::memcmp(dst.bytes.data(), data.data(), 1500), 0);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 2048, data.data() + 1500, 100), 0);
    EXPECT_EQ(dst.bytes[1500], 0xEE);  // nothing past the message
}

// Both directions, and zero-length sends.
TEST_F(IbRc, BothDirections) {
    pair();
    Buffer &ba = a.buffer(256, 0);
    Buffer &bb = b.buffer(256, 0);
    for (int i = 0; i < 64; ++i)
        ba.bytes[i] = static_cast<unsigned char>(i);
    for (int i = 0; i < 64; ++i)
        bb.bytes[i] = static_cast<unsigned char>(100 + i);
    ASSERT_EQ(a.recv(qa, ba, 128, 128, 21), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(qb, bb, 128, 128, 22), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(qb, bb, 128, 128, 23), RI_RET_SUCCESS);
    ri_data_seg_t sa = ba.sge(0, 64), sb = bb.sge(0, 64);
    ASSERT_EQ(a.send(qa, &sa, 1, 1), RI_RET_SUCCESS);
    ASSERT_EQ(b.send(qb, &sb, 1, 2), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(qa, nullptr, 0, 3), RI_RET_SUCCESS);
    EXPECT_EQ(std::memcmp(bb.bytes.data() + 128, ba.bytes.data(), 64), 0);
    EXPECT_EQ(std::memcmp(ba.bytes.data() + 128, bb.bytes.data(), 64), 0);
    std::vector<ri_wc_t> wa = a.drain(), wb = b.drain();
    ASSERT_EQ(wa.size(), 3u);  // send 1, receive 21, send 3
    ASSERT_EQ(wb.size(), 3u);  // receive 22, send 2, receive 23
    for (const ri_wc_t &w : wa)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
    for (const ri_wc_t &w : wb)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(wb[2]).id, 23u);
    EXPECT_EQ(rc(wb[2]).bytes_transferred, 0u);
}

// Two QPs of one instance, on its two ports, and a QP on one port paired with a QP on the
// other port of the same instance.
TEST_F(IbRc, TwoQpsOfOneInstance) {
    RcQp x = a.rc(1), y = a.rc(2);
    a.connect(x, a.lid(2), y.qpn);
    a.connect(y, a.lid(1), x.qpn);
    Buffer &buf = a.buffer(512);
    const auto data = pattern(200, 9);
    std::memcpy(buf.bytes.data(), data.data(), data.size());
    ASSERT_EQ(a.recv(y, buf, 256, 256, 5), RI_RET_SUCCESS);
    ri_data_seg_t s = buf.sge(0, 200);
    ASSERT_EQ(a.send(x, &s, 1, 6), RI_RET_SUCCESS);
    ri_data_seg_t w = buf.sge(0, 16);
    ASSERT_EQ(a.write(y, &w, 1, buf.rtag, buf.va(480), 7), RI_RET_SUCCESS);
    EXPECT_EQ(std::memcmp(buf.bytes.data() + 256, data.data(), 200), 0);
    EXPECT_EQ(std::memcmp(buf.bytes.data() + 480, data.data(), 16), 0);
    std::vector<ri_wc_t> wc = a.drain();
    ASSERT_EQ(wc.size(), 3u);
    for (const ri_wc_t &c : wc)
        EXPECT_EQ(rc(c).op_status, RI_WC_STATUS_SUCCESS);
}

// A QP whose path names itself (its own port's LID and its own QPN) is its own responder;
// a fault it NAKs to itself still completes with the NAK's status.
TEST_F(IbRc, QpPairedWithItself) {
    RcQp x = a.rc(1);
    a.connect(x, a.lid(1), x.qpn);
    Buffer &buf = a.buffer(256);
    const auto data = pattern(64, 4);
    std::memcpy(buf.bytes.data(), data.data(), data.size());
    ASSERT_EQ(a.recv(x, buf, 128, 128, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = buf.sge(0, 64);
    ASSERT_EQ(a.send(x, &s, 1, 2), RI_RET_SUCCESS);
    EXPECT_EQ(std::memcmp(buf.bytes.data() + 128, data.data(), 64), 0);
    std::vector<ri_wc_t> wc = a.drain();
    ASSERT_EQ(wc.size(), 2u);
    for (const ri_wc_t &c : wc)
        EXPECT_EQ(rc(c).op_status, RI_WC_STATUS_SUCCESS);
    ASSERT_EQ(a.write(x, &s, 1, buf.rtag ^ 0x100, buf.va(), 3), RI_RET_SUCCESS);
    wc = a.drain();
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(rc(wc[0]).op_status, RI_WC_STATUS_REMOTE_ACCESS_ERROR);
    EXPECT_EQ(a.state(x), RI_QP_STATE_ERROR);
}

// RDMA WRITE places into the responder's region without a receive; RDMA WRITE with
// immediate data also consumes a receive, whose completion carries the immediate.
TEST_F(IbRc, RdmaWriteAndWriteImmediate) {
    pair();
    Buffer &src = a.buffer(8192);
    Buffer &dst = b.buffer(8192, 0x11);
    Buffer &rbuf = b.buffer(64);
    const auto data = pattern(6000, 1);
    std::memcpy(src.bytes.data(), data.data(), data.size());
    ri_data_seg_t sg[2] = {src.sge(0, 4000), src.sge(4000, 2000)};
    ASSERT_EQ(a.write(qa, sg, 2, dst.rtag, dst.va(100), 1), RI_RET_SUCCESS);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 100, data.data(), 6000), 0);
    EXPECT_EQ(dst.bytes[99], 0x11);
    EXPECT_EQ(dst.bytes[6100], 0x11);
    EXPECT_TRUE(b.drain().empty());  // a plain write completes nothing at the responder

    ASSERT_EQ(b.recv(qb, rbuf, 0, 64, 31), RI_RET_SUCCESS);
    ri_data_seg_t s2 = src.sge(0, 32);
    ASSERT_EQ(a.write(qa, &s2, 1, dst.rtag, dst.va(7000), 2, true, 0x12345678), RI_RET_SUCCESS);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 7000, data.data(), 32), 0);
    std::vector<ri_wc_t> rw = b.drain();
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rc(rw[0]).op_type, RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED);
    EXPECT_EQ(rc(rw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(rw[0]).id, 31u);
    EXPECT_EQ(rc(rw[0]).immediate_data, 0x12345678u);
    EXPECT_TRUE(static_cast<uint32_t>(rc(rw[0]).flags) & RI_WC_FLAG_IMMEDIATE_DATA);

    std::vector<ri_wc_t> sw = a.drain();
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(rc(sw[0]).op_type, RI_WC_TYPE_RDMA_WRITE);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(sw[0]).bytes_transferred, 6000u);
    EXPECT_EQ(rc(sw[1]).op_status, RI_WC_STATUS_SUCCESS);
}

// RDMA READ gathers the responder's bytes into the requester's scatter list.
TEST_F(IbRc, RdmaRead) {
    pair();
    Buffer &src = b.buffer(8192);
    Buffer &sink = a.buffer(8192, 0x22);
    const auto data = pattern(5000, 5);
    std::memcpy(src.bytes.data() + 300, data.data(), data.size());
    ri_data_seg_t sg[2] = {sink.sge(0, 3000), sink.sge(4000, 2000)};
    ASSERT_EQ(a.read(qa, sg, 2, src.rtag, src.va(300), 1), RI_RET_SUCCESS);
    EXPECT_EQ(std::memcmp(sink.bytes.data(), data.data(), 3000), 0);
    EXPECT_EQ(std::memcmp(sink.bytes.data() + 4000, data.data() + 3000, 2000), 0);
    EXPECT_EQ(sink.bytes[3500], 0x22);
    std::vector<ri_wc_t> sw = a.drain();
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(rc(sw[0]).op_type, RI_WC_TYPE_RDMA_READ);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(sw[0]).bytes_transferred, 5000u);
    EXPECT_TRUE(b.drain().empty());
}

// Fetch-and-add and compare-and-swap on the first 8 bytes of the responder's region
// (docs/spec-deviations.md: RNICPI's atomic WR has no remote address); the original value
// lands in the requester's result buffer.
TEST_F(IbRc, Atomics) {
    pair();
    Buffer &target = b.buffer(64);
    Buffer &result = a.buffer(64);
    uint64_t v = 1000;
    std::memcpy(target.bytes.data(), &v, 8);
    ASSERT_EQ(a.atomic(qa, RI_WR_TYPE_FETCH_AND_ADD, target.rtag, 25, 0, result.sge(0, 8), 1),
              RI_RET_SUCCESS);
    uint64_t got = 0, now = 0;
    std::memcpy(&got, result.bytes.data(), 8);
    std::memcpy(&now, target.bytes.data(), 8);
    EXPECT_EQ(got, 1000u);
    EXPECT_EQ(now, 1025u);
    // Compare fails: nothing swapped; then succeeds.
    ASSERT_EQ(a.atomic(qa, RI_WR_TYPE_COMPARE_AND_SWAP, target.rtag, 7, 99, result.sge(8, 8), 2),
              RI_RET_SUCCESS);
    std::memcpy(&got, result.bytes.data() + 8, 8);
    std::memcpy(&now, target.bytes.data(), 8);
    EXPECT_EQ(got, 1025u);
    EXPECT_EQ(now, 1025u);
    ASSERT_EQ(
        a.atomic(qa, RI_WR_TYPE_COMPARE_AND_SWAP, target.rtag, 1025, 77, result.sge(16, 8), 3),
        RI_RET_SUCCESS);
    std::memcpy(&got, result.bytes.data() + 16, 8);
    std::memcpy(&now, target.bytes.data(), 8);
    EXPECT_EQ(got, 1025u);
    EXPECT_EQ(now, 77u);
    std::vector<ri_wc_t> sw = a.drain();
    ASSERT_EQ(sw.size(), 3u);
    EXPECT_EQ(rc(sw[0]).op_type, RI_WC_TYPE_FETCH_AND_ADD);
    EXPECT_EQ(rc(sw[1]).op_type, RI_WC_TYPE_COMPARE_AND_SWAP);
    for (const ri_wc_t &w : sw)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
}

// A responder in RTR already receives (IBA 1.2 ch. 10: arrivals are legal in RTR).
TEST_F(IbRc, ResponderInRtrReceives) {
    qa = a.rc(1);
    qb = b.rc(1);
    a.connect(qa, b.lid(1), qb.qpn);
    b.connect(qb, a.lid(1), qa.qpn, {}, RI_QP_STATE_READY_TO_RECEIVE);
    ASSERT_EQ(b.state(qb), RI_QP_STATE_READY_TO_RECEIVE);
    Buffer &src = a.buffer(64, 0x5A);
    Buffer &dst = b.buffer(64);
    ASSERT_EQ(b.recv(qb, dst, 0, 64, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = src.sge(0, 40);
    ASSERT_EQ(a.send(qa, &s, 1, 2), RI_RET_SUCCESS);
    EXPECT_EQ(dst.bytes[39], 0x5A);
    std::vector<ri_wc_t> rw = b.drain();
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rc(rw[0]).op_status, RI_WC_STATUS_SUCCESS);
    // The responder still sends nothing in RTR (L4422).
    EXPECT_EQ(b.send(qb, &s, 0, 3), RI_RET_QP_INVALID_STATE);
}

// signal_completions (RNICPI L8606): every send WR completes, signalled or not; without it
// an unsignalled success has no completion.
TEST_F(IbRc, SignalCompletions) {
    RcOptions all;
    all.signal_completions = true;
    pair(all, {});
    Buffer &ba = a.buffer(64), &bb = b.buffer(64);
    ASSERT_EQ(b.recv(qb, bb, 0, 64, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.recv(qa, ba, 0, 64, 2), RI_RET_SUCCESS);
    ri_data_seg_t sa = ba.sge(0, 8), sb = bb.sge(0, 8);
    ASSERT_EQ(a.send(qa, &sa, 1, 10, false, 0, 0), RI_RET_SUCCESS);
    ASSERT_EQ(b.send(qb, &sb, 1, 20, false, 0, 0), RI_RET_SUCCESS);
    std::vector<ri_wc_t> wa = a.drain(), wb = b.drain();
    // a: its own send (forced) and the receive of b's send; b: only the receive.
    ASSERT_EQ(wa.size(), 2u);
    EXPECT_EQ(rc(wa[0]).id, 10u);
    ASSERT_EQ(wb.size(), 1u);
    EXPECT_EQ(rc(wb[0]).id, 1u);
}

// ------------------------------------------------------------------------------ errors

// A remote access error (bad STag, bounds, missing right): the requester's WR completes
// REMOTE_ACCESS_ERROR and its QP goes to Error (later WRs flushed); the responder goes to
// Error with LOCAL_ACCESS_VIOLATION_WQ_ERROR (docs/ib-personality.md 7.1).
TEST_F(IbRc, RemoteAccessErrors) {
    struct Case {
        const char *name;
        int kind;  // 0 bad rtag, 1 out of bounds, 2 no remote write right, 3 read no right
    };
    for (Case c : {Case{"bad rtag", 0}, Case{"bounds", 1}, Case{"no write right", 2},
                   Case{"no read right", 3}}) {
        SCOPED_TRACE(c.name);
        SetUp();
        pair();
        Buffer &src = a.buffer(256);
        Buffer &dst = b.buffer(256, 0,
                               c.kind == 2   ? rt::kLocalRW | RI_MEM_FLAGS_REMOTE_READ
                               : c.kind == 3 ? rt::kLocalRW | RI_MEM_FLAGS_REMOTE_WRITE
                                             : kRemoteAll);
        ri_data_seg_t s = src.sge(0, 64);
        if (c.kind == 3) {
            ASSERT_EQ(a.read(qa, &s, 1, dst.rtag, dst.va(), 1), RI_RET_SUCCESS);
        } else {
            const ri_rtag_t tag = c.kind == 0 ? dst.rtag ^ 0x5500 : dst.rtag;
            const uint64_t at = c.kind == 1 ? dst.va(224) : dst.va();
            ASSERT_EQ(a.write(qa, &s, 1, tag, at, 1), RI_RET_SUCCESS);
        }
        ASSERT_EQ(a.send(qa, &s, 1, 2), RI_RET_SUCCESS);
        std::vector<ri_wc_t> sw = a.drain();
        ASSERT_EQ(sw.size(), 2u);
        EXPECT_EQ(rc(sw[0]).id, 1u);
        EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_REMOTE_ACCESS_ERROR);
        EXPECT_EQ(rc(sw[1]).op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
        EXPECT_EQ(a.state(qa), RI_QP_STATE_ERROR);
        EXPECT_EQ(b.state(qb), RI_QP_STATE_ERROR);
        EXPECT_TRUE(wait_event(RI_EVENT_QP_LOCAL_ACCESS_VIOLATION_WQ_ERROR));
        // The iWARP events are not raised on IB.
        EXPECT_EQ(count_events(RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED), 0u);
        EXPECT_EQ(b.modify(qb.h, kNext, to_state(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
        EXPECT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
        b.drain();
    }
}

// Operations the responder's access flags refuse (RDMA Read, RDMA Write, atomics disabled)
// and a message longer than the receive are Invalid Request NAKs: REMOTE_INVALID_REQ_ERROR
// at the requester, INVALID_REQ_LOCAL_WQ_ERROR at the responder, both to Error.
TEST_F(IbRc, InvalidRequests) {
    for (int kind = 0; kind < 4; ++kind) {
        SCOPED_TRACE(kind);
        SetUp();
        RcOptions ob;
        ob.read = kind != 0;
        ob.write = kind != 1;
        ob.atomic = kind != 2;
        pair({}, ob);
        Buffer &mine = a.buffer(256);
        Buffer &theirs = b.buffer(256);
        ri_data_seg_t s = mine.sge(0, 64);
        switch (kind) {
            case 0:
                ASSERT_EQ(a.read(qa, &s, 1, theirs.rtag, theirs.va(), 1), RI_RET_SUCCESS);
                break;
            case 1:
                ASSERT_EQ(a.write(qa, &s, 1, theirs.rtag, theirs.va(), 1), RI_RET_SUCCESS);
                break;
            case 2:
                ASSERT_EQ(
                    a.atomic(qa, RI_WR_TYPE_FETCH_AND_ADD, theirs.rtag, 1, 0, mine.sge(0, 8), 1),
                    RI_RET_SUCCESS);
                break;
            case 3:
                ASSERT_EQ(b.recv(qb, theirs, 0, 16, 9), RI_RET_SUCCESS);
                ASSERT_EQ(a.send(qa, &s, 1, 1), RI_RET_SUCCESS);
                break;
        }
        std::vector<ri_wc_t> sw = a.drain();
        ASSERT_EQ(sw.size(), 1u);
        EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_REMOTE_INVALID_REQ_ERROR);
        EXPECT_EQ(a.state(qa), RI_QP_STATE_ERROR);
        EXPECT_EQ(b.state(qb), RI_QP_STATE_ERROR);
        EXPECT_TRUE(wait_event(RI_EVENT_QP_INVALID_REQ_LOCAL_WQ_ERROR));
        std::vector<ri_wc_t> rw = b.drain();
        if (kind == 3) {
            // The receive that was too short completes with the length error.
            ASSERT_EQ(rw.size(), 1u);
            EXPECT_EQ(rc(rw[0]).op_status, RI_WC_STATUS_LOCAL_LENGTH_ERROR);
        } else {
            EXPECT_TRUE(rw.empty());
        }
    }
}

// A peer that does not answer: no QP with that number, a QP not yet in RTR, or a QP
// paired with someone else. The requester's WR completes TRANSPORT_RETRY_EXCEEDED and its
// QP goes to Error; the silent peer is untouched.
TEST_F(IbRc, UnpairedPeerRetryExceeded) {
    for (int kind = 0; kind < 3; ++kind) {
        SCOPED_TRACE(kind);
        SetUp();
        RcOptions quick;
        quick.local_ack_timeout = 8;  // 4.096 us x 2^8 x (3 + 1): about 4.2 ms
        quick.retry_count = 3;
        qa = a.rc(1);
        qb = b.rc(1);
        RcQp other = b.rc(1);
        switch (kind) {
            case 0:  // a QPN nobody has
                a.connect(qa, b.lid(1), (qb.qpn + 1000) & 0xFFFFFF, quick);
                break;
            case 1:  // the peer is only in Init
                a.connect(qa, b.lid(1), qb.qpn, quick);
                b.connect(qb, a.lid(1), qa.qpn, {}, RI_QP_STATE_INITIALIZED);
                break;
            case 2:  // the peer's path names another QP
                a.connect(qa, b.lid(1), qb.qpn, quick);
                b.connect(qb, a.lid(1), other.qpn);
                break;
        }
        Buffer &buf = a.buffer(64);
        ri_data_seg_t s = buf.sge(0, 8);
        const auto t0 = rt::Clock::now();
        ASSERT_EQ(a.send(qa, &s, 1, 1), RI_RET_SUCCESS);
        ASSERT_EQ(a.send(qa, &s, 1, 2), RI_RET_SUCCESS);
        EXPECT_TRUE(a.drain().empty());  // held while the retry clock runs
        std::vector<ri_wc_t> sw = a.wait(2);
        EXPECT_GE(rt::Clock::now() - t0, std::chrono::microseconds(4096 * 256 * 4 / 1000));
        ASSERT_EQ(sw.size(), 2u);
        EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED);
        EXPECT_EQ(rc(sw[1]).op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
        EXPECT_EQ(a.state(qa), RI_QP_STATE_ERROR);
        if (kind == 1) {
            EXPECT_EQ(b.state(qb), RI_QP_STATE_INITIALIZED);
        }
        if (kind == 2) {
            EXPECT_EQ(b.state(qb), RI_QP_STATE_READY_TO_SEND);
        }
        EXPECT_TRUE(b.drain().empty());
    }
}

// A peer QP that was paired and then left RTS (Error) or was destroyed: silence as well.
TEST_F(IbRc, PeerGoneRetryExceeded) {
    RcOptions quick;
    quick.local_ack_timeout = 4;
    quick.retry_count = 1;
    pair(quick, {});
    Buffer &buf = a.buffer(64), &rb = b.buffer(64);
    ASSERT_EQ(b.recv(qb, rb, 0, 64, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = buf.sge(0, 8);
    ASSERT_EQ(a.send(qa, &s, 1, 1), RI_RET_SUCCESS);
    ASSERT_EQ(b.modify(qb.h, kNext, to_state(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(qa, &s, 1, 2), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sw = a.wait(2);
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(rc(sw[1]).op_status, RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED);
}

// RNR: no receive posted at the responder. The responder is unaffected (still RTS, no
// completion, no event); the requester's WR completes RNR_RETRY_EXCEEDED once its
// rnr_retry tries are used, and its QP goes to Error.
TEST_F(IbRc, RnrRetryExceeded) {
    for (uint8_t tries : {0, 3}) {
        SCOPED_TRACE(int(tries));
        SetUp();
        RcOptions oa;
        oa.rnr_retry = tries;
        pair(oa, {});
        Buffer &buf = a.buffer(64);
        Buffer &rb = b.buffer(64);
        ri_data_seg_t s = buf.sge(0, 8);
        ASSERT_EQ(a.send(qa, &s, 1, 1), RI_RET_SUCCESS);
        std::vector<ri_wc_t> sw = a.wait(1);
        ASSERT_EQ(sw.size(), 1u);
        EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_RNR_RETRY_EXCEEDED);
        EXPECT_EQ(a.state(qa), RI_QP_STATE_ERROR);
        EXPECT_EQ(b.state(qb), RI_QP_STATE_READY_TO_SEND);
        EXPECT_TRUE(b.drain().empty());
        // The responder goes on taking receives.
        ASSERT_EQ(b.recv(qb, rb, 0, 64, 5), RI_RET_SUCCESS);
        EXPECT_EQ(b.state(qb), RI_QP_STATE_READY_TO_SEND);
    }
}

// RNR on RDMA WRITE with immediate data: the bytes may have been placed, the receive is
// missing; RNR_RETRY_EXCEEDED, the responder unaffected.
TEST_F(IbRc, RnrOnWriteImmediate) {
    pair();
    Buffer &src = a.buffer(64);
    Buffer &dst = b.buffer(64);
    ri_data_seg_t s = src.sge(0, 8);
    ASSERT_EQ(a.write(qa, &s, 1, dst.rtag, dst.va(), 1, true, 5), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sw = a.wait(1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_RNR_RETRY_EXCEEDED);
    EXPECT_EQ(b.state(qb), RI_QP_STATE_READY_TO_SEND);
}

// SQD: the send queue starts nothing (posts refused: the held list of section 7.3 is not
// built) while arrivals go on; SQD -> RTS sends again.
TEST_F(IbRc, SqdReceivesAndRtsResumes) {
    pair();
    ASSERT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_SEND_QUEUE_DRAINING)), RI_RET_SUCCESS);
    EXPECT_EQ(a.state(qa), RI_QP_STATE_SEND_QUEUE_DRAINED);
    Buffer &ba = a.buffer(64, 0x31), &bb = b.buffer(64, 0x42);
    ri_data_seg_t sa = ba.sge(0, 16), sb = bb.sge(0, 16);
    EXPECT_EQ(a.send(qa, &sa, 1, 1), RI_RET_OP_UNSUPPORTED);
    ASSERT_EQ(a.recv(qa, ba, 32, 32, 2), RI_RET_SUCCESS);
    ASSERT_EQ(b.send(qb, &sb, 1, 3), RI_RET_SUCCESS);
    EXPECT_EQ(ba.bytes[32], 0x42);
    ASSERT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_READY_TO_SEND)), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(qb, bb, 32, 32, 4), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(qa, &sa, 1, 5), RI_RET_SUCCESS);
    EXPECT_EQ(bb.bytes[32], 0x31);
    std::vector<ri_wc_t> wa = a.drain(), wb = b.drain();
    ASSERT_EQ(wa.size(), 2u);  // receive 2, send 5
    ASSERT_EQ(wb.size(), 2u);  // send 3, receive 4
    for (const ri_wc_t &w : wa)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
    for (const ri_wc_t &w : wb)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
}

// RNR with rnr_retry 7 (without limit): the send is held, the ones after it wait behind it,
// and all go through, in order, once the responder posts receives.
TEST_F(IbRc, RnrRetriedUntilReceivePosted) {
    RcOptions forever;
    forever.rnr_retry = 7;
    pair(forever, {});
    Buffer &src = a.buffer(64);
    Buffer &dst = b.buffer(64, 0);
    for (int i = 0; i < 64; ++i)
        src.bytes[i] = static_cast<unsigned char>(i);
    ri_data_seg_t s1 = src.sge(0, 8), s2 = src.sge(8, 8);
    ASSERT_EQ(a.send(qa, &s1, 1, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.send(qa, &s2, 1, 2), RI_RET_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(a.drain().empty());
    EXPECT_EQ(a.state(qa), RI_QP_STATE_READY_TO_SEND);
    ASSERT_EQ(b.recv(qb, dst, 0, 32, 11), RI_RET_SUCCESS);
    ASSERT_EQ(b.recv(qb, dst, 32, 32, 12), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sw = a.wait(2);
    ASSERT_EQ(sw.size(), 2u);
    EXPECT_EQ(rc(sw[0]).id, 1u);
    EXPECT_EQ(rc(sw[1]).id, 2u);
    for (const ri_wc_t &w : sw)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
    std::vector<ri_wc_t> rw = b.drain();
    ASSERT_EQ(rw.size(), 2u);
    EXPECT_EQ(rc(rw[0]).id, 11u);
    EXPECT_EQ(std::memcmp(dst.bytes.data(), src.bytes.data(), 8), 0);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 32, src.bytes.data() + 8, 8), 0);
}

// A responder that reaches RTR within the requester's ACK timeout x (retry_count + 1) gets
// what was posted to it meanwhile (7.2: pairing late is fine).
TEST_F(IbRc, LatePairingWithinTheRetryClock) {
    RcOptions patient;
    patient.local_ack_timeout = 18;  // about 1 s, times 8 tries
    qa = a.rc(1);
    qb = b.rc(1);
    a.connect(qa, b.lid(1), qb.qpn, patient);
    b.connect(qb, a.lid(1), qa.qpn, {}, RI_QP_STATE_INITIALIZED);
    Buffer &src = a.buffer(64, 0x66), &dst = b.buffer(64);
    ASSERT_EQ(b.recv(qb, dst, 0, 64, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = src.sge(0, 16);
    ASSERT_EQ(a.send(qa, &s, 1, 2), RI_RET_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(a.drain().empty());
    b.connect_from(RI_QP_STATE_INITIALIZED, qb, a.lid(1), qa.qpn, {}, RI_QP_STATE_READY_TO_RECEIVE);
    std::vector<ri_wc_t> sw = a.wait(1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(dst.bytes[15], 0x66);
}

// ACK timeout 0 disables the retry clock (IBA 1.2 ch. 9): a silent responder is waited for
// without end; moving the QP to Error flushes what it holds.
TEST_F(IbRc, AckTimeoutZeroWaitsUntilError) {
    RcOptions never;
    never.local_ack_timeout = 0;
    qa = a.rc(1);
    a.connect(qa, b.lid(1), 0x123456, never);
    Buffer &src = a.buffer(64);
    ri_data_seg_t s = src.sge(0, 8);
    ASSERT_EQ(a.send(qa, &s, 1, 1), RI_RET_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_TRUE(a.drain().empty());
    ASSERT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
    std::vector<ri_wc_t> sw = a.wait(1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
}

// Two pairs sending at once from two threads into one instance (for ThreadSanitizer: the
// fabric's lock, the responders' receive queues and their shared CQ), one of them through
// RNR waits (its receives are posted while it sends).
TEST_F(IbRc, ConcurrentPairs) {
    constexpr int kMsgs = 16;  // the QPs' receive queues hold 16
    RcOptions forever;
    forever.rnr_retry = 7;
    RcQp a1 = a.rc(1), a2 = a.rc(2), b1 = b.rc(1), b2 = b.rc(2);
    a.connect(a1, b.lid(1), b1.qpn, forever);
    a.connect(a2, b.lid(2), b2.qpn, forever);
    b.connect(b1, a.lid(1), a1.qpn);
    b.connect(b2, a.lid(2), a2.qpn);
    Buffer &src = a.buffer(64, 0x5C), &dst = b.buffer(64 * 2 * kMsgs);
    for (int i = 0; i < kMsgs; ++i)
        ASSERT_EQ(b.recv(b1, dst, i * 64, 64, 100 + i), RI_RET_SUCCESS);
    std::thread receiver([&] {
        for (int i = 0; i < kMsgs; ++i) {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
            ri_data_seg_t sg = dst.sge((kMsgs + i) * 64, 64);
            EXPECT_EQ(ri_qp_post_recv(b.rnic, b2.h, rt::F(0), 200 + i, &sg, 1, &err),
                      RI_RET_SUCCESS);
        }
    });
    auto sender = [&](const RcQp &q) {
        for (int i = 0; i < kMsgs; ++i) {
            ri_data_seg_t sg = src.sge(0, 32);
            ri_wr_t wr{};
            wr.wr_send.type = RI_WR_TYPE_SEND;
            wr.wr_send.flags = rt::F(0);  // unsignalled: a's CQ stays quiet
            wr.wr_send.id = static_cast<ri_wr_id_t>(i);
            wr.wr_send.sg_list = &sg;
            wr.wr_send.num_sgls = 1;
            uint_t n = 1;
            ri_err_data_t e = 0;
            // The send queue holds 16; unsignalled successes free their slots once a later
            // completion is polled, so the last one is signalled.
            if (i == kMsgs - 1) wr.wr_send.flags = rt::F(rt::kSig);
            EXPECT_EQ(ri_qp_postsq(a.rnic, q.h, &wr, &n, &e), RI_RET_SUCCESS);
        }
    };
    std::thread t1(sender, a1);
    sender(a2);
    t1.join();
    receiver.join();
    std::vector<ri_wc_t> rw = b.wait(2 * kMsgs);
    ASSERT_EQ(rw.size(), size_t{2 * kMsgs});
    for (const ri_wc_t &w : rw)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
    std::vector<ri_wc_t> sw = a.wait(2);
    ASSERT_EQ(sw.size(), 2u);
    for (const ri_wc_t &w : sw)
        EXPECT_EQ(rc(w).op_status, RI_WC_STATUS_SUCCESS);
    EXPECT_EQ(dst.bytes[(2 * kMsgs - 1) * 64 + 31], 0x5C);
}

// Reset (from RTS) while the channel holds an operation: it completes flushed and the QP
// is in Reset, as newly created.
TEST_F(IbRc, ResetWhileHeld) {
    RcOptions never;
    never.local_ack_timeout = 0;
    qa = a.rc(1);
    a.connect(qa, b.lid(1), 0x654321, never);
    Buffer &src = a.buffer(64);
    ri_data_seg_t s = src.sge(0, 8);
    ASSERT_EQ(a.send(qa, &s, 1, 1), RI_RET_SUCCESS);
    ASSERT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
    EXPECT_EQ(a.state(qa), RI_QP_STATE_IDLE);
    std::vector<ri_wc_t> sw = a.drain();
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
}

// Reset and back: a QP paired again after Reset carries traffic again.
TEST_F(IbRc, ResetAndPairAgain) {
    pair();
    ASSERT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
    ASSERT_EQ(a.modify(qa.h, kNext, to_state(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
    a.connect(qa, b.lid(1), qb.qpn);
    Buffer &src = a.buffer(64, 0x77), &dst = b.buffer(64);
    ASSERT_EQ(b.recv(qb, dst, 0, 64, 1), RI_RET_SUCCESS);
    ri_data_seg_t s = src.sge(0, 64);
    ASSERT_EQ(a.send(qa, &s, 1, 2), RI_RET_SUCCESS);
    EXPECT_EQ(dst.bytes[63], 0x77);
    std::vector<ri_wc_t> sw = a.drain();
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(rc(sw[0]).op_status, RI_WC_STATUS_SUCCESS);
}

}  // namespace
