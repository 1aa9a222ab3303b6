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
