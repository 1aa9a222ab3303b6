// libitapi.so.2 through its public calls: discovery, IAs, PZs, Consumer Contexts, handle
// types, the address helpers and the routines not built yet (memory: it_mem_test.cpp). Each test
// names the lines of the IT-API 2.1 specification it checks (IT-API Lnnnn).
#define ITAPI_ENABLE_V21_BINDINGS
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <it_api.h>

#include <cstring>
#include <set>
#include <string>

#include "it_raw_calls.h"

namespace {

it_ia_handle_t open_ia(const char *name = "softrnic") {
    it_ia_handle_t ia = nullptr;
    EXPECT_EQ(it_ia_create(name, 2, 1, &ia), IT_SUCCESS);
    return ia;
}

// IT-API L6047-L6160: three interfaces, IT-API 2.1 over iWARP/TCP, each name usable by
// it_ia_create.
TEST(ItInterfaceList, ReportsTheThreeSoftrnicInterfaces_L6079) {
    it_interface_t ifs[8];
    size_t n = 8, total = 0;
    it_interface_list(ifs, &n, &total);
    ASSERT_EQ(n, 3u);
    EXPECT_EQ(total, 3u);
    std::set<std::string> names;
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(ifs[i].major_version, 2u);
        EXPECT_EQ(ifs[i].minor_version, 1u);
        EXPECT_EQ(ifs[i].transport_type, IT_IWARP_TCP_TRANSPORT);
        names.insert(ifs[i].name);
        it_ia_handle_t ia = nullptr;
        ASSERT_EQ(it_ia_create(ifs[i].name, ifs[i].major_version, ifs[i].minor_version, &ia),
                  IT_SUCCESS);
        EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
    }
    EXPECT_EQ(names, (std::set<std::string>{"softrnic", "softrnic-tcp", "softrnic-shm"}));
}

// IT-API L6095, L6106: no more than asked for; total may be NULL.
TEST(ItInterfaceList, ReturnsNoMoreThanAskedAndTotalMayBeNull_L6095) {
    it_interface_t one[1];
    size_t n = 1;
    it_interface_list(one, &n, nullptr);
    EXPECT_EQ(n, 1u);
    size_t zero = 0, total = 0;
    it_interface_list(nullptr, &zero, &total);
    EXPECT_EQ(zero, 0u);
    EXPECT_EQ(total, 3u);
}

// IT-API L5873-L5879: name and version checks.
TEST(ItIaCreate, RejectsUnknownNameAndVersions_L5873) {
    it_ia_handle_t ia = nullptr;
    EXPECT_EQ(it_ia_create("no-such-interface", 2, 1, &ia), IT_ERR_INVALID_NAME);
    EXPECT_EQ(it_ia_create(nullptr, 2, 1, &ia), IT_ERR_INVALID_NAME);
    // IT-API L5857-L5860: earlier major versions need not be supported; later ones do not exist.
    EXPECT_EQ(it_ia_create("softrnic", 1, 0, &ia), IT_ERR_INVALID_MAJOR_VERSION);
    EXPECT_EQ(it_ia_create("softrnic", 3, 0, &ia), IT_ERR_INVALID_MAJOR_VERSION);
    EXPECT_EQ(it_ia_create("softrnic", 2, 2, &ia), IT_ERR_INVALID_MINOR_VERSION);
}

// IT-API L5855-L5856: every minor version up to the one reported.
TEST(ItIaCreate, AcceptsEveryMinorUpToTheReportedOne_L5856) {
    for (uint32_t minor : {0u, 1u}) {
        it_ia_handle_t ia = nullptr;
        ASSERT_EQ(it_ia_create("softrnic-shm", 2, minor, &ia), IT_SUCCESS);
        EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
    }
}

