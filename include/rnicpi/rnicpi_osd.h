/*
 * rnicpi_osd.h - platform (OS-dependent) definitions for the RNICPI 1.0
 * provider interface, softrnic edition (Linux/POSIX, LP64 and ILP32).
 *
 * Written for softrnic from The Open Group "RNIC Programming Interface"
 * (RNICPI) 1.0, chapter 10.2.  Names and types follow the interface; the
 * project-specific choices (64-bit ri_length_t, guards, C99 inline) are
 * listed in docs/spec-deviations.md.
 *
 * Normally included through <rnicpi/rnicpi.h>.
 */
#ifndef RNICPI_RNICPI_OSD_H_
#define RNICPI_RNICPI_OSD_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Argument direction markers used in the prototypes; they expand to nothing. */
#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif

/* Unsigned int shorthand used throughout the interface.  glibc has no
 * uint_t (only `uint`); Solaris-like systems already provide one. */
#if !defined(RI_HAVE_UINT_T) && !defined(__sun)
typedef unsigned int uint_t;
#endif
#ifndef RI_HAVE_UINT_T
#define RI_HAVE_UINT_T 1
#endif

/* Opaque lower-layer-protocol handle: a connected socket descriptor for
 * TCP, a channel descriptor for softrnic's shared-memory LLP. */
typedef int ri_llp_stream_handle_t;

typedef unsigned short ri_boolean_t;

/* Byte counts for regions, pins and maps.  64-bit in softrnic so that
 * memory regions larger than 4 GiB can be described (sample OSD: 32-bit). */
typedef uint64_t ri_length_t;

/*
 * Every handle handed out by a provider points at an object whose first
 * member is this structure.  This is mandatory for the VP handle and the
 * RNIC handle (the inline dispatchers read `ops` from them) and used by
 * softrnic for all other handles as well.
 */
struct ri_ops;
struct ri_handle_struct {
    const struct ri_ops *ops;
    /* provider-private, object-specific fields follow in the real object */
};

typedef void *ri_handle_t;
typedef ri_handle_t ri_vp_handle_t;
typedef ri_handle_t ri_rnic_handle_t;
typedef ri_handle_t ri_pd_handle_t;
typedef ri_handle_t ri_qp_handle_t;
typedef ri_handle_t ri_cq_handle_t;
typedef ri_handle_t ri_mr_handle_t;
typedef ri_handle_t ri_mw_handle_t;
typedef ri_handle_t ri_srq_handle_t;
typedef ri_handle_t ri_address_handle_t;

/* Opaque context owned by the IHV side (vp_data) or by the OS side (os_data). */
typedef void *ri_vp_data_t;
typedef void *ri_os_data_t;

/* Private error detail returned by every call; never interpreted by RNICPI. */
typedef uint64_t ri_err_data_t;

typedef char *ri_dev_info_t;
typedef void *ri_vaddr_t;

/* "Physical" (bus) addresses.  softrnic uses an identity map: VA == PA. */
typedef uint64_t ri_phys_addr_t;
typedef uint64_t ri_phys_buf_len_t;

#define RI_MAX_LIB_PATH_LEN 64
#define RI_MAX_HW_PATH_LEN 64
#define RI_MAX_VENDOR_STRING_LEN 64

/* Cast helper so the inline helpers stay clean under C++ -Wold-style-cast. */
#ifdef __cplusplus
#define RI_OSD_CAST_(type, expr) (static_cast<type>(expr))
#else
#define RI_OSD_CAST_(type, expr) ((type)(expr))
#endif

/* Operations vector of the provider that owns `handle`. */
static inline const struct ri_ops *ri_svc_ops(IN void *handle) {
    return RI_OSD_CAST_(const struct ri_handle_struct *, handle)->ops;
}

/* Handle -> provider object pointer. */
static inline void *ri_svc_handle_ptr(IN ri_handle_t handle) {
    return handle;
}

/* Provider object (starting with struct ri_handle_struct) -> handle. */
static inline ri_handle_t ri_svc_make_handle(IN struct ri_handle_struct *p) {
    return RI_OSD_CAST_(ri_handle_t, p);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RNICPI_RNICPI_OSD_H_ */
