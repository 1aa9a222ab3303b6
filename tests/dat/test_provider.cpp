// test_provider.cpp - a loadable DAT provider for the registry tests (see test_provider.h).
//
// Built as a module that does not link libdat2: dat_registry_add_provider and
// dat_registry_remove_provider resolve, at load time, to whichever registry
// loaded it (softrnic's, or Debian's in the compatibility test), as with real
// providers.
#include "test_provider.h"

#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#define DAT_TEST_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

DAT_TEST_PROVIDER_STATE g_state;
std::mutex g_mutex;  // the registry may call in from several threads

void record(const char *slot, DAT_HANDLE handle) {
    std::lock_guard lock(g_mutex);
    std::snprintf(g_state.last_slot, sizeof g_state.last_slot, "%s", slot);
    g_state.last_handle = handle;
}

struct Options {
    bool fail_open = false;
    bool null_handle = false;
    bool no_register = false;
    bool keep_registration = false;
    bool graceful_busy = false;
    bool ext_ib = false;

    static Options parse(const char *params) {
        Options o;
        std::istringstream words(params != nullptr ? params : "");
        for (std::string w; words >> w;) {
            o.fail_open |= w == "fail_open";
            o.null_handle |= w == "null_handle";
            o.no_register |= w == "no_register";
            o.keep_registration |= w == "keep_registration";
            o.graceful_busy |= w == "graceful_busy";
            o.ext_ib |= w == "ext_ib";
        }
        return o;
    }
};

// One registered table per IA name.
struct Instance {
    std::string name;
    DAT_PROVIDER_INFO info{};
    Options options;
    DAT_PROVIDER table{};
};

// Every handle starts with the table pointer, as the registry requires.
struct Object {
    const DAT_PROVIDER *table;
    DAT_HANDLE_TYPE kind;
    DAT_CONTEXT context;
    Instance *instance;
    Object *ia;                   // the IA an object belongs to (itself for an IA)
    Object *async_evd = nullptr;  // for an IA: the async EVD it created, freed with it
};

std::map<std::string, std::unique_ptr<Instance>> &instances() {
    static std::map<std::string, std::unique_ptr<Instance>> all;
    return all;
}

Object *as_object(DAT_HANDLE handle) {
    return static_cast<Object *>(handle);
}

// Slots the tests only route to: record and succeed.
template <std::size_t N>
struct SlotName {
    char text[N];
    constexpr SlotName(const char (&s)[N]) {
        for (std::size_t i = 0; i < N; ++i)
            text[i] = s[i];
    }
};

template <SlotName Name, typename Fn>
struct Recorder;

template <SlotName Name, typename... Rest>
struct Recorder<Name, DAT_RETURN (*)(DAT_HANDLE, Rest...)> {
    static DAT_RETURN call(DAT_HANDLE handle, Rest...) {
        record(Name.text, handle);
        return DAT_SUCCESS;
    }
};

#define DAT_TEST_RECORDING(table, slot) \
    (table).slot = &Recorder<#slot, decltype((table).slot)>::call

DAT_RETURN ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async_evd,
                   DAT_IA_HANDLE *ia) {
    std::lock_guard lock(g_mutex);
    ++g_state.open_calls;
    g_state.last_open_qlen = qlen;
    auto it = instances().find(name);
    if (it == instances().end()) return DAT_CLASS_ERROR | DAT_PROVIDER_NOT_FOUND;
    Instance &inst = *it->second;
    if (inst.options.fail_open)
        return DAT_CLASS_ERROR | DAT_INSUFFICIENT_RESOURCES | DAT_RESOURCE_DEVICE;
    if (inst.options.null_handle) {
        *ia = DAT_HANDLE_NULL;
        return DAT_SUCCESS;
    }
    auto *object = new Object{&inst.table, DAT_HANDLE_TYPE_IA, {}, &inst, nullptr};
    object->ia = object;
    if (*async_evd == DAT_HANDLE_NULL) {
        object->async_evd = new Object{&inst.table, DAT_HANDLE_TYPE_EVD, {}, &inst, object};
        *async_evd = object->async_evd;
    }
    *ia = object;
    return DAT_SUCCESS;
}

DAT_RETURN ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) {
    record("ia_close_func", ia);
    Object *object = as_object(ia);
    std::lock_guard lock(g_mutex);
    if (flags == DAT_CLOSE_GRACEFUL_FLAG && object->instance->options.graceful_busy) {
        return DAT_CLASS_ERROR | DAT_INVALID_STATE | DAT_INVALID_STATE_IA_IN_USE;
    }
    ++g_state.close_calls;
    g_state.last_close_flags = flags;
    delete object->async_evd;
    delete object;
    return DAT_SUCCESS;
}

