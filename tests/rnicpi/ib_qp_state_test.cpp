// The InfiniBand QP state machine through the public RNICPI calls on an IB instance
// (docs/ib-personality.md section 3, section 10 step 3): creation, every (from, to, service
// type) with its required, optional and extra mask bits, value errors, all-or-nothing
// checked by ri_qp_query, posts per state, SQD, Error's flush and Reset.
//
// The expected table below is written from docs/ib-personality.md section 3.2 (IBA 1.2
// table 91 on RNICPI's bits), not taken from the engine's own table.
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace {

ri_err_data_t err = 0;

enum class S { Reset, Init, Rtr, Rts, Sqd, Error };
const char *name_of(S s) {
    static const char *n[] = {"Reset", "Init", "RTR", "RTS", "SQD", "Error"};
    return n[static_cast<int>(s)];
}
ri_qp_state_t value_of(S s) {
    switch (s) {
        case S::Reset:
            return RI_QP_STATE_IDLE;
        case S::Init:
            return RI_QP_STATE_INITIALIZED;
        case S::Rtr:
            return RI_QP_STATE_READY_TO_RECEIVE;
        case S::Rts:
            return RI_QP_STATE_READY_TO_SEND;
        case S::Sqd:
            return RI_QP_STATE_SEND_QUEUE_DRAINED;  // drained at once: nothing in flight
        case S::Error:
            return RI_QP_STATE_ERROR;
    }
    return RI_QP_STATE_ERROR;
}
constexpr S kStates[] = {S::Reset, S::Init, S::Rtr, S::Rts, S::Sqd, S::Error};

constexpr unsigned kNext = RI_QP_ATTR_NEXT_STATE;
constexpr unsigned kSq = RI_QP_ATTR_SQ_SIZE;
constexpr unsigned kRq = RI_QP_ATTR_RQ_SIZE;
constexpr unsigned kOrd = RI_QP_ATTR_MAX_RDMA_READ_OUTGOING;
constexpr unsigned kIrd = RI_QP_ATTR_MAX_RDMA_READ_INCOMING;
constexpr unsigned kRd = RI_QP_ATTR_ENABLE_RDMA_READ;
constexpr unsigned kWr = RI_QP_ATTR_ENABLE_RDMA_WRITE;
constexpr unsigned kAt = RI_QP_ATTR_ENABLE_ATOMICS;
constexpr unsigned kAccess = kRd | kWr | kAt;
constexpr unsigned kDest = RI_QP_ATTR_DEST_QPID;
constexpr unsigned kSqdBit = RI_QP_ATTR_ENABLE_SQD;
constexpr unsigned kQkey = RI_QP_ATTR_QKEY;
constexpr unsigned kSpsn = RI_QP_ATTR_SEND_PSN;
constexpr unsigned kRpsn = RI_QP_ATTR_RECV_PSN;
constexpr unsigned kRnr = RI_QP_ATTR_MIN_RNR_TIMER;
constexpr unsigned kPath = RI_QP_ATTR_PRIMARY_PATH;
constexpr unsigned kAlt = RI_QP_ATTR_ALTERNATE_PATH;
constexpr unsigned kMig = RI_QP_ATTR_MIGSTATE;
constexpr unsigned kPkey = RI_QP_ATTR_PRIMARY_PKEY;
constexpr unsigned kPort = RI_QP_ATTR_PORT_NUM;

// The attribute bits each service type has (section 3.3 step 2).
constexpr unsigned kRcBits = kNext | kSq | kRq | kOrd | kIrd | kAccess | kDest | kSqdBit | kSpsn |
                             kRpsn | kRnr | kPath | kAlt | kMig | kPkey | kPort;
constexpr unsigned kUdBits = kNext | kSq | kRq | kSqdBit | kQkey | kSpsn | kPkey | kPort;

struct Edge {
    unsigned required;
    unsigned optional;
    bool access_required;
};

// docs/ib-personality.md section 3.2; the resize bits aside (tested on their own).
std::optional<Edge> expected_edge(bool rc, S from, S to) {
    if (to == S::Reset || to == S::Error) return Edge{0, 0, false};
    if (rc) {
        if (from == S::Reset && to == S::Init) return Edge{kPkey | kPort, kAccess, true};
        if (from == S::Init && to == S::Init) return Edge{0, kPkey | kPort | kAccess, false};
        if (from == S::Init && to == S::Rtr)
            return Edge{kPath | kDest | kRpsn | kIrd | kRnr, kAlt | kAccess | kPkey, false};
        if (from == S::Rtr && to == S::Rts)
            return Edge{kSpsn | kOrd, kPath | kAlt | kAccess | kRnr | kMig, false};
        if (from == S::Rts && to == S::Rts) return Edge{0, kAccess | kAlt | kMig | kRnr, false};
        if (from == S::Rts && to == S::Sqd) return Edge{0, kSqdBit, false};
        if (from == S::Sqd && to == S::Rts) return Edge{0, kAlt | kAccess | kRnr | kMig, false};
        if (from == S::Sqd && to == S::Sqd)
            return Edge{0, kPort | kPath | kOrd | kIrd | kAlt | kAccess | kPkey | kRnr | kMig,
                        false};
        return std::nullopt;
    }
    if (from == S::Reset && to == S::Init) return Edge{kPkey | kPort | kQkey, 0, false};
    if (from == S::Init && to == S::Init) return Edge{0, kPkey | kPort | kQkey, false};
    if (from == S::Init && to == S::Rtr) return Edge{0, kPkey | kQkey, false};
    if (from == S::Rtr && to == S::Rts) return Edge{kSpsn, kQkey, false};
    if (from == S::Rts && to == S::Rts) return Edge{0, kQkey, false};
    if (from == S::Rts && to == S::Sqd) return Edge{0, kSqdBit, false};
    if (from == S::Sqd && to == S::Rts) return Edge{0, kQkey, false};
    if (from == S::Sqd && to == S::Sqd) return Edge{0, kPkey | kQkey, false};
    return std::nullopt;
}

// Valid values for every attribute (2 ports of MTU 4096, P_Key index 0 the default).
ri_path_address_info_t path(uint8_t port, ri_lid_t dlid) {
    ri_path_address_info_t p{};
    p.pkey_index = 0;
    p.physical_port = port;
    p.path_mtu = RI_IB_MTU_1K;
    p.local_ack_timeout = 14;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    p.av.dlid = dlid;
    p.av.sl = 0;
    p.av.source_gid_index = 0;
    return p;
}

ri_qp_attr_t valid_attrs(ri_qp_state_t next) {
    ri_qp_attr_t a{};
    a.state = next;
    a.sq_size = 4;
    a.rq_size = 4;
    a.enable_rdma_read = 1;
    a.enable_rdma_write = 1;
    a.max_rdma_read_outgoing = 4;
    a.max_rdma_read_incoming = 4;
    ri_ib_qp_attr_t &ib = a.qp_xport.qp_ib;
    ib.send_psn = 0x123;
    ib.enable_async_notify_for_sqd = 1;
    ib.primary_av = path(1, 0x10);
    ib.rcv_psn = 0x456;
    ib.dest_qpn = 0x42;
    ib.min_rnrnak_timer = 12;
    ib.alternate_av = path(2, 0x11);
    ib.mig_state = RI_MIG_STATE_MIGRATED;
    ib.enable_atomic = 1;
    ib.rcv_qkey = 0x1234;
    return a;
}

std::vector<ri_event_record_t> g_events;
std::mutex g_mu;
std::condition_variable g_cv;
void on_event(ri_os_data_t, ri_event_record_t *e) {
    std::lock_guard lk(g_mu);
    g_events.push_back(*e);
    g_cv.notify_all();
}

// An IB instance with a PD and a CQ, and QPs made on them.
class IbQpState : public ::testing::Test {
  protected:
    void SetUp() override { open(0); }
    void TearDown() override { close(); }

    void open(uint16_t mtu) {
        subnet_ = "t" + std::to_string(::getpid()) + "-" + rt::unique_name("s").substr(0, 40);
        softrnic_vp_config_t c{};
        c.size = sizeof c;
        c.kind = SOFTRNIC_KIND_IB;
        c.num_ports = 2;
        c.active_mtu = mtu;
        c.subnet = subnet_.c_str();
        ASSERT_EQ(softrnic_vp_create_ex(rt::unique_name("ibqp").c_str(), &c, &vp), RI_RET_SUCCESS);
        ASSERT_EQ(ri_async_set_event_handler(vp, on_event, &err), RI_RET_SUCCESS);
        ASSERT_EQ(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), RI_RET_SUCCESS);
        ASSERT_EQ(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
                  RI_RET_SUCCESS);
        ASSERT_EQ(ri_pd_alloc(rnic, &pd, nullptr, nullptr, &err), RI_RET_SUCCESS);
        ri_cq_attr_t ca{};
        ca.num_cqe = 256;
        ASSERT_EQ(ri_cq_create(rnic, &ca, &cq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    }
    void close() {
        if (!vp) return;
        for (ri_qp_handle_t q : qps_)
            EXPECT_EQ(ri_qp_destroy(rnic, q, &err), RI_RET_SUCCESS);
        qps_.clear();
        if (srq) {
            EXPECT_EQ(ri_srq_destroy(rnic, srq, &err), RI_RET_SUCCESS);
        }
        srq = nullptr;
        if (cq) {
            EXPECT_EQ(ri_cq_destroy(rnic, cq, &err), RI_RET_SUCCESS);
        }
        if (pd) {
            EXPECT_EQ(ri_pd_dealloc(rnic, pd, &err), RI_RET_SUCCESS);
        }
        EXPECT_EQ(ri_rnic_free_hdl(vp, rnic, &err), RI_RET_SUCCESS);
        EXPECT_EQ(ri_rnic_close(vp, &err), RI_RET_SUCCESS);
        EXPECT_EQ(softrnic_vp_destroy(vp), RI_RET_SUCCESS);
        vp = nullptr;
        cq = nullptr;
        pd = nullptr;
    }

    ri_qp_attr_t create_attrs(ri_svc_type_t svc) {
        ri_qp_attr_t qa{};
        qa.pd = pd;
        qa.scq.scq_handle = cq;
        qa.rcq.rcq_handle = cq;
        qa.sq_size = qa.rq_size = 4;
        qa.sq_max_sges = qa.rq_max_sges = qa.sq_max_sges_rdmaw = 1;
        qa.qp_xport.qp_ib.trans_type = svc;
        return qa;
    }
    ri_qp_handle_t make(bool rc, bool with_srq = false) {
        ri_qp_attr_t qa =
            create_attrs(rc ? RI_SERVICE_RELIABLE_CONNECTION : RI_SERVICE_UNRELIABLE_DATAGRAM);
        if (with_srq) {
            qa.srq_valid = 1;
            qa.srq.srq_handle = srq;
        }
        ri_qp_handle_t q = nullptr;
        EXPECT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_SUCCESS);
        if (q) qps_.push_back(q);
        return q;
    }
    void destroy(ri_qp_handle_t q) {
        EXPECT_EQ(ri_qp_destroy(rnic, q, &err), RI_RET_SUCCESS);
        qps_.erase(std::find(qps_.begin(), qps_.end(), q));
    }

    ri_api_return_t modify(ri_qp_handle_t q, unsigned mask, ri_qp_attr_t a) {
        return ri_qp_modify(rnic, q, rt::QM(mask), &a, &err);
    }
    ri_qp_attr_t query(ri_qp_handle_t q) {
        ri_qp_attr_t a;
        std::memset(&a, 0x5A, sizeof a);
        EXPECT_EQ(ri_qp_query(rnic, q, &a, &err), RI_RET_SUCCESS);
        return a;
    }
    ri_qp_state_t state(ri_qp_handle_t q) { return query(q).state; }

    // Drives a Reset QP to `to` along Reset -> Init -> RTR -> RTS -> SQD with each edge's
    // required attributes.
    void drive(ri_qp_handle_t q, bool rc, S to) {
        if (to == S::Reset) return;
        if (to == S::Error) {
            ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
            return;
        }
        const S chain[] = {S::Init, S::Rtr, S::Rts, S::Sqd};
        S from = S::Reset;
        for (S s : chain) {
            std::optional<Edge> e = expected_edge(rc, from, s);
            ASSERT_TRUE(e.has_value());
            unsigned m = kNext | e->required | (e->access_required ? kAccess : 0);
            ASSERT_EQ(modify(q, m, valid_attrs(value_of(s))), RI_RET_SUCCESS)
                << name_of(from) << " -> " << name_of(s);
            from = s;
            if (s == to) break;
        }
        ASSERT_EQ(state(q), value_of(to));
    }

    // Every completion now in the CQ.
    std::vector<ri_wc_t> drain_cq() { return rt::drain_cq(rnic, cq); }

    ri_api_return_t post_send(ri_qp_handle_t q, ri_wr_id_t id) {
        return ri_qp_post_send(rnic, q, RI_WR_TYPE_SEND, rt::F(rt::kSig), id, nullptr, 0, 0, 0,
                               &err);
    }
    ri_api_return_t post_recv(ri_qp_handle_t q, ri_wr_id_t id) {
        return ri_qp_post_recv(rnic, q, rt::F(0), id, nullptr, 0, &err);
    }

    bool wait_event(ri_async_event_type_t type) {
        std::unique_lock lk(g_mu);
        return g_cv.wait_for(lk, rt::kTimeout, [&] {
            for (const auto &e : g_events)
                if (e.event_type == type) return true;
            return false;
        });
    }
    void clear_events() {
        std::lock_guard lk(g_mu);
        g_events.clear();
    }
    size_t count_events(ri_async_event_type_t type) {
        std::lock_guard lk(g_mu);
        return static_cast<size_t>(std::count_if(g_events.begin(), g_events.end(),
                                                 [&](auto &e) { return e.event_type == type; }));
    }

    std::string subnet_;
    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;
    ri_pd_handle_t pd = nullptr;
    ri_cq_handle_t cq = nullptr;
    ri_srq_handle_t srq = nullptr;
    std::vector<ri_qp_handle_t> qps_;
};

bool same(const ri_qp_attr_t &x, const ri_qp_attr_t &y) {
    return std::memcmp(&x, &y, sizeof x) == 0;
}

// ------------------------------------------------------------------------------ creation

// RC and UD QPs are created in Reset (IDLE) with a QPN of 24 bits, never 0, 1 or 0xFFFFFF,
// distinct; ORD/IRD and the read/write enables are not create attributes on IB (L8575-8577).
TEST_F(IbQpState, CreateInResetWithQpn) {
    std::vector<uint32_t> qpns;
    for (bool rc : {true, false}) {
        for (int i = 0; i < 4; ++i) {
            ri_qp_attr_t qa =
                create_attrs(rc ? RI_SERVICE_RELIABLE_CONNECTION : RI_SERVICE_UNRELIABLE_DATAGRAM);
            qa.max_rdma_read_outgoing = 1000;  // above the limit: ignored on IB
            qa.enable_rdma_read = 1;
            qa.qp_xport.qp_ib.signal_completions = 1;
            ri_qp_handle_t q = nullptr;
            ASSERT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_SUCCESS);
            qps_.push_back(q);
            EXPECT_EQ(qa.state, RI_QP_STATE_IDLE);
            EXPECT_EQ(qa.max_rdma_read_outgoing, 0u);
            EXPECT_EQ(qa.enable_rdma_read, 0);
            ri_qp_attr_t a = query(q);
            EXPECT_EQ(a.state, RI_QP_STATE_IDLE);
            EXPECT_EQ(a.qp_id, qa.qp_id);
            EXPECT_GT(a.qp_id, 1u);
            EXPECT_LT(a.qp_id, 0xFFFFFFu);
            EXPECT_EQ(a.max_rdma_read_outgoing, 0u);
            EXPECT_EQ(a.max_rdma_read_incoming, 0u);
            EXPECT_EQ(a.enable_rdma_read, 0);
            const ri_ib_qp_attr_t &ib = a.qp_xport.qp_ib;
            EXPECT_EQ(ib.trans_type,
                      rc ? RI_SERVICE_RELIABLE_CONNECTION : RI_SERVICE_UNRELIABLE_DATAGRAM);
            EXPECT_EQ(ib.signal_completions, 1);
            EXPECT_EQ(ib.rcv_qkey, 0u);
            EXPECT_EQ(ib.primary_av.physical_port, 0);
            qpns.push_back(a.qp_id);
        }
    }
    std::sort(qpns.begin(), qpns.end());
    EXPECT_EQ(std::unique(qpns.begin(), qpns.end()), qpns.end());
}

