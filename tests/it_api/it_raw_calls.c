/* Calls that pass values outside an enumeration's enumerators, as a C program may (a C enum
 * holds any int). Made here, in C: in C++ such a value of the enum type is undefined. */
#define ITAPI_ENABLE_V21_BINDINGS
#include <it_api.h>

#include "it_raw_calls.h"

it_status_t raw_pz_query(it_pz_handle_t pz, unsigned mask, it_pz_param_t *params) {
    return it_pz_query(pz, (it_pz_param_mask_t)mask, params);
}

it_status_t raw_evd_create(it_ia_handle_t ia, unsigned stream, unsigned flags, size_t qsize,
                           size_t threshold, it_evd_handle_t aevd, it_evd_handle_t *evd, int *fd) {
    return it_evd_create(ia, (it_event_type_t)stream, (it_evd_flags_t)flags, qsize, threshold, aevd,
                         evd, fd);
}

it_status_t raw_evd_query(it_evd_handle_t evd, unsigned mask, it_evd_param_t *params) {
    return it_evd_query(evd, (it_evd_param_mask_t)mask, params);
}

it_status_t raw_evd_modify_enabled(it_evd_handle_t evd, int enabled) {
    it_evd_param_t p;
    p.evd_enabled = (it_boolean_t)enabled;
    return it_evd_modify(evd, IT_EVD_PARAM_ENABLED, &p);
}

it_status_t raw_lmr_create(it_pz_handle_t pz, void *addr, it_length_t length, unsigned addr_mode,
                           unsigned privs, unsigned flags, it_lmr_handle_t *lmr,
                           it_rmr_context_t *rmr_context) {
    return it_lmr_create(pz, addr, IT_NO_ADDR, length, (it_addr_mode_t)addr_mode,
                         (it_mem_priv_t)privs, (it_lmr_flag_t)flags, 0, lmr, rmr_context);
}

it_status_t raw_lmr_query(it_lmr_handle_t lmr, unsigned mask, it_lmr_param_t *params) {
    return it_lmr_query(lmr, (it_lmr_param_mask_t)mask, params);
}

it_status_t raw_lmr_modify(it_lmr_handle_t lmr, unsigned mask, it_pz_handle_t pz, unsigned privs) {
    it_lmr_param_t p;
    p.pz = pz;
    p.privs = (it_mem_priv_t)privs;
    return it_lmr_modify(lmr, (it_lmr_param_mask_t)mask, &p);
}

it_status_t raw_rmr_create(it_pz_handle_t pz, unsigned type, it_rmr_handle_t *rmr) {
    return it_rmr_create(pz, (it_rmr_type_t)type, rmr);
}

it_status_t raw_rmr_query(it_rmr_handle_t rmr, unsigned mask, it_rmr_param_t *params) {
    return it_rmr_query(rmr, (it_rmr_param_mask_t)mask, params);
}