DAT_RETURN ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd, DAT_IA_ATTR_MASK,
                    DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK,
                    DAT_PROVIDER_ATTR *provider_attr) {
    record("ia_query_func", ia);
    Instance &inst = *as_object(ia)->instance;
    if (async_evd != nullptr) *async_evd = DAT_HANDLE_NULL;
    if (ia_attr != nullptr) {
        std::memset(ia_attr, 0, sizeof *ia_attr);
        std::snprintf(ia_attr->adapter_name, sizeof ia_attr->adapter_name, "%s", inst.name.c_str());
        ia_attr->extension_supported = inst.options.ext_ib ? DAT_EXTENSION_IB : DAT_EXTENSION_NONE;
    }
    if (provider_attr != nullptr) {
        // Echo the registration exactly: the reference registry closes by it.
        std::snprintf(provider_attr->provider_name, sizeof provider_attr->provider_name,
                      "dat_test_provider");
        provider_attr->dapl_version_major = inst.info.dapl_version_major;
        provider_attr->dapl_version_minor = inst.info.dapl_version_minor;
        provider_attr->is_thread_safe = inst.info.is_thread_safe;
    }
    return DAT_SUCCESS;
}

DAT_RETURN set_context(DAT_HANDLE handle, DAT_CONTEXT context) {
    record("set_consumer_context_func", handle);
    as_object(handle)->context = context;
    return DAT_SUCCESS;
}

DAT_RETURN get_context(DAT_HANDLE handle, DAT_CONTEXT *context) {
    record("get_consumer_context_func", handle);
    if (context == nullptr) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    *context = as_object(handle)->context;
    return DAT_SUCCESS;
}

DAT_RETURN get_handle_type(DAT_HANDLE handle, DAT_HANDLE_TYPE *type) {
    record("get_handle_type_func", handle);
    if (type == nullptr) return DAT_CLASS_ERROR | DAT_INVALID_PARAMETER | DAT_INVALID_ARG2;
    *type = as_object(handle)->kind;
    return DAT_SUCCESS;
}

DAT_RETURN pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz) {
    record("pz_create_func", ia);
    Object *owner = as_object(ia);
    *pz = new Object{owner->table, DAT_HANDLE_TYPE_PZ, {}, owner->instance, owner};
    return DAT_SUCCESS;
}

DAT_RETURN pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK, DAT_PZ_PARAM *param) {
    record("pz_query_func", pz);
    if (param != nullptr) param->ia_handle = as_object(pz)->ia;  // the provider's own IA handle
    return DAT_SUCCESS;
}

DAT_RETURN pz_free(DAT_PZ_HANDLE pz) {
    record("pz_free_func", pz);
    delete as_object(pz);
    return DAT_SUCCESS;
}

DAT_RETURN evd_free(DAT_EVD_HANDLE evd) {
    record("evd_free_func", evd);
    delete as_object(evd);
    return DAT_SUCCESS;
}

// Related when the names share their first three characters.
DAT_RETURN ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR other, DAT_BOOLEAN *answer) {
    record("ia_ha_related_func", ia);
    *answer = as_object(ia)->instance->name.compare(0, 3, other, 3) == 0 ? DAT_TRUE : DAT_FALSE;
    return DAT_SUCCESS;
}

DAT_RETURN extended_op(DAT_HANDLE handle, DAT_EXTENDED_OP, va_list args) {
    record("handle_extendedop_func", handle);
    g_state.last_extension_arg = va_arg(args, int);
    return DAT_SUCCESS;
}

