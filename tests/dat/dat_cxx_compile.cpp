/*
 * dat_cxx_compile.cpp - compile-time check of softrnic's dat2 headers as C++20.
 *
 * Same facts as dat_c_compile.c, plus: the structures are trivial
 * standard-layout types, and every dat_* entry point has exactly the type of
 * its DAT_PROVIDER slot (apart from the version arguments of dat_ia_openv).
 */
#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include <cstddef>
#include <type_traits>

#define DAT_SA(cond) static_assert(cond, #cond)

#include "dat_header_checks.inc"

namespace {

template <typename T>
constexpr bool kPlainData = std::is_standard_layout_v<T> &&std::is_trivial_v<T>;

static_assert(kPlainData<DAT_PROVIDER> && kPlainData<DAT_EVENT> && kPlainData<DAT_IA_ATTR> &&
              kPlainData<DAT_PROVIDER_ATTR> && kPlainData<DAT_EP_PARAM> &&
              kPlainData<DAT_PROVIDER_INFO>);

// The slot's pointer type, stripped to the function type, equals the entry point's.
#define DAT_SAME_AS_SLOT(fn, slot)                                                         \
    static_assert(                                                                         \
        std::is_same_v<decltype(fn), std::remove_pointer_t<decltype(DAT_PROVIDER::slot)>>, \
        #fn " does not match DAT_PROVIDER::" #slot);

DAT_SAME_AS_SLOT(dat_ia_query, ia_query_func)
DAT_SAME_AS_SLOT(dat_ia_close, ia_close_func)
DAT_SAME_AS_SLOT(dat_set_consumer_context, set_consumer_context_func)
DAT_SAME_AS_SLOT(dat_get_consumer_context, get_consumer_context_func)
DAT_SAME_AS_SLOT(dat_get_handle_type, get_handle_type_func)
DAT_SAME_AS_SLOT(dat_cno_create, cno_create_func)
DAT_SAME_AS_SLOT(dat_cno_modify_agent, cno_modify_agent_func)
DAT_SAME_AS_SLOT(dat_cno_query, cno_query_func)
DAT_SAME_AS_SLOT(dat_cno_free, cno_free_func)
DAT_SAME_AS_SLOT(dat_cno_wait, cno_wait_func)
DAT_SAME_AS_SLOT(dat_cr_query, cr_query_func)
DAT_SAME_AS_SLOT(dat_cr_accept, cr_accept_func)
DAT_SAME_AS_SLOT(dat_cr_reject, cr_reject_func)
DAT_SAME_AS_SLOT(dat_cr_handoff, cr_handoff_func)
DAT_SAME_AS_SLOT(dat_evd_create, evd_create_func)
DAT_SAME_AS_SLOT(dat_evd_query, evd_query_func)
DAT_SAME_AS_SLOT(dat_evd_modify_cno, evd_modify_cno_func)
DAT_SAME_AS_SLOT(dat_evd_enable, evd_enable_func)
DAT_SAME_AS_SLOT(dat_evd_disable, evd_disable_func)
DAT_SAME_AS_SLOT(dat_evd_wait, evd_wait_func)
DAT_SAME_AS_SLOT(dat_evd_resize, evd_resize_func)
DAT_SAME_AS_SLOT(dat_evd_post_se, evd_post_se_func)
DAT_SAME_AS_SLOT(dat_evd_dequeue, evd_dequeue_func)
DAT_SAME_AS_SLOT(dat_evd_free, evd_free_func)
DAT_SAME_AS_SLOT(dat_ep_create, ep_create_func)
DAT_SAME_AS_SLOT(dat_ep_query, ep_query_func)
DAT_SAME_AS_SLOT(dat_ep_modify, ep_modify_func)
DAT_SAME_AS_SLOT(dat_ep_connect, ep_connect_func)
DAT_SAME_AS_SLOT(dat_ep_dup_connect, ep_dup_connect_func)
DAT_SAME_AS_SLOT(dat_ep_disconnect, ep_disconnect_func)
DAT_SAME_AS_SLOT(dat_ep_post_send, ep_post_send_func)
DAT_SAME_AS_SLOT(dat_ep_post_recv, ep_post_recv_func)
DAT_SAME_AS_SLOT(dat_ep_post_rdma_read, ep_post_rdma_read_func)
DAT_SAME_AS_SLOT(dat_ep_post_rdma_write, ep_post_rdma_write_func)
DAT_SAME_AS_SLOT(dat_ep_get_status, ep_get_status_func)
DAT_SAME_AS_SLOT(dat_ep_free, ep_free_func)
DAT_SAME_AS_SLOT(dat_lmr_create, lmr_create_func)
DAT_SAME_AS_SLOT(dat_lmr_query, lmr_query_func)
DAT_SAME_AS_SLOT(dat_lmr_free, lmr_free_func)
DAT_SAME_AS_SLOT(dat_rmr_create, rmr_create_func)
DAT_SAME_AS_SLOT(dat_rmr_query, rmr_query_func)
DAT_SAME_AS_SLOT(dat_rmr_bind, rmr_bind_func)
DAT_SAME_AS_SLOT(dat_rmr_free, rmr_free_func)
DAT_SAME_AS_SLOT(dat_psp_create, psp_create_func)
DAT_SAME_AS_SLOT(dat_psp_query, psp_query_func)
DAT_SAME_AS_SLOT(dat_psp_free, psp_free_func)
DAT_SAME_AS_SLOT(dat_rsp_create, rsp_create_func)
DAT_SAME_AS_SLOT(dat_rsp_query, rsp_query_func)
DAT_SAME_AS_SLOT(dat_rsp_free, rsp_free_func)
DAT_SAME_AS_SLOT(dat_pz_create, pz_create_func)
DAT_SAME_AS_SLOT(dat_pz_query, pz_query_func)
DAT_SAME_AS_SLOT(dat_pz_free, pz_free_func)
DAT_SAME_AS_SLOT(dat_psp_create_any, psp_create_any_func)
DAT_SAME_AS_SLOT(dat_ep_reset, ep_reset_func)
DAT_SAME_AS_SLOT(dat_evd_set_unwaitable, evd_set_unwaitable_func)
DAT_SAME_AS_SLOT(dat_evd_clear_unwaitable, evd_clear_unwaitable_func)
DAT_SAME_AS_SLOT(dat_lmr_sync_rdma_read, lmr_sync_rdma_read_func)
DAT_SAME_AS_SLOT(dat_lmr_sync_rdma_write, lmr_sync_rdma_write_func)
DAT_SAME_AS_SLOT(dat_ep_create_with_srq, ep_create_with_srq_func)
DAT_SAME_AS_SLOT(dat_ep_recv_query, ep_recv_query_func)
DAT_SAME_AS_SLOT(dat_ep_set_watermark, ep_set_watermark_func)
DAT_SAME_AS_SLOT(dat_srq_create, srq_create_func)
DAT_SAME_AS_SLOT(dat_srq_free, srq_free_func)
DAT_SAME_AS_SLOT(dat_srq_post_recv, srq_post_recv_func)
DAT_SAME_AS_SLOT(dat_srq_query, srq_query_func)
DAT_SAME_AS_SLOT(dat_srq_resize, srq_resize_func)
DAT_SAME_AS_SLOT(dat_srq_set_lw, srq_set_lw_func)
DAT_SAME_AS_SLOT(dat_csp_create, csp_create_func)
DAT_SAME_AS_SLOT(dat_csp_query, csp_query_func)
DAT_SAME_AS_SLOT(dat_csp_free, csp_free_func)
DAT_SAME_AS_SLOT(dat_ep_common_connect, ep_common_connect_func)
DAT_SAME_AS_SLOT(dat_rmr_create_for_ep, rmr_create_for_ep_func)
DAT_SAME_AS_SLOT(dat_ep_post_send_with_invalidate, ep_post_send_with_invalidate_func)
DAT_SAME_AS_SLOT(dat_ep_post_rdma_read_to_rmr, ep_post_rdma_read_to_rmr_func)
DAT_SAME_AS_SLOT(dat_cno_fd_create, cno_fd_create_func)
DAT_SAME_AS_SLOT(dat_cno_trigger, cno_trigger_func)

// dat_ia_openv is ia_open plus (major, minor, thread safety).
static_assert(std::is_same_v<decltype(&dat_ia_openv), DAT_IA_OPENV_FUNC>);

}  // namespace

int dat_cxx_compile_check();

int dat_cxx_compile_check() {
    // The C++ spelling of the "no agent" value is a constant expression.
    constexpr DAT_OS_WAIT_PROXY_AGENT none = DAT_OS_WAIT_PROXY_AGENT_NULL;
    static_assert(none.instance_data == nullptr && none.proxy_agent_func == nullptr);
    const char *text = nullptr;
    return dat_strerror_ext_status(DAT_OP_SUCCESS, &text) == DAT_SUCCESS ? 0 : 1;
}
