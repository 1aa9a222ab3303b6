/*
 * it_api_cxx_compile.cpp - compile-time check of <it_api.h> as C++20.
 *
 * The checks of it_api_c_compile.c, with exact types: std::is_same on every member the
 * specification prints and on the type of every routine, bit-field widths, and the
 * spelling each binding macro expands to. With IT_API_TEST_EXTERN_C the header is
 * included inside an extern "C" block, as C++ programs written for C headers do. Built
 * with -Wall -Wextra -Wpedantic -Werror; never linked.
 */
#ifdef IT_API_TEST_EXTERN_C
extern "C" {
#include <it_api.h>
}
#else
#include <it_api.h>
#endif

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#define IT_SA(cond) static_assert(cond, #cond)

namespace it_api_cxx_check {
// Width of a bit-field: set it to all ones through an out-of-range store (modular for an
// unsigned bit-field) and count the bits that stuck.
template <typename T>
constexpr int ones(T value) {
    int n = 0;
    for (std::uint64_t v = value; v != 0; v >>= 1)
        n += static_cast<int>(v & 1u);
    return n;
}
#define IT_STRINGIZE_(x) #x
#define IT_EXPANSION(x) std::string_view(IT_STRINGIZE_(x))
}  // namespace it_api_cxx_check

#define IT_MEMBER_TYPE(type, member, mtype)                      \
    static_assert(std::is_same_v<decltype(type::member), mtype>, \
                  #type "::" #member " is not " #mtype);
#define IT_BITFIELD(type, member, mtype, bits)                     \
    static_assert(std::is_same_v<decltype(type::member), mtype>,   \
                  #type "::" #member " is not " #mtype);           \
    static_assert(it_api_cxx_check::ones([] {                      \
                      type t{};                                    \
                      t.member = static_cast<mtype>(t.member - 1); \
                      return t.member;                             \
                  }()) == (bits),                                  \
                  #type "::" #member " is not " #bits " bits wide");
#define IT_PROTO(name, ret, params) \
    static_assert(std::is_same_v<decltype(&name), ret(*) params>, #name " is not " #ret #params);

#ifdef ITAPI_ENABLE_V10_BINDINGS
#define IT_RMR_PARAM_LINKED_MEMBER bound
#else
#define IT_RMR_PARAM_LINKED_MEMBER linked
#endif

#include "it_api_header_checks.inc"
#include "it_api_spec_table.inc"

// The names each binding mode selects (IT-API L18308-L18350).
#if defined(ITAPI_ENABLE_V10_BINDINGS)
static_assert(IT_EXPANSION(it_lmr_create) == "it_lmr_create10");
static_assert(IT_EXPANSION(it_rmr_create) == "it_rmr_create10");
static_assert(IT_EXPANSION(it_rmr_bind) == "it_rmr_bind10");
#elif defined(ITAPI_ENABLE_V20_BINDINGS)
static_assert(IT_EXPANSION(it_lmr_create) == "it_lmr_create20");
static_assert(IT_EXPANSION(it_rmr_create) == "it_rmr_create20");
static_assert(IT_EXPANSION(it_rmr_bind) == "it_rmr_link");
#else
static_assert(IT_EXPANSION(it_lmr_create) == "it_lmr_create21");
static_assert(IT_EXPANSION(it_rmr_create) == "it_rmr_create20");
static_assert(IT_EXPANSION(it_rmr_bind) == "it_rmr_link");
#endif
static_assert(IT_EXPANSION(it_make_rdma_addr) == "it_make_rdma_addr_absolute");
static_assert(IT_EXPANSION(it_lmr_sync_rdma_read) == "it_lmr_flush_to_mem");
static_assert(IT_EXPANSION(it_lmr_sync_rdma_write) == "it_lmr_refresh_from_mem");
static_assert(IT_EXPANSION(it_rmr_unbind) == "it_rmr_unlink");

// Null handle and address constants.
static_assert(IT_NULL_HANDLE == nullptr);
static_assert(std::is_same_v<decltype(IT_NULL_HANDLE), it_handle_t>);
static_assert(static_cast<const void *>(IT_NO_ADDR) == nullptr);

// Plain C aggregates: usable from C++ without constructors, copyable with memcpy.
static_assert(std::is_standard_layout_v<it_event_t> && std::is_trivial_v<it_event_t>);
static_assert(std::is_standard_layout_v<it_ia_info_t> && std::is_trivial_v<it_ia_info_t>);
static_assert(std::is_standard_layout_v<it_path_t> && std::is_trivial_v<it_path_t>);
static_assert(std::is_standard_layout_v<it_ep_param_t> && std::is_trivial_v<it_ep_param_t>);
static_assert(std::is_standard_layout_v<it_conn_qual_t> && std::is_trivial_v<it_conn_qual_t>);
static_assert(std::is_standard_layout_v<it_lmr_triplet_t> && std::is_trivial_v<it_lmr_triplet_t>);
