/*
 * rnicpi_cxx_compile.cpp - compile-time check of <rnicpi/rnicpi.h> as C++20.
 *
 * Same enumerator and layout assertions as rnicpi_c_compile.c, plus an
 * exact type check (std::is_same) of every ri_X() dispatcher against the
 * matching ri_op_X_t.  Built with -Wall -Wextra -Wpedantic -Werror.
 */
#include <rnicpi/rnicpi.h>

#include <cstddef>
#include <type_traits>

#define RNICPI_SA(cond) static_assert(cond, #cond)

#include "rnicpi_header_checks.inc"

static_assert(std::is_same_v<decltype(&ri_rnic_get_hdl), ri_op_rnic_get_hdl_t>,
              "ri_rnic_get_hdl signature");
static_assert(std::is_standard_layout_v<ri_qp_attr_t> && std::is_trivial_v<ri_qp_attr_t>);
static_assert(std::is_standard_layout_v<ri_wr_t> && std::is_trivial_v<ri_wr_t>);
static_assert(std::is_standard_layout_v<ri_wc_t> && std::is_trivial_v<ri_wc_t>);
static_assert(std::is_standard_layout_v<ri_ops_t> && std::is_trivial_v<ri_ops_t>);


#define RNICPI_SAME_TYPE(name)                                            \
    static_assert(std::is_same_v<decltype(&ri_##name), ri_op_##name##_t>, \
                  "ri_" #name " does not match ri_op_" #name "_t");
RNICPI_WRAPPERS(RNICPI_SAME_TYPE)

namespace {
using rnicpi_cxx_voidfn_t = void (*)();
#define RNICPI_AS_VOIDFN(name) reinterpret_cast<rnicpi_cxx_voidfn_t>(&ri_##name),
const rnicpi_cxx_voidfn_t rnicpi_cxx_dispatcher_addrs[] = {RNICPI_WRAPPERS(RNICPI_AS_VOIDFN)};
static_assert(sizeof(rnicpi_cxx_dispatcher_addrs) / sizeof(rnicpi_cxx_dispatcher_addrs[0]) == 62);
}  // namespace

int rnicpi_cxx_compile_check();

int rnicpi_cxx_compile_check() {
    for (rnicpi_cxx_voidfn_t fn : rnicpi_cxx_dispatcher_addrs) {
        if (fn == nullptr) return 1;
    }
    return 0;
}
