// The library's entry points that work in this slice: discovery and IAs, PZs, Event
// Dispatchers, memory (LMRs, RMRs, I/O mappings), Consumer Contexts, handle types and the
// address helpers. Each is a C
// function exported by libit.map; no exception crosses it (an allocation failure is
// IT_ERR_RESOURCES). The routines not built yet are in not_yet.cpp.
#include <endian.h>

#include <cstring>
#include <new>

#include "it_internal.hpp"

#define IT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace softrnic::itapi;

namespace {

template <class F>
it_status_t guarded(F &&f) {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return IT_ERR_RESOURCES;
    } catch (...) {
        return IT_ERR_RESOURCES;
    }
}

}  // namespace

// ------------------------------------------------------------------------------ discovery, IA

IT_EXPORT void it_interface_list(it_interface_t *interfaces, size_t *num_interfaces,
                                 size_t *total_interfaces) {
    constexpr size_t total = std::size(kInterfaces);
    if (total_interfaces) *total_interfaces = total;
    if (!num_interfaces) return;
    const size_t n = interfaces ? std::min(*num_interfaces, total) : 0;
    for (size_t i = 0; i < n; ++i) {
        it_interface_t &it = interfaces[i];
        std::memset(&it, 0, sizeof it);
        it.major_version = kApiMajor;
        it.minor_version = kApiMinor;
        it.transport_type = IT_IWARP_TCP_TRANSPORT;
        std::strncpy(it.name, kInterfaces[i].name, sizeof it.name - 1);
    }
    *num_interfaces = n;
}

IT_EXPORT it_status_t it_ia_create(const char *name, uint32_t major_version, uint32_t minor_version,
                                   it_ia_handle_t *ia_handle) {
    return guarded([&] { return ia_create(name, major_version, minor_version, ia_handle); });
}
IT_EXPORT it_status_t it_ia_free(it_ia_handle_t ia_handle) {
    return guarded([&] { return ia_free(ia_handle); });
}
IT_EXPORT it_status_t it_ia_query(it_ia_handle_t ia_handle, it_ia_info_t **ia_info) {
    return guarded([&] { return ia_query(ia_handle, ia_info); });
}
IT_EXPORT void it_ia_info_free(it_ia_info_t *ia_info) {
    guarded([&] {
        ia_info_free(ia_info);
        return IT_SUCCESS;
    });
}

// ------------------------------------------------------------------------------ PZ

IT_EXPORT it_status_t it_pz_create(it_ia_handle_t ia_handle, it_pz_handle_t *pz_handle) {
    return guarded([&] { return pz_create(ia_handle, pz_handle); });
}
IT_EXPORT it_status_t it_pz_free(it_pz_handle_t pz_handle) {
    return guarded([&] { return pz_free(pz_handle); });
}
IT_EXPORT it_status_t it_pz_query(it_pz_handle_t pz_handle, it_pz_param_mask_t mask,
                                  it_pz_param_t *params) {
    return guarded([&] { return pz_query(pz_handle, raw(mask), params); });
}

// ------------------------------------------------------------------------------ EVD

IT_EXPORT it_status_t it_evd_create(it_ia_handle_t ia_handle, it_event_type_t event_number,
                                    it_evd_flags_t evd_flag, size_t sevd_queue_size,
                                    size_t sevd_threshold, it_evd_handle_t aevd_handle,
                                    it_evd_handle_t *evd_handle, int *fd) {
    return guarded([&] {
        return evd_create(ia_handle, raw(event_number), raw(evd_flag), sevd_queue_size,
                          sevd_threshold, aevd_handle, evd_handle, fd);
    });
}
IT_EXPORT it_status_t it_evd_modify(it_evd_handle_t evd_handle, it_evd_param_mask_t mask,
                                    const it_evd_param_t *params) {
    return guarded([&] { return evd_modify(evd_handle, raw(mask), params); });
}
IT_EXPORT it_status_t it_evd_query(it_evd_handle_t evd_handle, it_evd_param_mask_t mask,
                                   it_evd_param_t *params) {
    return guarded([&] { return evd_query(evd_handle, raw(mask), params); });
}
IT_EXPORT it_status_t it_evd_free(it_evd_handle_t evd_handle) {
    return guarded([&] { return evd_free(evd_handle); });
}
IT_EXPORT it_status_t it_evd_dequeue(it_evd_handle_t evd_handle, it_event_t *event) {
    return guarded([&] { return evd_dequeue(evd_handle, event); });
}
IT_EXPORT it_status_t it_evd_wait(it_evd_handle_t evd_handle, uint64_t timeout, it_event_t *event,
                                  size_t *nmore) {
    return guarded([&] { return evd_wait(evd_handle, timeout, event, nmore); });
}
IT_EXPORT it_status_t it_evd_post_se(it_evd_handle_t evd_handle, const void *event) {
    return guarded([&] { return evd_post_se(evd_handle, event); });
}
IT_EXPORT it_status_t it_evd_callback_attach(it_evd_handle_t evd_handle,
                                             it_evd_callback_rtn_t callback, void *arg) {
    return guarded([&] { return evd_callback_attach(evd_handle, callback, arg); });
}
IT_EXPORT it_status_t it_evd_callback_detach(it_evd_handle_t evd_handle) {
    return guarded([&] { return evd_callback_detach(evd_handle); });
}

