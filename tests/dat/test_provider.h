/*
 * test_provider.h - what the registry tests can see of libdat_test_provider.so.
 *
 * The test provider is a loadable DAT provider (dat_provider_init/fini) that
 * serves any IA name dat.conf gives it. Its behaviour is chosen per IA by
 * words in the dat.conf instance data ("ia_params"):
 *   fail_open          ia_open fails with DAT_INSUFFICIENT_RESOURCES
 *   null_handle        ia_open "succeeds" with a NULL IA handle (a provider bug)
 *   no_register        dat_provider_init registers nothing
 *   keep_registration  dat_provider_fini does not unregister
 *   graceful_busy      a graceful ia_close fails with DAT_INVALID_STATE
 *   ext_ib             ia_query reports the IB extension
 * Every table slot it does not implement records its name and the handle it
 * got, and returns DAT_SUCCESS, so tests can see where a call was routed.
 */
#ifndef SOFTRNIC_TESTS_DAT_TEST_PROVIDER_H
#define SOFTRNIC_TESTS_DAT_TEST_PROVIDER_H

#include <dat2/udat.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dat_test_provider_state {
    int init_calls;
    int fini_calls;
    int open_calls;
    int close_calls;
    char last_init_params[256];
    DAT_PROVIDER_INFO last_init_info;
    DAT_COUNT last_open_qlen;
    DAT_CLOSE_FLAGS last_close_flags;
    char last_slot[64];     /* name of the DAT_PROVIDER slot called last */
    DAT_HANDLE last_handle; /* the handle that slot received */
    int last_extension_arg; /* first variadic argument of the last extension op */
} DAT_TEST_PROVIDER_STATE;

/* The provider's counters; name of the exported accessor for dlsym. */
#define DAT_TEST_PROVIDER_STATE_FUNC "dat_test_provider_state"
typedef DAT_TEST_PROVIDER_STATE *(*DAT_TEST_PROVIDER_STATE_FUNC_T)(void);

#ifdef __cplusplus
}
#endif

#endif /* SOFTRNIC_TESTS_DAT_TEST_PROVIDER_H */
