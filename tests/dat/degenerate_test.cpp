// Degenerate arguments of every dat_* call the softrnic provider implements, through our
// libdat2: null pointers, zero or negative lengths and counts, undefined flags and masks,
// handles of the wrong type or already freed. Each row states the exact DAT_RETURN (class,
// type and subtype) the call must give. The subtypes follow the spec's
// DAT_INVALID_ARGn / DAT_INVALID_HANDLEn "by argument position" convention (uDAPL L13049);
// where the seed and OFED's providers disagree, docs/spec-deviations.md ("Degenerate
// arguments") records the choice. Lnnn = line of the uDAPL 2.0 seed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

namespace {

constexpr DAT_TIMEOUT kWait = 10 * 1000 * 1000;  // 10 s in microseconds

// A DAT_RETURN that prints as its name, so a failing row says what it got.
struct Code {
    DAT_RETURN value;
    bool operator==(const Code &) const = default;
};
std::ostream &operator<<(std::ostream &os, const Code &c) {
    const char *major = nullptr;
    const char *minor = nullptr;
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", unsigned(c.value));
    os << hex;
    if (dat_strerror(c.value, &major, &minor) == DAT_SUCCESS)
        os << " (" << (major ? major : "?") << " " << (minor ? minor : "") << ")";
    return os;
}

constexpr DAT_RETURN error(DAT_RETURN type, DAT_RETURN subtype = DAT_NO_SUBTYPE) {
    return DAT_CLASS_ERROR | type | subtype;
}
constexpr DAT_RETURN bad_arg(DAT_RETURN arg) {
    return error(DAT_INVALID_PARAMETER, arg);
}
constexpr DAT_RETURN bad_handle(DAT_RETURN subtype) {
    return error(DAT_INVALID_HANDLE, subtype);
}

struct Row {
    const char *call;
    std::function<DAT_RETURN()> run;
    DAT_RETURN expected;
};
// clang-format off
#define ROW(expected, expr) Row{#expr, [&] { return (expr); }, (expected)}
// clang-format on

void check(const std::vector<Row> &rows) {
    for (const Row &r : rows)
        EXPECT_EQ(Code{r.run()}, Code{r.expected}) << r.call;
}

// Values beyond an enumeration's range (a mask bit no field has, a flag value no
// enumerator has) are what a C consumer may pass, but C++ code cannot hold them: our
// libdat2 forwards such an argument as the enumeration, and UBSan's enum check (asan
// preset) stops the process at that load. Rows that need one run only in builds without
// the check; where an undefined value fits in the range (EVD_THRESHOLD as a per-post
// flag, a fourth memory type), the other rows use it and run everywhere.
#ifdef DAT_TEST_ENUMS_CHECKED
constexpr bool kBeyondEnumRange = false;
#else
constexpr bool kBeyondEnumRange = true;
#endif
void check_beyond_enum_range(const std::vector<Row> &rows) {
    if (kBeyondEnumRange) check(rows);
}

DAT_DTO_COOKIE cookie() {
    DAT_DTO_COOKIE c;
    c.as_64 = 7;
    return c;
}
DAT_RMR_COOKIE rmr_cookie() {
    DAT_RMR_COOKIE c;
    c.as_64 = 9;
    return c;
}
sockaddr_in loopback(uint16_t port = 0) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}
DAT_IA_ADDRESS_PTR sa(sockaddr_in &a) {
    return reinterpret_cast<DAT_IA_ADDRESS_PTR>(&a);
}
template <class E>
E bits(unsigned long long v) {
    return static_cast<E>(v);
}

// One IA with one object of each kind, all valid, plus a freed PZ handle (the provider
// keeps freed handles' memory in quarantine, so passing one is safe and must be caught).
class DatDegenerate : public ::testing::Test {
  protected:
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz = DAT_HANDLE_NULL, freed_pz = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE dto = DAT_HANDLE_NULL, rcv = DAT_HANDLE_NULL, conn = DAT_HANDLE_NULL,
                   cr = DAT_HANDLE_NULL, sw = DAT_HANDLE_NULL;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
    DAT_EP_ATTR ep_attr{};
    std::vector<char> buf = std::vector<char>(4096);
    DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
    DAT_LMR_CONTEXT lctx = 0;
    DAT_RMR_CONTEXT rctx = 0;
    DAT_LMR_TRIPLET iov{};
    DAT_RMR_TRIPLET remote{};
    DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    DAT_CONN_QUAL qual = 0;
    DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
    DAT_EVENT sw_event{};