// ------------------------------------------------------------------------------ LMR, RMR, I/O

// The 1.0 and 2.0 bindings are the 2.1 call without an IOBL, the 1.0 one with Absolute
// Addressing (IT-API L6600-L6603).
IT_EXPORT it_status_t it_lmr_create10(it_pz_handle_t pz_handle, void *addr, it_length_t length,
                                      it_mem_priv_t privs, it_lmr_flag_t flags, uint32_t shared_id,
                                      it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context) {
    return guarded([&] {
        return lmr_create(pz_handle, addr, nullptr, length, IT_ADDR_MODE_ABSOLUTE, raw(privs),
                          raw(flags), shared_id, lmr_handle, rmr_context);
    });
}
IT_EXPORT it_status_t it_lmr_create20(it_pz_handle_t pz_handle, void *addr, it_length_t length,
                                      it_addr_mode_t addr_mode, it_mem_priv_t privs,
                                      it_lmr_flag_t flags, uint32_t shared_id,
                                      it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context) {
    return guarded([&] {
        return lmr_create(pz_handle, addr, nullptr, length, raw(addr_mode), raw(privs), raw(flags),
                          shared_id, lmr_handle, rmr_context);
    });
}
IT_EXPORT it_status_t it_lmr_create21(it_pz_handle_t pz_handle, void *addr, it_iobl_t *iobl,
                                      it_length_t length, it_addr_mode_t addr_mode,
                                      it_mem_priv_t privs, it_lmr_flag_t flags, uint32_t shared_id,
                                      it_lmr_handle_t *lmr_handle, it_rmr_context_t *rmr_context) {
    return guarded([&] {
        return lmr_create(pz_handle, addr, iobl, length, raw(addr_mode), raw(privs), raw(flags),
                          shared_id, lmr_handle, rmr_context);
    });
}
// The IA has no LMR Link support (lmr_link_support is IT_FALSE), so an unlinked LMR, a link
// and an unlink are not offered (IT-API L6766, L7117, L7633).
IT_EXPORT it_status_t it_lmr_create_unlinked(it_pz_handle_t pz_handle, size_t, it_lmr_flag_t flags,
                                             uint32_t, it_lmr_handle_t *lmr_handle) {
    return guarded([&] { return lmr_create_unlinked(pz_handle, raw(flags), lmr_handle); });
}
IT_EXPORT it_status_t it_lmr_link(it_lmr_handle_t, const void *, const it_iobl_t *, it_length_t,
                                  it_addr_mode_t, it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
                                  it_dto_flags_t, it_rmr_context_t *) {
    return IT_ERR_OP_NOT_SUPPORTED;
}
IT_EXPORT it_status_t it_lmr_unlink(it_lmr_handle_t, it_ep_handle_t, it_dto_cookie_t,
                                    it_dto_flags_t) {
    return IT_ERR_OP_NOT_SUPPORTED;
}
IT_EXPORT it_status_t it_lmr_free(it_lmr_handle_t lmr_handle) {
    return guarded([&] { return lmr_free(lmr_handle); });
}
IT_EXPORT it_status_t it_lmr_query(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask,
                                   it_lmr_param_t *params) {
    return guarded([&] { return lmr_query(lmr_handle, raw(mask), params); });
}
IT_EXPORT it_status_t it_lmr_modify(it_lmr_handle_t lmr_handle, it_lmr_param_mask_t mask,
                                    const it_lmr_param_t *params) {
    return guarded([&] { return lmr_modify(lmr_handle, raw(mask), params); });
}
// Every LMR is coherent (non-coherent mode is not offered): both calls are no-ops that
// succeed, whatever the segments (IT-API L6862-L6864, L7488-L7490).
IT_EXPORT it_status_t it_lmr_flush_to_mem(const it_lmr_triplet_t *, size_t) {
    return IT_SUCCESS;
}
IT_EXPORT it_status_t it_lmr_refresh_from_mem(const it_lmr_triplet_t *, size_t) {
    return IT_SUCCESS;
}

