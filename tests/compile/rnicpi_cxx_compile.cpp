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

/* Every inline dispatcher, in ri_ops_t order. */
#define RNICPI_WRAPPERS(X)      \
    X(rnic_open)                \
    X(rnic_close)               \
    X(async_set_event_handler)  \
    X(rnic_query)               \
    X(rnic_modify)              \
    X(rnic_free_hdl)            \
    X(rnic_diag)                \
    X(pd_alloc)                 \
    X(pd_dealloc)               \
    X(cq_create)                \
    X(cq_query)                 \
    X(cq_modify)                \
    X(cq_destroy)               \
    X(special_qp_get)           \
    X(cq_set_event_handler)     \
    X(cq_req_notification)      \
    X(cq_poll)                  \
    X(qp_create)                \
    X(qp_query)                 \
    X(qp_modify)                \
    X(qp_destroy)               \
    X(qp_postsq)                \
    X(qp_post_send)             \
    X(qp_post_rdma_read)        \
    X(qp_post_rdma_write)       \
    X(qp_post_bind)             \
    X(qp_post_fmr)              \
    X(qp_post_local_invalidate) \
    X(qp_post_atomic)           \
    X(qp_post_datagram)         \
    X(qp_postrq)                \
    X(qp_post_recv)             \
    X(srq_create)               \
    X(srq_query)                \
    X(srq_modify)               \
    X(srq_destroy)              \
    X(srq_post)                 \
    X(srq_post_recv)            \
    X(ltag_alloc)               \
    X(mr_reg)                   \
    X(mr_query)                 \
    X(mr_rereg)                 \
    X(mr_dereg)                 \
    X(mr_reg_phys)              \
    X(mr_rereg_phys)            \
    X(mr_reg_shared)            \
    X(mw_alloc)                 \
    X(mw_dealloc)               \
    X(mw_query)                 \
    X(mem_pin)                  \
    X(mem_unpin)                \
    X(mem_map)                  \
    X(mem_unmap)                \
    X(mem_sync_rread)           \
    X(mem_sync_rwrite)          \
    X(ah_create)                \
    X(ah_query)                 \
    X(ah_modify)                \
    X(ah_destroy)               \
    X(mcast_attach)             \
    X(mcast_detach)             \
    X(process_sma_mad)

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
