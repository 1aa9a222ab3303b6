// dat_api.cpp - the entry points libdat2 exports (C linkage, see libdat2.map).
//
// dat_ia_openv/dat_ia_close and the registry calls are implemented by the
// Registry. Every other call is routed to the provider that made its first
// handle, through that handle's DAT_PROVIDER table; calls that take an IA
// handle first translate the consumer's small-integer IA handle into the
// provider's. Nothing here lets an exception or a bad handle escape: a NULL
// or small-integer handle, or an empty table slot, becomes a DAT_RETURN.
#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include <cstdarg>
#include <new>

#include "registry.hpp"

using softrnic::dat::dat_error;
using softrnic::dat::implausible_object_handle;
using softrnic::dat::raw_value;
using softrnic::dat::Registry;

// Not in the public headers: the reference providers import it from libdat2
// to turn a consumer IA handle into their own.
extern "C" DAT_RETURN DAT_API dats_get_ia_handle(DAT_IA_HANDLE handle, DAT_IA_HANDLE *ia_handle);

namespace {

// Runs one exported call; no exception crosses the C boundary.
template <typename Body>
DAT_RETURN guarded(Body &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return dat_error(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
    } catch (...) {
        return dat_error(DAT_INTERNAL_ERROR);
    }
}

// Calls `slot` of the provider that owns `handle`, with `handle` first.
template <typename Slot, typename... Args>
DAT_RETURN forward(DAT_HANDLE handle, DAT_RETURN_SUBTYPE bad_handle, Slot DAT_PROVIDER::*slot,
                   Args... args) {
    if (implausible_object_handle(handle)) return dat_error(DAT_INVALID_HANDLE, bad_handle);
    const DAT_PROVIDER *table = DAT_HANDLE_TO_PROVIDER(handle);
    if (implausible_object_handle(table)) return dat_error(DAT_INVALID_HANDLE, bad_handle);
    Slot entry = table->*slot;
    if (entry == nullptr) return dat_error(DAT_NOT_IMPLEMENTED);
    return entry(handle, args...);
}

// The same for calls whose first argument is an IA handle.
template <typename Slot, typename... Args>
DAT_RETURN forward_ia(DAT_IA_HANDLE ia, Slot DAT_PROVIDER::*slot, Args... args) {
    DAT_IA_HANDLE provider_ia = nullptr;
    DAT_RETURN status = Registry::instance().provider_ia(ia, &provider_ia);
    if (status != DAT_SUCCESS) return status;
    return forward(provider_ia, DAT_INVALID_HANDLE_IA, slot, args...);
}

// Calls that accept any handle: an IA handle is translated, others pass.
DAT_HANDLE provider_handle_of(DAT_HANDLE handle) {
    DAT_IA_HANDLE provider_ia = nullptr;
    if (Registry::instance().provider_ia(handle, &provider_ia) == DAT_SUCCESS) return provider_ia;
    return handle;
}

// Query results name the IA with the provider's own handle; give the
// consumer back the handle it knows (and can pass to the IA calls).
void restore_consumer_ia(DAT_RETURN status, bool ia_requested, DAT_IA_HANDLE *field) {
    if (status != DAT_SUCCESS || !ia_requested || field == nullptr) return;
    DAT_IA_HANDLE consumer_ia = Registry::instance().consumer_ia(*field);
    if (consumer_ia != DAT_HANDLE_NULL) *field = consumer_ia;
}

}  // namespace

// ---------------------------------------------------------------------------
// Registry: IA open/close, provider registration, errors
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_ia_openv(const DAT_NAME_PTR name, DAT_COUNT async_evd_min_qlen,
                                DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia, DAT_UINT32 major,
                                DAT_UINT32 minor, DAT_BOOLEAN thread_safe) {
    return guarded([&] {
        return Registry::instance().open_ia(name, async_evd_min_qlen, async_evd, ia, major, minor,
                                            raw_value(thread_safe) != DAT_FALSE);
    });
}