    void SetUp() override {
        ASSERT_EQ(dat_ia_open(const_cast<char *>("softrnic"), 8, &async, &ia), DAT_SUCCESS);
        ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
        ASSERT_EQ(dat_pz_create(ia, &freed_pz), DAT_SUCCESS);
        ASSERT_EQ(dat_pz_free(freed_pz), DAT_SUCCESS);
        auto evd = [&](DAT_COUNT qlen, DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *out) {
            ASSERT_EQ(dat_evd_create(ia, qlen, DAT_HANDLE_NULL, flags, out), DAT_SUCCESS);
        };
        evd(16, bits<DAT_EVD_FLAGS>(DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG), &dto);
        evd(16, DAT_EVD_DTO_FLAG, &rcv);
        evd(8, DAT_EVD_CONNECTION_FLAG, &conn);
        evd(8, DAT_EVD_CR_FLAG, &cr);
        evd(2, DAT_EVD_SOFTWARE_FLAG, &sw);
        ASSERT_EQ(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno), DAT_SUCCESS);
        ASSERT_EQ(dat_ep_create(ia, pz, rcv, dto, conn, nullptr, &ep), DAT_SUCCESS);
        DAT_EP_PARAM p{};
        ASSERT_EQ(dat_ep_query(ep, DAT_EP_FIELD_ALL, &p), DAT_SUCCESS);
        ep_attr = p.ep_attr;
        DAT_REGION_DESCRIPTION region{};
        region.for_va = buf.data();
        DAT_VLEN size = 0;
        DAT_VADDR addr = 0;
        ASSERT_EQ(
            dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, buf.size(), pz, DAT_MEM_PRIV_ALL_FLAG,
                           DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &size, &addr),
            DAT_SUCCESS);
        iov = DAT_LMR_TRIPLET{reinterpret_cast<uintptr_t>(buf.data()), 64, lctx};
        remote = DAT_RMR_TRIPLET{reinterpret_cast<uintptr_t>(buf.data()), 64, rctx};
        ASSERT_EQ(dat_rmr_create(pz, &rmr), DAT_SUCCESS);
        ASSERT_EQ(dat_psp_create_any(ia, &qual, cr, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
        DAT_SRQ_ATTR sa{8, 1, DAT_SRQ_LW_DEFAULT};
        ASSERT_EQ(dat_srq_create(ia, pz, &sa, &srq), DAT_SUCCESS);
        sw_event.event_number = DAT_SOFTWARE_EVENT;
    }
    void TearDown() override {
        if (ia) {
            EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        }
    }
    DAT_REGION_DESCRIPTION region(void *p) const {
        DAT_REGION_DESCRIPTION r{};
        r.for_va = p;
        return r;
    }
};

TEST_F(DatDegenerate, IaQueryAndHandleCalls) {
    DAT_IA_ATTR a{};
    DAT_PROVIDER_ATTR pa{};
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    DAT_CONTEXT ctx{};
    DAT_HANDLE_TYPE type{};
    const auto ia_all = DAT_IA_FIELD_ALL;
    const auto pr_all = DAT_PROVIDER_FIELD_ALL;
    const auto no_ia = bits<DAT_IA_ATTR_MASK>(0);
    const auto no_pr = bits<DAT_PROVIDER_ATTR_MASK>(0);
    check({
        // Attributes asked for with nowhere to put them (dapltest FFT queryinfo case 10).
        ROW(bad_arg(DAT_INVALID_ARG4), dat_ia_query(ia, &e, ia_all, nullptr, pr_all, &pa)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_ia_query(ia, nullptr, ia_all, nullptr, no_pr, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG6), dat_ia_query(ia, nullptr, no_ia, nullptr, pr_all, nullptr)),
        // Mask bits no attribute has.
        ROW(bad_arg(DAT_INVALID_ARG3),
            dat_ia_query(ia, nullptr, bits<DAT_IA_ATTR_MASK>(ia_all + 1), &a, no_pr, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ia_query(ia, nullptr, no_ia, nullptr,
                                                    bits<DAT_PROVIDER_ATTR_MASK>(pr_all + 1), &pa)),
        // Nothing asked, nothing given: how the registries query (digest 6.6).
        ROW(DAT_SUCCESS, dat_ia_query(ia, nullptr, no_ia, nullptr, no_pr, nullptr)),
        ROW(DAT_SUCCESS, dat_ia_query(ia, &e, ia_all, &a, pr_all, &pa)),
        // Another object's handle as the IA (FFT queryinfo case 11).
        ROW(bad_handle(DAT_INVALID_HANDLE_IA), dat_ia_query(dto, &e, ia_all, &a, pr_all, &pa)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ia_close(ia, bits<DAT_CLOSE_FLAGS>(7))),
        ROW(bad_handle(DAT_NO_SUBTYPE), dat_set_consumer_context(freed_pz, ctx)),
        ROW(bad_handle(DAT_NO_SUBTYPE), dat_get_consumer_context(freed_pz, &ctx)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_get_consumer_context(pz, nullptr)),
        ROW(bad_handle(DAT_NO_SUBTYPE), dat_get_handle_type(freed_pz, &type)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_get_handle_type(pz, nullptr)),
    });
}

TEST_F(DatDegenerate, Cno) {
    DAT_CNO_HANDLE c = DAT_HANDLE_NULL;
    DAT_CNO_PARAM p{};
    DAT_FD fd = -1;
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    check({
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cno_fd_create(ia, nullptr, &c)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cno_fd_create(ia, &fd, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cno_query(cno, DAT_CNO_FIELD_ALL, nullptr)),
        // Above DAT_CNO_FIELD_ALL (0x4), within the enumeration's range.
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cno_query(cno, bits<DAT_CNO_PARAM_MASK>(0x5), &p)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CNO), dat_cno_query(pz, DAT_CNO_FIELD_ALL, &p)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cno_wait(cno, 0, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CNO), dat_cno_wait(pz, 0, &e)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cno_trigger(cno, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CNO),
            dat_cno_modify_agent(pz, DAT_OS_WAIT_PROXY_AGENT_NULL)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CNO), dat_cno_free(pz)),
    });
}

