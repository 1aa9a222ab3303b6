// The provider table (one copy per IA name) and the library's exports:
// dat_provider_init, dat_provider_fini and dapl_extensions. See provider.hpp for what the sources
// share.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/log.hpp"
#include "provider.hpp"

#define DAPL_EXPORT extern "C" __attribute__((visibility("default")))

namespace softrnic::dapl {

DAT_RETURN ia_ha_related(DAT_IA_HANDLE h, const DAT_NAME_PTR, DAT_BOOLEAN *answer) {
    if (!as_ia(h)) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (!answer) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    *answer = DAT_FALSE;
    return DAT_SUCCESS;
}

// ------------------------------------------------------------------------- error log

const char *return_type_name(DAT_RETURN r) {
    switch (DAT_GET_TYPE(r)) {
        case DAT_ABORT:
            return "DAT_ABORT";
        case DAT_CONN_QUAL_IN_USE:
            return "DAT_CONN_QUAL_IN_USE";
        case DAT_INSUFFICIENT_RESOURCES:
            return "DAT_INSUFFICIENT_RESOURCES";
        case DAT_INTERNAL_ERROR:
            return "DAT_INTERNAL_ERROR";
        case DAT_INVALID_HANDLE:
            return "DAT_INVALID_HANDLE";
        case DAT_INVALID_PARAMETER:
            return "DAT_INVALID_PARAMETER";
        case DAT_INVALID_STATE:
            return "DAT_INVALID_STATE";
        case DAT_LENGTH_ERROR:
            return "DAT_LENGTH_ERROR";
        case DAT_MODEL_NOT_SUPPORTED:
            return "DAT_MODEL_NOT_SUPPORTED";
        case DAT_PROVIDER_NOT_FOUND:
            return "DAT_PROVIDER_NOT_FOUND";
        case DAT_PRIVILEGES_VIOLATION:
            return "DAT_PRIVILEGES_VIOLATION";
        case DAT_PROTECTION_VIOLATION:
            return "DAT_PROTECTION_VIOLATION";
        case DAT_QUEUE_EMPTY:
            return "DAT_QUEUE_EMPTY";
        case DAT_QUEUE_FULL:
            return "DAT_QUEUE_FULL";
        case DAT_TIMEOUT_EXPIRED:
            return "DAT_TIMEOUT_EXPIRED";
        case DAT_PROVIDER_IN_USE:
            return "DAT_PROVIDER_IN_USE";
        case DAT_INVALID_ADDRESS:
            return "DAT_INVALID_ADDRESS";
        case DAT_INTERRUPTED_CALL:
            return "DAT_INTERRUPTED_CALL";
        case DAT_CONN_QUAL_UNAVAILABLE:
            return "DAT_CONN_QUAL_UNAVAILABLE";
        case DAT_PORT_IN_USE:
            return "DAT_PORT_IN_USE";
        case DAT_COMM_NOT_SUPPORTED:
            return "DAT_COMM_NOT_SUPPORTED";
        case DAT_NOT_IMPLEMENTED:
            return "DAT_NOT_IMPLEMENTED";
        default:
            return "?";
    }
}

[[gnu::cold]] void log_error_return(const char *call, DAT_RETURN r) {
    SOFTRNIC_LOG(Debug, Dat, "%s returned %s (0x%08x, subtype %u)", call, return_type_name(r),
                 unsigned(r), unsigned(DAT_GET_SUBTYPE(r)));
}

// A provider table entry that logs what it returns in error (SOFTRNIC_LOG=debug).
template <size_t N>
struct CallName {
    char text[N];
    constexpr CallName(const char (&s)[N]) { std::copy_n(s, N, text); }
};
template <CallName Name, auto F>
struct Logged;
template <CallName Name, class... A, DAT_RETURN (*F)(A...)>
struct Logged<Name, F> {
    static DAT_RETURN call(A... a) {
        const DAT_RETURN r = F(a...);
        if (r != DAT_SUCCESS) [[unlikely]]
            if (base::log_on(base::LogLevel::Debug, base::LogSubsys::Dat))
                log_error_return(Name.text, r);
        return r;
    }
};

void fill_table(DAT_PROVIDER &t) {
    // Every call but the data path's (posts, dequeue, waits, RMR binds: not even a branch
    // is added there) reports its errors at SOFTRNIC_LOG=debug.
#define LOGGED(field, fn) &Logged<"dat_" #field, fn>::call
    t.device_name = "softrnic";
    t.extension = nullptr;
    t.ia_open_func = LOGGED(ia_open, ia_open);
    t.ia_query_func = LOGGED(ia_query, ia_query);
    t.ia_close_func = LOGGED(ia_close, ia_close);
    t.set_consumer_context_func = LOGGED(set_consumer_context, set_context);
    t.get_consumer_context_func = LOGGED(get_consumer_context, get_context);
    t.get_handle_type_func = LOGGED(get_handle_type, get_handle_type);
    t.cno_create_func = LOGGED(cno_create, cno_create);
    t.cno_modify_agent_func = LOGGED(cno_modify_agent, cno_modify_agent);
    t.cno_query_func = LOGGED(cno_query, cno_query);
    t.cno_free_func = LOGGED(cno_free, cno_free);
    t.cno_wait_func = cno_wait;
    t.cr_query_func = LOGGED(cr_query, cr_query);
    t.cr_accept_func = LOGGED(cr_accept, cr_accept);
    t.cr_reject_func = LOGGED(cr_reject, cr_reject);
    t.cr_handoff_func = LOGGED(cr_handoff, cr_handoff);
    t.evd_create_func = LOGGED(evd_create, evd_create);
    t.evd_query_func = LOGGED(evd_query, evd_query);
    t.evd_modify_cno_func = LOGGED(evd_modify_cno, evd_modify_cno);
    t.evd_enable_func = LOGGED(evd_enable, evd_enable);
    t.evd_disable_func = LOGGED(evd_disable, evd_disable);
    t.evd_wait_func = evd_wait;
    t.evd_resize_func = LOGGED(evd_resize, evd_resize);
    t.evd_post_se_func = LOGGED(evd_post_se, evd_post_se);
    t.evd_dequeue_func = evd_dequeue;
    t.evd_free_func = LOGGED(evd_free, evd_free);
    t.ep_create_func = LOGGED(ep_create, ep_create);
    t.ep_query_func = LOGGED(ep_query, ep_query);
    t.ep_modify_func = LOGGED(ep_modify, ep_modify);
    t.ep_connect_func = LOGGED(ep_connect, ep_connect);
    t.ep_dup_connect_func = LOGGED(ep_dup_connect, ep_dup_connect);
    t.ep_disconnect_func = LOGGED(ep_disconnect, ep_disconnect);
    t.ep_post_send_func = ep_post_send;
    t.ep_post_recv_func = ep_post_recv;
    t.ep_post_rdma_read_func = ep_post_rdma_read;
    t.ep_post_rdma_write_func = ep_post_rdma_write;
    t.ep_get_status_func = LOGGED(ep_get_status, ep_get_status);
    t.ep_free_func = LOGGED(ep_free, ep_free);
    t.lmr_create_func = LOGGED(lmr_create, lmr_create);
    t.lmr_query_func = LOGGED(lmr_query, lmr_query);
    t.lmr_free_func = LOGGED(lmr_free, lmr_free);
    t.rmr_create_func = LOGGED(rmr_create, rmr_create);
    t.rmr_query_func = LOGGED(rmr_query, rmr_query);
    t.rmr_bind_func = rmr_bind;
    t.rmr_free_func = LOGGED(rmr_free, rmr_free);
    t.psp_create_func = LOGGED(psp_create, psp_create);
    t.psp_query_func = LOGGED(psp_query, psp_query);
    t.psp_free_func = LOGGED(psp_free, psp_free);
    t.rsp_create_func = LOGGED(rsp_create, rsp_create);
    t.rsp_query_func = LOGGED(rsp_query, rsp_query);
    t.rsp_free_func = LOGGED(rsp_free, rsp_free);
    t.pz_create_func = LOGGED(pz_create, pz_create);
    t.pz_query_func = LOGGED(pz_query, pz_query);
    t.pz_free_func = LOGGED(pz_free, pz_free);
    t.psp_create_any_func = LOGGED(psp_create_any, psp_create_any);
    t.ep_reset_func = LOGGED(ep_reset, ep_reset);
    t.evd_set_unwaitable_func = LOGGED(evd_set_unwaitable, evd_set_unwaitable);
    t.evd_clear_unwaitable_func = LOGGED(evd_clear_unwaitable, evd_clear_unwaitable);
    t.lmr_sync_rdma_read_func = LOGGED(lmr_sync_rdma_read, lmr_sync);
    t.lmr_sync_rdma_write_func = LOGGED(lmr_sync_rdma_write, lmr_sync);
    t.ep_create_with_srq_func = LOGGED(ep_create_with_srq, ep_create_with_srq);
    t.ep_recv_query_func = LOGGED(ep_recv_query, ep_recv_query);
    t.ep_set_watermark_func = LOGGED(ep_set_watermark, ep_set_watermark);
    t.srq_create_func = LOGGED(srq_create, srq_create);
    t.srq_free_func = LOGGED(srq_free, srq_free);
    t.srq_post_recv_func = srq_post_recv;
    t.srq_query_func = LOGGED(srq_query, srq_query);
    t.srq_resize_func = LOGGED(srq_resize, srq_resize);
    t.srq_set_lw_func = LOGGED(srq_set_lw, srq_set_lw);
    t.csp_create_func = LOGGED(csp_create, csp_create);
    t.csp_query_func = LOGGED(csp_query, csp_query);
    t.csp_free_func = LOGGED(csp_free, csp_free);
    t.ep_common_connect_func = LOGGED(ep_common_connect, ep_common_connect);
    t.rmr_create_for_ep_func = LOGGED(rmr_create_for_ep, rmr_create_for_ep);
    t.ep_post_send_with_invalidate_func = ep_post_send_with_invalidate;
    t.ep_post_rdma_read_to_rmr_func = ep_post_rdma_read_to_rmr;
    t.cno_fd_create_func = LOGGED(cno_fd_create, cno_fd_create);
    t.cno_trigger_func = LOGGED(cno_trigger, cno_trigger_query);
    t.ia_ha_related_func = LOGGED(ia_ha_related, ia_ha_related);
    t.handle_extendedop_func = LOGGED(handle_extendedop, extended_op);
#undef LOGGED
}

// ------------------------------------------------------------------------------ exports

DAT_PROVIDER g_table{};  // the template: every IA name gets a copy (table_for)

struct NamedTable {
    std::string name;
    DAT_PROVIDER table{};
};
std::map<std::string, std::unique_ptr<NamedTable>> &named_tables() {
    static std::map<std::string, std::unique_ptr<NamedTable>> m;
    return m;
}

DAT_PROVIDER *table_for(const char *name) {
    if (!name) return nullptr;
    static std::once_flag once;
    std::call_once(once, [] { fill_table(g_table); });
    std::lock_guard lk(g_reg_mu);
    auto &slot = named_tables()[name];
    if (!slot) {
        slot = std::make_unique<NamedTable>();
        slot->name = name;
        slot->table = g_table;
        slot->table.device_name = slot->name.c_str();  // stable: the entry is never freed
    }
    return &slot->table;
}

}  // namespace softrnic::dapl