// A service type RNICPI does not name (L8607) is refused; nothing is created.
TEST_F(IbQpState, UnknownServiceTypeRefused) {
    ri_qp_attr_t qa = create_attrs(RI_SERVICE_RELIABLE_CONNECTION);
    const uint32_t bad = 7;  // stored as a C caller would: not a value of the enum
    static_assert(sizeof qa.qp_xport.qp_ib.trans_type == sizeof bad);
    std::memcpy(&qa.qp_xport.qp_ib.trans_type, &bad, sizeof bad);
    ri_qp_handle_t q = nullptr;
    EXPECT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_QP_INVALID_SERVICE_TYPE);
    EXPECT_EQ(q, nullptr);
}

// ------------------------------------------------------------------- the transition table

struct Case {
    bool rc;
    S from;
};
std::string case_name(const ::testing::TestParamInfo<Case> &i) {
    return std::string(i.param.rc ? "RC_" : "UD_") + name_of(i.param.from);
}

class IbQpTable : public IbQpState, public ::testing::WithParamInterface<Case> {
  protected:
    // A fresh QP of the case's type in the case's state; its query.
    ri_qp_handle_t fresh(ri_qp_attr_t &before) {
        ri_qp_handle_t q = make(GetParam().rc);
        drive(q, GetParam().rc, GetParam().from);
        before = query(q);
        return q;
    }
};