TEST_F(DatDegenerate, Evd) {
    DAT_EVD_HANDLE e = DAT_HANDLE_NULL;
    DAT_EVD_PARAM p{};
    DAT_EVENT ev{};
    DAT_EVENT not_software{};
    not_software.event_number = DAT_DTO_COMPLETION_EVENT;
    DAT_COUNT n = 0;
    const auto dto_flag = DAT_EVD_DTO_FLAG;
    check({
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_create(ia, 0, DAT_HANDLE_NULL, dto_flag, &e)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_create(ia, -1, DAT_HANDLE_NULL, dto_flag, &e)),
        ROW(bad_arg(DAT_INVALID_ARG4),
            dat_evd_create(ia, 8, DAT_HANDLE_NULL, bits<DAT_EVD_FLAGS>(0), &e)),
        ROW(bad_arg(DAT_INVALID_ARG4),
            dat_evd_create(ia, 8, DAT_HANDLE_NULL, bits<DAT_EVD_FLAGS>(0x4), &e)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CNO), dat_evd_create(ia, 8, pz, dto_flag, &e)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_evd_create(ia, 8, DAT_HANDLE_NULL, dto_flag, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_evd_query(dto, DAT_EVD_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_query(pz, DAT_EVD_FIELD_ALL, &p)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_modify_cno(pz, DAT_HANDLE_NULL)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CNO), dat_evd_modify_cno(dto, pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_enable(pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_disable(pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_set_unwaitable(pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_clear_unwaitable(pz)),
        // threshold must be at least 1 and at most the queue length (L3713-3716).
        ROW(bad_arg(DAT_INVALID_ARG3), dat_evd_wait(dto, 0, 0, &ev, &n)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_evd_wait(dto, 0, 17, &ev, &n)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_evd_wait(dto, 0, 1, nullptr, &n)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_evd_wait(dto, 0, 1, &ev, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_wait(pz, 0, 1, &ev, &n)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_dequeue(dto, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_dequeue(pz, &ev)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_post_se(sw, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_post_se(sw, &not_software)),
        ROW(bad_arg(DAT_INVALID_ARG1), dat_evd_post_se(dto, &sw_event)),  // no software stream
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_post_se(pz, &sw_event)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_resize(dto, 0)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_resize(dto, -4)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_resize(pz, 8)),
        ROW(bad_handle(DAT_INVALID_HANDLE1), dat_evd_free(pz)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG2), dat_evd_query(dto, bits<DAT_EVD_PARAM_MASK>(0x100), &p)),
    });
}

TEST_F(DatDegenerate, PzLmrRmr) {
    DAT_PZ_PARAM zp{};
    DAT_LMR_HANDLE l = DAT_HANDLE_NULL;
    DAT_LMR_PARAM lp{};
    DAT_RMR_HANDLE r = DAT_HANDLE_NULL;
    DAT_RMR_PARAM rp{};
    DAT_RMR_CONTEXT rc = 0;
    const auto all = DAT_MEM_PRIV_ALL_FLAG;
    const auto va = DAT_VA_TYPE_VA;
    const auto virt = DAT_MEM_TYPE_VIRTUAL;
    const DAT_VLEN len = buf.size();
    DAT_REGION_DESCRIPTION not_lmr{};
    not_lmr.for_lmr_handle = pz;
    auto create = [&](DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region, DAT_VLEN length,
                      DAT_PZ_HANDLE zone, DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE vat,
                      DAT_LMR_HANDLE *out) {
        return dat_lmr_create(ia, type, region, length, zone, priv, vat, out, nullptr, nullptr,
                              nullptr, nullptr);
    };
    DAT_LMR_TRIPLET inside = iov;
    check({
        ROW(bad_arg(DAT_INVALID_ARG2), dat_pz_create(ia, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_pz_query(pz, DAT_PZ_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PZ), dat_pz_query(dto, DAT_PZ_FIELD_ALL, &zp)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PZ), dat_pz_free(freed_pz)),
        // An empty region (dapltest FFT mem case 2 passes a NULL address with it).
        ROW(error(DAT_LENGTH_ERROR), create(virt, region(buf.data()), 0, pz, all, va, &l)),
        ROW(error(DAT_LENGTH_ERROR), create(virt, region(nullptr), 0, pz, all, va, &l)),
        ROW(bad_arg(DAT_INVALID_ARG3), create(virt, region(nullptr), len, pz, all, va, &l)),
        // No fourth memory type (VIRTUAL, LMR, SHARED_VIRTUAL are 0-2).
        ROW(bad_arg(DAT_INVALID_ARG2),
            create(bits<DAT_MEM_TYPE>(0x3), region(buf.data()), len, pz, all, va, &l)),
        ROW(error(DAT_MODEL_NOT_SUPPORTED),
            create(DAT_MEM_TYPE_SHARED_VIRTUAL, region(buf.data()), len, pz, all, va, &l)),
        ROW(bad_handle(DAT_INVALID_HANDLE_LMR),
            create(DAT_MEM_TYPE_LMR, not_lmr, 0, pz, all, va, &l)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PZ),
            create(virt, region(buf.data()), len, dto, all, va, &l)),
        ROW(bad_arg(DAT_INVALID_ARG6),
            create(virt, region(buf.data()), len, pz, bits<DAT_MEM_PRIV_FLAGS>(0x4), va, &l)),
        ROW(error(DAT_MODEL_NOT_SUPPORTED),
            create(virt, region(buf.data()), len, pz, all, DAT_VA_TYPE_ZB, &l)),
        ROW(bad_arg(DAT_INVALID_ARG8), create(virt, region(buf.data()), len, pz, all, va, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_LMR), dat_lmr_query(pz, DAT_LMR_FIELD_ALL, &lp)),
        ROW(bad_handle(DAT_INVALID_HANDLE_LMR), dat_lmr_free(pz)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_lmr_sync_rdma_read(ia, nullptr, 1)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_lmr_sync_rdma_write(ia, nullptr, 1)),
        ROW(DAT_SUCCESS, dat_lmr_sync_rdma_read(ia, nullptr, 0)),
        ROW(bad_handle(DAT_INVALID_HANDLE_IA), dat_lmr_sync_rdma_write(pz, &inside, 1)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_rmr_create(pz, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_rmr_create_for_ep(pz, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PZ), dat_rmr_create(dto, &r)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_RMR), dat_rmr_query(pz, DAT_RMR_FIELD_ALL, &rp)),
        ROW(bad_handle(DAT_INVALID_HANDLE_RMR),
            dat_rmr_bind(pz, lmr, &inside, DAT_MEM_PRIV_REMOTE_READ_FLAG, va, ep, rmr_cookie(),
                         DAT_COMPLETION_DEFAULT_FLAG, &rc)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP),
            dat_rmr_bind(rmr, lmr, &inside, DAT_MEM_PRIV_REMOTE_READ_FLAG, va, pz, rmr_cookie(),
                         DAT_COMPLETION_DEFAULT_FLAG, &rc)),
        ROW(bad_arg(DAT_INVALID_ARG3),
            dat_rmr_bind(rmr, lmr, nullptr, DAT_MEM_PRIV_REMOTE_READ_FLAG, va, ep, rmr_cookie(),
                         DAT_COMPLETION_DEFAULT_FLAG, &rc)),
        ROW(bad_arg(DAT_INVALID_ARG4),
            dat_rmr_bind(rmr, lmr, &inside, bits<DAT_MEM_PRIV_FLAGS>(0x4), va, ep, rmr_cookie(),
                         DAT_COMPLETION_DEFAULT_FLAG, &rc)),
        ROW(error(DAT_MODEL_NOT_SUPPORTED),
            dat_rmr_bind(rmr, lmr, &inside, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_ZB, ep,
                         rmr_cookie(), DAT_COMPLETION_DEFAULT_FLAG, &rc)),
        ROW(bad_handle(DAT_INVALID_HANDLE_LMR),
            dat_rmr_bind(rmr, pz, &inside, DAT_MEM_PRIV_REMOTE_READ_FLAG, va, ep, rmr_cookie(),
                         DAT_COMPLETION_DEFAULT_FLAG, &rc)),
        ROW(bad_arg(DAT_INVALID_ARG8),
            dat_rmr_bind(rmr, lmr, &inside, DAT_MEM_PRIV_REMOTE_READ_FLAG, va, ep, rmr_cookie(),
                         DAT_COMPLETION_EVD_THRESHOLD_FLAG, &rc)),
        ROW(bad_handle(DAT_INVALID_HANDLE_RMR), dat_rmr_free(pz)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG2), dat_pz_query(pz, bits<DAT_PZ_PARAM_MASK>(0x2), &zp)),
        ROW(bad_arg(DAT_INVALID_ARG7),
            create(virt, region(buf.data()), len, pz, all, bits<DAT_VA_TYPE>(5), &l)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_lmr_query(lmr, bits<DAT_LMR_PARAM_MASK>(0x800), &lp)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_rmr_query(rmr, bits<DAT_RMR_PARAM_MASK>(0x80), &rp)),
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_rmr_bind(rmr, lmr, &inside, DAT_MEM_PRIV_REMOTE_READ_FLAG, bits<DAT_VA_TYPE>(5), ep,
                         rmr_cookie(), DAT_COMPLETION_DEFAULT_FLAG, &rc)),
    });
}