using namespace softrnic::dapl;

// dat_provider_init: registers `info->ia_name` (softrnic, softrnic-tcp, softrnic-shm, or any
// name a dat.conf line gives this library) with the instance data that selects the
// interface. No exception may cross this C boundary.
DAPL_EXPORT void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data) {
    if (!info) return;
    try {
        DAT_PROVIDER *table = table_for(info->ia_name);
        if (!table) return;
        {
            std::lock_guard lk(g_reg_mu);
            registered()[info->ia_name] = Registered{*info, instance_data ? instance_data : ""};
        }
        if (dat_registry_add_provider(table, info) != DAT_SUCCESS) {
            std::lock_guard lk(g_reg_mu);
            registered().erase(info->ia_name);
        }
    } catch (...) {
    }
}

DAPL_EXPORT void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    if (!info) return;
    try {
        if (DAT_PROVIDER *table = table_for(info->ia_name))
            dat_registry_remove_provider(table, info);
        std::lock_guard lk(g_reg_mu);
        registered().erase(info->ia_name);
    } catch (...) {
    }
}

// Debian's libdat2 looks this symbol up in every provider (it only warns without it).
DAPL_EXPORT const char dapl_extensions[] =
    "softrnic: DAT_EXTENSION_IB (RC: write immediate, atomics)";