DAT_RETURN DAT_API dat_ia_close(DAT_IA_HANDLE ia, DAT_CLOSE_FLAGS flags) {
    return guarded([&] { return Registry::instance().close_ia(ia, raw_value(flags)); });
}

DAT_RETURN DAT_API dat_registry_add_provider(const DAT_PROVIDER *provider,
                                             const DAT_PROVIDER_INFO *info) {
    return guarded([&] { return Registry::instance().add_provider(provider, info); });
}

DAT_RETURN DAT_API dat_registry_remove_provider(const DAT_PROVIDER *provider,
                                                const DAT_PROVIDER_INFO *info) {
    return guarded([&] { return Registry::instance().remove_provider(provider, info); });
}

DAT_RETURN DAT_API dat_registry_list_providers(DAT_COUNT max_to_return, DAT_COUNT *entries_returned,
                                               DAT_PROVIDER_INFO *list[]) {
    return guarded(
        [&] { return Registry::instance().list_providers(max_to_return, entries_returned, list); });
}

DAT_RETURN DAT_API dat_registry_providers_related(const DAT_NAME_PTR name1,
                                                  const DAT_NAME_PTR name2,
                                                  DAT_HA_RELATIONSHIP *relationship) {
    return guarded(
        [&] { return Registry::instance().providers_related(name1, name2, relationship); });
}

DAT_RETURN DAT_API dats_get_ia_handle(DAT_IA_HANDLE handle, DAT_IA_HANDLE *ia_handle) {
    return guarded([&] {
        if (ia_handle == nullptr) return dat_error(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
        return Registry::instance().provider_ia(handle, ia_handle);
    });
}

DAT_RETURN DAT_API dat_strerror(DAT_RETURN value, const char **major, const char **minor) {
    return guarded([&] { return softrnic::dat::strerror_impl(value, major, minor); });
}

DAT_RETURN DAT_API dat_extension_op(DAT_HANDLE handle, DAT_EXTENDED_OP operation, ...) {
    va_list args;
    va_start(args, operation);
    DAT_RETURN status = guarded([&] {
        DAT_HANDLE target = provider_handle_of(handle);
        if (implausible_object_handle(target)) {
            // Open/close extensions (DAT_IB_OPEN_QUERY_OP, ...) would need the
            // registry itself to open an IA; softrnic's registry has none.
            return operation >= DAT_OPEN_EXTENSION_BASE ? dat_error(DAT_NOT_IMPLEMENTED)
                                                        : dat_error(DAT_INVALID_HANDLE);
        }
        const DAT_PROVIDER *table = DAT_HANDLE_TO_PROVIDER(target);
        // Only tables whose IA reported an extension have the extension slot.
        if (!Registry::instance().has_extensions(table) ||
            table->handle_extendedop_func == nullptr) {
            return dat_error(DAT_NOT_IMPLEMENTED);
        }
        return table->handle_extendedop_func(target, operation, args);
    });
    va_end(args);
    return status;
}

// ---------------------------------------------------------------------------
// Calls on an IA handle
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_ia_query(DAT_IA_HANDLE ia, DAT_EVD_HANDLE *async_evd,
                                DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
                                DAT_PROVIDER_ATTR_MASK provider_mask,
                                DAT_PROVIDER_ATTR *provider_attr) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::ia_query_func, async_evd, ia_mask, ia_attr,
                          provider_mask, provider_attr);
    });
}

DAT_RETURN DAT_API dat_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT agent,
                                  DAT_CNO_HANDLE *cno) {
    return guarded([&] { return forward_ia(ia, &DAT_PROVIDER::cno_create_func, agent, cno); });
}

DAT_RETURN DAT_API dat_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd, DAT_CNO_HANDLE *cno) {
    return guarded([&] { return forward_ia(ia, &DAT_PROVIDER::cno_fd_create_func, fd, cno); });
}

DAT_RETURN DAT_API dat_evd_create(DAT_IA_HANDLE ia, DAT_COUNT min_qlen, DAT_CNO_HANDLE cno,
                                  DAT_EVD_FLAGS flags, DAT_EVD_HANDLE *evd) {
    return guarded(
        [&] { return forward_ia(ia, &DAT_PROVIDER::evd_create_func, min_qlen, cno, flags, evd); });
}