TEST_F(DatDegenerate, EpObject) {
    DAT_EP_HANDLE e = DAT_HANDLE_NULL;
    DAT_EP_PARAM p{};
    DAT_EP_ATTR bad_service = ep_attr;
    // No such service type (the one after the IB extension's UD), beyond the enum's range.
    bad_service.service_type = static_cast<DAT_SERVICE_TYPE>(DAT_SERVICE_TYPE_EXTENSION_BASE + 1);
    DAT_EP_ATTR ud_service = ep_attr;
    ud_service.service_type = DAT_SERVICE_TYPE_EXTENSION_BASE;  // DAT_IB_SERVICE_TYPE_UD
    DAT_EP_PARAM bad_modify{};
    bad_modify.ep_attr = bad_service;
    DAT_COUNT nbufs = 0;
    check({
        ROW(bad_handle(DAT_INVALID_HANDLE_PZ), dat_ep_create(ia, dto, rcv, dto, conn, nullptr, &e)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EVD_RECV),
            dat_ep_create(ia, pz, cr, dto, conn, nullptr, &e)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EVD_REQUEST),
            dat_ep_create(ia, pz, rcv, conn, conn, nullptr, &e)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EVD_CONN),
            dat_ep_create(ia, pz, rcv, dto, dto, nullptr, &e)),
        // UD EPs need the InfiniBand personality: not on these IAs.
        ROW(error(DAT_MODEL_NOT_SUPPORTED), dat_ep_create(ia, pz, rcv, dto, conn, &ud_service, &e)),
        ROW(bad_arg(DAT_INVALID_ARG7), dat_ep_create(ia, pz, rcv, dto, conn, nullptr, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ),
            dat_ep_create_with_srq(ia, pz, rcv, dto, conn, DAT_HANDLE_NULL, &ep_attr, &e)),
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ),
            dat_ep_create_with_srq(ia, pz, rcv, dto, conn, pz, &ep_attr, &e)),
        ROW(bad_arg(DAT_INVALID_ARG7),
            dat_ep_create_with_srq(ia, pz, rcv, dto, conn, srq, nullptr, &e)),
        ROW(bad_arg(DAT_INVALID_ARG8),
            dat_ep_create_with_srq(ia, pz, rcv, dto, conn, srq, &ep_attr, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_query(ep, DAT_EP_FIELD_ALL, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_query(ep, bits<DAT_EP_PARAM_MASK>(1ull << 31), &p)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_query(pz, DAT_EP_FIELD_ALL, &p)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_modify(ep, DAT_EP_FIELD_PZ_HANDLE, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_modify(ep, bits<DAT_EP_PARAM_MASK>(1ull << 31), &p)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_modify(ep, DAT_EP_FIELD_IA_HANDLE, &p)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_modify(pz, DAT_EP_FIELD_PZ_HANDLE, &p)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_get_status(pz, nullptr, nullptr, nullptr)),
        ROW(DAT_SUCCESS, dat_ep_get_status(ep, nullptr, nullptr, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_recv_query(pz, &nbufs, &nbufs)),
        ROW(DAT_SUCCESS, dat_ep_recv_query(ep, nullptr, nullptr)),
        // -1 is DAT_WATERMARK_INFINITE; other negative values mean nothing.
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_set_watermark(ep, -2, 0)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_set_watermark(ep, 0, -2)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_set_watermark(pz, 0, 0)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_reset(pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_free(pz)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG6), dat_ep_create(ia, pz, rcv, dto, conn, &bad_service, &e)),
        ROW(bad_arg(DAT_INVALID_ARG7),
            dat_ep_create_with_srq(ia, pz, rcv, dto, conn, srq, &bad_service, &e)),
        ROW(bad_arg(DAT_INVALID_ARG3),
            dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, &bad_modify)),
    });
}

