/*
 * softrnic.h: the parts of softrnic that RNICPI leaves to the host stack.
 *
 * RNICPI (rnicpi.h) is the provider interface. It assumes host services
 * (what RNICPI calls the access layer; softrnic says "host services" so as not
 * to be confused with the InfiniBand Access Layer) that own device registration
 * and hand connected LLP streams to ri_qp_modify(IDLE -> RTS). This header is
 * the face of softrnic's built-in host services:
 *   - create and destroy software RNIC instances (each one a "VP" that the
 *     built-in host services attach with ri_svc_attach): iWARP RNICs, or
 *     InfiniBand HCAs (softrnic_vp_create_ex),
 *   - choose a handle view (privileged or user, consumer- or provider-serialised),
 *   - create in-process LLP stream pairs for the loopback transport,
 *   - list the SOFTRNIC_* environment variables the library reads.
 *
 * Everything else goes through the ri_* calls of rnicpi.h.
 */
#ifndef SOFTRNIC_SOFTRNIC_H
#define SOFTRNIC_SOFTRNIC_H

#include <rnicpi/rnicpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a consumer sees an RNIC instance (RNICPI L1316-1363, L9012-9020). */
typedef enum softrnic_vp_view {
    /* Privileged consumer, consumer-serialised locking (al_locking_ops): the default. */
    SOFTRNIC_VIEW_PRIVILEGED = 0,
    /* Privileged consumer, provider-serialised locking (vp_locking_ops). */
    SOFTRNIC_VIEW_PRIVILEGED_VP_LOCKING = 1,
    /* Non-privileged (NP-RNICPI) consumer: kernel-only calls return RI_RET_NO_PERMISSION. */
    SOFTRNIC_VIEW_USER = 2
} softrnic_vp_view_t;

/*
 * Creates a software RNIC instance named `name` (at most 63 bytes) and attaches it
 * to the built-in host services. *vp receives the SOFTRNIC_VIEW_PRIVILEGED handle.
 * The RNIC is not open yet: call ri_rnic_open next.
 * Returns RI_RET_INVALID_PARAMETER for a NULL/empty/too long name or NULL vp,
 * RI_RET_RNIC_INUSE if an instance of that name exists, RI_RET_RESOURCE_SHORTAGE.
 */
ri_api_return_t softrnic_vp_create(const char *name, ri_vp_handle_t *vp);

/* What an instance is: an iWARP RNIC or an InfiniBand HCA. */
typedef enum softrnic_rnic_kind {
    SOFTRNIC_KIND_IWARP = 0,
    SOFTRNIC_KIND_IB = 1
} softrnic_rnic_kind_t;

/*
 * How softrnic_vp_create_ex builds an instance. `size` is sizeof(softrnic_vp_config_t) as
 * the caller compiled it: fields past it are taken as 0 (so later versions of this struct
 * can add fields at the end). Every IB field's 0/NULL means "the default". An iWARP
 * instance ignores the IB fields.
 */
typedef struct softrnic_vp_config {
    uint32_t size;              /* sizeof(softrnic_vp_config_t) */
    softrnic_rnic_kind_t kind;  /* SOFTRNIC_KIND_IWARP or SOFTRNIC_KIND_IB */
    uint8_t num_ports;          /* IB: 1..4; 0 = SOFTRNIC_IB_PORTS (default 2) */
    uint16_t active_mtu;        /* IB: 256, 512, 1024, 2048 or 4096 bytes;
                                   0 = SOFTRNIC_IB_MTU (default 4096) */
    uint64_t node_guid;         /* IB: 0 = derived from (machine, subnet, name) */
    const uint64_t *port_guids; /* IB: num_ports GUIDs (port 1 first), or NULL = derived
                                   (node GUID | port number) */
    const char *subnet;         /* IB: NULL = SOFTRNIC_IB_SUBNET (default "u<uid>") */
} softrnic_vp_config_t;

/*
 * Creates an instance as `cfg` says; softrnic_vp_create(name, vp) is
 * softrnic_vp_create_ex(name, NULL, vp), an iWARP RNIC.
 *
 * An InfiniBand instance reports RI_RDMA_TRANSPORT_TYPE_IB and its ports through
 * ri_rnic_query. Its GUIDs are stable: the node GUID is locally administered and derived
 * from the machine id, the subnet and the instance name unless configured; port p's GUID
 * is node GUID | p. Its ports come up at ri_rnic_open: each gets a LID from the subnet's
 * LID authority (today one per process and subnet name; an embedded subnet manager later)
 * and becomes Active, raising RI_EVENT_PORT_EVENT; ri_rnic_close takes them Down.
 *
 * Returns what softrnic_vp_create returns, and RI_RET_INVALID_PARAMETER for a `size`
 * smaller than the fields up to `kind`, an unknown kind, more than 4 ports, an MTU not in
 * the list, a configured GUID of 0, two equal configured port GUIDs, or a subnet name
 * that is empty, longer than 63 bytes or not made of letters, digits, '.', '_' and '-'.
 */
ri_api_return_t softrnic_vp_create_ex(const char *name, const softrnic_vp_config_t *cfg,
                                      ri_vp_handle_t *vp);

/*
 * Destroys an instance. It must be closed (ri_rnic_close) first, otherwise
 * RI_RET_RNIC_INUSE. Any view of the instance may be passed.
 * RI_RET_VP_INVALID_HANDLE for an unknown handle.
 */
ri_api_return_t softrnic_vp_destroy(ri_vp_handle_t vp);

/* Returns the requested view of an instance, or NULL for an unknown handle or view. */
ri_vp_handle_t softrnic_vp_view(ri_vp_handle_t vp, softrnic_vp_view_t view);

/*
 * Completion and async event callbacks run on the instance's event thread, never
 * inside a post or poll call (a consumer may hold a spinlock across those, RNICPI
 * L1351). This call returns once every callback queued before it has returned,
 * so a test can assert "exactly one callback" without sleeping. Must not be
 * called from inside a callback (RI_RET_FAIL).
 */
ri_api_return_t softrnic_vp_drain_events(ri_vp_handle_t vp);

/*
 * Creates a connected pair of in-process LLP stream handles for the loopback
 * transport. Pass one to each QP's ri_qp_modify(NEXT_STATE=RTS | LLQ_STREAM_HANDLE).
 * The QPs may belong to the same or to different RNIC instances of this process.
 * An end not yet handed to a QP can be released with softrnic_loopback_close.
 * Returns RI_RET_INVALID_PARAMETER for NULL outputs, RI_RET_RESOURCE_SHORTAGE.
 */
ri_api_return_t softrnic_loopback_pair(ri_llp_stream_handle_t *a, ri_llp_stream_handle_t *b);

/*
 * Closes a loopback end that was never handed to a QP. A QP owns the end after a
 * successful transition to RTS (RNICPI L1742-1757) and closes it itself.
 * Returns RI_RET_INVALID_LL_HANDLE for an unknown or already owned handle.
 */
ri_api_return_t softrnic_loopback_close(ri_llp_stream_handle_t h);

/* One SOFTRNIC_* environment variable: its name, the value in force when it is unset,
 * and what it changes. */
typedef struct softrnic_env_var {
    const char *name;
    const char *default_value;
    const char *meaning;
} softrnic_env_var_t;

/*
 * The environment variables this library reads, in a fixed order: entry `index`, or
 * NULL past the last one. The strings are static.
 */
const softrnic_env_var_t *softrnic_env_var(unsigned index);

#ifdef __cplusplus
}
#endif

#endif /* SOFTRNIC_SOFTRNIC_H */