DAT_RETURN DAT_API dat_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE mem_type,
                                  DAT_REGION_DESCRIPTION region, DAT_VLEN length, DAT_PZ_HANDLE pz,
                                  DAT_MEM_PRIV_FLAGS privileges, DAT_VA_TYPE va_type,
                                  DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lmr_context,
                                  DAT_RMR_CONTEXT *rmr_context, DAT_VLEN *registered_length,
                                  DAT_VADDR *registered_address) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::lmr_create_func, mem_type, region, length, pz,
                          privileges, va_type, lmr, lmr_context, rmr_context, registered_length,
                          registered_address);
    });
}

DAT_RETURN DAT_API dat_lmr_sync_rdma_read(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segments,
                                          DAT_VLEN num_segments) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::lmr_sync_rdma_read_func, segments, num_segments);
    });
}

DAT_RETURN DAT_API dat_lmr_sync_rdma_write(DAT_IA_HANDLE ia, const DAT_LMR_TRIPLET *segments,
                                           DAT_VLEN num_segments) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::lmr_sync_rdma_write_func, segments, num_segments);
    });
}

DAT_RETURN DAT_API dat_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL conn_qual, DAT_EVD_HANDLE evd,
                                  DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *psp) {
    return guarded(
        [&] { return forward_ia(ia, &DAT_PROVIDER::psp_create_func, conn_qual, evd, flags, psp); });
}

DAT_RETURN DAT_API dat_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *conn_qual,
                                      DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
                                      DAT_PSP_HANDLE *psp) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::psp_create_any_func, conn_qual, evd, flags, psp);
    });
}

DAT_RETURN DAT_API dat_rsp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL conn_qual, DAT_EP_HANDLE ep,
                                  DAT_EVD_HANDLE evd, DAT_RSP_HANDLE *rsp) {
    return guarded(
        [&] { return forward_ia(ia, &DAT_PROVIDER::rsp_create_func, conn_qual, ep, evd, rsp); });
}

DAT_RETURN DAT_API dat_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm, DAT_IA_ADDRESS_PTR address,
                                  DAT_EVD_HANDLE evd, DAT_CSP_HANDLE *csp) {
    return guarded(
        [&] { return forward_ia(ia, &DAT_PROVIDER::csp_create_func, comm, address, evd, csp); });
}

DAT_RETURN DAT_API dat_pz_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE *pz) {
    return guarded([&] { return forward_ia(ia, &DAT_PROVIDER::pz_create_func, pz); });
}

DAT_RETURN DAT_API dat_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *attr,
                                  DAT_SRQ_HANDLE *srq) {
    return guarded([&] { return forward_ia(ia, &DAT_PROVIDER::srq_create_func, pz, attr, srq); });
}

DAT_RETURN DAT_API dat_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv_evd,
                                 DAT_EVD_HANDLE request_evd, DAT_EVD_HANDLE connect_evd,
                                 const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::ep_create_func, pz, recv_evd, request_evd, connect_evd,
                          attr, ep);
    });
}

DAT_RETURN DAT_API dat_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
                                          DAT_EVD_HANDLE recv_evd, DAT_EVD_HANDLE request_evd,
                                          DAT_EVD_HANDLE connect_evd, DAT_SRQ_HANDLE srq,
                                          const DAT_EP_ATTR *attr, DAT_EP_HANDLE *ep) {
    return guarded([&] {
        return forward_ia(ia, &DAT_PROVIDER::ep_create_with_srq_func, pz, recv_evd, request_evd,
                          connect_evd, srq, attr, ep);
    });
}

// ---------------------------------------------------------------------------
// Calls on any handle
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_set_consumer_context(DAT_HANDLE handle, DAT_CONTEXT context) {
    return guarded([&] {
        return forward(provider_handle_of(handle), DAT_INVALID_HANDLE1,
                       &DAT_PROVIDER::set_consumer_context_func, context);
    });
}