TEST_F(DatDegenerate, EpConnect) {
    sockaddr_in to = loopback();
    sockaddr_in with_port = loopback(1);
    sockaddr_in6 unix_like{};
    unix_like.sin6_family = AF_UNIX;
    auto *unsupported = reinterpret_cast<DAT_IA_ADDRESS_PTR>(&unix_like);
    char pd[4] = {};
    const auto be = DAT_QOS_BEST_EFFORT;
    const auto dflt = DAT_CONNECT_DEFAULT_FLAG;
    const auto abrupt = DAT_CLOSE_ABRUPT_FLAG;
    check({
        ROW(bad_handle(DAT_INVALID_HANDLE_EP),
            dat_ep_connect(pz, sa(to), qual, kWait, 0, nullptr, be, dflt)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_ep_connect(ep, sa(to), qual, 0, 0, nullptr, be, dflt)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ep_connect(ep, sa(to), qual, kWait, -1, pd, be, dflt)),
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_ep_connect(ep, sa(to), qual, kWait, 4096, pd, be, dflt)),  // > 256 (L3673)
        ROW(bad_arg(DAT_INVALID_ARG6),
            dat_ep_connect(ep, sa(to), qual, kWait, 4, nullptr, be, dflt)),
        ROW(error(DAT_MODEL_NOT_SUPPORTED),
            dat_ep_connect(ep, sa(to), qual, kWait, 0, nullptr, DAT_QOS_LOW_LATENCY, dflt)),
        ROW(error(DAT_MODEL_NOT_SUPPORTED), dat_ep_connect(ep, sa(to), qual, kWait, 0, nullptr, be,
                                                           DAT_CONNECT_MULTIPATH_REQUIRED_FLAG)),
        ROW(error(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_MALFORMED),
            dat_ep_connect(ep, nullptr, qual, kWait, 0, nullptr, be, dflt)),
        ROW(error(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED),
            dat_ep_connect(ep, unsupported, qual, kWait, 0, nullptr, be, dflt)),
        ROW(bad_handle(DAT_INVALID_HANDLE2), dat_ep_dup_connect(ep, pz, kWait, 0, nullptr, be)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_dup_connect(ep, ep, 0, 0, nullptr, be)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_ep_dup_connect(ep, ep, kWait, -1, pd, be)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ep_dup_connect(ep, ep, kWait, 4, nullptr, be)),
        ROW(error(DAT_MODEL_NOT_SUPPORTED),
            dat_ep_dup_connect(ep, ep, kWait, 0, nullptr, DAT_QOS_PREMIUM)),
        // The EP to duplicate must be connected: its state names the error (L6856).
        ROW(error(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED),
            dat_ep_dup_connect(ep, ep, kWait, 0, nullptr, be)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_common_connect(ep, nullptr, kWait, 0, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_common_connect(ep, sa(with_port), 0, 0, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_ep_common_connect(ep, sa(with_port), kWait, -1, pd)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ep_common_connect(ep, sa(with_port), kWait, 4, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_disconnect(pz, abrupt)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG8),
            dat_ep_connect(ep, sa(to), qual, kWait, 0, nullptr, be, bits<DAT_CONNECT_FLAGS>(0x10))),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_disconnect(ep, bits<DAT_CLOSE_FLAGS>(7))),
    });
}