void fill_table(DAT_PROVIDER &t, const char *device_name) {
    t.device_name = device_name;
    t.extension = nullptr;
    t.ia_open_func = ia_open;
    t.ia_query_func = ia_query;
    t.ia_close_func = ia_close;
    t.set_consumer_context_func = set_context;
    t.get_consumer_context_func = get_context;
    t.get_handle_type_func = get_handle_type;
    DAT_TEST_RECORDING(t, cno_create_func);
    DAT_TEST_RECORDING(t, cno_modify_agent_func);
    DAT_TEST_RECORDING(t, cno_query_func);
    DAT_TEST_RECORDING(t, cno_free_func);
    DAT_TEST_RECORDING(t, cno_wait_func);
    DAT_TEST_RECORDING(t, cr_query_func);
    DAT_TEST_RECORDING(t, cr_accept_func);
    DAT_TEST_RECORDING(t, cr_reject_func);
    DAT_TEST_RECORDING(t, cr_handoff_func);
    DAT_TEST_RECORDING(t, evd_create_func);
    DAT_TEST_RECORDING(t, evd_query_func);
    DAT_TEST_RECORDING(t, evd_modify_cno_func);
    DAT_TEST_RECORDING(t, evd_enable_func);
    DAT_TEST_RECORDING(t, evd_disable_func);
    DAT_TEST_RECORDING(t, evd_wait_func);
    DAT_TEST_RECORDING(t, evd_resize_func);
    DAT_TEST_RECORDING(t, evd_post_se_func);
    DAT_TEST_RECORDING(t, evd_dequeue_func);
    t.evd_free_func = evd_free;
    DAT_TEST_RECORDING(t, ep_create_func);
    DAT_TEST_RECORDING(t, ep_query_func);
    DAT_TEST_RECORDING(t, ep_modify_func);
    DAT_TEST_RECORDING(t, ep_connect_func);
    DAT_TEST_RECORDING(t, ep_dup_connect_func);
    DAT_TEST_RECORDING(t, ep_disconnect_func);
    DAT_TEST_RECORDING(t, ep_post_send_func);
    DAT_TEST_RECORDING(t, ep_post_recv_func);
    DAT_TEST_RECORDING(t, ep_post_rdma_read_func);
    DAT_TEST_RECORDING(t, ep_post_rdma_write_func);
    DAT_TEST_RECORDING(t, ep_get_status_func);
    DAT_TEST_RECORDING(t, ep_free_func);
    DAT_TEST_RECORDING(t, lmr_create_func);
    DAT_TEST_RECORDING(t, lmr_query_func);
    DAT_TEST_RECORDING(t, lmr_free_func);
    DAT_TEST_RECORDING(t, rmr_create_func);
    DAT_TEST_RECORDING(t, rmr_query_func);
    DAT_TEST_RECORDING(t, rmr_bind_func);
    DAT_TEST_RECORDING(t, rmr_free_func);
    DAT_TEST_RECORDING(t, psp_create_func);
    DAT_TEST_RECORDING(t, psp_query_func);
    DAT_TEST_RECORDING(t, psp_free_func);
    DAT_TEST_RECORDING(t, rsp_create_func);
    DAT_TEST_RECORDING(t, rsp_query_func);
    DAT_TEST_RECORDING(t, rsp_free_func);
    t.pz_create_func = pz_create;
    t.pz_query_func = pz_query;
    t.pz_free_func = pz_free;
    DAT_TEST_RECORDING(t, psp_create_any_func);
    DAT_TEST_RECORDING(t, ep_reset_func);
    DAT_TEST_RECORDING(t, evd_set_unwaitable_func);
    DAT_TEST_RECORDING(t, evd_clear_unwaitable_func);
    DAT_TEST_RECORDING(t, lmr_sync_rdma_read_func);
    DAT_TEST_RECORDING(t, lmr_sync_rdma_write_func);
    DAT_TEST_RECORDING(t, ep_create_with_srq_func);
    DAT_TEST_RECORDING(t, ep_recv_query_func);
    DAT_TEST_RECORDING(t, ep_set_watermark_func);
    DAT_TEST_RECORDING(t, srq_create_func);
    DAT_TEST_RECORDING(t, srq_free_func);
    DAT_TEST_RECORDING(t, srq_post_recv_func);
    DAT_TEST_RECORDING(t, srq_query_func);
    DAT_TEST_RECORDING(t, srq_resize_func);
    DAT_TEST_RECORDING(t, srq_set_lw_func);
    DAT_TEST_RECORDING(t, csp_create_func);
    DAT_TEST_RECORDING(t, csp_query_func);
    DAT_TEST_RECORDING(t, csp_free_func);
    DAT_TEST_RECORDING(t, ep_common_connect_func);
    DAT_TEST_RECORDING(t, rmr_create_for_ep_func);
    DAT_TEST_RECORDING(t, ep_post_send_with_invalidate_func);
    DAT_TEST_RECORDING(t, ep_post_rdma_read_to_rmr_func);
    DAT_TEST_RECORDING(t, cno_fd_create_func);
    DAT_TEST_RECORDING(t, cno_trigger_func);
    t.ia_ha_related_func = ia_ha_related;
    t.handle_extendedop_func = extended_op;
}

}  // namespace

DAT_TEST_EXPORT DAT_TEST_PROVIDER_STATE *dat_test_provider_state(void) {
    return &g_state;
}

DAT_TEST_EXPORT void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *ia_params) {
    Instance *inst = nullptr;
    {
        std::lock_guard lock(g_mutex);
        ++g_state.init_calls;
        g_state.last_init_info = *info;
        std::snprintf(g_state.last_init_params, sizeof g_state.last_init_params, "%s",
                      ia_params != nullptr ? ia_params : "(null)");
        auto &slot = instances()[info->ia_name];
        if (!slot) slot = std::make_unique<Instance>();
        inst = slot.get();
        inst->name = info->ia_name;
        inst->info = *info;
        inst->options = Options::parse(ia_params);
        fill_table(inst->table, inst->name.c_str());
    }
    if (!inst->options.no_register) dat_registry_add_provider(&inst->table, &inst->info);
}

DAT_TEST_EXPORT void dat_provider_fini(const DAT_PROVIDER_INFO *info) {
    Instance *inst = nullptr;
    {
        std::lock_guard lock(g_mutex);
        ++g_state.fini_calls;
        auto it = instances().find(info->ia_name);
        if (it == instances().end()) return;
        inst = it->second.get();
    }
    if (!inst->options.keep_registration) dat_registry_remove_provider(&inst->table, &inst->info);
}

// The reference registry looks this up to learn the provider is built with extensions.
extern "C" {
__attribute__((visibility("default"))) int dapl_extensions = 1;
}
