/* it_raw_calls.c: IT-API calls with any bits in their enumeration arguments. */
#ifndef SOFTRNIC_TESTS_IT_RAW_CALLS_H_
#define SOFTRNIC_TESTS_IT_RAW_CALLS_H_

#include <it_api.h>

#ifdef __cplusplus
extern "C" {
#endif

it_status_t raw_pz_query(it_pz_handle_t pz, unsigned mask, it_pz_param_t *params);
it_status_t raw_evd_create(it_ia_handle_t ia, unsigned stream, unsigned flags, size_t qsize,
                           size_t threshold, it_evd_handle_t aevd, it_evd_handle_t *evd, int *fd);
it_status_t raw_evd_query(it_evd_handle_t evd, unsigned mask, it_evd_param_t *params);
it_status_t raw_evd_modify_enabled(it_evd_handle_t evd, int enabled);
it_status_t raw_lmr_create(it_pz_handle_t pz, void *addr, it_length_t length, unsigned addr_mode,
                           unsigned privs, unsigned flags, it_lmr_handle_t *lmr,
                           it_rmr_context_t *rmr_context);
it_status_t raw_lmr_query(it_lmr_handle_t lmr, unsigned mask, it_lmr_param_t *params);
it_status_t raw_lmr_modify(it_lmr_handle_t lmr, unsigned mask, it_pz_handle_t pz, unsigned privs);
it_status_t raw_rmr_create(it_pz_handle_t pz, unsigned type, it_rmr_handle_t *rmr);
it_status_t raw_rmr_query(it_rmr_handle_t rmr, unsigned mask, it_rmr_param_t *params);

#ifdef __cplusplus
}
#endif

#endif /* SOFTRNIC_TESTS_IT_RAW_CALLS_H_ */