DAT_RETURN DAT_API dat_get_consumer_context(DAT_HANDLE handle, DAT_CONTEXT *context) {
    return guarded([&] {
        return forward(provider_handle_of(handle), DAT_INVALID_HANDLE1,
                       &DAT_PROVIDER::get_consumer_context_func, context);
    });
}

DAT_RETURN DAT_API dat_get_handle_type(DAT_HANDLE handle, DAT_HANDLE_TYPE *type) {
    return guarded([&] {
        return forward(provider_handle_of(handle), DAT_INVALID_HANDLE1,
                       &DAT_PROVIDER::get_handle_type_func, type);
    });
}

// ---------------------------------------------------------------------------
// Consumer notification objects
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT agent) {
    return guarded([&] {
        return forward(cno, DAT_INVALID_HANDLE_CNO, &DAT_PROVIDER::cno_modify_agent_func, agent);
    });
}

DAT_RETURN DAT_API dat_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK mask,
                                 DAT_CNO_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(cno, DAT_INVALID_HANDLE_CNO, &DAT_PROVIDER::cno_query_func, mask, param);
        // DAT_CNO_FIELD_ALL (0x4) is not a bit set; it includes the IA.
        bool ia_requested = (mask & DAT_CNO_FIELD_IA_HANDLE) != 0 || mask == DAT_CNO_FIELD_ALL;
        restore_consumer_ia(status, ia_requested, param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_cno_free(DAT_CNO_HANDLE cno) {
    return guarded(
        [&] { return forward(cno, DAT_INVALID_HANDLE_CNO, &DAT_PROVIDER::cno_free_func); });
}

DAT_RETURN DAT_API dat_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd) {
    return guarded([&] {
        return forward(cno, DAT_INVALID_HANDLE_CNO, &DAT_PROVIDER::cno_wait_func, timeout, evd);
    });
}

DAT_RETURN DAT_API dat_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd) {
    return guarded(
        [&] { return forward(cno, DAT_INVALID_HANDLE_CNO, &DAT_PROVIDER::cno_trigger_func, evd); });
}

// ---------------------------------------------------------------------------
// Connection requests
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_cr_query(DAT_CR_HANDLE cr, DAT_CR_PARAM_MASK mask, DAT_CR_PARAM *param) {
    return guarded([&] {
        return forward(cr, DAT_INVALID_HANDLE_CR, &DAT_PROVIDER::cr_query_func, mask, param);
    });
}

DAT_RETURN DAT_API dat_cr_accept(DAT_CR_HANDLE cr, DAT_EP_HANDLE ep, DAT_COUNT private_data_size,
                                 const DAT_PVOID private_data) {
    return guarded([&] {
        return forward(cr, DAT_INVALID_HANDLE_CR, &DAT_PROVIDER::cr_accept_func, ep,
                       private_data_size, private_data);
    });
}

DAT_RETURN DAT_API dat_cr_reject(DAT_CR_HANDLE cr, DAT_COUNT private_data_size,
                                 const DAT_PVOID private_data) {
    return guarded([&] {
        return forward(cr, DAT_INVALID_HANDLE_CR, &DAT_PROVIDER::cr_reject_func, private_data_size,
                       private_data);
    });
}

DAT_RETURN DAT_API dat_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL handoff) {
    return guarded([&] {
        return forward(cr, DAT_INVALID_HANDLE_CR, &DAT_PROVIDER::cr_handoff_func, handoff);
    });
}

// ---------------------------------------------------------------------------
// Event dispatchers
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_evd_modify_cno(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno) {
    return guarded(
        [&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_modify_cno_func, cno); });
}

DAT_RETURN DAT_API dat_evd_enable(DAT_EVD_HANDLE evd) {
    return guarded(
        [&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_enable_func); });
}

DAT_RETURN DAT_API dat_evd_disable(DAT_EVD_HANDLE evd) {
    return guarded(
        [&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_disable_func); });
}