// IT-API L5909-L5929: it_ia_free frees the children; the handles are dead afterwards.
TEST(ItIaFree, FreesEveryChild_L5909) {
    it_ia_handle_t ia = open_ia();
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    it_evd_handle_t aevd = nullptr, sevd = nullptr, aff = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, IT_EVD_DEQUEUE_NOTIFICATIONS, 0,
                            0, nullptr, &aevd, nullptr),
              IT_SUCCESS);
    ASSERT_EQ(
        it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, it_evd_flags_t(0), 4, 1, aevd, &sevd, nullptr),
        IT_SUCCESS);
    ASSERT_EQ(it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 4, 1, nullptr,
                            &aff, nullptr),
              IT_SUCCESS);
    it_ia_info_t *info = nullptr;
    ASSERT_EQ(it_ia_query(ia, &info), IT_SUCCESS);  // freed with the IA (IT-API L6020-L6022)
    ASSERT_EQ(it_ia_free(ia), IT_SUCCESS);
    it_handle_type_enum_t t;
    for (it_handle_t h :
         {it_handle_t(ia), it_handle_t(pz), it_handle_t(aevd), it_handle_t(sevd), it_handle_t(aff)})
        EXPECT_EQ(it_get_handle_type(h, &t), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_ia_free(ia), IT_ERR_INVALID_IA);
    it_ia_info_free(info);  // a block freed with its IA is ignored, not freed twice
}