TEST_F(DatDegenerate, Dto) {
    const auto none = DAT_COMPLETION_DEFAULT_FLAG;
    // A receive-side attribute flag: no post takes it.
    const auto undefined = DAT_COMPLETION_EVD_THRESHOLD_FLAG;
    const DAT_COUNT too_many = ep_attr.max_request_iov + 1;
    DAT_RMR_TRIPLET local_rmr = remote;
    check({
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_post_send(pz, 1, &iov, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_post_send(ep, -1, &iov, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_post_send(ep, too_many, &iov, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_post_send(ep, 1, nullptr, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ep_post_send(ep, 1, &iov, cookie(), undefined)),
        // UNSIGNALLED needs the EP configured for it (L7135).
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_ep_post_send(ep, 1, &iov, cookie(), DAT_COMPLETION_UNSIGNALLED_FLAG)),
        ROW(error(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED),
            dat_ep_post_send(ep, 1, &iov, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG3),
            dat_ep_post_send_with_invalidate(ep, 1, nullptr, cookie(), none, DAT_TRUE, 1)),
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_ep_post_send_with_invalidate(ep, 1, &iov, cookie(), undefined, DAT_TRUE, 1)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_ep_post_recv(pz, 1, &iov, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_ep_post_recv(ep, -1, &iov, cookie(), none)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_ep_post_recv(ep, 1, nullptr, cookie(), none)),
        // Receives take neither SUPPRESS nor BARRIER_FENCE (L8463).
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_ep_post_recv(ep, 1, &iov, cookie(), DAT_COMPLETION_SUPPRESS_FLAG)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ep_post_recv(ep, 1, &iov, cookie(), undefined)),
        ROW(bad_arg(DAT_INVALID_ARG2),
            dat_ep_post_rdma_read(ep, -1, &iov, cookie(), &remote, none)),
        ROW(bad_arg(DAT_INVALID_ARG3),
            dat_ep_post_rdma_read(ep, 1, nullptr, cookie(), &remote, none)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_ep_post_rdma_read(ep, 1, &iov, cookie(), nullptr, none)),
        ROW(bad_arg(DAT_INVALID_ARG6),
            dat_ep_post_rdma_read(ep, 1, &iov, cookie(), &remote, undefined)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP),
            dat_ep_post_rdma_write(pz, 1, &iov, cookie(), &remote, none)),
        ROW(bad_arg(DAT_INVALID_ARG2),
            dat_ep_post_rdma_write(ep, -1, &iov, cookie(), &remote, none)),
        ROW(bad_arg(DAT_INVALID_ARG3),
            dat_ep_post_rdma_write(ep, 1, nullptr, cookie(), &remote, none)),
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_ep_post_rdma_write(ep, 1, &iov, cookie(), nullptr, none)),
        ROW(bad_arg(DAT_INVALID_ARG6),
            dat_ep_post_rdma_write(ep, 1, &iov, cookie(), &remote, undefined)),
        ROW(bad_arg(DAT_INVALID_ARG2),
            dat_ep_post_rdma_read_to_rmr(ep, nullptr, cookie(), &remote, none)),
        ROW(bad_arg(DAT_INVALID_ARG4),
            dat_ep_post_rdma_read_to_rmr(ep, &local_rmr, cookie(), nullptr, none)),
        ROW(bad_arg(DAT_INVALID_ARG5),
            dat_ep_post_rdma_read_to_rmr(ep, &local_rmr, cookie(), &remote, undefined)),
    });
}