DAT_RETURN DAT_API dat_evd_wait(DAT_EVD_HANDLE evd, DAT_TIMEOUT timeout, DAT_COUNT threshold,
                                DAT_EVENT *event, DAT_COUNT *nmore) {
    return guarded([&] {
        return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_wait_func, timeout, threshold,
                       event, nmore);
    });
}

DAT_RETURN DAT_API dat_evd_set_unwaitable(DAT_EVD_HANDLE evd) {
    return guarded(
        [&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_set_unwaitable_func); });
}

DAT_RETURN DAT_API dat_evd_clear_unwaitable(DAT_EVD_HANDLE evd) {
    return guarded([&] {
        return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_clear_unwaitable_func);
    });
}

DAT_RETURN DAT_API dat_evd_resize(DAT_EVD_HANDLE evd, DAT_COUNT min_qlen) {
    return guarded([&] {
        return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_resize_func, min_qlen);
    });
}

DAT_RETURN DAT_API dat_evd_post_se(DAT_EVD_HANDLE evd, const DAT_EVENT *event) {
    return guarded(
        [&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_post_se_func, event); });
}

DAT_RETURN DAT_API dat_evd_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *event) {
    return guarded(
        [&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_dequeue_func, event); });
}

DAT_RETURN DAT_API dat_evd_query(DAT_EVD_HANDLE evd, DAT_EVD_PARAM_MASK mask,
                                 DAT_EVD_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_EVD_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_evd_free(DAT_EVD_HANDLE evd) {
    return guarded([&] { return forward(evd, DAT_INVALID_HANDLE1, &DAT_PROVIDER::evd_free_func); });
}

// ---------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_ep_query(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask, DAT_EP_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_EP_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_ep_modify(DAT_EP_HANDLE ep, DAT_EP_PARAM_MASK mask,
                                 const DAT_EP_PARAM *param) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_modify_func, mask, param);
    });
}

DAT_RETURN DAT_API dat_ep_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR remote_address,
                                  DAT_CONN_QUAL remote_qual, DAT_TIMEOUT timeout,
                                  DAT_COUNT private_data_size, const DAT_PVOID private_data,
                                  DAT_QOS qos, DAT_CONNECT_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_connect_func, remote_address,
                       remote_qual, timeout, private_data_size, private_data, qos, flags);
    });
}

DAT_RETURN DAT_API dat_ep_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup_ep, DAT_TIMEOUT timeout,
                                      DAT_COUNT private_data_size, const DAT_PVOID private_data,
                                      DAT_QOS qos) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_dup_connect_func, dup_ep,
                       timeout, private_data_size, private_data, qos);
    });
}

DAT_RETURN DAT_API dat_ep_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR remote_address,
                                         DAT_TIMEOUT timeout, DAT_COUNT private_data_size,
                                         const DAT_PVOID private_data) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_common_connect_func,
                       remote_address, timeout, private_data_size, private_data);
    });
}

DAT_RETURN DAT_API dat_ep_disconnect(DAT_EP_HANDLE ep, DAT_CLOSE_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_disconnect_func, flags);
    });
}

DAT_RETURN DAT_API dat_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT num_segments,
                                    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE cookie,
                                    DAT_COMPLETION_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_post_send_func, num_segments,
                       local_iov, cookie, flags);
    });
}

DAT_RETURN DAT_API dat_ep_post_send_with_invalidate(
    DAT_EP_HANDLE ep, DAT_COUNT num_segments, DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE cookie,
    DAT_COMPLETION_FLAGS flags, DAT_BOOLEAN invalidate, DAT_RMR_CONTEXT rmr_context) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_post_send_with_invalidate_func,
                       num_segments, local_iov, cookie, flags, invalidate, rmr_context);
    });
}

DAT_RETURN DAT_API dat_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT num_segments,
                                    DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE cookie,
                                    DAT_COMPLETION_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_post_recv_func, num_segments,
                       local_iov, cookie, flags);
    });
}

