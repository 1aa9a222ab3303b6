// The provider table (one copy per IA name) and the library's exports:
// dat_provider_init, dat_provider_fini and dapl_extensions. See provider.hpp for what the sources
// share.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "provider.hpp"

#define DAPL_EXPORT extern "C" __attribute__((visibility("default")))

namespace softrnic::dapl {

DAT_RETURN ia_ha_related(DAT_IA_HANDLE h, const DAT_NAME_PTR, DAT_BOOLEAN *answer) {
    if (!as_ia(h)) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (!answer) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    *answer = DAT_FALSE;
    return DAT_SUCCESS;
}
DAT_RETURN extended_op(DAT_HANDLE, DAT_EXTENDED_OP, va_list) {
    return DAT_NOT_IMPLEMENTED;  // extension_supported is DAT_EXTENSION_NONE
}

void fill_table(DAT_PROVIDER &t) {
    t.device_name = "softrnic";
    t.extension = nullptr;
    t.ia_open_func = ia_open;
    t.ia_query_func = ia_query;
    t.ia_close_func = ia_close;
    t.set_consumer_context_func = set_context;
    t.get_consumer_context_func = get_context;
    t.get_handle_type_func = get_handle_type;
    t.cno_create_func = cno_create;
    t.cno_modify_agent_func = cno_modify_agent;
    t.cno_query_func = cno_query;
    t.cno_free_func = cno_free;
    t.cno_wait_func = cno_wait;
    t.cr_query_func = cr_query;
    t.cr_accept_func = cr_accept;
    t.cr_reject_func = cr_reject;
    t.cr_handoff_func = cr_handoff;
    t.evd_create_func = evd_create;
    t.evd_query_func = evd_query;
    t.evd_modify_cno_func = evd_modify_cno;
    t.evd_enable_func = evd_enable;
    t.evd_disable_func = evd_disable;
    t.evd_wait_func = evd_wait;
    t.evd_resize_func = evd_resize;
    t.evd_post_se_func = evd_post_se;
    t.evd_dequeue_func = evd_dequeue;
    t.evd_free_func = evd_free;
    t.ep_create_func = ep_create;
    t.ep_query_func = ep_query;
    t.ep_modify_func = ep_modify;
    t.ep_connect_func = ep_connect;
    t.ep_dup_connect_func = ep_dup_connect;
    t.ep_disconnect_func = ep_disconnect;
    t.ep_post_send_func = ep_post_send;
    t.ep_post_recv_func = ep_post_recv;
    t.ep_post_rdma_read_func = ep_post_rdma_read;
    t.ep_post_rdma_write_func = ep_post_rdma_write;
    t.ep_get_status_func = ep_get_status;
    t.ep_free_func = ep_free;
    t.lmr_create_func = lmr_create;
    t.lmr_query_func = lmr_query;
    t.lmr_free_func = lmr_free;
    t.rmr_create_func = rmr_create;
    t.rmr_query_func = rmr_query;
    t.rmr_bind_func = rmr_bind;
    t.rmr_free_func = rmr_free;
    t.psp_create_func = psp_create;
    t.psp_query_func = psp_query;
    t.psp_free_func = psp_free;
    t.rsp_create_func = rsp_create;
    t.rsp_query_func = rsp_query;
    t.rsp_free_func = rsp_free;
    t.pz_create_func = pz_create;
    t.pz_query_func = pz_query;
    t.pz_free_func = pz_free;
    t.psp_create_any_func = psp_create_any;
    t.ep_reset_func = ep_reset;
    t.evd_set_unwaitable_func = evd_set_unwaitable;
    t.evd_clear_unwaitable_func = evd_clear_unwaitable;
    t.lmr_sync_rdma_read_func = lmr_sync;
    t.lmr_sync_rdma_write_func = lmr_sync;
    t.ep_create_with_srq_func = ep_create_with_srq;
    t.ep_recv_query_func = ep_recv_query;
    t.ep_set_watermark_func = ep_set_watermark;
    t.srq_create_func = srq_create;
    t.srq_free_func = srq_free;
    t.srq_post_recv_func = srq_post_recv;
    t.srq_query_func = srq_query;
    t.srq_resize_func = srq_resize;
    t.srq_set_lw_func = srq_set_lw;
    t.csp_create_func = csp_create;
    t.csp_query_func = csp_query;
    t.csp_free_func = csp_free;
    t.ep_common_connect_func = ep_common_connect;
    t.rmr_create_for_ep_func = rmr_create_for_ep;
    t.ep_post_send_with_invalidate_func = ep_post_send_with_invalidate;
    t.ep_post_rdma_read_to_rmr_func = ep_post_rdma_read_to_rmr;
    t.cno_fd_create_func = cno_fd_create;
    t.cno_trigger_func = cno_trigger_query;
    t.ia_ha_related_func = ia_ha_related;
    t.handle_extendedop_func = extended_op;
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
DAPL_EXPORT const char dapl_extensions[] = "softrnic: no extensions";