// IT-API 1.0 creates Wide RMRs only (IT-API L10552-L10553).
IT_EXPORT it_status_t it_rmr_create10(it_pz_handle_t pz_handle, it_rmr_handle_t *rmr_handle) {
    return guarded([&] { return rmr_create(pz_handle, IT_RMR_TYPE_WIDE, rmr_handle); });
}
IT_EXPORT it_status_t it_rmr_create20(it_pz_handle_t pz_handle, it_rmr_type_t rmr_type,
                                      it_rmr_handle_t *rmr_handle) {
    return guarded([&] { return rmr_create(pz_handle, raw(rmr_type), rmr_handle); });
}
IT_EXPORT it_status_t it_rmr_free(it_rmr_handle_t rmr_handle) {
    return guarded([&] { return rmr_free(rmr_handle); });
}
IT_EXPORT it_status_t it_rmr_query(it_rmr_handle_t rmr_handle, it_rmr_param_mask_t mask,
                                   it_rmr_param_t *params) {
    return guarded([&] { return rmr_query(rmr_handle, raw(mask), params); });
}

IT_EXPORT it_status_t it_mem_map(it_ia_handle_t ia_handle, void *vaddr, uint64_t, size_t len,
                                 it_io_addr_t *io_addr, size_t *mapped_len) {
    return guarded([&] { return mem_map(ia_handle, vaddr, len, io_addr, mapped_len); });
}
IT_EXPORT it_status_t it_mem_unmap(it_ia_handle_t ia_handle, it_io_addr_t io_addr,
                                   size_t mapped_len) {
    return guarded([&] { return mem_unmap(ia_handle, io_addr, mapped_len); });
}

// ------------------------------------------------------------------------------ any handle

IT_EXPORT it_status_t it_set_consumer_context(it_handle_t handle, it_context_t context) {
    if (!handles().valid(handle, -1)) return IT_ERR_INVALID_HANDLE;
    auto *o = static_cast<Obj *>(handle);
    o->context.store(context.index, std::memory_order_relaxed);
    o->context_set.store(true, std::memory_order_release);
    return IT_SUCCESS;
}

IT_EXPORT it_status_t it_get_consumer_context(it_handle_t handle, it_context_t *context) {
    if (!handles().valid(handle, -1)) return IT_ERR_INVALID_HANDLE;
    if (!context) return IT_ERR_FAULT;
    auto *o = static_cast<Obj *>(handle);
    if (!o->context_set.load(std::memory_order_acquire)) {
        context->index = 0;  // IT-API L5526-L5527
        return IT_ERR_NO_CONTEXT;
    }
    context->index = o->context.load(std::memory_order_relaxed);
    return IT_SUCCESS;
}

// The reconstructed page of docs/it-api.md.
IT_EXPORT it_status_t it_get_handle_type(it_handle_t handle,
                                         it_handle_type_enum_t *type_of_handle) {
    const int kind = handles().kind_of(handle);
    if (kind < 0) return IT_ERR_INVALID_HANDLE;
    if (!type_of_handle) return IT_ERR_FAULT;
    *type_of_handle = static_cast<it_handle_type_enum_t>(kind);
    return IT_SUCCESS;
}

// ------------------------------------------------------------------------------ helpers

IT_EXPORT uint64_t it_hton64(uint64_t hostint) {
    return htobe64(hostint);
}
IT_EXPORT uint64_t it_ntoh64(uint64_t netint) {
    return be64toh(netint);
}
IT_EXPORT it_rdma_addr_t it_make_rdma_addr_absolute(void *addr) {
    return htobe64(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr)));
}
// The reconstructed page of docs/it-api.md: the offset, zero-extended, in network order.
IT_EXPORT it_rdma_addr_t it_make_rdma_addr_relative(it_length_t offset) {
    return htobe64(static_cast<uint64_t>(offset));
}
