/*
 * it_api_c_compile.c - compile-time check of <it_api.h> as C99.
 *
 * Compiled, never linked (the checks take the address of every routine, and no library
 * defines them yet): every enumerator value, member order and array size the
 * specification prints, and the exact type of each of the 83 prototypes and of the names
 * the binding macros select. Built with -Wall -Wextra -Wpedantic -Werror, once per
 * binding mode (none, ITAPI_ENABLE_V20_BINDINGS, ITAPI_ENABLE_V21_BINDINGS).
 */
#include <it_api.h>

#include <stddef.h>
#include <stdint.h>

/* _Static_assert is C11; __extension__ keeps -std=c99 -Wpedantic quiet. */
#define IT_SA(cond) __extension__ _Static_assert(cond, #cond)

/* C cannot name a member's type: its size stands in for it. Bit-fields have neither
 * size nor offset; the C++ check covers them. */
#define IT_MEMBER_TYPE(type, member, mtype) IT_SA(sizeof(((type *)0)->member) == sizeof(mtype));
#define IT_BITFIELD(type, member, mtype, bits)

/* An initializer of a different function pointer type is a constraint violation
 * (-Wincompatible-pointer-types, an error under -Werror). */
#define IT_PROTO(name, ret, params) ret(*const it_api_c_##name) params = &name;

#ifdef ITAPI_ENABLE_V10_BINDINGS
#define IT_RMR_PARAM_LINKED_MEMBER bound
#else
#define IT_RMR_PARAM_LINKED_MEMBER linked
#endif

#include "it_api_header_checks.inc"
#include "it_api_spec_table.inc"

/* The routine each binding mode selects (IT-API L18308-L18350). */
#if defined(ITAPI_ENABLE_V10_BINDINGS)
it_status_t (*const it_api_c_bound_lmr_create)(it_pz_handle_t, void *, it_length_t, it_mem_priv_t,
                                               it_lmr_flag_t, uint32_t, it_lmr_handle_t *,
                                               it_rmr_context_t *) = &it_lmr_create;
it_status_t (*const it_api_c_bound_rmr_create)(it_pz_handle_t, it_rmr_handle_t *) = &it_rmr_create;
it_status_t (*const it_api_c_bound_rmr_bind)(it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
                                             it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
                                             it_dto_flags_t, it_rmr_context_t *) = &it_rmr_bind;
#else
#if defined(ITAPI_ENABLE_V20_BINDINGS)
it_status_t (*const it_api_c_bound_lmr_create)(it_pz_handle_t, void *, it_length_t, it_addr_mode_t,
                                               it_mem_priv_t, it_lmr_flag_t, uint32_t,
                                               it_lmr_handle_t *,
                                               it_rmr_context_t *) = &it_lmr_create;
#else
it_status_t (*const it_api_c_bound_lmr_create)(it_pz_handle_t, void *, it_iobl_t *, it_length_t,
                                               it_addr_mode_t, it_mem_priv_t, it_lmr_flag_t,
                                               uint32_t, it_lmr_handle_t *,
                                               it_rmr_context_t *) = &it_lmr_create;
#endif
it_status_t (*const it_api_c_bound_rmr_create)(it_pz_handle_t, it_rmr_type_t,
                                               it_rmr_handle_t *) = &it_rmr_create;
it_status_t (*const it_api_c_bound_rmr_bind)(it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
                                             it_addr_mode_t, it_mem_priv_t, it_ep_handle_t,
                                             it_dto_cookie_t, it_dto_flags_t,
                                             it_rmr_context_t *) = &it_rmr_bind;
#endif

/* IT-API 1.0 routine names (IT-API L18257-L18265). */
it_rdma_addr_t (*const it_api_c_make_rdma_addr)(void *) = &it_make_rdma_addr;
it_status_t (*const it_api_c_sync_rdma_read)(const it_lmr_triplet_t *,
                                             size_t) = &it_lmr_sync_rdma_read;
it_status_t (*const it_api_c_sync_rdma_write)(const it_lmr_triplet_t *,
                                              size_t) = &it_lmr_sync_rdma_write;
it_status_t (*const it_api_c_rmr_unbind)(it_rmr_handle_t, it_ep_handle_t, it_dto_cookie_t,
                                         it_dto_flags_t) = &it_rmr_unbind;
