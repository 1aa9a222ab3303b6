// dispatch_test.cpp - every libdat2 entry point, and every DAT_* redirection
// macro, reaches the right DAT_PROVIDER slot with the right handle; bad
// handles are answered with DAT_INVALID_HANDLE instead of being dereferenced.
#include <dat2/dat_registry.h>
#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dat_test_support.hpp"

using dat_test::conf_line;
using dat_test::open_ia;
using dat_test::open_iav;
using dat_test::provider_state;
using dat_test::providers_related;
using dat_test::run_isolated;
using dat_test::TempDir;

extern "C" DAT_RETURN DAT_API dats_get_ia_handle(DAT_IA_HANDLE, DAT_IA_HANDLE *);

namespace {

struct Route {
    const char *slot;
    std::function<DAT_RETURN(DAT_HANDLE)> call;
};

#define DAT_ROUTE(slot, ...)                                          \
    Route {                                                           \
#slot, [](DAT_HANDLE h) -> DAT_RETURN { return __VA_ARGS__; } \
    }

DAT_LMR_TRIPLET g_lmr{};
DAT_RMR_TRIPLET g_rmr{};
DAT_DTO_COOKIE g_cookie{};
DAT_EVENT g_event{};
DAT_COUNT g_count = 0;
DAT_EVD_HANDLE g_evd = DAT_HANDLE_NULL;

// Entry points whose first argument is an object handle.
std::vector<Route> object_routes() {
    return {
        DAT_ROUTE(cno_modify_agent_func, dat_cno_modify_agent(h, DAT_OS_WAIT_PROXY_AGENT_NULL)),
        DAT_ROUTE(cno_query_func, dat_cno_query(h, DAT_CNO_FIELD_ALL, nullptr)),
        DAT_ROUTE(cno_free_func, dat_cno_free(h)),
        DAT_ROUTE(cno_wait_func, dat_cno_wait(h, 0, &g_evd)),
        DAT_ROUTE(cno_trigger_func, dat_cno_trigger(h, &g_evd)),
        DAT_ROUTE(cr_query_func, dat_cr_query(h, DAT_CR_FIELD_ALL, nullptr)),
        DAT_ROUTE(cr_accept_func, dat_cr_accept(h, DAT_HANDLE_NULL, 0, nullptr)),
        DAT_ROUTE(cr_reject_func, dat_cr_reject(h, 0, nullptr)),
        DAT_ROUTE(cr_handoff_func, dat_cr_handoff(h, 7)),
        DAT_ROUTE(evd_modify_cno_func, dat_evd_modify_cno(h, DAT_HANDLE_NULL)),
        DAT_ROUTE(evd_enable_func, dat_evd_enable(h)),
        DAT_ROUTE(evd_disable_func, dat_evd_disable(h)),
        DAT_ROUTE(evd_wait_func, dat_evd_wait(h, 0, 1, &g_event, &g_count)),
        DAT_ROUTE(evd_set_unwaitable_func, dat_evd_set_unwaitable(h)),
        DAT_ROUTE(evd_clear_unwaitable_func, dat_evd_clear_unwaitable(h)),
        DAT_ROUTE(evd_resize_func, dat_evd_resize(h, 8)),
        DAT_ROUTE(evd_post_se_func, dat_evd_post_se(h, &g_event)),
        DAT_ROUTE(evd_dequeue_func, dat_evd_dequeue(h, &g_event)),
        DAT_ROUTE(evd_query_func, dat_evd_query(h, DAT_EVD_FIELD_ALL, nullptr)),
        DAT_ROUTE(ep_query_func, dat_ep_query(h, DAT_EP_FIELD_ALL, nullptr)),
        DAT_ROUTE(ep_modify_func, dat_ep_modify(h, 0, nullptr)),
        DAT_ROUTE(ep_connect_func, dat_ep_connect(h, nullptr, 1, 1, 0, nullptr, DAT_QOS_BEST_EFFORT,
                                                  DAT_CONNECT_DEFAULT_FLAG)),
        DAT_ROUTE(ep_dup_connect_func,
                  dat_ep_dup_connect(h, DAT_HANDLE_NULL, 1, 0, nullptr, DAT_QOS_BEST_EFFORT)),
        DAT_ROUTE(ep_common_connect_func, dat_ep_common_connect(h, nullptr, 1, 0, nullptr)),
        DAT_ROUTE(ep_disconnect_func, dat_ep_disconnect(h, DAT_CLOSE_ABRUPT_FLAG)),
        DAT_ROUTE(ep_post_send_func,
                  dat_ep_post_send(h, 1, &g_lmr, g_cookie, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_post_send_with_invalidate_func,
                  dat_ep_post_send_with_invalidate(h, 1, &g_lmr, g_cookie,
                                                   DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, 5)),
        DAT_ROUTE(ep_post_recv_func,
                  dat_ep_post_recv(h, 1, &g_lmr, g_cookie, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_post_rdma_read_func, dat_ep_post_rdma_read(h, 1, &g_lmr, g_cookie, &g_rmr,
                                                                DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(
            ep_post_rdma_read_to_rmr_func,
            dat_ep_post_rdma_read_to_rmr(h, &g_rmr, g_cookie, &g_rmr, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_post_rdma_write_func, dat_ep_post_rdma_write(h, 1, &g_lmr, g_cookie, &g_rmr,
                                                                  DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_get_status_func, dat_ep_get_status(h, nullptr, nullptr, nullptr)),
        DAT_ROUTE(ep_free_func, dat_ep_free(h)),
        DAT_ROUTE(ep_reset_func, dat_ep_reset(h)),
        DAT_ROUTE(ep_recv_query_func, dat_ep_recv_query(h, &g_count, &g_count)),
        DAT_ROUTE(ep_set_watermark_func, dat_ep_set_watermark(h, 1, 2)),
        DAT_ROUTE(lmr_query_func, dat_lmr_query(h, DAT_LMR_FIELD_ALL, nullptr)),
        DAT_ROUTE(lmr_free_func, dat_lmr_free(h)),
        DAT_ROUTE(rmr_create_func, dat_rmr_create(h, nullptr)),
        DAT_ROUTE(rmr_create_for_ep_func, dat_rmr_create_for_ep(h, nullptr)),
        DAT_ROUTE(rmr_query_func, dat_rmr_query(h, DAT_RMR_FIELD_ALL, nullptr)),
        DAT_ROUTE(rmr_bind_func,
                  dat_rmr_bind(h, DAT_HANDLE_NULL, &g_lmr, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
                               DAT_HANDLE_NULL, g_cookie, DAT_COMPLETION_DEFAULT_FLAG, nullptr)),
        DAT_ROUTE(rmr_free_func, dat_rmr_free(h)),
        DAT_ROUTE(psp_query_func, dat_psp_query(h, DAT_PSP_FIELD_ALL, nullptr)),
        DAT_ROUTE(psp_free_func, dat_psp_free(h)),
        DAT_ROUTE(rsp_query_func, dat_rsp_query(h, DAT_RSP_FIELD_ALL, nullptr)),
        DAT_ROUTE(rsp_free_func, dat_rsp_free(h)),
        DAT_ROUTE(csp_query_func, dat_csp_query(h, DAT_CSP_FIELD_ALL, nullptr)),
        DAT_ROUTE(csp_free_func, dat_csp_free(h)),
        DAT_ROUTE(srq_free_func, dat_srq_free(h)),
        DAT_ROUTE(srq_post_recv_func, dat_srq_post_recv(h, 1, &g_lmr, g_cookie)),
        DAT_ROUTE(srq_query_func, dat_srq_query(h, DAT_SRQ_FIELD_ALL, nullptr)),
        DAT_ROUTE(srq_resize_func, dat_srq_resize(h, 8)),
        DAT_ROUTE(srq_set_lw_func, dat_srq_set_lw(h, 2)),
    };
}

// Entry points whose first argument is an IA handle.
std::vector<Route> ia_routes() {
    return {
        DAT_ROUTE(ia_query_func, dat_ia_query(h, nullptr, 0, nullptr, 0, nullptr)),
        DAT_ROUTE(cno_create_func, dat_cno_create(h, DAT_OS_WAIT_PROXY_AGENT_NULL, nullptr)),
        DAT_ROUTE(cno_fd_create_func, dat_cno_fd_create(h, nullptr, nullptr)),
        DAT_ROUTE(evd_create_func,
                  dat_evd_create(h, 8, DAT_HANDLE_NULL, DAT_EVD_DEFAULT_FLAG, nullptr)),
        DAT_ROUTE(lmr_create_func,
                  dat_lmr_create(h, DAT_MEM_TYPE_VIRTUAL, DAT_REGION_DESCRIPTION{}, 0,
                                 DAT_HANDLE_NULL, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, nullptr,
                                 nullptr, nullptr, nullptr, nullptr)),
        DAT_ROUTE(lmr_sync_rdma_read_func, dat_lmr_sync_rdma_read(h, &g_lmr, 1)),
        DAT_ROUTE(lmr_sync_rdma_write_func, dat_lmr_sync_rdma_write(h, &g_lmr, 1)),
        DAT_ROUTE(psp_create_func,
                  dat_psp_create(h, 1, DAT_HANDLE_NULL, DAT_PSP_CONSUMER_FLAG, nullptr)),
        DAT_ROUTE(psp_create_any_func,
                  dat_psp_create_any(h, nullptr, DAT_HANDLE_NULL, DAT_PSP_CONSUMER_FLAG, nullptr)),
        DAT_ROUTE(rsp_create_func, dat_rsp_create(h, 1, DAT_HANDLE_NULL, DAT_HANDLE_NULL, nullptr)),
        DAT_ROUTE(csp_create_func, dat_csp_create(h, nullptr, nullptr, DAT_HANDLE_NULL, nullptr)),
        DAT_ROUTE(srq_create_func, dat_srq_create(h, DAT_HANDLE_NULL, nullptr, nullptr)),
        DAT_ROUTE(ep_create_func,
                  dat_ep_create(h, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                DAT_HANDLE_NULL, nullptr, nullptr)),
        DAT_ROUTE(ep_create_with_srq_func,
                  dat_ep_create_with_srq(h, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                         DAT_HANDLE_NULL, DAT_HANDLE_NULL, nullptr, nullptr)),
    };
}

// The provider-side redirection macros of dat_redirection.h / udat_redirection.h.
std::vector<Route> macro_routes() {
    return {
        DAT_ROUTE(ia_query_func, DAT_IA_QUERY(h, nullptr, 0, nullptr, 0, nullptr)),
        DAT_ROUTE(cno_create_func, DAT_CNO_CREATE(h, DAT_OS_WAIT_PROXY_AGENT_NULL, nullptr)),
        DAT_ROUTE(cno_fd_create_func, DAT_CNO_FD_CREATE(h, nullptr, nullptr)),
        DAT_ROUTE(cno_trigger_func, DAT_CNO_TRIGGER(h, nullptr)),
        DAT_ROUTE(cno_modify_agent_func, DAT_CNO_MODIFY_AGENT(h, DAT_OS_WAIT_PROXY_AGENT_NULL)),
        DAT_ROUTE(cno_query_func, DAT_CNO_QUERY(h, DAT_CNO_FIELD_ALL, nullptr)),
        DAT_ROUTE(cno_free_func, DAT_CNO_FREE(h)),
        DAT_ROUTE(cno_wait_func, DAT_CNO_WAIT(h, 0, nullptr)),
        DAT_ROUTE(cr_query_func, DAT_CR_QUERY(h, DAT_CR_FIELD_ALL, nullptr)),
        DAT_ROUTE(cr_accept_func, DAT_CR_ACCEPT(h, DAT_HANDLE_NULL, 0, nullptr)),
        DAT_ROUTE(cr_reject_func, DAT_CR_REJECT(h, 0, nullptr)),
        DAT_ROUTE(cr_handoff_func, DAT_CR_HANDOFF(h, 1)),
        DAT_ROUTE(evd_create_func,
                  DAT_EVD_CREATE(h, 1, DAT_HANDLE_NULL, DAT_EVD_DEFAULT_FLAG, nullptr)),
        DAT_ROUTE(evd_query_func, DAT_EVD_QUERY(h, DAT_EVD_FIELD_ALL, nullptr)),
        DAT_ROUTE(evd_modify_cno_func, DAT_EVD_MODIFY_CNO(h, DAT_HANDLE_NULL)),
        DAT_ROUTE(evd_enable_func, DAT_EVD_ENABLE(h)),
        DAT_ROUTE(evd_disable_func, DAT_EVD_DISABLE(h)),
        DAT_ROUTE(evd_wait_func, DAT_EVD_WAIT(h, 0, 1, nullptr, nullptr)),
        DAT_ROUTE(evd_resize_func, DAT_EVD_RESIZE(h, 1)),
        DAT_ROUTE(evd_post_se_func, DAT_EVD_POST_SE(h, nullptr)),
        DAT_ROUTE(evd_dequeue_func, DAT_EVD_DEQUEUE(h, nullptr)),
        DAT_ROUTE(evd_set_unwaitable_func, DAT_EVD_SET_UNWAITABLE(h)),
        DAT_ROUTE(evd_clear_unwaitable_func, DAT_EVD_CLEAR_UNWAITABLE(h)),
        DAT_ROUTE(ep_create_func,
                  DAT_EP_CREATE(h, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                DAT_HANDLE_NULL, nullptr, nullptr)),
        DAT_ROUTE(ep_create_with_srq_func,
                  DAT_EP_CREATE_WITH_SRQ(h, DAT_HANDLE_NULL, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
                                         DAT_HANDLE_NULL, DAT_HANDLE_NULL, nullptr, nullptr)),
        DAT_ROUTE(ep_query_func, DAT_EP_QUERY(h, DAT_EP_FIELD_ALL, nullptr)),
        DAT_ROUTE(ep_modify_func, DAT_EP_MODIFY(h, 0, nullptr)),
        DAT_ROUTE(ep_connect_func, DAT_EP_CONNECT(h, nullptr, 1, 1, 0, nullptr, DAT_QOS_BEST_EFFORT,
                                                  DAT_CONNECT_DEFAULT_FLAG)),
        DAT_ROUTE(ep_common_connect_func, DAT_EP_COMMON_CONNECT(h, nullptr, 1, 0, nullptr)),
        DAT_ROUTE(ep_dup_connect_func,
                  DAT_EP_DUP_CONNECT(h, DAT_HANDLE_NULL, 1, 0, nullptr, DAT_QOS_BEST_EFFORT)),
        DAT_ROUTE(ep_disconnect_func, DAT_EP_DISCONNECT(h, DAT_CLOSE_ABRUPT_FLAG)),
        DAT_ROUTE(ep_post_send_func,
                  DAT_EP_POST_SEND(h, 1, &g_lmr, g_cookie, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_post_send_with_invalidate_func,
                  DAT_EP_POST_SEND_WITH_INVALIDATE(h, 1, &g_lmr, g_cookie,
                                                   DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, 1)),
        DAT_ROUTE(ep_post_recv_func,
                  DAT_EP_POST_RECV(h, 1, &g_lmr, g_cookie, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_post_rdma_read_func, DAT_EP_POST_RDMA_READ(h, 1, &g_lmr, g_cookie, &g_rmr,
                                                                DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(
            ep_post_rdma_read_to_rmr_func,
            DAT_EP_POST_RDMA_READ_TO_RMR(h, &g_rmr, g_cookie, &g_rmr, DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_post_rdma_write_func, DAT_EP_POST_RDMA_WRITE(h, 1, &g_lmr, g_cookie, &g_rmr,
                                                                  DAT_COMPLETION_DEFAULT_FLAG)),
        DAT_ROUTE(ep_get_status_func, DAT_EP_GET_STATUS(h, nullptr, nullptr, nullptr)),
        DAT_ROUTE(ep_free_func, DAT_EP_FREE(h)),
        DAT_ROUTE(ep_reset_func, DAT_EP_RESET(h)),
        DAT_ROUTE(ep_recv_query_func, DAT_EP_RECV_QUERY(h, nullptr, nullptr)),
        DAT_ROUTE(ep_set_watermark_func, DAT_EP_SET_WATERMARK(h, 1, 2)),
        DAT_ROUTE(lmr_create_func,
                  DAT_LMR_CREATE(h, DAT_MEM_TYPE_VIRTUAL, DAT_REGION_DESCRIPTION{}, 0,
                                 DAT_HANDLE_NULL, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, nullptr,
                                 nullptr, nullptr, nullptr, nullptr)),
        DAT_ROUTE(lmr_query_func, DAT_LMR_QUERY(h, DAT_LMR_FIELD_ALL, nullptr)),
        DAT_ROUTE(lmr_free_func, DAT_LMR_FREE(h)),
        DAT_ROUTE(lmr_sync_rdma_read_func, DAT_LMR_SYNC_RDMA_READ(h, &g_lmr, 1)),
        DAT_ROUTE(lmr_sync_rdma_write_func, DAT_LMR_SYNC_RDMA_WRITE(h, &g_lmr, 1)),
        DAT_ROUTE(rmr_create_func, DAT_RMR_CREATE(h, nullptr)),
        DAT_ROUTE(rmr_create_for_ep_func, DAT_RMR_CREATE_FOR_EP(h, nullptr)),
        DAT_ROUTE(rmr_query_func, DAT_RMR_QUERY(h, DAT_RMR_FIELD_ALL, nullptr)),
        DAT_ROUTE(rmr_bind_func,
                  DAT_RMR_BIND(h, DAT_HANDLE_NULL, &g_lmr, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
                               DAT_HANDLE_NULL, g_cookie, DAT_COMPLETION_DEFAULT_FLAG, nullptr)),
        DAT_ROUTE(rmr_free_func, DAT_RMR_FREE(h)),
        DAT_ROUTE(psp_create_func,
                  DAT_PSP_CREATE(h, 1, DAT_HANDLE_NULL, DAT_PSP_CONSUMER_FLAG, nullptr)),
        DAT_ROUTE(psp_create_any_func,
                  DAT_PSP_CREATE_ANY(h, nullptr, DAT_HANDLE_NULL, DAT_PSP_CONSUMER_FLAG, nullptr)),
        DAT_ROUTE(psp_query_func, DAT_PSP_QUERY(h, DAT_PSP_FIELD_ALL, nullptr)),
        DAT_ROUTE(psp_free_func, DAT_PSP_FREE(h)),
        DAT_ROUTE(rsp_create_func, DAT_RSP_CREATE(h, 1, DAT_HANDLE_NULL, DAT_HANDLE_NULL, nullptr)),
        DAT_ROUTE(rsp_query_func, DAT_RSP_QUERY(h, DAT_RSP_FIELD_ALL, nullptr)),
        DAT_ROUTE(rsp_free_func, DAT_RSP_FREE(h)),
        DAT_ROUTE(csp_create_func, DAT_CSP_CREATE(h, nullptr, nullptr, DAT_HANDLE_NULL, nullptr)),
        DAT_ROUTE(csp_query_func, DAT_CSP_QUERY(h, DAT_CSP_FIELD_ALL, nullptr)),
        DAT_ROUTE(csp_free_func, DAT_CSP_FREE(h)),
        DAT_ROUTE(srq_create_func, DAT_SRQ_CREATE(h, DAT_HANDLE_NULL, nullptr, nullptr)),
        DAT_ROUTE(srq_set_lw_func, DAT_SRQ_SET_LW(h, 1)),
        DAT_ROUTE(srq_free_func, DAT_SRQ_FREE(h)),
        DAT_ROUTE(srq_query_func, DAT_SRQ_QUERY(h, DAT_SRQ_FIELD_ALL, nullptr)),
        DAT_ROUTE(srq_resize_func, DAT_SRQ_RESIZE(h, 1)),
        DAT_ROUTE(srq_post_recv_func, DAT_SRQ_POST_RECV(h, 1, &g_lmr, g_cookie)),
    };
}

#undef DAT_ROUTE

DAT_IA_HANDLE provider_handle(DAT_IA_HANDLE ia) {
    DAT_IA_HANDLE provider_ia = DAT_HANDLE_NULL;
    EXPECT_EQ(dats_get_ia_handle(ia, &provider_ia), DAT_SUCCESS);
    return provider_ia;
}

}  // namespace

TEST(DatDispatch, EntryPointsReachTheirSlot) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("route0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        auto &state = provider_state();
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("route0", 4, &evd, &ia), DAT_SUCCESS);
        DAT_IA_HANDLE provider_ia = provider_handle(ia);

        // An object of the provider: its PZ.
        DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
        ASSERT_EQ(dat_pz_create(ia, &pz), DAT_SUCCESS);
        EXPECT_EQ(std::string(state.last_slot), "pz_create_func");
        EXPECT_EQ(state.last_handle, provider_ia);  // translated from the small integer

        for (const Route &route : object_routes()) {
            state.last_slot[0] = '\0';
            state.last_handle = DAT_HANDLE_NULL;
            EXPECT_EQ(route.call(pz), DAT_SUCCESS) << route.slot;
            EXPECT_EQ(std::string(state.last_slot), route.slot);
            EXPECT_EQ(state.last_handle, pz) << route.slot;
        }
        for (const Route &route : ia_routes()) {
            state.last_slot[0] = '\0';
            state.last_handle = DAT_HANDLE_NULL;
            EXPECT_EQ(route.call(ia), DAT_SUCCESS) << route.slot;
            EXPECT_EQ(std::string(state.last_slot), route.slot);
            EXPECT_EQ(state.last_handle, provider_ia) << route.slot;
        }
        // The redirection macros take the provider's own handles.
        for (const Route &route : macro_routes()) {
            state.last_slot[0] = '\0';
            EXPECT_EQ(route.call(provider_ia), DAT_SUCCESS) << route.slot;
            EXPECT_EQ(std::string(state.last_slot), route.slot);
            EXPECT_EQ(state.last_handle, provider_ia) << route.slot;
        }

        // Contexts and handle types work on IA handles and on objects.
        DAT_CONTEXT context{};
        context.as_64 = 0x1234;
        EXPECT_EQ(dat_set_consumer_context(ia, context), DAT_SUCCESS);
        EXPECT_EQ(state.last_handle, provider_ia);
        DAT_CONTEXT back{};
        EXPECT_EQ(dat_get_consumer_context(ia, &back), DAT_SUCCESS);
        EXPECT_EQ(back.as_64, 0x1234u);
        context.as_64 = 0x5678;
        EXPECT_EQ(dat_set_consumer_context(pz, context), DAT_SUCCESS);
        EXPECT_EQ(dat_get_consumer_context(pz, &back), DAT_SUCCESS);
        EXPECT_EQ(back.as_64, 0x5678u);
        DAT_HANDLE_TYPE type = DAT_HANDLE_TYPE_CR;
        EXPECT_EQ(dat_get_handle_type(ia, &type), DAT_SUCCESS);
        EXPECT_EQ(type, DAT_HANDLE_TYPE_IA);
        EXPECT_EQ(dat_get_handle_type(pz, &type), DAT_SUCCESS);
        EXPECT_EQ(type, DAT_HANDLE_TYPE_PZ);

        // Query results name the IA by the consumer's handle.
        DAT_PZ_PARAM param{};
        EXPECT_EQ(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &param), DAT_SUCCESS);
        EXPECT_EQ(param.ia_handle, ia);

        EXPECT_EQ(dat_pz_free(pz), DAT_SUCCESS);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}

TEST(DatDispatch, BadHandlesAreNotDereferenced) {
    TempDir dir;
    std::string conf = dir.write("dat.conf", conf_line("bad0"));
    EXPECT_TRUE(run_isolated(conf, [] {
        DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
        DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("bad0", 4, &evd, &ia), DAT_SUCCESS);
        alignas(8) char buffer[16] = {};
        // NULL, the small-integer markers, an IA handle used as an object,
        // a misaligned pointer, and an object whose table pointer is NULL.
        std::vector<DAT_HANDLE> bad = {
            DAT_HANDLE_NULL, DAT_EVD_ASYNC_EXISTS, DAT_EVD_OUT_OF_SCOPE, ia, buffer + 1, buffer};
        for (DAT_HANDLE h : bad) {
            for (const Route &route : object_routes()) {
                EXPECT_EQ(DAT_GET_TYPE(route.call(h)), DAT_INVALID_HANDLE)
                    << route.slot << " " << h;
            }
        }
        DAT_IA_HANDLE closed = DAT_HANDLE_NULL;
        ASSERT_EQ(open_ia("bad0", 4, &evd, &closed), DAT_SUCCESS);
        ASSERT_EQ(dat_ia_close(closed, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
        for (DAT_HANDLE h : {DAT_HANDLE_NULL, closed, reinterpret_cast<DAT_HANDLE>(4096),
                             static_cast<DAT_HANDLE>(buffer)}) {
            for (const Route &route : ia_routes()) {
                DAT_RETURN status = route.call(h);
                EXPECT_EQ(DAT_GET_TYPE(status), DAT_INVALID_HANDLE) << route.slot;
                EXPECT_EQ(DAT_GET_SUBTYPE(status), DAT_INVALID_HANDLE_IA) << route.slot;
            }
        }
        DAT_CONTEXT context{};
        EXPECT_EQ(DAT_GET_TYPE(dat_set_consumer_context(DAT_HANDLE_NULL, context)),
                  DAT_INVALID_HANDLE);
        EXPECT_EQ(DAT_GET_TYPE(dat_get_consumer_context(closed, &context)), DAT_INVALID_HANDLE);
        DAT_HANDLE_TYPE type{};
        EXPECT_EQ(DAT_GET_TYPE(dat_get_handle_type(buffer + 1, &type)), DAT_INVALID_HANDLE);
        EXPECT_EQ(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
    }));
}