DAT_RETURN DAT_API dat_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT num_segments,
                                         DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE cookie,
                                         const DAT_RMR_TRIPLET *remote_iov,
                                         DAT_COMPLETION_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_post_rdma_read_func,
                       num_segments, local_iov, cookie, remote_iov, flags);
    });
}

DAT_RETURN DAT_API dat_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *local_iov,
                                                DAT_DTO_COOKIE cookie,
                                                const DAT_RMR_TRIPLET *remote_iov,
                                                DAT_COMPLETION_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_post_rdma_read_to_rmr_func,
                       local_iov, cookie, remote_iov, flags);
    });
}

DAT_RETURN DAT_API dat_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT num_segments,
                                          DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE cookie,
                                          const DAT_RMR_TRIPLET *remote_iov,
                                          DAT_COMPLETION_FLAGS flags) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_post_rdma_write_func,
                       num_segments, local_iov, cookie, remote_iov, flags);
    });
}

DAT_RETURN DAT_API dat_ep_get_status(DAT_EP_HANDLE ep, DAT_EP_STATE *state, DAT_BOOLEAN *recv_idle,
                                     DAT_BOOLEAN *request_idle) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_get_status_func, state,
                       recv_idle, request_idle);
    });
}

DAT_RETURN DAT_API dat_ep_free(DAT_EP_HANDLE ep) {
    return guarded([&] { return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_free_func); });
}

DAT_RETURN DAT_API dat_ep_reset(DAT_EP_HANDLE ep) {
    return guarded(
        [&] { return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_reset_func); });
}

DAT_RETURN DAT_API dat_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *nbufs_allocated,
                                     DAT_COUNT *bufs_alloc_span) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_recv_query_func,
                       nbufs_allocated, bufs_alloc_span);
    });
}

DAT_RETURN DAT_API dat_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft_high_watermark,
                                        DAT_COUNT hard_high_watermark) {
    return guarded([&] {
        return forward(ep, DAT_INVALID_HANDLE_EP, &DAT_PROVIDER::ep_set_watermark_func,
                       soft_high_watermark, hard_high_watermark);
    });
}

// ---------------------------------------------------------------------------
// Memory regions
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_lmr_query(DAT_LMR_HANDLE lmr, DAT_LMR_PARAM_MASK mask,
                                 DAT_LMR_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(lmr, DAT_INVALID_HANDLE_LMR, &DAT_PROVIDER::lmr_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_LMR_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_lmr_free(DAT_LMR_HANDLE lmr) {
    return guarded(
        [&] { return forward(lmr, DAT_INVALID_HANDLE_LMR, &DAT_PROVIDER::lmr_free_func); });
}

DAT_RETURN DAT_API dat_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr) {
    return guarded(
        [&] { return forward(pz, DAT_INVALID_HANDLE_PZ, &DAT_PROVIDER::rmr_create_func, rmr); });
}

DAT_RETURN DAT_API dat_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *rmr) {
    return guarded([&] {
        return forward(pz, DAT_INVALID_HANDLE_PZ, &DAT_PROVIDER::rmr_create_for_ep_func, rmr);
    });
}

