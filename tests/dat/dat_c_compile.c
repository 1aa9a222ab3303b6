/*
 * dat_c_compile.c - compile-time check of softrnic's dat2 headers as C99.
 *
 * Every header must compile on its own and together, with -Wall -Wextra
 * -Wpedantic -Werror, by gcc (and clang where available); the interface facts
 * in dat_header_checks.inc must hold.
 */
#include <dat2/dat_ib_extensions.h>
#include <dat2/dat_registry.h>
#include <dat2/udat.h>

#include <stddef.h>

/* _Static_assert is C11; __extension__ keeps -std=c99 -Wpedantic quiet. */
#define DAT_SA(cond) __extension__ _Static_assert(cond, #cond)

#include "dat_header_checks.inc"

/* The uppercase call macros and the helpers must expand to valid C. */
int dat_c_compile_check(DAT_EP_HANDLE ep, DAT_IA_HANDLE ia);

int dat_c_compile_check(DAT_EP_HANDLE ep, DAT_IA_HANDLE ia) {
    DAT_LMR_TRIPLET iov = {0, 0, 0};
    DAT_DTO_COOKIE cookie;
    DAT_OS_WAIT_PROXY_AGENT agent = DAT_OS_WAIT_PROXY_AGENT_NULL;
    DAT_CNO_HANDLE cno = DAT_HANDLE_NULL;
    const char *text = NULL;
    DAT_RETURN ret;
    cookie.as_64 = 1;
    if (ep == DAT_HANDLE_NULL || ia == DAT_HANDLE_NULL) return 1;
    ret = DAT_EP_POST_SEND(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    ret |= DAT_CNO_CREATE(ia, agent, &cno);
    ret |= dat_strerror_ext_status(DAT_IB_OP_ERR, &text);
    return ret == DAT_SUCCESS ? 0 : 1;
}