// IT-API L6018, L14959ff: what the IA reports.
TEST(ItIaQuery, ReportsAnIwarpIaWithItsAddresses_L6018) {
    it_ia_handle_t ia = open_ia("softrnic-tcp");
    it_ia_info_t *info = nullptr;
    ASSERT_EQ(it_ia_query(ia, &info), IT_SUCCESS);
    ASSERT_NE(info, nullptr);
    EXPECT_STREQ(info->ia_name, "softrnic-tcp");
    EXPECT_EQ(info->api_major_version, 2u);
    EXPECT_EQ(info->api_minor_version, 1u);
    EXPECT_EQ(info->transport_type, IT_IWARP_TCP_TRANSPORT);
    EXPECT_EQ(info->supported_service_types, IT_RC_SERVICE);
    EXPECT_EQ(info->socket_conversion_support, IT_TRUE);  // iff iWARP (IT-API L15289-L15291)
    EXPECT_EQ(info->three_way_handshake_support, IT_FALSE);
    EXPECT_EQ(info->rdma_read_requires_remote_write, IT_TRUE);
    // IT-API L17820-L17822: an iWARP IA's private data lengths.
    EXPECT_EQ(info->connect_private_data_len, 256u);
    EXPECT_EQ(info->accept_private_data_len, 256u);
    EXPECT_EQ(info->reject_private_data_len, 256u);
    EXPECT_EQ(info->disconnect_private_data_len, 0u);
    EXPECT_EQ(info->affiliated_err_evd, nullptr);
    EXPECT_EQ(info->unaffiliated_err_evd, nullptr);
    ASSERT_EQ(info->num_spigots, 1u);
    const it_spigot_info_t &s = info->spigot_info[0];
    EXPECT_EQ(s.spigot_online, IT_TRUE);
    EXPECT_TRUE(s.passive_side_conn_qual & IT_IANA_PORT);  // IT-API L13377-L13379
    // The spigot's addresses are this host's: loopback among them.
    bool loopback = false;
    for (size_t i = 0; i < s.num_net_addr; ++i)
        loopback = loopback || (s.net_addr[i].addr_type == IT_IPV4 &&
                                s.net_addr[i].addr.ipv4.s_addr == htonl(INADDR_LOOPBACK));
    EXPECT_TRUE(loopback);
    it_ia_info_free(info);
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

// IT-API L15258-L15266: the async EVD handles are reported.
TEST(ItIaQuery, ReportsTheAsyncEvds_L15258) {
    it_ia_handle_t ia = open_ia();
    it_evd_handle_t aff = nullptr, unaff = nullptr;
    ASSERT_EQ(it_evd_create(ia, IT_ASYNC_AFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, nullptr,
                            &aff, nullptr),
              IT_SUCCESS);
    ASSERT_EQ(it_evd_create(ia, IT_ASYNC_UNAFF_EVENT_STREAM, IT_EVD_OVERFLOW_DEFAULT, 8, 1, nullptr,
                            &unaff, nullptr),
              IT_SUCCESS);
    it_ia_info_t *info = nullptr;
    ASSERT_EQ(it_ia_query(ia, &info), IT_SUCCESS);
    EXPECT_EQ(info->affiliated_err_evd, aff);
    EXPECT_EQ(info->unaffiliated_err_evd, unaff);
    it_ia_info_free(info);
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

// IT-API L6025: on failure *ia_info is NULL.
TEST(ItIaQuery, InvalidIaLeavesNull_L6025) {
    it_ia_info_t *info = reinterpret_cast<it_ia_info_t *>(0x1);
    EXPECT_EQ(it_ia_query(nullptr, &info), IT_ERR_INVALID_IA);
    EXPECT_EQ(info, nullptr);
    it_ia_info_free(nullptr);  // tolerated
}

// IT-API L10224-L10380: PZ create, query, free.
TEST(ItPz, CreateQueryFree_L10224) {
    it_ia_handle_t ia = open_ia();
    it_pz_handle_t pz = nullptr;
    EXPECT_EQ(it_pz_create(nullptr, &pz), IT_ERR_INVALID_IA);
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    it_pz_param_t p{};
    ASSERT_EQ(it_pz_query(pz, IT_PZ_PARAM_IA, &p), IT_SUCCESS);
    EXPECT_EQ(p.ia, ia);
    p = {};
    ASSERT_EQ(it_pz_query(pz, IT_PZ_PARAM_ALL, &p), IT_SUCCESS);
    EXPECT_EQ(p.ia, ia);
    EXPECT_EQ(raw_pz_query(pz, 0x100, &p), IT_ERR_INVALID_MASK);
    EXPECT_EQ(it_pz_query(reinterpret_cast<it_pz_handle_t>(ia), IT_PZ_PARAM_IA, &p),
              IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_pz_free(pz), IT_SUCCESS);
    EXPECT_EQ(it_pz_free(pz), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_pz_query(pz, IT_PZ_PARAM_IA, &p), IT_ERR_INVALID_PZ);
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

// IT-API L5526-L5527, L11219ff: never set -> IT_ERR_NO_CONTEXT and 0; set -> back.
TEST(ItConsumerContext, NoContextUntilSetThenRoundTrips_L5526) {
    it_ia_handle_t ia = open_ia();
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    for (it_handle_t h : {it_handle_t(ia), it_handle_t(pz)}) {
        it_context_t c;
        c.index = 77;
        EXPECT_EQ(it_get_consumer_context(h, &c), IT_ERR_NO_CONTEXT);
        EXPECT_EQ(c.index, 0u);
        it_context_t set;
        set.ptr = &c;
        ASSERT_EQ(it_set_consumer_context(h, set), IT_SUCCESS);
        ASSERT_EQ(it_get_consumer_context(h, &c), IT_SUCCESS);
        EXPECT_EQ(c.ptr, &c);
        set.index = 0x0123456789abcdefull;  // all 64 bits (it_context_t)
        ASSERT_EQ(it_set_consumer_context(h, set), IT_SUCCESS);
        ASSERT_EQ(it_get_consumer_context(h, &c), IT_SUCCESS);
        EXPECT_EQ(c.index, 0x0123456789abcdefull);
    }
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

// IT-API L5536, L1713: NULL, freed and forged handles.
TEST(ItConsumerContext, InvalidHandles_L5536) {
    it_context_t c{};
    int not_a_handle = 0;
    EXPECT_EQ(it_get_consumer_context(nullptr, &c), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_set_consumer_context(nullptr, c), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_get_consumer_context(&not_a_handle, &c), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_set_consumer_context(&not_a_handle, c), IT_ERR_INVALID_HANDLE);
    it_ia_handle_t ia = open_ia();
    ASSERT_EQ(it_ia_free(ia), IT_SUCCESS);
    EXPECT_EQ(it_get_consumer_context(ia, &c), IT_ERR_INVALID_HANDLE);
}

// docs/it-api.md (it_get_handle_type, reconstructed; IT-API L14935-L14950).
TEST(ItGetHandleType, ReportsEachKind_L14935) {
    it_ia_handle_t ia = open_ia();
    it_pz_handle_t pz = nullptr;
    it_evd_handle_t sevd = nullptr, aevd = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    ASSERT_EQ(it_evd_create(ia, IT_SOFTWARE_EVENT_STREAM, it_evd_flags_t(0), 4, 1, nullptr, &sevd,
                            nullptr),
              IT_SUCCESS);
    ASSERT_EQ(it_evd_create(ia, IT_AEVD_NOTIFICATION_EVENT_STREAM, it_evd_flags_t(0), 0, 0, nullptr,
                            &aevd, nullptr),
              IT_SUCCESS);
    it_handle_type_enum_t t;
    ASSERT_EQ(it_get_handle_type(ia, &t), IT_SUCCESS);
    EXPECT_EQ(t, IT_HANDLE_TYPE_IA);
    ASSERT_EQ(it_get_handle_type(pz, &t), IT_SUCCESS);
    EXPECT_EQ(t, IT_HANDLE_TYPE_PZ);
    ASSERT_EQ(it_get_handle_type(sevd, &t), IT_SUCCESS);
    EXPECT_EQ(t, IT_HANDLE_TYPE_EVD);
    ASSERT_EQ(it_get_handle_type(aevd, &t), IT_SUCCESS);
    EXPECT_EQ(t, IT_HANDLE_TYPE_EVD);
    t = IT_HANDLE_TYPE_SRQ;
    int forged = 0;
    EXPECT_EQ(it_get_handle_type(nullptr, &t), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(it_get_handle_type(&forged, &t), IT_ERR_INVALID_HANDLE);
    EXPECT_EQ(t, IT_HANDLE_TYPE_SRQ);  // not written on an error
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

// IT-API L1713: a handle of the wrong kind is an invalid handle of the kind expected.
TEST(ItHandles, WrongKindIsInvalid_L1713) {
    it_ia_handle_t ia = open_ia();
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    it_evd_handle_t evd = nullptr;
    EXPECT_EQ(it_ia_free(reinterpret_cast<it_ia_handle_t>(pz)), IT_ERR_INVALID_IA);
    EXPECT_EQ(it_pz_create(reinterpret_cast<it_ia_handle_t>(pz), &pz), IT_ERR_INVALID_IA);
    EXPECT_EQ(it_evd_create(reinterpret_cast<it_ia_handle_t>(pz), IT_SOFTWARE_EVENT_STREAM,
                            it_evd_flags_t(0), 4, 1, nullptr, &evd, nullptr),
              IT_ERR_INVALID_IA);
    EXPECT_EQ(it_evd_free(reinterpret_cast<it_evd_handle_t>(pz)), IT_ERR_INVALID_EVD);
    EXPECT_EQ(it_pz_free(reinterpret_cast<it_pz_handle_t>(ia)), IT_ERR_INVALID_PZ);
    // A forged handle that points at readable memory.
    alignas(16) unsigned char junk[256];
    std::memset(junk, 0xa5, sizeof junk);
    EXPECT_EQ(it_ia_free(reinterpret_cast<it_ia_handle_t>(junk)), IT_ERR_INVALID_IA);
    EXPECT_EQ(it_evd_dequeue(reinterpret_cast<it_evd_handle_t>(junk), nullptr), IT_ERR_INVALID_EVD);
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

// IT-API L5779, L7688-L7735 and the reconstructed it_make_rdma_addr_relative.
TEST(ItAddressHelpers, NetworkOrder_L5779) {
    const uint64_t x = 0x0102030405060708ull;
    const uint64_t n = it_hton64(x);
    EXPECT_EQ(std::memcmp(&n, "\x01\x02\x03\x04\x05\x06\x07\x08", 8), 0);
    EXPECT_EQ(it_ntoh64(it_hton64(x)), x);
    int object = 0;
    EXPECT_EQ(it_ntoh64(it_make_rdma_addr_absolute(&object)),
              uint64_t(reinterpret_cast<uintptr_t>(&object)));
    EXPECT_EQ(it_make_rdma_addr_relative(it_length_t(0x1234)), it_hton64(0x1234));
}

// docs/it-api.md "Status": a routine not built yet answers IT_ERR_OP_NOT_SUPPORTED and
// writes nothing.
TEST(ItNotYet, OperationNotSupported_L6766) {
    it_ia_handle_t ia = open_ia();
    it_pz_handle_t pz = nullptr;
    ASSERT_EQ(it_pz_create(ia, &pz), IT_SUCCESS);
    it_ep_handle_t ep = nullptr;
    EXPECT_EQ(it_ep_rc_create(pz, nullptr, nullptr, nullptr, IT_EP_NO_FLAG, nullptr, &ep),
              IT_ERR_OP_NOT_SUPPORTED);
    EXPECT_EQ(ep, nullptr);
    it_srq_handle_t srq = nullptr;
    EXPECT_EQ(it_srq_create(pz, 1, 1, &srq), IT_ERR_OP_NOT_SUPPORTED);
    EXPECT_EQ(it_socket_convert(-1, nullptr, IT_SC_DEFAULT, nullptr, 0), IT_ERR_OP_NOT_SUPPORTED);
    EXPECT_EQ(it_ia_free(ia), IT_SUCCESS);
}

}  // namespace