// The targets a caller can name: every RNICPI state value, and one beyond the enum.
const uint32_t kTargets[] = {RI_QP_STATE_IDLE,
                             RI_QP_STATE_READY_TO_SEND,
                             RI_QP_STATE_ERROR,
                             RI_QP_STATE_TERMINATE,
                             RI_QP_STATE_CLOSING,
                             RI_QP_STATE_SEND_QUEUE_ERROR,
                             RI_QP_STATE_INITIALIZED,
                             RI_QP_STATE_READY_TO_RECEIVE,
                             RI_QP_STATE_SEND_QUEUE_DRAINING,
                             RI_QP_STATE_SEND_QUEUE_DRAINED,
                             RI_QP_STATE_TIMEWAIT,
                             RI_QP_STATE_TIMEWAIT + 1};

std::optional<S> ib_target(uint32_t v) {
    switch (v) {
        case RI_QP_STATE_IDLE:
            return S::Reset;
        case RI_QP_STATE_INITIALIZED:
            return S::Init;
        case RI_QP_STATE_READY_TO_RECEIVE:
            return S::Rtr;
        case RI_QP_STATE_READY_TO_SEND:
            return S::Rts;
        case RI_QP_STATE_SEND_QUEUE_DRAINING:
        case RI_QP_STATE_SEND_QUEUE_DRAINED:
            return S::Sqd;
        case RI_QP_STATE_ERROR:
            return S::Error;
        default:
            return std::nullopt;  // iWARP's states, SQE (no edge leads there), TIMEWAIT (A7)
    }
}

// Every target from this state: legal edges succeed with exactly their required bits and
// land where they say; illegal ones are QP_INVALID_STATE and change nothing.
TEST_P(IbQpTable, EveryTargetWithRequiredBits) {
    const bool rc = GetParam().rc;
    const S from = GetParam().from;
    for (uint32_t tv : kTargets) {
        SCOPED_TRACE(::testing::Message() << "to value " << tv);
        ri_qp_attr_t before;
        ri_qp_handle_t q = fresh(before);
        std::optional<S> to = ib_target(tv);
        std::optional<Edge> e = to ? expected_edge(rc, from, *to) : std::nullopt;
        ri_qp_attr_t a = valid_attrs(static_cast<ri_qp_state_t>(tv));
        if (!e) {
            EXPECT_EQ(modify(q, kNext, a), RI_RET_QP_INVALID_STATE);
            EXPECT_TRUE(same(query(q), before));
        } else {
            unsigned m = kNext | e->required | (e->access_required ? kRd : 0);
            EXPECT_EQ(modify(q, m, a), RI_RET_SUCCESS);
            EXPECT_EQ(state(q), value_of(*to));
        }
        destroy(q);
    }
}

// Each required bit missing ("qp_mask is invalid", L3953): INVALID_PARAMETER, no change.
// Access: none of the three is missing; any one alone is enough (A11).
TEST_P(IbQpTable, MissingRequiredBit) {
    const bool rc = GetParam().rc;
    const S from = GetParam().from;
    for (S to : kStates) {
        std::optional<Edge> e = expected_edge(rc, from, to);
        if (!e) continue;
        SCOPED_TRACE(name_of(to));
        const unsigned full = kNext | e->required | (e->access_required ? kAccess : 0);
        for (unsigned bit = 1; bit <= kPort; bit <<= 1) {
            if (!(e->required & bit)) continue;
            SCOPED_TRACE(::testing::Message() << "without bit " << bit);
            ri_qp_attr_t before;
            ri_qp_handle_t q = fresh(before);
            EXPECT_EQ(modify(q, full & ~bit, valid_attrs(value_of(to))), RI_RET_INVALID_PARAMETER);
            EXPECT_TRUE(same(query(q), before));
            destroy(q);
        }
        if (e->access_required) {
            ri_qp_attr_t before;
            ri_qp_handle_t q = fresh(before);
            EXPECT_EQ(modify(q, full & ~kAccess, valid_attrs(value_of(to))),
                      RI_RET_INVALID_PARAMETER);
            EXPECT_TRUE(same(query(q), before));
            destroy(q);
            for (unsigned one : {kRd, kWr, kAt}) {
                q = fresh(before);
                EXPECT_EQ(modify(q, (full & ~kAccess) | one, valid_attrs(value_of(to))),
                          RI_RET_SUCCESS);
                destroy(q);
            }
        }
    }
}