DAT_RETURN DAT_API dat_rmr_query(DAT_RMR_HANDLE rmr, DAT_RMR_PARAM_MASK mask,
                                 DAT_RMR_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(rmr, DAT_INVALID_HANDLE_RMR, &DAT_PROVIDER::rmr_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_RMR_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr,
                                const DAT_LMR_TRIPLET *lmr_triplet, DAT_MEM_PRIV_FLAGS privileges,
                                DAT_VA_TYPE va_type, DAT_EP_HANDLE ep, DAT_RMR_COOKIE cookie,
                                DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *rmr_context) {
    return guarded([&] {
        return forward(rmr, DAT_INVALID_HANDLE_RMR, &DAT_PROVIDER::rmr_bind_func, lmr, lmr_triplet,
                       privileges, va_type, ep, cookie, flags, rmr_context);
    });
}

DAT_RETURN DAT_API dat_rmr_free(DAT_RMR_HANDLE rmr) {
    return guarded(
        [&] { return forward(rmr, DAT_INVALID_HANDLE_RMR, &DAT_PROVIDER::rmr_free_func); });
}

// ---------------------------------------------------------------------------
// Service points and protection zones
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_psp_query(DAT_PSP_HANDLE psp, DAT_PSP_PARAM_MASK mask,
                                 DAT_PSP_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(psp, DAT_INVALID_HANDLE_PSP, &DAT_PROVIDER::psp_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_PSP_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_psp_free(DAT_PSP_HANDLE psp) {
    return guarded(
        [&] { return forward(psp, DAT_INVALID_HANDLE_PSP, &DAT_PROVIDER::psp_free_func); });
}

DAT_RETURN DAT_API dat_rsp_query(DAT_RSP_HANDLE rsp, DAT_RSP_PARAM_MASK mask,
                                 DAT_RSP_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(rsp, DAT_INVALID_HANDLE_RSP, &DAT_PROVIDER::rsp_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_RSP_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_rsp_free(DAT_RSP_HANDLE rsp) {
    return guarded(
        [&] { return forward(rsp, DAT_INVALID_HANDLE_RSP, &DAT_PROVIDER::rsp_free_func); });
}

DAT_RETURN DAT_API dat_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK mask,
                                 DAT_CSP_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(csp, DAT_INVALID_HANDLE_CSP, &DAT_PROVIDER::csp_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_CSP_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_csp_free(DAT_CSP_HANDLE csp) {
    return guarded(
        [&] { return forward(csp, DAT_INVALID_HANDLE_CSP, &DAT_PROVIDER::csp_free_func); });
}

DAT_RETURN DAT_API dat_pz_query(DAT_PZ_HANDLE pz, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(pz, DAT_INVALID_HANDLE_PZ, &DAT_PROVIDER::pz_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_PZ_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_pz_free(DAT_PZ_HANDLE pz) {
    return guarded([&] { return forward(pz, DAT_INVALID_HANDLE_PZ, &DAT_PROVIDER::pz_free_func); });
}

// ---------------------------------------------------------------------------
// Shared receive queues
// ---------------------------------------------------------------------------

DAT_RETURN DAT_API dat_srq_free(DAT_SRQ_HANDLE srq) {
    return guarded(
        [&] { return forward(srq, DAT_INVALID_HANDLE_SRQ, &DAT_PROVIDER::srq_free_func); });
}

DAT_RETURN DAT_API dat_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT num_segments,
                                     DAT_LMR_TRIPLET *local_iov, DAT_DTO_COOKIE cookie) {
    return guarded([&] {
        return forward(srq, DAT_INVALID_HANDLE_SRQ, &DAT_PROVIDER::srq_post_recv_func, num_segments,
                       local_iov, cookie);
    });
}

DAT_RETURN DAT_API dat_srq_query(DAT_SRQ_HANDLE srq, DAT_SRQ_PARAM_MASK mask,
                                 DAT_SRQ_PARAM *param) {
    return guarded([&] {
        DAT_RETURN status =
            forward(srq, DAT_INVALID_HANDLE_SRQ, &DAT_PROVIDER::srq_query_func, mask, param);
        restore_consumer_ia(status, (mask & DAT_SRQ_FIELD_IA_HANDLE) != 0,
                            param ? &param->ia_handle : nullptr);
        return status;
    });
}

DAT_RETURN DAT_API dat_srq_resize(DAT_SRQ_HANDLE srq, DAT_COUNT max_recv_dtos) {
    return guarded([&] {
        return forward(srq, DAT_INVALID_HANDLE_SRQ, &DAT_PROVIDER::srq_resize_func, max_recv_dtos);
    });
}

DAT_RETURN DAT_API dat_srq_set_lw(DAT_SRQ_HANDLE srq, DAT_COUNT low_watermark) {
    return guarded([&] {
        return forward(srq, DAT_INVALID_HANDLE_SRQ, &DAT_PROVIDER::srq_set_lw_func, low_watermark);
    });
}
