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

#ifdef __cplusplus
}
#endif

#endif /* SOFTRNIC_TESTS_IT_RAW_CALLS_H_ */