// Each optional bit, added to the required ones, is accepted and applied; each bit of the
// service type that the edge does not take is QP_ATTRIBUTE_CANT_CHANGE (L3964), each bit
// of the other service type QP_INVALID_SERVICE_TYPE (L3961), each bit above the mask
// INVALID_PARAMETER; none of those changes anything.
TEST_P(IbQpTable, OptionalExtraAndForeignBits) {
    const bool rc = GetParam().rc;
    const S from = GetParam().from;
    const unsigned own = rc ? kRcBits : kUdBits;
    for (S to : kStates) {
        std::optional<Edge> e = expected_edge(rc, from, to);
        if (!e) continue;
        SCOPED_TRACE(name_of(to));
        const unsigned base = kNext | e->required | (e->access_required ? kRd : 0);
        for (unsigned bit = 1; bit != 0; bit <<= 1) {
            if (bit & (kNext | kSq | kRq) || (e->required & bit)) continue;
            if (bit > (1u << 22) && bit != (1u << 31)) continue;
            SCOPED_TRACE(::testing::Message() << "with bit " << bit);
            ri_api_return_t want = RI_RET_SUCCESS;
            if (bit > kPort)
                want = RI_RET_INVALID_PARAMETER;
            else if (!(own & bit))
                want = RI_RET_QP_INVALID_SERVICE_TYPE;
            else if (!(e->optional & bit))
                want = RI_RET_QP_ATTRIBUTE_CANT_CHANGE;
            if (want == RI_RET_SUCCESS && (e->access_required && bit == kRd)) continue;
            ri_qp_attr_t before;
            ri_qp_handle_t q = fresh(before);
            EXPECT_EQ(modify(q, base | bit, valid_attrs(value_of(to))), want);
            if (want != RI_RET_SUCCESS) {
                EXPECT_TRUE(same(query(q), before));
            } else {
                EXPECT_EQ(state(q), value_of(to));
            }
            destroy(q);
        }
    }
}

std::vector<Case> all_cases() {
    std::vector<Case> v;
    for (bool rc : {true, false})
        for (S s : kStates)
            v.push_back({rc, s});
    return v;
}
INSTANTIATE_TEST_SUITE_P(AllStates, IbQpTable, ::testing::ValuesIn(all_cases()), case_name);

// ----------------------------------------------------------------------------- resizes

// SQ and RQ resizes are RNICPI's, optional on every edge; the receive queue's is refused
// while receives are live (RTR, RTS, SQD: QP_INVALID_STATE); results come back (L3892).
TEST_F(IbQpState, Resizes) {
    ri_qp_handle_t q = make(true);
    drive(q, true, S::Init);
    ri_qp_attr_t a = valid_attrs(RI_QP_STATE_INITIALIZED);
    a.sq_size = 16;
    a.rq_size = 32;
    ASSERT_EQ(ri_qp_modify(rnic, q, rt::QM(kSq | kRq), &a, &err), RI_RET_SUCCESS);
    EXPECT_GE(a.sq_size, 16u);
    EXPECT_GE(a.rq_size, 32u);
    EXPECT_GE(query(q).rq_size, 32u);
    a = valid_attrs(RI_QP_STATE_INITIALIZED);
    a.sq_size = 100000;
    EXPECT_EQ(modify(q, kSq, a), RI_RET_RNIC_WR_LIMIT_EXCEEDED);
    drive(q, true, S::Rts);
    ri_qp_attr_t before = query(q);
    EXPECT_EQ(modify(q, kRq, valid_attrs(RI_QP_STATE_READY_TO_SEND)), RI_RET_QP_INVALID_STATE);
    EXPECT_TRUE(same(query(q), before));
    a = valid_attrs(RI_QP_STATE_READY_TO_SEND);
    a.sq_size = 64;
    EXPECT_EQ(modify(q, kSq, a), RI_RET_SUCCESS);
    EXPECT_GE(query(q).sq_size, 64u);
    // RTR has no RTR -> RTR edge: a resize alone there is a transition the table lacks.
    ri_qp_handle_t r = make(true);
    drive(r, true, S::Rtr);
    EXPECT_EQ(modify(r, kSq, valid_attrs(RI_QP_STATE_READY_TO_RECEIVE)), RI_RET_QP_INVALID_STATE);
}

// --------------------------------------------------------------------------- value errors

struct ValueCase {
    const char *what;
    bool rc;
    S from;
    S to;
    unsigned extra;  // bits beyond the edge's required ones
    void (*spoil)(ri_qp_attr_t &);
    ri_api_return_t want;
};

const ValueCase kValueCases[] = {
    {"port 0", true, S::Reset, S::Init, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.physical_port = 0; },
     RI_RET_RNIC_INVALID_PORT},
    {"port 3 of 2", false, S::Reset, S::Init, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.physical_port = 3; },
     RI_RET_RNIC_INVALID_PORT},
    {"pkey index 16", true, S::Reset, S::Init, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.pkey_index = 16; },
     RI_RET_RNIC_INVALID_PKEY_INDEX},
    {"pkey index of an invalid entry", false, S::Reset, S::Init, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.pkey_index = 1; },
     RI_RET_RNIC_INVALID_PKEY_ENTRY},
    {"pkey index of an invalid entry, Init->Init", true, S::Init, S::Init, kPkey,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.pkey_index = 5; },
     RI_RET_RNIC_INVALID_PKEY_ENTRY},
    {"path MTU 0", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.path_mtu = 0; }, RI_RET_RNIC_INVALID_MTU},
    {"path MTU 6", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.path_mtu = 6; }, RI_RET_RNIC_INVALID_MTU},
    {"path MTU 1000 bytes", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.path_mtu = 1000; }, RI_RET_RNIC_INVALID_MTU},
    {"min RNR timer 32", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.min_rnrnak_timer = 32; },
     RI_RET_RNIC_INVALID_RNR_VALUE},
    {"IRD 129", true, S::Init, S::Rtr, 0, [](ri_qp_attr_t &a) { a.max_rdma_read_incoming = 129; },
     RI_RET_RNIC_IRD_ORD_EXCEEDED},
    {"receive PSN of 25 bits", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.rcv_psn = 0x1000000; }, RI_RET_INVALID_PARAMETER},
    {"destination QPN of 25 bits", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.dest_qpn = 0x1000000; }, RI_RET_INVALID_PARAMETER},
    {"DLID 0", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.av.dlid = 0; }, RI_RET_INVALID_PARAMETER},
    {"multicast DLID on RC", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.av.dlid = 0xC001; },
     RI_RET_INVALID_PARAMETER},
    {"ACK timeout 32", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.local_ack_timeout = 32; },
     RI_RET_INVALID_PARAMETER},
    {"retry count 8", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.retry_count = 8; },
     RI_RET_INVALID_PARAMETER},
    {"RNR retry 8", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.rnr_retry_count = 8; },
     RI_RET_INVALID_PARAMETER},
    {"source GID index 16", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.av.source_gid_index = 16; },
     RI_RET_INVALID_PARAMETER},
    {"SL 16", true, S::Init, S::Rtr, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.av.sl = 16; }, RI_RET_INVALID_PARAMETER},
    {"alternate port 0", true, S::Init, S::Rtr, kAlt,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.alternate_av.physical_port = 0; },
     RI_RET_RNIC_INVALID_PORT},
    {"alternate MTU 9", true, S::Init, S::Rtr, kAlt,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.alternate_av.path_mtu = 9; }, RI_RET_RNIC_INVALID_MTU},
    {"ORD 129", true, S::Rtr, S::Rts, 0, [](ri_qp_attr_t &a) { a.max_rdma_read_outgoing = 129; },
     RI_RET_RNIC_IRD_ORD_EXCEEDED},
    {"send PSN of 25 bits", false, S::Rtr, S::Rts, 0,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.send_psn = 0x1000000; }, RI_RET_INVALID_PARAMETER},
    {"migration state Rearm (no APM)", true, S::Rtr, S::Rts, kMig,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.mig_state = RI_MIG_STATE_REARM; },
     RI_RET_MIGRATION_STATE_INVALID},
    {"another AV at RTR->RTS", true, S::Rtr, S::Rts, kPath,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.av.dlid = 0x99; },
     RI_RET_QP_ATTRIBUTE_CANT_CHANGE},
    {"another MTU at RTR->RTS", true, S::Rtr, S::Rts, kPath,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.path_mtu = RI_IB_MTU_2K; },
     RI_RET_QP_ATTRIBUTE_CANT_CHANGE},
    {"timer out of range at RTR->RTS", true, S::Rtr, S::Rts, kPath,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.retry_count = 9; },
     RI_RET_INVALID_PARAMETER},
    {"min RNR timer 40 in RTS", true, S::Rts, S::Rts, kRnr,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.min_rnrnak_timer = 40; },
     RI_RET_RNIC_INVALID_RNR_VALUE},
    {"port 9 in SQD", true, S::Sqd, S::Sqd, kPort,
     [](ri_qp_attr_t &a) { a.qp_xport.qp_ib.primary_av.physical_port = 9; },
     RI_RET_RNIC_INVALID_PORT},
};