TEST_F(DatDegenerate, Srq) {
    DAT_SRQ_HANDLE s = DAT_HANDLE_NULL;
    DAT_SRQ_PARAM p{};
    DAT_SRQ_ATTR empty{0, 1, DAT_SRQ_LW_DEFAULT};
    DAT_SRQ_ATTR no_iov{8, 0, DAT_SRQ_LW_DEFAULT};
    DAT_SRQ_ATTR early_lw{8, 1, 1};  // the low watermark starts at DAT_SRQ_LW_DEFAULT (L4851)
    DAT_SRQ_ATTR fine{8, 1, DAT_SRQ_LW_DEFAULT};
    check({
        ROW(bad_arg(DAT_INVALID_ARG3), dat_srq_create(ia, pz, nullptr, &s)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_srq_create(ia, pz, &empty, &s)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_srq_create(ia, pz, &no_iov, &s)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_srq_create(ia, pz, &early_lw, &s)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_srq_create(ia, pz, &fine, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PZ), dat_srq_create(ia, dto, &fine, &s)),
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ), dat_srq_post_recv(pz, 1, &iov, cookie())),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_srq_post_recv(srq, -1, &iov, cookie())),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_srq_post_recv(srq, 2, &iov, cookie())),  // max 1
        ROW(bad_arg(DAT_INVALID_ARG3), dat_srq_post_recv(srq, 1, nullptr, cookie())),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_srq_query(srq, DAT_SRQ_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ), dat_srq_query(pz, DAT_SRQ_FIELD_ALL, &p)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_srq_resize(srq, 0)),
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ), dat_srq_resize(pz, 8)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_srq_set_lw(srq, -1)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_srq_set_lw(srq, 9)),  // above max_recv_dtos (L4968)
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ), dat_srq_set_lw(pz, 1)),
        ROW(bad_handle(DAT_INVALID_HANDLE_SRQ), dat_srq_free(pz)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG2), dat_srq_query(srq, bits<DAT_SRQ_PARAM_MASK>(0x100), &p)),
    });
}

