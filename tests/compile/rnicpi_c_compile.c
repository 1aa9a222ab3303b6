/*
 * rnicpi_c_compile.c - compile-time check of <rnicpi/rnicpi.h> as C99.
 *
 * Asserts the enumerator values the interface fixes, a few layout facts,
 * and that every ri_X() dispatcher has exactly the signature of the
 * matching ri_op_X_t member of ri_ops_t.  Built with -Wall -Wextra
 * -Wpedantic -Werror by gcc and clang.
 */
#include <rnicpi/rnicpi.h>

#include <stddef.h>

/* _Static_assert is C11; __extension__ keeps -std=c99 -Wpedantic quiet. */
#define RNICPI_SA(cond) __extension__ _Static_assert(cond, #cond)

#include "rnicpi_header_checks.inc"

/* ri_rnic_get_hdl is a real function; check its type without referencing
 * the symbol (sizeof does not evaluate), so no definition is needed to link.
 * A type mismatch makes the conditional a pointer-type-mismatch warning. */
RNICPI_SA(sizeof(0 ? (ri_op_rnic_get_hdl_t)0 : &ri_rnic_get_hdl) == sizeof(ri_op_rnic_get_hdl_t));


/* Typed: each initializer must match its ri_op_X_t exactly. */
#define RNICPI_AS_OP(name) .ri_op_##name = ri_##name,
static const ri_ops_t rnicpi_c_dispatchers = {RNICPI_WRAPPERS(RNICPI_AS_OP)};

/* Untyped: forces every dispatcher to be compiled. */
typedef void (*rnicpi_c_voidfn_t)(void);
#define RNICPI_AS_VOIDFN(name) (rnicpi_c_voidfn_t) ri_##name,
static const rnicpi_c_voidfn_t rnicpi_c_dispatcher_addrs[] = {RNICPI_WRAPPERS(RNICPI_AS_VOIDFN)};
RNICPI_SA(sizeof(rnicpi_c_dispatcher_addrs) / sizeof(rnicpi_c_dispatcher_addrs[0]) == 62);

int rnicpi_c_compile_check(void);

int rnicpi_c_compile_check(void) {
    size_t i;
    for (i = 0; i < sizeof(rnicpi_c_dispatcher_addrs) / sizeof(rnicpi_c_dispatcher_addrs[0]); ++i) {
        if (rnicpi_c_dispatcher_addrs[i] == NULL) return 1;
    }
    if (rnicpi_c_dispatchers.ri_op_rnic_get_hdl != NULL) return 1;
    return 0;
}