// Section 3.3 step 6: each bad value is refused with its code, and the whole modify
// (state and every other attribute in it) changes nothing.
TEST_F(IbQpState, ValueErrorsChangeNothing) {
    for (const ValueCase &vc : kValueCases) {
        SCOPED_TRACE(vc.what);
        ri_qp_handle_t q = make(vc.rc);
        drive(q, vc.rc, vc.from);
        ri_qp_attr_t before = query(q);
        std::optional<Edge> e = expected_edge(vc.rc, vc.from, vc.to);
        ASSERT_TRUE(e.has_value());
        unsigned m = kNext | e->required | (e->access_required ? kAccess : 0) | vc.extra;
        ri_qp_attr_t a = valid_attrs(value_of(vc.to));
        vc.spoil(a);
        EXPECT_EQ(modify(q, m, a), vc.want);
        EXPECT_TRUE(same(query(q), before));
        // The same modify with valid values goes through.
        EXPECT_EQ(modify(q, m, valid_attrs(value_of(vc.to))), RI_RET_SUCCESS);
        EXPECT_EQ(state(q), value_of(vc.to));
        destroy(q);
    }
}

// A path MTU above the port's active MTU is refused (INVALID_MTU); one in bytes is read as
// the MTU it names and reported as ri_ib_mtu_t (A4).
TEST_F(IbQpState, PathMtuAgainstActiveMtu) {
    close();
    open(1024);
    ri_qp_handle_t q = make(true);
    drive(q, true, S::Init);
    const unsigned m = kNext | kPath | kDest | kRpsn | kIrd | kRnr;
    ri_qp_attr_t a = valid_attrs(RI_QP_STATE_READY_TO_RECEIVE);
    a.qp_xport.qp_ib.primary_av.path_mtu = RI_IB_MTU_2K;
    EXPECT_EQ(modify(q, m, a), RI_RET_RNIC_INVALID_MTU);
    EXPECT_EQ(state(q), RI_QP_STATE_INITIALIZED);
    a.qp_xport.qp_ib.primary_av.path_mtu = 1024;
    EXPECT_EQ(modify(q, m, a), RI_RET_SUCCESS);
    EXPECT_EQ(query(q).qp_xport.qp_ib.primary_av.path_mtu, RI_IB_MTU_1K);
}