TEST_F(DatDegenerate, ServicePoints) {
    DAT_PSP_HANDLE p = DAT_HANDLE_NULL;
    DAT_PSP_PARAM pp{};
    DAT_RSP_HANDLE r = DAT_HANDLE_NULL;
    DAT_RSP_PARAM rp{};
    DAT_CSP_HANDLE c = DAT_HANDLE_NULL;
    DAT_CSP_PARAM cp{};
    DAT_CONN_QUAL q = 0;
    DAT_COMM tcp{AF_INET, SOCK_STREAM, 0};
    DAT_COMM unset{AF_UNSPEC, SOCK_STREAM, 0};
    sockaddr_in at = loopback();
    const auto consumer = DAT_PSP_CONSUMER_FLAG;
    const DAT_CONN_QUAL free_qual = qual + 1;
    check({
        ROW(bad_handle(DAT_INVALID_HANDLE_EVD_CR),
            dat_psp_create(ia, free_qual, dto, consumer, &p)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_psp_create(ia, 0, cr, consumer, &p)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_psp_create(ia, free_qual, cr, consumer, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_psp_create_any(ia, nullptr, cr, consumer, &p)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_psp_create_any(ia, &q, cr, consumer, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_psp_query(psp, DAT_PSP_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PSP), dat_psp_query(pz, DAT_PSP_FIELD_ALL, &pp)),
        ROW(bad_handle(DAT_INVALID_HANDLE_PSP), dat_psp_free(pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_rsp_create(ia, free_qual, pz, cr, &r)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EVD_CR), dat_rsp_create(ia, free_qual, ep, dto, &r)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_rsp_create(ia, free_qual, ep, cr, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_rsp_create(ia, 0, ep, cr, &r)),
        ROW(bad_handle(DAT_INVALID_HANDLE_RSP), dat_rsp_query(pz, DAT_RSP_FIELD_ALL, &rp)),
        ROW(bad_handle(DAT_INVALID_HANDLE_RSP), dat_rsp_free(pz)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EVD_CR), dat_csp_create(ia, &tcp, sa(at), dto, &c)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_csp_create(ia, nullptr, sa(at), cr, &c)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_csp_create(ia, &unset, sa(at), cr, &c)),
        ROW(bad_arg(DAT_INVALID_ARG5), dat_csp_create(ia, &tcp, sa(at), cr, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CSP), dat_csp_query(pz, DAT_CSP_FIELD_ALL, &cp)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CSP), dat_csp_free(pz)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG4),
            dat_psp_create(ia, free_qual, cr, bits<DAT_PSP_FLAGS>(7), &p)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_psp_query(psp, bits<DAT_PSP_PARAM_MASK>(0x10), &pp)),
    });
}

// A connection request from a second IA, then the CR calls with bad arguments; the CR is
// rejected at the end, as the consumer would.
TEST_F(DatDegenerate, ConnectionRequest) {
    DAT_IA_HANDLE cli = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE cli_async = DAT_HANDLE_NULL, cli_conn = DAT_HANDLE_NULL,
                   cli_dto = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE cli_pz = DAT_HANDLE_NULL;
    DAT_EP_HANDLE cli_ep = DAT_HANDLE_NULL;
    ASSERT_EQ(dat_ia_open(const_cast<char *>("softrnic"), 8, &cli_async, &cli), DAT_SUCCESS);
    ASSERT_EQ(dat_pz_create(cli, &cli_pz), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(cli, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &cli_conn),
              DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(cli, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &cli_dto), DAT_SUCCESS);
    ASSERT_EQ(dat_ep_create(cli, cli_pz, cli_dto, cli_dto, cli_conn, nullptr, &cli_ep),
              DAT_SUCCESS);
    sockaddr_in to = loopback();
    ASSERT_EQ(dat_ep_connect(cli_ep, sa(to), qual, kWait, 0, nullptr, DAT_QOS_BEST_EFFORT,
                             DAT_CONNECT_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT ev{};
    DAT_COUNT more = 0;
    ASSERT_EQ(dat_evd_wait(cr, kWait, 1, &ev, &more), DAT_SUCCESS);
    ASSERT_EQ(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
    DAT_CR_HANDLE req = ev.event_data.cr_arrival_event_data.cr_handle;
    DAT_CR_PARAM p{};
    char pd[4] = {};
    check({
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cr_query(req, DAT_CR_FIELD_ALL, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CR), dat_cr_query(pz, DAT_CR_FIELD_ALL, &p)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CR), dat_cr_accept(pz, ep, 0, nullptr)),
        // The CR carries no EP: the consumer must name one (L4652).
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_cr_accept(req, DAT_HANDLE_NULL, 0, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_EP), dat_cr_accept(req, pz, 0, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cr_accept(req, ep, -1, pd)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cr_accept(req, ep, 4096, pd)),
        ROW(bad_arg(DAT_INVALID_ARG4), dat_cr_accept(req, ep, 4, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CR), dat_cr_reject(pz, 0, nullptr)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cr_reject(req, -1, pd)),
        ROW(bad_arg(DAT_INVALID_ARG3), dat_cr_reject(req, 4, nullptr)),
        ROW(bad_handle(DAT_INVALID_HANDLE_CR), dat_cr_handoff(pz, qual)),
        // No service point on that qualifier, or the CR's own.
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cr_handoff(req, qual + 1)),
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cr_handoff(req, qual)),
    });
    check_beyond_enum_range({
        ROW(bad_arg(DAT_INVALID_ARG2), dat_cr_query(req, bits<DAT_CR_PARAM_MASK>(0x20), &p)),
    });
    // None of the above touched the CR: it can still be answered.
    EXPECT_EQ(dat_cr_reject(req, 0, nullptr), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_wait(cli_conn, kWait, 1, &ev, &more), DAT_SUCCESS);
    EXPECT_EQ(ev.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
    EXPECT_EQ(dat_ia_close(cli, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
}

}  // namespace