// A Q_Key with the high bit set is for privileged consumers (section 3.3 step 7).
TEST_F(IbQpState, PrivilegedQkey) {
    ri_rnic_handle_t user = nullptr;
    ASSERT_EQ(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_USER, &user, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    ri_pd_handle_t upd = nullptr;
    ASSERT_EQ(ri_pd_alloc(user, &upd, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_cq_attr_t ca{};
    ca.num_cqe = 8;
    ri_cq_handle_t ucq = nullptr;
    ASSERT_EQ(ri_cq_create(user, &ca, &ucq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_qp_attr_t qa = create_attrs(RI_SERVICE_UNRELIABLE_DATAGRAM);
    qa.pd = upd;
    qa.scq.scq_handle = qa.rcq.rcq_handle = ucq;
    ri_qp_handle_t uq = nullptr;
    ASSERT_EQ(ri_qp_create(user, &qa, &uq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_qp_attr_t a = valid_attrs(RI_QP_STATE_INITIALIZED);
    a.qp_xport.qp_ib.rcv_qkey = 0x80010000;
    const unsigned m = kNext | kPkey | kPort | kQkey;
    ri_qp_attr_t b = a;
    EXPECT_EQ(ri_qp_modify(user, uq, rt::QM(m), &b, &err), RI_RET_NO_PERMISSION);
    a.qp_xport.qp_ib.rcv_qkey = 0x00010000;
    b = a;
    EXPECT_EQ(ri_qp_modify(user, uq, rt::QM(m), &b, &err), RI_RET_SUCCESS);
    // The privileged handle may.
    ri_qp_handle_t q = make(false);
    a.qp_xport.qp_ib.rcv_qkey = 0x80010000;
    EXPECT_EQ(modify(q, m, a), RI_RET_SUCCESS);
    EXPECT_EQ(query(q).qp_xport.qp_ib.rcv_qkey, 0x80010000u);
    EXPECT_EQ(ri_qp_destroy(user, uq, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_cq_destroy(user, ucq, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_pd_dealloc(user, upd, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_rnic_free_hdl(vp, user, &err), RI_RET_SUCCESS);
}

// ------------------------------------------------------------------------------- query

// ri_qp_query returns what the modifies set, with the port and P_Key index inside the
// primary path and the timers recorded at Init -> RTR; RTR -> RTS may change the timers
// only (section 3.4).
TEST_F(IbQpState, QueryReturnsTheAttributes) {
    ri_qp_handle_t q = make(true);
    ri_qp_attr_t a = valid_attrs(RI_QP_STATE_INITIALIZED);
    a.enable_rdma_read = 1;
    a.enable_rdma_write = 0;
    a.qp_xport.qp_ib.enable_atomic = 1;
    a.qp_xport.qp_ib.primary_av.physical_port = 2;
    ASSERT_EQ(modify(q, kNext | kPkey | kPort | kRd | kAt, a), RI_RET_SUCCESS);
    a = valid_attrs(RI_QP_STATE_READY_TO_RECEIVE);
    a.qp_xport.qp_ib.primary_av.physical_port = 1;  // not applied: PORT_NUM is not given
    a.qp_xport.qp_ib.primary_av.av.dlid = 0x77;
    a.qp_xport.qp_ib.primary_av.path_mtu = 2048;
    a.qp_xport.qp_ib.primary_av.av.flow_label = 0x1234;
    ASSERT_EQ(modify(q, kNext | kPath | kDest | kRpsn | kIrd | kRnr | kAlt, a), RI_RET_SUCCESS);
    ri_qp_attr_t rts = a;
    rts.state = RI_QP_STATE_READY_TO_SEND;
    rts.max_rdma_read_outgoing = 3;
    rts.qp_xport.qp_ib.primary_av.local_ack_timeout = 20;
    rts.qp_xport.qp_ib.primary_av.retry_count = 2;
    rts.qp_xport.qp_ib.primary_av.rnr_retry_count = 5;
    ASSERT_EQ(modify(q, kNext | kSpsn | kOrd | kPath, rts), RI_RET_SUCCESS);
    ri_qp_attr_t got = query(q);
    EXPECT_EQ(got.state, RI_QP_STATE_READY_TO_SEND);
    EXPECT_EQ(got.enable_rdma_read, 1);
    EXPECT_EQ(got.enable_rdma_write, 0);
    EXPECT_EQ(got.max_rdma_read_outgoing, 3u);
    EXPECT_EQ(got.max_rdma_read_incoming, 4u);
    const ri_ib_qp_attr_t &ib = got.qp_xport.qp_ib;
    EXPECT_EQ(ib.current_state, RI_QP_STATE_READY_TO_SEND);
    EXPECT_EQ(ib.enable_atomic, 1);
    EXPECT_EQ(ib.primary_av.physical_port, 2);
    EXPECT_EQ(ib.primary_av.pkey_index, 0);
    EXPECT_EQ(ib.primary_av.av.dlid, 0x77);
    EXPECT_EQ(ib.primary_av.av.flow_label, 0x1234u);
    EXPECT_EQ(ib.primary_av.path_mtu, RI_IB_MTU_2K);
    EXPECT_EQ(ib.primary_av.local_ack_timeout, 20);
    EXPECT_EQ(ib.primary_av.retry_count, 2);
    EXPECT_EQ(ib.primary_av.rnr_retry_count, 5);
    EXPECT_EQ(ib.alternate_av.physical_port, 2);
    EXPECT_EQ(ib.alternate_av.av.dlid, 0x11);
    EXPECT_EQ(ib.alternate_av.path_mtu, RI_IB_MTU_1K);
    EXPECT_EQ(ib.dest_qpn, 0x42u);
    EXPECT_EQ(ib.rcv_psn, 0x456u);
    EXPECT_EQ(ib.send_psn, 0x123u);
    EXPECT_EQ(ib.min_rnrnak_timer, 12u);
    EXPECT_EQ(ib.mig_state, RI_MIG_STATE_MIGRATED);
    EXPECT_EQ(ib.trans_type, RI_SERVICE_RELIABLE_CONNECTION);
    // UD: the Q_Key.
    ri_qp_handle_t u = make(false);
    drive(u, false, S::Rts);
    EXPECT_EQ(query(u).qp_xport.qp_ib.rcv_qkey, 0x1234u);
    ri_qp_attr_t k = valid_attrs(RI_QP_STATE_READY_TO_SEND);
    k.qp_xport.qp_ib.rcv_qkey = 0x4321;
    EXPECT_EQ(modify(u, kQkey, k), RI_RET_SUCCESS);
    EXPECT_EQ(query(u).qp_xport.qp_ib.rcv_qkey, 0x4321u);
}

// ------------------------------------------------------------------------------- posts

// SQ posts: QP_INVALID_STATE in Reset, Init and RTR (L4422); an RC QP in RTS sends
// (ib_rc_test.cpp): here its path names no QP, so the WR completes TRANSPORT_RETRY_EXCEEDED
// and the QP goes to Error; a UD QP in RTS reads the WR as a datagram (A10), whose address
// handle this one lacks (ib_ud_test.cpp posts real ones); holding WRs in SQD is not built
// (OP_UNSUPPORTED); in Error they complete flushed. RQ posts: QP_INVALID_STATE in Reset
// (L4659, A15), queued from Init on, flushed in Error. Nothing is counted as posted when
// refused.
TEST_F(IbQpState, PostsPerState) {
    for (bool rc : {true, false}) {
        for (S s : kStates) {
            SCOPED_TRACE(::testing::Message() << (rc ? "RC " : "UD ") << name_of(s));
            ri_qp_handle_t q = make(rc);
            drive(q, rc, s);
            const bool rc_sends = rc && s == S::Rts;  // to nobody: retry exceeded
            ri_api_return_t sq_want = s == S::Error || rc_sends    ? RI_RET_SUCCESS
                                      : (s == S::Rts && !rc)       ? RI_RET_ADDRESS_HANDLE_INVALID
                                      : s == S::Rts || s == S::Sqd ? RI_RET_OP_UNSUPPORTED
                                                                   : RI_RET_QP_INVALID_STATE;
            ri_wr_t wr{};
            wr.wr_send.type = RI_WR_TYPE_SEND;
            wr.wr_send.flags = rt::F(rt::kSig);
            wr.wr_send.id = 7;
            uint_t n = 1;
            EXPECT_EQ(ri_qp_postsq(rnic, q, &wr, &n, &err), sq_want);
            EXPECT_EQ(n, sq_want == RI_RET_SUCCESS ? 1u : 0u);
            ri_api_return_t rq_want = s == S::Reset ? RI_RET_QP_INVALID_STATE : RI_RET_SUCCESS;
            EXPECT_EQ(post_recv(q, 8), rq_want);
            std::vector<ri_wc_t> wcs = drain_cq();
            // The RC send waits out its retry clock (ACK timeout 14, 7 retries: about 0.5 s).
            for (auto until = rt::Clock::now() + rt::kTimeout;
                 rc_sends && wcs.size() < 2 && rt::Clock::now() < until;) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                std::vector<ri_wc_t> more = drain_cq();
                wcs.insert(wcs.end(), more.begin(), more.end());
            }
            if (s == S::Error) {
                ASSERT_EQ(wcs.size(), 2u);
                for (const ri_wc_t &w : wcs)
                    EXPECT_EQ(w.rc_wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
            } else if (rc_sends) {
                // The send finds no responder; the QP's Error then flushes the receive.
                ASSERT_EQ(wcs.size(), 2u);
                EXPECT_EQ(wcs[0].rc_wc.op_status, RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED);
                EXPECT_EQ(wcs[1].rc_wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
                EXPECT_EQ(state(q), RI_QP_STATE_ERROR);
            } else {
                EXPECT_TRUE(wcs.empty());
            }
            // A refused post takes no slot of the 4-deep SQ (a flushed one is freed by the poll).
            for (int i = 0; i < 8; ++i) {
                EXPECT_EQ(post_send(q, 9), sq_want);
                drain_cq();
            }
            destroy(q);
        }
    }
}

// Receives posted from Init on are flushed by the move to Error (L4422-4431), as on
// iWARP; Reset from a live state drops them without completions; Error -> Reset then
// Reset -> Init works again ("as though newly created", L3981-3994).
TEST_F(IbQpState, ErrorFlushesAndResetClears) {
    for (bool rc : {true, false}) {
        SCOPED_TRACE(rc ? "RC" : "UD");
        ri_qp_handle_t q = make(rc);
        drive(q, rc, S::Rtr);
        for (ri_wr_id_t id = 1; id <= 3; ++id)
            ASSERT_EQ(post_recv(q, id), RI_RET_SUCCESS);
        EXPECT_TRUE(drain_cq().empty());
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
        std::vector<ri_wc_t> wcs = drain_cq();
        ASSERT_EQ(wcs.size(), 3u);
        for (size_t i = 0; i < wcs.size(); ++i) {
            EXPECT_EQ(wcs[i].rc_wc.op_status, RI_WC_STATUS_WR_FLUSHED_ERROR);
            EXPECT_EQ(wcs[i].rc_wc.id, i + 1);
        }
        // Error -> Error changes nothing.
        EXPECT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
        EXPECT_TRUE(drain_cq().empty());
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
        ri_qp_attr_t a = query(q);
        EXPECT_EQ(a.state, RI_QP_STATE_IDLE);
        EXPECT_EQ(a.qp_xport.qp_ib.primary_av.physical_port, 0);
        EXPECT_EQ(a.qp_xport.qp_ib.rcv_qkey, 0u);
        EXPECT_EQ(a.max_rdma_read_incoming, 0u);
        EXPECT_EQ(post_recv(q, 4), RI_RET_QP_INVALID_STATE);
        drive(q, rc, S::Init);
        ASSERT_EQ(post_recv(q, 5), RI_RET_SUCCESS);
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
        EXPECT_TRUE(drain_cq().empty());  // dropped, not completed
        drive(q, rc, S::Rts);
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
        EXPECT_TRUE(drain_cq().empty());  // the dropped receive did not come back
        destroy(q);
    }
}

// -------------------------------------------------------------------------- SQD and SRQ

// RTS -> SQD drains at once with nothing in flight; ENABLE_SQD with the notify flag
// raises SEND_QUEUE_DRAINED once (L8608); without it, none. Attributes then change in SQD,
// and SQD -> RTS resumes.
TEST_F(IbQpState, SqdDrainedEvent) {
    clear_events();
    ri_qp_handle_t q = make(true);
    drive(q, true, S::Rts);
    ri_qp_attr_t a = valid_attrs(RI_QP_STATE_SEND_QUEUE_DRAINING);
    ASSERT_EQ(modify(q, kNext | kSqdBit, a), RI_RET_SUCCESS);
    EXPECT_TRUE(wait_event(RI_EVENT_TYPE_QP_SEND_QUEUE_DRAINED));
    ri_qp_attr_t got = query(q);
    EXPECT_EQ(got.state, RI_QP_STATE_SEND_QUEUE_DRAINED);
    EXPECT_EQ(got.qp_xport.qp_ib.enable_async_notify_for_sqd, 1u);
    a = valid_attrs(RI_QP_STATE_SEND_QUEUE_DRAINED);
    a.qp_xport.qp_ib.primary_av.physical_port = 2;
    a.qp_xport.qp_ib.primary_av.av.dlid = 0x55;
    ASSERT_EQ(modify(q, kPort | kPath, a), RI_RET_SUCCESS);
    got = query(q);
    EXPECT_EQ(got.qp_xport.qp_ib.primary_av.physical_port, 2);
    EXPECT_EQ(got.qp_xport.qp_ib.primary_av.av.dlid, 0x55);
    ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_READY_TO_SEND)), RI_RET_SUCCESS);
    EXPECT_EQ(state(q), RI_QP_STATE_READY_TO_SEND);
    // Without the notify flag: no second event.
    ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_SEND_QUEUE_DRAINED)), RI_RET_SUCCESS);
    EXPECT_EQ(state(q), RI_QP_STATE_SEND_QUEUE_DRAINED);
    ri_qp_handle_t u = make(false);
    drive(u, false, S::Rts);
    a = valid_attrs(RI_QP_STATE_SEND_QUEUE_DRAINED);
    a.qp_xport.qp_ib.enable_async_notify_for_sqd = 0;
    ASSERT_EQ(modify(u, kNext | kSqdBit, a), RI_RET_SUCCESS);
    destroy(u);
    destroy(q);  // drains the event thread
    EXPECT_EQ(count_events(RI_EVENT_TYPE_QP_SEND_QUEUE_DRAINED), 1u);
}

// An SRQ QP that enters Error can take no further SRQ WQE: LAST_WQE_REACHED, which IB
// makes mandatory (L3985-3990).
TEST_F(IbQpState, SrqQpLastWqeReached) {
    clear_events();
    ri_srq_attr_t sa{};
    sa.pd = pd;
    sa.max_wrs = 8;
    sa.max_sgl = 1;
    ASSERT_EQ(ri_srq_create(rnic, &sa, &srq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_qp_handle_t q = make(true, true);
    drive(q, true, S::Rts);
    ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
    EXPECT_TRUE(wait_event(RI_EVENT_QP_LAST_WQE_REACHED));
    EXPECT_EQ(post_recv(q, 1), RI_RET_QP_TIED_TO_SRQ);
    destroy(q);
}

// ------------------------------------------------------------------------- special QPs

// ri_special_qp_get (L4069-4171): QP0 and QP1 of each port, once each until destroyed
// (L4128), with QPN 0 or 1, the port fixed, UD-like; the argument checks and their codes.
TEST_F(IbQpState, SpecialQpsOncePerPortAndType) {
    ri_cq_attr_t ca{};
    ca.num_cqe = 16;
    ri_cq_handle_t scq = nullptr;
    ASSERT_EQ(ri_cq_create(rnic, &ca, &scq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_qp_attr_t qa = create_attrs(RI_SERVICE_UNRELIABLE_DATAGRAM);
    qa.scq.scq_handle = qa.rcq.rcq_handle = scq;
    std::vector<ri_qp_handle_t> got;
    for (uint8_t port : {1, 2}) {
        for (ri_sqp_type_t t : {RI_SQP_TYPE_SMI, RI_SQP_TYPE_GSI}) {
            SCOPED_TRACE(::testing::Message() << "port " << int(port) << " type " << t);
            ri_qp_attr_t a = qa;
            ri_qp_handle_t q = nullptr;
            ASSERT_EQ(ri_special_qp_get(rnic, port, t, &a, &q, nullptr, nullptr, &err),
                      RI_RET_SUCCESS);
            EXPECT_GE(a.sq_size, 4u);
            EXPECT_GE(a.rq_max_sges, 1u);
            ri_qp_attr_t b = query(q);
            EXPECT_EQ(b.qp_id, t == RI_SQP_TYPE_SMI ? 0u : 1u);
            EXPECT_EQ(b.state, RI_QP_STATE_IDLE);
            EXPECT_EQ(b.qp_xport.qp_ib.trans_type, RI_SERVICE_UNRELIABLE_DATAGRAM);
            EXPECT_EQ(b.qp_xport.qp_ib.primary_av.physical_port, port);
            ri_qp_handle_t again = nullptr;
            a = qa;
            EXPECT_EQ(ri_special_qp_get(rnic, port, t, &a, &again, nullptr, nullptr, &err),
                      RI_RET_QP_INUSE);
            got.push_back(q);
        }
    }
    ri_qp_attr_t a = qa;
    ri_qp_handle_t q = nullptr;
    EXPECT_EQ(
        ri_special_qp_get(rnic, 1, static_cast<ri_sqp_type_t>(2), &a, &q, nullptr, nullptr, &err),
        RI_RET_QP_INVALID_SPECIAL_TYPE);
    EXPECT_EQ(ri_special_qp_get(rnic, 0, RI_SQP_TYPE_GSI, &a, &q, nullptr, nullptr, &err),
              RI_RET_RNIC_INVALID_PORT);
    EXPECT_EQ(ri_special_qp_get(rnic, 3, RI_SQP_TYPE_GSI, &a, &q, nullptr, nullptr, &err),
              RI_RET_RNIC_INVALID_PORT);
    EXPECT_EQ(ri_special_qp_get(rnic, 1, RI_SQP_TYPE_GSI, nullptr, &q, nullptr, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(ri_special_qp_get(rnic, 1, RI_SQP_TYPE_GSI, &a, nullptr, nullptr, nullptr, &err),
              RI_RET_INVALID_PARAMETER);
    // Destroyed, it can be had again.
    EXPECT_EQ(ri_qp_destroy(rnic, got[1], &err), RI_RET_SUCCESS);
    a = qa;
    ASSERT_EQ(ri_special_qp_get(rnic, 1, RI_SQP_TYPE_GSI, &a, &got[1], nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    // A failed creation does not keep it: bad PD on port 2's QP1 after its destruction.
    EXPECT_EQ(ri_qp_destroy(rnic, got[3], &err), RI_RET_SUCCESS);
    a = qa;
    a.pd = nullptr;
    EXPECT_EQ(ri_special_qp_get(rnic, 2, RI_SQP_TYPE_GSI, &a, &q, nullptr, nullptr, &err),
              RI_RET_PD_INVALID_HANDLE);
    a = qa;
    ASSERT_EQ(ri_special_qp_get(rnic, 2, RI_SQP_TYPE_GSI, &a, &got[3], nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    for (ri_qp_handle_t h : got)
        EXPECT_EQ(ri_qp_destroy(rnic, h, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_cq_destroy(rnic, scq, &err), RI_RET_SUCCESS);
}

// Special QPs and ordinary QPs never share a CQ (L4131-4133): whichever comes second is
// refused with CQ_INVALID_HANDLE (A9); once the first is gone, the CQ is free again.
TEST_F(IbQpState, SpecialQpsDoNotShareCqs) {
    ri_qp_handle_t ordinary = make(false);  // on the fixture's CQ
    ri_qp_attr_t a = create_attrs(RI_SERVICE_UNRELIABLE_DATAGRAM);
    ri_qp_handle_t sq = nullptr;
    EXPECT_EQ(ri_special_qp_get(rnic, 1, RI_SQP_TYPE_GSI, &a, &sq, nullptr, nullptr, &err),
              RI_RET_CQ_INVALID_HANDLE);
    destroy(ordinary);
    a = create_attrs(RI_SERVICE_UNRELIABLE_DATAGRAM);
    ASSERT_EQ(ri_special_qp_get(rnic, 1, RI_SQP_TYPE_GSI, &a, &sq, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    ri_qp_attr_t qa = create_attrs(RI_SERVICE_RELIABLE_CONNECTION);
    ri_qp_handle_t q = nullptr;
    EXPECT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_CQ_INVALID_HANDLE);
    // A second special QP may share it.
    a = create_attrs(RI_SERVICE_UNRELIABLE_DATAGRAM);
    ri_qp_handle_t sq0 = nullptr;
    ASSERT_EQ(ri_special_qp_get(rnic, 1, RI_SQP_TYPE_SMI, &a, &sq0, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    EXPECT_EQ(ri_qp_destroy(rnic, sq, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_CQ_INVALID_HANDLE);
    EXPECT_EQ(ri_qp_destroy(rnic, sq0, &err), RI_RET_SUCCESS);
    ASSERT_EQ(ri_qp_create(rnic, &qa, &q, nullptr, nullptr, &err), RI_RET_SUCCESS);
    qps_.push_back(q);
}

// QP0 and QP1 follow the UD rows, except Reset -> Init: P_Key index (and QP1's Q_Key)
// required, the port not to be given (fixed), QP0's Q_Key accepted and ignored (section
// 3.2). Posts as on UD.
TEST_F(IbQpState, SpecialQpTransitions) {
    ri_cq_attr_t ca{};
    ca.num_cqe = 16;
    ri_cq_handle_t scq = nullptr;
    ASSERT_EQ(ri_cq_create(rnic, &ca, &scq, nullptr, nullptr, &err), RI_RET_SUCCESS);
    ri_qp_attr_t qa = create_attrs(RI_SERVICE_UNRELIABLE_DATAGRAM);
    qa.scq.scq_handle = qa.rcq.rcq_handle = scq;
    ri_qp_attr_t a0 = qa, a1 = qa;
    ri_qp_handle_t qp0 = nullptr, qp1 = nullptr;
    ASSERT_EQ(ri_special_qp_get(rnic, 2, RI_SQP_TYPE_SMI, &a0, &qp0, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    ASSERT_EQ(ri_special_qp_get(rnic, 2, RI_SQP_TYPE_GSI, &a1, &qp1, nullptr, nullptr, &err),
              RI_RET_SUCCESS);
    const ri_qp_attr_t init = valid_attrs(RI_QP_STATE_INITIALIZED);
    // QP1: P_Key index and Q_Key required; the port is fixed.
    EXPECT_EQ(modify(qp1, kNext | kPkey, init), RI_RET_INVALID_PARAMETER);
    EXPECT_EQ(modify(qp1, kNext | kPkey | kQkey | kPort, init), RI_RET_QP_ATTRIBUTE_CANT_CHANGE);
    EXPECT_EQ(state(qp1), RI_QP_STATE_IDLE);
    ASSERT_EQ(modify(qp1, kNext | kPkey | kQkey, init), RI_RET_SUCCESS);
    EXPECT_EQ(query(qp1).qp_xport.qp_ib.rcv_qkey, 0x1234u);
    EXPECT_EQ(query(qp1).qp_xport.qp_ib.primary_av.physical_port, 2);
    // QP0: P_Key index alone; a Q_Key is accepted and ignored.
    EXPECT_EQ(modify(qp0, kNext | kQkey, init), RI_RET_INVALID_PARAMETER);
    ASSERT_EQ(modify(qp0, kNext | kPkey | kQkey, init), RI_RET_SUCCESS);
    EXPECT_EQ(query(qp0).qp_xport.qp_ib.rcv_qkey, 0u);
    for (ri_qp_handle_t q : {qp0, qp1}) {
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_READY_TO_RECEIVE)), RI_RET_SUCCESS);
        ASSERT_EQ(modify(q, kNext | kSpsn, valid_attrs(RI_QP_STATE_READY_TO_SEND)), RI_RET_SUCCESS);
        EXPECT_EQ(post_send(q, 1), RI_RET_OP_UNSUPPORTED);
        EXPECT_EQ(post_recv(q, 2), RI_RET_SUCCESS);
        // Error flushes; Reset keeps the fixed port.
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_ERROR)), RI_RET_SUCCESS);
        ASSERT_EQ(modify(q, kNext, valid_attrs(RI_QP_STATE_IDLE)), RI_RET_SUCCESS);
        EXPECT_EQ(query(q).qp_xport.qp_ib.primary_av.physical_port, 2);
    }
    ri_wc_t wc[4];
    uint_t n = 4;
    EXPECT_EQ(ri_cq_poll(rnic, scq, wc, &n, &err), RI_RET_SUCCESS);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(ri_qp_destroy(rnic, qp0, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_qp_destroy(rnic, qp1, &err), RI_RET_SUCCESS);
    EXPECT_EQ(ri_cq_destroy(rnic, scq, &err), RI_RET_SUCCESS);
}

// The datagram path is built (ib_ud_test.cpp): a UD QP in RTS checks the WR's address handle.
TEST_F(IbQpState, DatagramNeedsAnAddressHandle) {
    ri_qp_handle_t q = make(false);
    drive(q, false, S::Rts);
    EXPECT_EQ(ri_qp_post_datagram(rnic, q, RI_WR_TYPE_SEND, rt::F(rt::kSig), 1, nullptr, 0, 0,
                                  nullptr, 1, 0, 0, &err),
              RI_RET_ADDRESS_HANDLE_INVALID);
}

}  // namespace
