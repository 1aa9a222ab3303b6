/*
 * rnicpi.h - RNIC Programming Interface (RNICPI) 1.0 provider interface.
 *
 * softrnic's own rendition of the interface defined by The Open Group
 * "RNIC Programming Interface" 1.0 (chapters 7, 8 and the sample headers
 * of chapter 10).  Identifiers, enumerator values, structure layouts and
 * call signatures are those of the interface; where the printed headers
 * and the reference pages disagree or do not compile, the resolution is
 * recorded in docs/spec-deviations.md.
 *
 * A provider exports an ri_ops_t table; consumers call the ri_* inline
 * dispatchers from <rnicpi/rnicpi_osdfunc.h> (included at the end).
 */
#ifndef RNICPI_RNICPI_H_
#define RNICPI_RNICPI_H_

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include <rnicpi/rnicpi_osd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Return codes
 * ==================================================================== */

enum ri_api_return {
    RI_RET_SUCCESS = 0,

    /* generic */
    RI_RET_RESOURCE_SHORTAGE,
    RI_RET_INVALID_PARAMETER,
    RI_RET_NO_PERMISSION,
    RI_RET_XPORT_UNSUPPORTED,
    RI_RET_OP_UNSUPPORTED,
    RI_RET_BUFFER_TOO_SMALL,
    RI_RET_FAIL,

    /* optional features */
    RI_RET_QP_RESIZE_UNSUPPORTED,
    RI_RET_SRQ_UNSUPPORTED,
    RI_RET_SRQ_RESIZE_UNSUPPORTED,
    RI_RET_EXT_BMM_UNSUPPORTED,
    RI_RET_EXT_ZBVA_UNSUPPORTED,
    RI_RET_EXT_LIF_UNSUPPORTED,
    RI_RET_RNIC_ATOMICS_UNSUPPORTED,

    /* verbs provider / device */
    RI_RET_VP_INVALID_HANDLE,
    RI_RET_INVALID_DEV_INFO,
    RI_RET_INVALID_HW_PATH,
    RI_RET_INVALID_LIB_PATH,
    RI_RET_INVALID_PBL_MODE,
    RI_RET_INVALID_VP_VERSION,

    /* RNIC */
    RI_RET_RNIC_INVALID_HANDLE,
    RI_RET_RNIC_INUSE,
    RI_RET_RNIC_NOT_OPEN,

    /* protection domain */
    RI_RET_PD_INVALID_HANDLE,
    RI_RET_PD_INUSE,

    /* completion queue */
    RI_RET_CQ_INVALID_HANDLE,
    RI_RET_CQ_CAPACITY_EXCEEDED,
    RI_RET_CQ_EMPTY,
    RI_RET_CQ_ERROR,
    RI_RET_CQ_INUSE,
    RI_RET_CQ_INVALID_EVENT_HANDLER,
    RI_RET_CQ_NO_EVENT_HANDLER,
    RI_RET_CQ_WOULD_OVERFLOW,
    RI_RET_INVALID_HANDLER_ID,

    /* queue pair and posting */
    RI_RET_QP_INVALID_HANDLE,
    RI_RET_MIGRATION_STATE_INVALID,
    RI_RET_QP_ATTRIBUTE_CANT_CHANGE,
    RI_RET_QP_CAPACITY_EXCEEDED,
    RI_RET_QP_INVALID_SERVICE_TYPE,
    RI_RET_QP_INVALID_SPECIAL_TYPE,
    RI_RET_QP_INVALID_STATE,
    RI_RET_QP_CANNOT_SHRINK,
    RI_RET_QP_INUSE,
    RI_RET_RNIC_INVALID_MTU,
    RI_RET_RNIC_INVALID_PKEY_ENTRY,
    RI_RET_RNIC_INVALID_PKEY_INDEX,
    RI_RET_RNIC_INVALID_PORT,
    RI_RET_RNIC_INVALID_RNR_VALUE,
    RI_RET_RNIC_IRD_ORD_EXCEEDED,
    RI_RET_RNIC_NOT_IN_BLOCK_MODE,
    RI_RET_RNIC_NOT_IN_PAGE_MODE,
    RI_RET_RNIC_SG_LIMIT_EXCEEDED,
    RI_RET_RNIC_WR_LIMIT_EXCEEDED,
    RI_RET_STILL_FLUSHING_WQES,
    RI_RET_WR_INVALID_FLAGS,
    RI_RET_WR_INVALID_TYPE,
    RI_RET_WR_SG_INVALID_FORMAT,

    /* shared receive queue */
    RI_RET_SRQ_INVALID_HANDLE,
    RI_RET_QP_TIED_TO_SRQ,
    RI_RET_SRQ_CANNOT_SHRINK,
    RI_RET_SRQ_IN_ERROR,
    RI_RET_SRQ_INUSE,
    RI_RET_SRQ_LIMIT_OUT_OF_RANGE,

    /* memory region */
    RI_RET_MR_INVALID_HANDLE,
    RI_RET_MEM_INVALID_ACCESS,
    RI_RET_MEM_INVALID_ADDRESS,
    RI_RET_MEM_INVALID_LENGTH,
    RI_RET_MEM_INVALID_OFFSET,
    RI_RET_MEM_INVALID_LTAG,
    RI_RET_MEM_INVALID_PBLE,
    RI_RET_MEM_INVALID_PBLE_LENGTH,
    RI_RET_MEM_INVALID_RTAG,

    /* memory window */
    RI_RET_MW_INVALID_HANDLE,
    RI_RET_INVALID_WINDOW_TYPE,
    RI_RET_WINDOWS_BOUND,
    RI_RET_WINDOW_TYPE_UNSUPPORTED,

    /* address handle / multicast (IB) */
    RI_RET_ADDRESS_HANDLE_INVALID,
    RI_RET_MGID_INVALID,
    RI_RET_MLID_INVALID,
    RI_RET_MULTICAST_ATTACHED,
    RI_RET_RNIC_QPS_PER_MCAST_PORT_EXCEEDED,

    /* lower layer protocol (iWARP) */
    RI_RET_INVALID_LL_HANDLE,
    RI_RET_INVALID_DDP_RDMAP_VERSION,
    RI_RET_LL_BAD_STATE,
    RI_RET_MPA_ATTR_UNSUPPORTED
};
typedef enum ri_api_return ri_api_return_t;

/* ======================================================================
 * InfiniBand basic types, port and adapter attributes
 * ==================================================================== */

typedef uint8_t ri_sl_t;    /* service level, 4 bits used */
typedef uint8_t ri_lmc_t;   /* LID mask control */
typedef uint16_t ri_lid_t;  /* local identifier */
typedef uint16_t ri_pkey_t; /* partition key */

struct ri_gid {
    uint64_t gid_prefix;
    uint64_t gid_guid;
};
typedef struct ri_gid ri_gid_t;

enum ri_ib_port_state {
    RI_IB_LINK_DOWN = 1 << 1,
    RI_IB_LINK_INITIALIZE = 1 << 2,
    RI_IB_LINK_ARM = 1 << 3,
    RI_IB_LINK_ACT_DEFER = 1 << 4,
    RI_IB_LINK_ACTIVE = 1 << 5
};
typedef enum ri_ib_port_state ri_ib_port_state_t;

/* Port "down"/"up" as the IB verbs see it, as sets of link states. */
#define RI_IB_PORT_DOWN (RI_IB_LINK_DOWN | RI_IB_LINK_INITIALIZE | RI_IB_LINK_ARM)
#define RI_IB_PORT_UP (RI_IB_LINK_ACT_DEFER | RI_IB_LINK_ACTIVE)

enum ri_ib_mtu { RI_IB_MTU_256 = 1, RI_IB_MTU_512, RI_IB_MTU_1K, RI_IB_MTU_2K, RI_IB_MTU_4K };
typedef enum ri_ib_mtu ri_ib_mtu_t;

/* Port capability bits (same positions as the PortInfo capability mask). */
enum ri_ib_port_flags {
    RI_IB_PORT_SM = 1 << 0,
    RI_IB_PORT_SM_DISABLED = 1 << 10,
    RI_IB_PORT_SNMP_TUNNEL = 1 << 17,
    RI_IB_PORT_DEV_MGT = 1 << 19,
    RI_IB_PORT_VENDOR_CLASS = 1 << 20,
    RI_IB_PORT_CLIENT_REREG = 1 << 25
};
typedef enum ri_ib_port_flags ri_ib_port_flags_t;

struct ri_ib_port_attr {
    ri_gid_t *src_gid_table;
    ri_pkey_t *pkey_table;
    uint32_t max_msg_size;
    ri_ib_mtu_t max_mtu;
    ri_ib_port_state_t ib_port_state;
    ri_ib_port_flags_t ib_port_flags;
    ri_lid_t base_lid;
    ri_lid_t sm_lid;
    uint16_t bad_pkey_count;
    uint16_t bad_qkey_count;
    uint8_t src_gid_table_size;
    ri_lmc_t lmc;
    uint8_t max_vls;
    ri_sl_t sm_sl;
    uint8_t subnet_timeout;
    uint8_t init_type_reply;
};
typedef struct ri_ib_port_attr ri_ib_port_attr_t;

enum ri_ib_rnic_flags {
    RI_IB_APM = 1 << 0,
    RI_IB_RNR_NAK = 1 << 1,
    RI_IB_AH_PORT_CHECK = 1 << 2,
    RI_IB_CAN_CHANGE_PRIMARY_PORT = 1 << 3,
    RI_IB_CAN_CURRENT_QP_STATE = 1 << 4,
    RI_IB_ATOMICS = 1 << 5,
    RI_IB_ATOMICS_ALL_COMPONENTS = 1 << 6,
    RI_IB_TYPE_2B_WINDOWS = 1 << 7, /* BMM without this bit: type 2A */
    RI_IB_MULTIPLE_BLOCK_SIZES_PER_REGION = 1 << 8,
    RI_IB_UD_MULTICAST = 1 << 9,
    RI_IB_PORT_ACTIVE_EVENT = 1 << 10,
    RI_IB_SHUTDOWN_PORT = 1 << 11,
    RI_IB_PKEY_CNTR = 1 << 12,
    RI_IB_QKEY_CNTR = 1 << 13,
    RI_IB_SI_GUID = 1 << 14,
    RI_IB_INIT_TYPE = 1 << 15
};
typedef enum ri_ib_rnic_flags ri_ib_rnic_flags_t;

struct ri_ib_rnic_attr {
    uint64_t max_mr_size;
    uint64_t node_guid;
    uint64_t system_image_guid;
    ri_ib_port_attr_t *port_attrs;
    ri_ib_rnic_flags_t ib_rnic_flags;
    uint_t max_addr_hdls;
    uint_t max_mcgs; /* multicast limits are 0 without multicast */
    uint32_t max_multicast_qps;
    uint32_t max_qps_per_mcg;
    uint16_t partition_table_size;
    uint8_t num_ports;
    uint8_t local_ack_delay;
};
typedef struct ri_ib_rnic_attr ri_ib_rnic_attr_t;

/* ======================================================================
 * Transport selection and iWARP adapter attributes
 * ==================================================================== */

enum ri_rdma_transport_type { RI_RDMA_TRANSPORT_TYPE_IB, RI_RDMA_TRANSPORT_TYPE_IWARP };
typedef enum ri_rdma_transport_type ri_rdma_transport_type_t;

enum ri_iwarp_rnic_flags {
    RI_IWARP_CAN_MODIFY_IRD = 1 << 0,
    RI_IWARP_CAN_INCREASE_ORD = 1 << 1,
    RI_IWARP_TCP_SUPPORTED = 1 << 2,
    RI_IWARP_SCTP_SUPPORTED = 1 << 3,
    RI_IWARP_IETF_PERMISSIVE = 1 << 4,
    RI_IWARP_PREFER_MARKERS = 1 << 5,
    RI_IWARP_PREFER_CRC = 1 << 6,
    RI_IWARP_KEEPALIVE_SUPPORTED = 1 << 7
};
typedef enum ri_iwarp_rnic_flags ri_iwarp_rnic_flags_t;

struct ri_iwarp_port_attr {
    struct in6_addr *ipv6_addrs;
    struct in_addr *ipv4_addrs;
    uint_t port_num;
    uint_t num_ipv4_addrs;
    uint_t num_ipv6_addrs;
};
typedef struct ri_iwarp_port_attr ri_iwarp_port_attr_t;

struct ri_iwarp_rnic_attr {
    ri_iwarp_port_attr_t *port_attrs;
    uint_t protocol_version; /* 0 = RDMAC, 1 = IETF */
    uint_t num_ports;
    ri_iwarp_rnic_flags_t iwarp_rnic_flags;
};
typedef struct ri_iwarp_rnic_attr ri_iwarp_rnic_attr_t;

union ri_transport_attr_ptr {
    ri_ib_rnic_attr_t *ib;
    ri_iwarp_rnic_attr_t *iwarp;
};
typedef union ri_transport_attr_ptr ri_transport_attr_ptr_t;

/* ======================================================================
 * RNIC capabilities and attributes
 * ==================================================================== */

enum ri_rnic_flags {
    RI_RNIC_EXT_SRQ = 1 << 0,
    RI_RNIC_EXT_BMM = 1 << 1,
    RI_RNIC_EXT_ZBVA = 1 << 2, /* needs BMM */
    RI_RNIC_EXT_LIF = 1 << 3,  /* needs BMM */
    RI_RNIC_EXT_BLOCK_MODE = 1 << 4,
    RI_RNIC_RQ_OVERFLOW_CHECKING = 1 << 5,
    RI_RNIC_CQ_OVERFLOW_CHECKING = 1 << 6,
    RI_RNIC_CAN_RESIZE_QP = 1 << 7,
    RI_RNIC_CAN_RESIZE_SRQ = 1 << 8,
    RI_RNIC_SRQ_SEQ_DEQUEUE = 1 << 9,
    RI_RNIC_SRQ_LAST_WQE_ASYNC = 1 << 10,
    RI_RNIC_SAFE_POST_ON_RTS = 1 << 11,
    RI_RNIC_WIDE_WINDOWS_SUPPORTED = 1 << 12,
    RI_RNIC_KEY_INDEX_KEY_SPLIT = 1 << 13, /* pages: RI_RNIC_EXT_INDEX_KEY_SPLIT */
    RI_RNIC_CONSUMER0_OPAQUE = 1 << 14,
    RI_RNIC_CONSUMER1_OPAQUE = 1 << 15,
    RI_RNIC_CONSUMER2_OPAQUE = 1 << 16,
    /* local-solicited as pass-through bit (== CONSUMER2) or as real event */
    RI_RNIC_LOCAL_SOLICITED_OPAQUE = 1 << 16,
    RI_RNIC_LOCAL_SOLICITED_EVENT = 1 << 17,
    RI_RNIC_NON_COHERENT_MEMORY = 1 << 18
};
typedef enum ri_rnic_flags ri_rnic_flags_t;

struct ri_rnic_attr {
    /* bit i set: pages of 2^i bytes supported (page mode only) */
    uint64_t mem_page_sizes_bit_mask;
    /* block mode limits (block mode only) */
    uint64_t block_size_low;
    uint64_t block_size_hi;

    ri_transport_attr_ptr_t trans_attr;

    uint32_t vendor_id;
    uint32_t vendor_part_id;
    uint32_t hw_version;

    /* reserved L_Key (IB) or STag0 (iWARP, always 0) */
    uint32_t res_ltag_value;
#define stag0_value res_ltag_value

    uint_t max_pds;
    uint32_t max_qps;
    uint_t max_wrs_qp;
    uint_t max_srq; /* 0 without SRQ support */
    uint_t max_wrs_srq;
    uint_t max_sgl_send_recvqp;
    uint_t max_sgl_srq;
    uint_t max_sgl_rdma_write;
    uint_t max_sgl_rdma_read;
    uint32_t max_unregistered_inline; /* 0: no inline data */
    uint_t max_cqs;
    uint_t max_cqes_per_cq;
    uint_t max_cq_event_handlers;
    uint_t max_mrs;
    uint_t max_mws;
    uint_t max_pbl_size;
    uint_t max_ird;
    uint_t max_ird_per_qp;
    uint_t max_ord;
    uint_t max_ord_per_qp;

    ri_rdma_transport_type_t transport_type;
    ri_rnic_flags_t rnic_flags;

    char addl_vendor_info[RI_MAX_VENDOR_STRING_LEN]; /* NUL-terminated */
};
typedef struct ri_rnic_attr ri_rnic_attr_t;

enum ri_rnic_query_flags { RI_QUERY_RNIC_PORT_INFO = 1 << 0 };
typedef enum ri_rnic_query_flags ri_rnic_query_flags_t;

/* ri_rnic_modify() (IB only) */
enum ri_rnic_attr_mask { RI_IB_RNIC_ATTR_SI_GUID = 1 << 0 };
typedef enum ri_rnic_attr_mask ri_rnic_attr_mask_t;

enum ri_port_attr_mask {
    RI_IB_PORT_ATTR_SHUTDOWN = 1 << 0,
    RI_IB_PORT_ATTR_INIT_TYPE = 1 << 1,
    RI_IB_PORT_ATTR_QKEY_RESET = 1 << 2,
    RI_IB_PORT_ATTR_CAP_SET = 1 << 3,
    RI_IB_PORT_ATTR_CAP_FLAG_SM = 1 << 4,
    RI_IB_PORT_ATTR_CAP_FLAG_SNMP = 1 << 5,
    RI_IB_PORT_ATTR_CAP_FLAG_DEVMGT = 1 << 6,
    RI_IB_PORT_ATTR_CAP_FLAG_VENDOR = 1 << 7
};
typedef enum ri_port_attr_mask ri_port_attr_mask_t;

#define RI_IB_ALL_PORTS (0)

struct ri_port_modify_req {
    ri_port_attr_mask_t port_attr_mask;
    uint8_t port_number;
    uint8_t port_init_type;
};
typedef struct ri_port_modify_req ri_port_modify_req_t;

struct ri_rnic_modify_req {
    uint64_t si_guid;
    ri_port_modify_req_t *port_attrs;
    uint8_t port_list_size;
};
typedef struct ri_rnic_modify_req ri_rnic_modify_req_t;

/* Physical buffer list format, fixed per RNIC at ri_rnic_open(). */
enum ri_pbl_mode { RI_PHYS_PAGE_LIST_MODE, RI_PHYS_BLOCK_LIST_MODE };
typedef enum ri_pbl_mode ri_pbl_mode_t;

/* Where the consumer of an RNIC handle lives (ri_rnic_get_hdl). */
enum ri_consumer_domain { RI_CONSUMER_LOCATION_KERNEL, RI_CONSUMER_LOCATION_USER };
typedef enum ri_consumer_domain ri_consumer_domain_t;

enum ri_diag_op_type {
    RI_DIAG_RNIC_DETAILS,
    RI_DIAG_QP_DETAILS,
    RI_DIAG_RNIC_DUMP,
    RI_DIAG_RDMA_RESET
};
typedef enum ri_diag_op_type ri_diag_op_type_t;

/* ======================================================================
 * Memory: tags, registration, windows
 * ==================================================================== */

typedef uint32_t ri_ltag_t; /* local tag: L_Key / STag */
typedef uint32_t ri_rtag_t; /* remote tag: R_Key / STag */

enum ri_stag_state { RI_STAG_STATE_INVALID, RI_STAG_STATE_VALID };
typedef enum ri_stag_state ri_stag_state_t;

struct ri_phys_buf {
    ri_phys_addr_t phys_address;
    ri_phys_buf_len_t phys_len;
};
typedef struct ri_phys_buf ri_phys_buf_t;

enum ri_mr_rereg {
    RI_MR_REREG_TRANSLATE = 1 << 0,
    RI_MR_REREG_PD = 1 << 1,
    RI_MR_REREG_ACCESS = 1 << 2
};
typedef enum ri_mr_rereg ri_mr_rereg_t;

enum ri_mem_attr {
    RI_MEM_FLAGS_LOCAL_READ = 1 << 0,
    RI_MEM_FLAGS_LOCAL_WRITE = 1 << 1,
    RI_MEM_FLAGS_LOCAL = (RI_MEM_FLAGS_LOCAL_READ | RI_MEM_FLAGS_LOCAL_WRITE),
    RI_MEM_FLAGS_REMOTE_WRITE = 1 << 2,
    RI_MEM_FLAGS_REMOTE_READ = 1 << 3,
    RI_MEM_FLAGS_REMOTE = (RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_REMOTE_READ),
    RI_MEM_FLAGS_ATOMICS = 1 << 4,
    RI_MEM_FLAGS_BINDING = 1 << 5,
    RI_MEM_FLAGS_CONSUMER_OWNS_KEY = 1 << 6,
    RI_MEM_FLAGS_ZBVA = 1 << 7,
    RI_MEM_FLAGS_NONCOHERENT = 1 << 8,
    RI_MEM_FLAGS_USER_VA = 1 << 9,
    RI_MEM_FLAGS_SHARED_REG_IOVA = 1 << 10
};
typedef enum ri_mem_attr ri_mem_attr_t;

typedef uint64_t ri_addr_t;

struct ri_mr_reg_attr {
    ri_addr_t va;
    ri_length_t length;
    ri_mem_attr_t mem_attr;
    ri_pd_handle_t pd;
};
typedef struct ri_mr_reg_attr ri_mr_reg_attr_t;

/*
 * Physical registration.  pble_size != 0: phys_buf_list is an array of
 * nbufs ri_phys_addr_t, each naming pble_size bytes; pble_size == 0: an
 * array of nbufs ri_phys_buf_t.  address_offset is the first-byte offset.
 */
struct ri_mr_reg_phys_attr {
    ri_mr_reg_attr_t common;
    void *phys_buf_list;
    uint_t nbufs;
    uint_t pble_size;
    uint_t address_offset;
};
typedef struct ri_mr_reg_phys_attr ri_mr_reg_phys_attr_t;

struct ri_mr_info {
    ri_mr_reg_attr_t attr;
    ri_ltag_t ltag;
    ri_rtag_t rtag;
    ri_boolean_t is_shared_region;
    ri_addr_t local_lb;
    ri_addr_t local_ub;
    ri_addr_t remote_lb;
    ri_addr_t remote_ub;
    ri_stag_state_t stag_state;
};
typedef struct ri_mr_info ri_mr_info_t;

enum ri_mw_type {
    RI_MW_TYPE_1,
    RI_MW_TYPE_WIDE = RI_MW_TYPE_1,
    RI_MW_TYPE_2,
    RI_MW_TYPE_NARROW = RI_MW_TYPE_2
};
typedef enum ri_mw_type ri_mw_type_t;

/* ======================================================================
 * Completion queues
 * ==================================================================== */

typedef uint_t ri_cq_event_handler_id_t;

struct ri_cq_attr {
    uint32_t num_cqe;
    ri_cq_event_handler_id_t handler_id; /* 0: CQ can never be armed */
};
typedef struct ri_cq_attr ri_cq_attr_t;

enum ri_cq_modify_mask { RI_CQ_MODIFY_MASK_NUM_CQE = 0x1 };
typedef enum ri_cq_modify_mask ri_cq_modify_mask_t;

enum ri_cmplt_notify_type { RI_CMPLT_NOTIFY_SOLICITED, RI_CMPLT_NOTIFY_ANY };
typedef enum ri_cmplt_notify_type ri_cmplt_notify_type_t;

/* ======================================================================
 * Shared receive queues
 * ==================================================================== */

struct ri_srq_attr {
    uint32_t max_wrs;
    uint32_t max_sgl;
    uint32_t lowat;
    ri_pd_handle_t pd;
    ri_boolean_t srq_armed;
};
typedef struct ri_srq_attr ri_srq_attr_t;

/* max_sgl and pd cannot be modified; setting LOWAT arms the limit. */
enum ri_srq_attr_mask { RI_SRQ_ATTR_MAX_WRS = 1 << 0, RI_SRQ_ATTR_LOWAT = 1 << 1 };
typedef enum ri_srq_attr_mask ri_srq_attr_mask_t;

/* ======================================================================
 * Queue pairs
 * ==================================================================== */

enum ri_svc_type { RI_SERVICE_RELIABLE_CONNECTION, RI_SERVICE_UNRELIABLE_DATAGRAM };
typedef enum ri_svc_type ri_svc_type_t;

/* Requesting a state the transport does not have fails with
 * RI_RET_QP_INVALID_STATE. */
enum ri_qp_state {
    RI_QP_STATE_IDLE,
    RI_QP_STATE_READY_TO_SEND,
    RI_QP_STATE_ERROR,
    /* iWARP only */
    RI_QP_STATE_TERMINATE,
    RI_QP_STATE_CLOSING,
    /* InfiniBand only */
    RI_QP_STATE_SEND_QUEUE_ERROR,
    RI_QP_STATE_INITIALIZED,
    RI_QP_STATE_READY_TO_RECEIVE,
    RI_QP_STATE_SEND_QUEUE_DRAINING,
    RI_QP_STATE_SEND_QUEUE_DRAINED,
    RI_QP_STATE_TIMEWAIT
};
typedef enum ri_qp_state ri_qp_state_t;

struct ri_mpa_attr {
    ri_boolean_t recv_marker_enabled;
    ri_boolean_t xmit_marker_enabled;
    ri_boolean_t crc_enabled;
    uint32_t ddp_rdma_version; /* 0 (RDMAC) or 1 (IETF) */
};
typedef struct ri_mpa_attr ri_mpa_attr_t;

struct ri_iwarp_qp_attr {
    ri_boolean_t enable_bind;
    char terminate_buffer[52];
    uint32_t terminate_msg_length;
    ri_boolean_t is_terminate_local;
    ri_llp_stream_handle_t llp_stream_handle;
    ri_mpa_attr_t mpa_attrs;
    char *stream_msg_buf; /* last streaming-mode message (MPA frame) */
    uint32_t stream_msg_buf_length;
    uint32_t rq_hiwat;
    ri_boolean_t rq_armed;
};
typedef struct ri_iwarp_qp_attr ri_iwarp_qp_attr_t;

struct ri_gen_address_vector {
    uint8_t sl;
    uint8_t send_global_routing_hdr_flg;
    uint8_t hop_limit;
    uint8_t source_gid_index;
    uint32_t flow_label;
    ri_gid_t dgid;
    ri_lid_t dlid;
    uint8_t traffic_class;
    uint8_t max_static_rate;
    uint8_t source_path_bits;
};
typedef struct ri_gen_address_vector ri_gen_address_vector_t;

struct ri_path_address_info {
    uint16_t pkey_index;
    uint8_t physical_port;
    uint16_t path_mtu;
    uint8_t local_ack_timeout;
    uint8_t retry_count;
    uint8_t rnr_retry_count;
    ri_gen_address_vector_t av;
};
typedef struct ri_path_address_info ri_path_address_info_t;

enum ri_path_migration_state { RI_MIG_STATE_MIGRATED, RI_MIG_STATE_REARM, RI_MIG_STATE_ARMED };
typedef enum ri_path_migration_state ri_path_migration_state_t;

struct ri_ib_qp_attr {
    /* RC and UD */
    uint32_t send_psn;
    ri_boolean_t signal_completions;
    ri_svc_type_t trans_type;
    uint32_t enable_async_notify_for_sqd;
    ri_path_address_info_t primary_av;
    /* RC */
    uint32_t rcv_psn;
    uint32_t dest_qpn;
    uint32_t min_rnrnak_timer;
    ri_path_address_info_t alternate_av;
    ri_path_migration_state_t mig_state;
    ri_boolean_t enable_atomic;
    /* UD */
    ri_qp_state_t current_state;
    uint32_t rcv_qkey;
};
typedef struct ri_ib_qp_attr ri_ib_qp_attr_t;

/* UD address handle contents (IB). */
struct ri_ud_address_vector {
    ri_gen_address_vector_t av_common;
    uint8_t physical_port;
};
typedef struct ri_ud_address_vector ri_ud_address_vector_t;

/*
 * QP attributes.  scq/rcq/srq carry handles into ri_qp_create() and the
 * objects' os_data out of ri_qp_query().
 */
struct ri_qp_attr {
    uint32_t qp_id;
    union {
        ri_cq_handle_t scq_handle;
        ri_os_data_t scq_os_data;
    } scq;
    union {
        ri_cq_handle_t rcq_handle;
        ri_os_data_t rcq_os_data;
    } rcq;
    union {
        ri_srq_handle_t srq_handle;
        ri_os_data_t srq_os_data;
    } srq;
    ri_pd_handle_t pd;
    uint32_t sq_size;
    uint32_t rq_size;
    ri_boolean_t srq_valid;
    uint32_t sq_max_sges;
    uint32_t sq_max_sges_rdmaw;
    uint32_t rq_max_sges;
    ri_qp_state_t state;
    ri_boolean_t enable_rdma_read;
    ri_boolean_t enable_rdma_write;
    uint32_t max_rdma_read_outgoing; /* ORD */
    uint32_t max_rdma_read_incoming; /* IRD */
    ri_boolean_t enable_stag0_fastreg;
    union {
        ri_iwarp_qp_attr_t qp_iwarp;
        ri_ib_qp_attr_t qp_ib;
    } qp_xport;
};
typedef struct ri_qp_attr ri_qp_attr_t;

/*
 * ri_qp_modify() mask.  Bits 5..9 are read according to the QP's
 * transport: the iWARP names and the IB names share the same values.
 */
enum ri_qp_attr_mask {
    RI_QP_ATTR_NEXT_STATE = 1 << 0,
    RI_QP_ATTR_SQ_SIZE = 1 << 1,
    RI_QP_ATTR_RQ_SIZE = 1 << 2,
    RI_QP_ATTR_MAX_RDMA_READ_OUTGOING = 1 << 3,
    RI_QP_ATTR_MAX_RDMA_READ_INCOMING = 1 << 4,
    /* iWARP */
    RI_QP_ATTR_RQ_HIWAT = 1 << 5,
    RI_QP_ATTR_RQ_ARMED = 1 << 6,
    RI_QP_ATTR_LLQ_STREAM_HANDLE = 1 << 7,
    RI_QP_ATTR_STREAM_MSG_BUFFER = 1 << 8,
    RI_QP_ATTR_MPA_ATTR = 1 << 9,
    /* InfiniBand */
    RI_QP_ATTR_ENABLE_RDMA_READ = 1 << 5,
    RI_QP_ATTR_ENABLE_RDMA_WRITE = 1 << 6,
    RI_QP_ATTR_ENABLE_ATOMICS = 1 << 7,
    RI_QP_ATTR_DEST_QPID = 1 << 8,
    RI_QP_ATTR_ENABLE_SQD = 1 << 9,
    RI_QP_ATTR_QKEY = 1 << 10,
    RI_QP_ATTR_SEND_PSN = 1 << 11,
    RI_QP_ATTR_RECV_PSN = 1 << 12,
    RI_QP_ATTR_MIN_RNR_TIMER = 1 << 13,
    RI_QP_ATTR_PRIMARY_PATH = 1 << 14,
    RI_QP_ATTR_ALTERNATE_PATH = 1 << 15,
    RI_QP_ATTR_MIGSTATE = 1 << 16,
    RI_QP_ATTR_PRIMARY_PKEY = 1 << 17,
    RI_QP_ATTR_PORT_NUM = 1 << 18
};
typedef enum ri_qp_attr_mask ri_qp_attr_mask_t;

/* Special QPs (IB QP0/QP1). */
enum ri_sqp_type { RI_SQP_TYPE_SMI, RI_SQP_TYPE_GSI };
typedef enum ri_sqp_type ri_sqp_type_t;

/* ======================================================================
 * Work requests
 * ==================================================================== */

enum ri_wr_type {
    RI_WR_TYPE_SEND,
    RI_WR_TYPE_SEND_INVALIDATE,
    RI_WR_TYPE_RDMA_WRITE,
    RI_WR_TYPE_RDMA_READ,
    RI_WR_TYPE_BIND,
    RI_WR_TYPE_FAST_REGISTER,
    RI_WR_TYPE_LOCAL_INVALIDATE_MR,
    RI_WR_TYPE_LOCAL_INVALIDATE_MW,
    /* iWARP only */
    RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE,
    /* InfiniBand only */
    RI_WR_TYPE_COMPARE_AND_SWAP,
    RI_WR_TYPE_FETCH_AND_ADD,
    RI_WR_TYPE_SEND_IMMEDIATE,
    RI_WR_TYPE_RDMA_WRITE_IMMEDIATE
};
typedef enum ri_wr_type ri_wr_type_t;

enum ri_wr_flags {
    RI_WR_SIGNALED_FLAG = 0x01,        /* completion on success too */
    RI_WR_LOCAL_SOLICITED_FLAG = 0x02, /* fire the CQ handler on completion */
    RI_WR_SOLICITED_EVENT_FLAG = 0x04, /* solicited event at the peer */
    RI_WR_READ_FENCE_FLAG = 0x08,      /* wait for earlier RDMA Reads */
    RI_WR_LOCAL_FENCE_FLAG = 0x10,     /* wait for all earlier WRs */
    RI_WR_COALESCE_FLAG = 0x20,        /* doorbell may be deferred */
    RI_WR_INLINE_OK_FLAG = 0x40,       /* SGE addresses usable as pointers */
    RI_WR_CONSUMER_FLAG2 = RI_WR_LOCAL_SOLICITED_FLAG,
    RI_WR_CONSUMER_FLAG1 = 1 << 29,
    RI_WR_CONSUMER_FLAG0 = 1 << 30
};
typedef enum ri_wr_flags ri_wr_flags_t;

/* Scatter/gather element. */
struct ri_data_seg {
    union {
        ri_addr_t vaddr;
        ri_phys_addr_t paddr;
        ri_length_t offset; /* zero-based (ZBVA) regions */
    } addr;
    union {
        ri_ltag_t ltag;
        ri_rtag_t rtag; /* memory window as RDMA Read sink */
    } tag;
    uint32_t len;
};
typedef struct ri_data_seg ri_data_seg_t;

typedef uint64_t ri_wr_id_t;

/* Every send-queue WR structure starts with these three members. */
struct ri_wr_common {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
};
typedef struct ri_wr_common ri_wr_common_t;

struct ri_wr_send {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_data_seg_t *sg_list;
    ri_rtag_t rtag; /* SEND_INVALIDATE: remote STag to invalidate */
    uint_t num_sgls;
    uint32_t imm_data; /* IB only */
};
typedef struct ri_wr_send ri_wr_send_t;

struct ri_wr_rdma_write {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_data_seg_t *sg_list;
    uint64_t rdma_addr;
    ri_rtag_t rtag;
    uint_t num_sgls;
    uint32_t imm_data; /* IB only */
};
typedef struct ri_wr_rdma_write ri_wr_rdma_write_t;

struct ri_wr_rdma_read {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_data_seg_t *sg_list; /* local sink */
    uint64_t rdma_addr;     /* remote source */
    uint_t num_sgls;
    ri_rtag_t rtag;
};
typedef struct ri_wr_rdma_read ri_wr_rdma_read_t;

struct ri_wr_bind {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_mw_handle_t mw_handle;
    ri_rtag_t rtag; /* new RTag written back on success */
    ri_mr_handle_t mr_handle;
    ri_ltag_t ltag;
    ri_addr_t vaddr;
    ri_length_t length;
    ri_mem_attr_t mem_attr;
};
typedef struct ri_wr_bind ri_wr_bind_t;

struct ri_wr_fmr {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_mr_reg_phys_attr_t attr;
    ri_ltag_t ltag;
    ri_rtag_t rtag;
    ri_mr_handle_t mr_handle;
};
typedef struct ri_wr_fmr ri_wr_fmr_t;

/* Target of a local invalidate: a region or a window. */
union ri_mr_w_handle {
    ri_mr_handle_t mr_handle;
    ri_mw_handle_t mw_handle;
};
typedef union ri_mr_w_handle ri_mr_w_handle_t;

struct ri_wr_local_invalidate {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_ltag_t ltag;
    ri_rtag_t rtag;
    ri_mr_w_handle_t mrw_handle;
};
typedef struct ri_wr_local_invalidate ri_wr_local_invalidate_t;

struct ri_wr_atomic {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_rtag_t rtag;
    uint64_t atomic_operand1;
    uint64_t atomic_operand2;
    ri_data_seg_t atomic_result;
};
typedef struct ri_wr_atomic ri_wr_atomic_t;

struct ri_wr_datagram {
    ri_wr_type_t type;
    ri_wr_flags_t flags;
    ri_wr_id_t id;
    ri_data_seg_t *sg_list;
    uint_t num_sgls;
    uint32_t imm_data;
    ri_address_handle_t remote_node_address;
    uint32_t dest_qp;
    uint32_t dest_qkey;
    uint8_t max_static_rate;
};
typedef struct ri_wr_datagram ri_wr_datagram_t;

/* One send-queue work request; post arrays of this type. */
union ri_wr {
    ri_wr_common_t wr_common;
    ri_wr_send_t wr_send;
    ri_wr_rdma_read_t wr_rdma_read;
    ri_wr_rdma_write_t wr_rdma_write;
    ri_wr_bind_t wr_bind;
    ri_wr_fmr_t wr_fmr;
    ri_wr_local_invalidate_t wr_li;
    ri_wr_atomic_t wr_atomic;
    ri_wr_datagram_t wr_datagram;
};
typedef union ri_wr ri_wr_t;

/* Receive work request (QP receive queue and SRQ). */
struct ri_wr_recv {
    ri_wr_flags_t flags; /* LOCAL_SOLICITED and COALESCE only */
    ri_wr_id_t id;
    ri_data_seg_t *sg_list;
    uint_t num_sgls;
};
typedef struct ri_wr_recv ri_wr_recv_t;

/* ======================================================================
 * Asynchronous events and callbacks
 * ==================================================================== */

enum ri_async_event_type {
    /* iWARP only */
    RI_EVENT_QP_LLQ_CLOSE_COMPLETE,
    RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED,
    RI_EVENT_QP_LLQ_CONNECTION_RESET,
    RI_EVENT_QP_LLQ_CONNECTION_LOST,
    RI_EVENT_QP_LLQ_INTEGRITY_ERROR_SIZE,
    RI_EVENT_QP_LLQ_INTEGRITY_ERROR_CRC,
    RI_EVENT_QP_LLQ_INTEGRITY_ERROR_BAD_FPDU,
    RI_EVENT_QP_REMOTE_OP_ERROR_DDP_VERSION,
    RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_VERSION,
    RI_EVENT_QP_REMOTE_OP_ERROR_OPCODE,
    RI_EVENT_QP_REMOTE_OP_ERROR_DDP_QN,
    RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_RD_DISABLED,
    RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_WR_RD_RESP_DISABLED,
    RI_EVENT_QP_REMOTE_OP_ERROR_RDMA_RD_INVALID,
    RI_EVENT_QP_REMOTE_OP_ERROR_NO_L_BIT,
    RI_EVENT_QP_PROTECTION_ERROR_STAG_QP_MISMATCH,
    RI_EVENT_QP_PROTECTION_ERROR_BOUNDS_VIOLATION,
    RI_EVENT_QP_PROTECTION_ERROR_ACCESS_VIOLATION,
    RI_EVENT_QP_PROTECTION_ERROR_INVALID_PD,
    RI_EVENT_QP_PROTECTION_ERROR_WRAP_ERROR,
    RI_EVENT_TYPE_BAD_CLOSE, /* pages: RI_EVENT_QP_BAD_CLOSE */
    RI_EVENT_QP_BAD_LLQ_CLOSE,
    RI_EVENT_QP_RQ_PROTECTION_ERROR_INVALID_MSN,
    RI_EVENT_QP_RQ_PROTECTION_ERROR_MSN_GAP,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_TOO_MANY_RDMA_READS,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_MSN_GAP,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_MSN,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_STAG,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_BOUNDS_VIOLATION,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_ACCESS_VIOLATION,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_INVALID_PD,
    RI_EVENT_QP_IRRQ_PROTECTION_ERROR_WRAP_ERROR,
    RI_EVENT_QP_CQ_SQ_ERROR,
    RI_EVENT_QP_CQ_RQ_ERROR,
    RI_EVENT_CQ_OVERFLOW_DETECTED, /* optional on iWARP */
    RI_EVENT_CQ_OP_ERROR,
    RI_EVENT_QP_SRQ_ERROR,
    RI_EVENT_QP_LOCAL_CATASTROPHIC_ERROR,
    RI_EVENT_QP_RQ_LIMIT_REACHED,

    /* both transports */
    RI_EVENT_SRQ_LIMIT_REACHED,
    RI_EVENT_SRQ_CATASTROPHIC_ERROR,
    RI_EVENT_LOCAL_CATASTROPHIC_ERROR,
    RI_EVENT_RNIC_LOCAL_CATASTROPHIC_ERROR = RI_EVENT_LOCAL_CATASTROPHIC_ERROR,
    RI_EVENT_QP_LAST_WQE_REACHED, /* optional on iWARP */

    /* InfiniBand only */
    RI_EVENT_TYPE_QP_PATH_MIGRATED,
    RI_EVENT_TYPE_QP_COMMUNICATION_ESTABLISHED,
    RI_EVENT_TYPE_QP_SEND_QUEUE_DRAINED,
    RI_EVENT_CQ_ERROR,
    RI_EVENT_QP_LOCAL_WQ_CATASTROPHIC_ERROR,
    RI_EVENT_QP_INVALID_REQ_LOCAL_WQ_ERROR,
    RI_EVENT_QP_LOCAL_ACCESS_VIOLATION_WQ_ERROR,
    RI_EVENT_QP_PATH_MIG_REQ_ERROR,
    RI_EVENT_PORT_EVENT,
    RI_EVENT_CLIENT_REG_EVENT
};
typedef enum ri_async_event_type ri_async_event_type_t;

struct ri_ib_port_event {
    uint8_t port_number; /* 0: port not known */
    ri_ib_port_state_t port_state;
};
typedef struct ri_ib_port_event ri_ib_port_event_t;

union ri_event_data {
    ri_ib_port_event_t port_event; /* RI_EVENT_PORT_EVENT */
    ri_os_data_t resource_os_data; /* create-time os_data of the QP/CQ/SRQ,
                                      or rnic_open os_data for RNIC-wide errors */
};
typedef union ri_event_data ri_event_data_t;

struct ri_event_record {
    ri_async_event_type_t event_type;
    ri_event_data_t event_data;
    ri_err_data_t err_data;
};
typedef struct ri_event_record ri_event_record_t;

/* Asynchronous event handler; vp_hdl_os_data is the ri_rnic_open() os_data. */
typedef void (*ri_async_event_callback_t)(IN OUT ri_os_data_t vp_hdl_os_data,
                                          IN ri_event_record_t *event);

/* Completion handler; cq_os_data is the ri_cq_create() os_data. */
typedef void (*ri_cq_event_callback_t)(IN OUT ri_os_data_t vp_hdl_os_data,
                                       IN OUT ri_os_data_t cq_os_data);

/* ======================================================================
 * Work completions
 * ==================================================================== */

enum ri_wc_type {
    RI_WC_TYPE_SEND = 0x1,
    RI_WC_TYPE_DATA_RECEIVED = 0x2,
    RI_WC_TYPE_RDMA_WRITE = 0x4,
    RI_WC_TYPE_RDMA_READ = 0x5,
    RI_WC_TYPE_BIND = 0x6,
    RI_WC_TYPE_FAST_REGISTER,
    RI_WC_TYPE_LOCAL_INVALIDATE,
    RI_WC_TYPE_RDMA_READ_LOCAL_INVALIDATE,
    RI_WC_TYPE_COMPARE_AND_SWAP,
    RI_WC_TYPE_FETCH_AND_ADD,
    RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED /* pages: ..._RDMA_WRITE_IMMEDIATE_RECEIVED */
};
typedef enum ri_wc_type ri_wc_type_t;

enum ri_wc_flags {
    RI_WC_FLAG_SOLICITED_EVENT = 1 << 0,
    RI_WC_FLAG_LOCAL_SOLICITED = 1 << 1,
    RI_WC_FLAG_RTAG_INVALIDATE = 1 << 2, /* invalidated_rtag is valid */
    RI_WC_FLAG_IMMEDIATE_DATA = 1 << 3,
    RI_WC_FLAG_CONSUMER2 = RI_WC_FLAG_LOCAL_SOLICITED,
    RI_WC_FLAG_CONSUMER1 = 1 << 29,
    RI_WC_FLAG_CONSUMER0 = 1 << 30
};
typedef enum ri_wc_flags ri_wc_flags_t;

enum ri_wc_status {
    RI_WC_STATUS_SUCCESS = 0,
    RI_WC_STATUS_WR_FLUSHED_ERROR = 1,
    RI_WC_STATUS_LOCAL_QP_CATASTROPHIC = 2,
    RI_WC_STATUS_LOCAL_QP_OP_ERROR = 2, /* deliberately equal */

    /* iWARP */
    RI_WC_STATUS_WQE_FORMAT_ERROR,
    RI_WC_STATUS_REMOTE_TERMINATION_ERROR,
    RI_WC_STATUS_INVALID_STAG_ERROR,
    RI_WC_STATUS_BASE_BOUNDS_VIOLATION_ERROR,
    RI_WC_STATUS_ACCESS_VIOLATION_ERROR,
    RI_WC_STATUS_INVALID_PD_ERROR,
    RI_WC_STATUS_ADDRESS_WRAP_ERROR,
    RI_WC_STATUS_STAG_INVALIDATE_ERROR,
    RI_WC_STATUS_ZERO_ORD_ERROR,
    RI_WC_STATUS_FMR_QP_NOT_PRIVILEGED_ERROR,
    RI_WC_STATUS_STAG_NOT_IN_INVALID_STATE_ERROR,
    RI_WC_STATUS_INVALID_FMR_PAGE_SIZE_ERROR,
    RI_WC_STATUS_INVALID_FMR_BLOCK_SIZE_ERROR,
    RI_WC_STATUS_INVALID_FMR_PBL_ENTRY_ERROR,
    RI_WC_STATUS_INVALID_FMR_FBO_ERROR,
    RI_WC_STATUS_INVALID_FMR_LENGTH_ERROR,
    RI_WC_STATUS_INVALID_FMR_PERMS_ERROR,
    RI_WC_STATUS_FMR_PBL_TOO_LONG_ERROR,
    RI_WC_STATUS_INVALID_FMR_VA_ERROR,
    RI_WC_STATUS_INVALID_BIND_MR_ERROR,
    RI_WC_STATUS_INVALID_BIND_MW_ERROR,
    RI_WC_STATUS_HUGE_PAYLOAD_ERROR,

    /* InfiniBand */
    RI_WC_STATUS_LOCAL_LENGTH_ERROR,
    RI_WC_STATUS_LOCAL_PROTECTION_ERROR,
    RI_WC_STATUS_MEMORY_MGMT_ERROR,
    RI_WC_STATUS_BAD_RESPONSE_ERROR,
    RI_WC_STATUS_LOCAL_ACCESS_ERROR,
    RI_WC_STATUS_REMOTE_INVALID_REQ_ERROR,
    RI_WC_STATUS_REMOTE_ACCESS_ERROR,
    RI_WC_STATUS_REMOTE_OP_ERROR,
    RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED,
    RI_WC_STATUS_RNR_RETRY_EXCEEDED,
    RI_WC_STATUS_REMOTE_ABORTED_ERROR
};
typedef enum ri_wc_status ri_wc_status_t;

/* Reliable-connection completion (layout kept close to IT-API's DTO event). */
struct ri_rc_wc {
    ri_wc_type_t op_type; /* must stay first */
    ri_os_data_t cq_os_data;
    ri_wc_flags_t flags;
    ri_rtag_t invalidated_rtag;
    ri_os_data_t qp_os_data;
    ri_wr_id_t id;
    ri_wc_status_t op_status;
    uint32_t bytes_transferred;
    uint32_t immediate_data; /* IB only */
    ri_err_data_t err_data;
};
typedef struct ri_rc_wc ri_rc_wc_t;

/* Generic (UD capable) completion. */
struct ri_gen_wc {
    ri_wc_type_t op_type; /* must stay first */
    ri_os_data_t cq_os_data;
    ri_wc_flags_t flags;
    uint32_t qpn;
    ri_os_data_t qp_os_data;
    ri_wr_id_t id;
    ri_wc_status_t op_status;
    uint32_t bytes_transferred;
    uint32_t immediate_data;
    ri_lid_t remote_lid;
    uint32_t remote_qpn;
    uint8_t remote_sl;
    uint8_t local_lid_pathbits;
    uint16_t ether_type;
    uint32_t grh_present;
    uint32_t pkey_index;
    uint32_t freed_resource_count;
    ri_err_data_t err_data;
};
typedef struct ri_gen_wc ri_gen_wc_t;

/* One completion; ri_cq_poll() always fills an array of this type. */
union ri_wc {
    ri_wc_type_t type_wc;
    ri_rc_wc_t rc_wc;
    ri_gen_wc_t ud_wc;
};
typedef union ri_wc ri_wc_t;

/* ======================================================================
 * Device registration (SVC interface)
 * ==================================================================== */

struct ri_services_dev_arg {
    uint32_t rnicpi_major_version;
    uint32_t rnicpi_minor_version;
    uint32_t fw_major_version;
    uint32_t fw_minor_version;
    uint32_t fw_sub_minor_version;
    uint_t query_size;                  /* bytes needed by ri_rnic_query() */
    char lib_path[RI_MAX_LIB_PATH_LEN]; /* user-space provider library */
    char hw_path[RI_MAX_HW_PATH_LEN];   /* persistent device identification */
};
typedef struct ri_services_dev_arg ri_services_dev_arg_t;

/* ======================================================================
 * Provider operation signatures (one per ri_ops member)
 * ==================================================================== */

/* --- RNIC and verbs provider ------------------------------------------ */

typedef ri_api_return_t (*ri_op_rnic_open_t)(IN ri_vp_handle_t vp_hdl, IN ri_pbl_mode_t pbl_mode,
                                             IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_rnic_close_t)(IN ri_vp_handle_t vp_hdl,
                                              OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_async_set_event_handler_t)(
    IN ri_vp_handle_t vp_hdl, IN ri_async_event_callback_t async_event_callback,
    OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_rnic_get_hdl_t)(
    IN ri_vp_handle_t vp_hdl, IN ri_consumer_domain_t location, OUT ri_rnic_handle_t *rnic,
    IN OUT ri_vp_data_t vp_data, IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_rnic_query_t)(IN ri_rnic_handle_t rnic,
                                              IN ri_rnic_query_flags_t flags,
                                              OUT ri_rnic_attr_t *attrs, IN OUT uint_t *attr_size,
                                              OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_rnic_modify_t)(IN ri_rnic_handle_t rnic,
                                               IN ri_rnic_attr_mask_t attr_mask,
                                               IN ri_rnic_modify_req_t *attrs,
                                               OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_rnic_free_hdl_t)(IN ri_vp_handle_t vp_hdl, IN ri_rnic_handle_t rnic,
                                                 OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_rnic_diag_t)(IN ri_rnic_handle_t rnic, IN ri_diag_op_type_t op,
                                             IN void *arg, IN OUT unsigned char *opval,
                                             IN OUT ri_length_t *oplen,
                                             OUT ri_err_data_t *err_data);

/* --- protection domain -------------------------------------------------- */

typedef ri_api_return_t (*ri_op_pd_alloc_t)(IN ri_rnic_handle_t rnic, OUT ri_pd_handle_t *pd,
                                            IN OUT ri_vp_data_t vp_data,
                                            IN OUT ri_os_data_t os_data,
                                            OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_pd_dealloc_t)(IN ri_rnic_handle_t rnic, IN ri_pd_handle_t pd,
                                              OUT ri_err_data_t *err_data);

/* --- completion queue ----------------------------------------------------- */

typedef ri_api_return_t (*ri_op_cq_create_t)(IN ri_rnic_handle_t rnic, IN OUT ri_cq_attr_t *cq_attr,
                                             OUT ri_cq_handle_t *cq, IN OUT ri_vp_data_t vp_data,
                                             IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_cq_query_t)(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                            OUT ri_cq_attr_t *cq_attr, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_cq_modify_t)(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                             IN ri_cq_modify_mask_t mask,
                                             IN OUT ri_cq_attr_t *cq_attr,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_cq_destroy_t)(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                              OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_special_qp_get_t)(
    IN ri_rnic_handle_t rnic, IN uint8_t port, IN ri_sqp_type_t qp_type, IN OUT ri_qp_attr_t *attrs,
    OUT ri_qp_handle_t *qp, IN OUT ri_vp_data_t vp_data, IN OUT ri_os_data_t os_data,
    OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_cq_set_event_handler_t)(IN ri_vp_handle_t vp_hdl,
                                                        IN OUT ri_cq_event_handler_id_t *handler_id,
                                                        IN ri_cq_event_callback_t cq_callback,
                                                        OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_cq_req_notification_t)(IN ri_rnic_handle_t rnic,
                                                       IN ri_cq_handle_t cq,
                                                       IN ri_cmplt_notify_type_t type,
                                                       OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_cq_poll_t)(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                           OUT ri_wc_t *wcs, IN OUT uint_t *num_wcs,
                                           OUT ri_err_data_t *err_data);

/* --- queue pair ------------------------------------------------------------ */

typedef ri_api_return_t (*ri_op_qp_create_t)(IN ri_rnic_handle_t rnic, IN OUT ri_qp_attr_t *attrs,
                                             OUT ri_qp_handle_t *qp, IN OUT ri_vp_data_t vp_data,
                                             IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_query_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                            OUT ri_qp_attr_t *attrs, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_modify_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                             IN ri_qp_attr_mask_t qp_mask,
                                             IN OUT ri_qp_attr_t *attrs,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_destroy_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                              OUT ri_err_data_t *err_data);

/* --- send queue posting ------------------------------------------------------ */

typedef ri_api_return_t (*ri_op_qp_postsq_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                             IN ri_wr_t *wr, IN OUT uint_t *num_wrs,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_send_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                                IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                                IN ri_wr_id_t id, IN ri_data_seg_t *sg_list,
                                                IN ri_rtag_t rtag, IN uint_t num_sgls,
                                                IN uint32_t imm_data, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_rdma_read_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                                     IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                                     IN ri_wr_id_t id, IN ri_data_seg_t *sg_list,
                                                     IN uint64_t rdma_addr, IN uint_t num_sgls,
                                                     IN ri_rtag_t rtag,
                                                     OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_rdma_write_t)(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_data_seg_t *sg_list, IN uint64_t rdma_addr, IN ri_rtag_t rtag,
    IN uint_t num_sgls, IN uint32_t imm_data, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_bind_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                                IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                                IN ri_wr_id_t id, IN ri_mw_handle_t mw_handle,
                                                IN ri_rtag_t rtag, IN ri_mr_handle_t mr_handle,
                                                IN ri_ltag_t ltag, IN ri_addr_t vaddr,
                                                IN ri_length_t length, IN ri_mem_attr_t mem_attr,
                                                OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_fmr_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                               IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                               IN ri_wr_id_t id, IN ri_mr_reg_phys_attr_t *attr,
                                               IN ri_ltag_t ltag, IN ri_rtag_t rtag,
                                               IN ri_mr_handle_t mr_handle,
                                               OUT ri_err_data_t *err_data);

/* mrw_handle names the region (LOCAL_INVALIDATE_MR) or window (_MW). */
typedef ri_api_return_t (*ri_op_qp_post_local_invalidate_t)(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_ltag_t ltag, IN ri_rtag_t rtag, IN ri_mr_handle_t mrw_handle,
    OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_atomic_t)(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_rtag_t rtag, IN uint64_t atomic_operand1, IN uint64_t atomic_operand2,
    IN ri_data_seg_t *atomic_result, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_datagram_t)(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_data_seg_t *sg_list, IN uint_t num_sgls, IN uint32_t imm_data,
    IN ri_address_handle_t remote_node_address, IN uint32_t dest_qp, IN uint32_t dest_qkey,
    IN uint8_t max_static_rate, OUT ri_err_data_t *err_data);

/* --- receive queue posting ---------------------------------------------------- */

typedef ri_api_return_t (*ri_op_qp_postrq_t)(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp_handle,
                                             IN ri_wr_recv_t *wr, IN OUT uint_t *num_wrs,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_qp_post_recv_t)(IN ri_rnic_handle_t rnic,
                                                IN ri_qp_handle_t qp_handle, IN ri_wr_flags_t flags,
                                                IN ri_wr_id_t id, IN ri_data_seg_t *sg_list,
                                                IN uint_t num_sgls, OUT ri_err_data_t *err_data);

/* --- shared receive queue ---------------------------------------------------- */

typedef ri_api_return_t (*ri_op_srq_create_t)(IN ri_rnic_handle_t rnic,
                                              IN OUT ri_srq_attr_t *srq_attrs,
                                              OUT ri_srq_handle_t *srq, IN OUT ri_vp_data_t vp_data,
                                              IN OUT ri_os_data_t os_data,
                                              OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_srq_query_t)(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq,
                                             OUT ri_srq_attr_t *srq_attrs,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_srq_modify_t)(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq,
                                              IN ri_srq_attr_mask_t srqmask,
                                              IN OUT ri_srq_attr_t *attrs,
                                              OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_srq_destroy_t)(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq,
                                               OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_srq_post_t)(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq_handle,
                                            IN ri_wr_recv_t *wr, IN OUT uint_t *num_wrs,
                                            OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_srq_post_recv_t)(IN ri_rnic_handle_t rnic,
                                                 IN ri_srq_handle_t srq_handle,
                                                 IN ri_wr_flags_t flags, IN ri_wr_id_t id,
                                                 IN ri_data_seg_t *sg_list, IN uint_t num_sgls,
                                                 OUT ri_err_data_t *err_data);

/* --- memory regions -------------------------------------------------------------- */

typedef ri_api_return_t (*ri_op_ltag_alloc_t)(
    IN ri_rnic_handle_t rnic, IN OUT uint_t *address_list_length, IN ri_pd_handle_t pd,
    IN ri_mem_attr_t attr, OUT ri_mr_handle_t *mr, IN OUT ri_ltag_t *ltag, OUT ri_rtag_t *rtag,
    IN OUT ri_vp_data_t vp_data, IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_reg_t)(IN ri_rnic_handle_t rnic,
                                          IN const ri_mr_reg_attr_t *mr_reg_attr,
                                          OUT ri_mr_handle_t *mr, IN OUT ri_ltag_t *ltag,
                                          OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                          IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_query_t)(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t mr,
                                            OUT ri_mr_info_t *mr_info, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_rereg_t)(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t in_mr,
                                            IN ri_mr_rereg_t change_mask,
                                            IN const ri_mr_reg_attr_t *mr_attr,
                                            OUT ri_mr_handle_t *out_mr, IN OUT ri_ltag_t *ltag,
                                            OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                            IN OUT ri_os_data_t os_data,
                                            OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_dereg_t)(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t mr,
                                            OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_reg_phys_t)(IN ri_rnic_handle_t rnic,
                                               IN OUT ri_mr_reg_phys_attr_t *mr_phys_attr,
                                               OUT ri_mr_handle_t *mr, IN OUT ri_ltag_t *ltag,
                                               OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                               IN OUT ri_os_data_t os_data,
                                               OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_rereg_phys_t)(
    IN ri_rnic_handle_t rnic, IN ri_mr_handle_t in_mr, IN ri_mr_rereg_t change_mask,
    IN OUT ri_mr_reg_phys_attr_t *mr_phys_attr, OUT ri_mr_handle_t *out_mr, IN OUT ri_ltag_t *ltag,
    IN OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data, IN OUT ri_os_data_t os_data,
    OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mr_reg_shared_t)(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t in_mr,
                                                 IN OUT ri_mr_reg_attr_t *mr_reg_attr,
                                                 OUT ri_mr_handle_t *out_mr, IN OUT ri_ltag_t *ltag,
                                                 OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                                 IN OUT ri_os_data_t os_data,
                                                 OUT ri_err_data_t *err_data);

/* --- memory windows ------------------------------------------------------------------ */

typedef ri_api_return_t (*ri_op_mw_alloc_t)(IN ri_rnic_handle_t rnic, IN ri_pd_handle_t pd,
                                            IN ri_mw_type_t mw_type, OUT ri_mw_handle_t *mw,
                                            OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                            IN OUT ri_os_data_t os_data,
                                            OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mw_dealloc_t)(IN ri_rnic_handle_t rnic, IN ri_mw_handle_t mw,
                                              OUT ri_err_data_t *err_data);

/* Any output pointer may be NULL. */
typedef ri_api_return_t (*ri_op_mw_query_t)(IN ri_rnic_handle_t rnic, IN ri_mw_handle_t mw,
                                            OUT ri_mw_type_t *mw_type,
                                            OUT ri_stag_state_t *stag_state, OUT ri_pd_handle_t *pd,
                                            OUT ri_mem_attr_t *attr, OUT ri_rtag_t *rtag,
                                            OUT ri_err_data_t *err_data);

/* --- pinning, mapping, coherence ------------------------------------------------- */

typedef ri_api_return_t (*ri_op_mem_pin_t)(IN ri_rnic_handle_t rnic, IN ri_vaddr_t vaddr,
                                           IN ri_length_t len, IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mem_unpin_t)(IN ri_rnic_handle_t rnic, IN ri_vaddr_t vaddr,
                                             IN ri_length_t len, IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mem_map_t)(IN ri_rnic_handle_t rnic, IN ri_vaddr_t vaddr,
                                           IN ri_length_t len, OUT ri_phys_buf_t *io,
                                           IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mem_unmap_t)(IN ri_rnic_handle_t rnic, IN ri_phys_buf_t *io,
                                             IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mem_sync_rread_t)(IN ri_rnic_handle_t rnic,
                                                  IN ri_data_seg_t *local_seg_list,
                                                  IN uint_t num_seg, OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mem_sync_rwrite_t)(IN ri_rnic_handle_t rnic,
                                                   IN ri_data_seg_t *local_seg_list,
                                                   IN uint_t num_seg, OUT ri_err_data_t *err_data);

/* --- InfiniBand only ------------------------------------------------------------------ */

typedef ri_api_return_t (*ri_op_ah_create_t)(IN ri_rnic_handle_t rnic, IN ri_pd_handle_t pd,
                                             IN ri_ud_address_vector_t *av,
                                             OUT ri_address_handle_t *ah,
                                             IN OUT ri_vp_data_t vp_data,
                                             IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_ah_query_t)(IN ri_rnic_handle_t rnic, IN ri_address_handle_t ah,
                                            OUT ri_ud_address_vector_t *av, OUT ri_pd_handle_t *pd,
                                            OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_ah_modify_t)(IN ri_rnic_handle_t rnic, IN ri_address_handle_t ah,
                                             IN ri_ud_address_vector_t *av,
                                             OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_ah_destroy_t)(IN ri_rnic_handle_t rnic, IN ri_address_handle_t ah,
                                              OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mcast_attach_t)(IN ri_rnic_handle_t rnic, IN ri_lid_t mlid,
                                                IN ri_gid_t *mgid, IN ri_qp_handle_t qp,
                                                IN OUT ri_vp_data_t vp_data,
                                                IN OUT ri_os_data_t os_data,
                                                OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_mcast_detach_t)(IN ri_rnic_handle_t rnic, IN ri_lid_t mlid,
                                                IN ri_gid_t *mgid, IN ri_qp_handle_t qp,
                                                OUT ri_err_data_t *err_data);

typedef ri_api_return_t (*ri_op_process_sma_mad_t)(IN ri_rnic_handle_t rnic, IN uint8_t port_num,
                                                   IN char *in_mad, OUT char *out_mad,
                                                   OUT ri_err_data_t *err_data);

/* ======================================================================
 * Provider operations vector (member order is part of the ABI)
 * ==================================================================== */

struct ri_ops {
    ri_op_rnic_open_t ri_op_rnic_open;
    ri_op_rnic_close_t ri_op_rnic_close;
    ri_op_async_set_event_handler_t ri_op_async_set_event_handler;
    ri_op_rnic_get_hdl_t ri_op_rnic_get_hdl;
    ri_op_rnic_query_t ri_op_rnic_query;
    ri_op_rnic_modify_t ri_op_rnic_modify;
    ri_op_rnic_free_hdl_t ri_op_rnic_free_hdl;
    ri_op_rnic_diag_t ri_op_rnic_diag;
    ri_op_pd_alloc_t ri_op_pd_alloc;
    ri_op_pd_dealloc_t ri_op_pd_dealloc;
    ri_op_cq_create_t ri_op_cq_create;
    ri_op_cq_query_t ri_op_cq_query;
    ri_op_cq_modify_t ri_op_cq_modify;
    ri_op_cq_destroy_t ri_op_cq_destroy;
    ri_op_special_qp_get_t ri_op_special_qp_get;
    ri_op_cq_set_event_handler_t ri_op_cq_set_event_handler;
    ri_op_cq_req_notification_t ri_op_cq_req_notification;
    ri_op_cq_poll_t ri_op_cq_poll;
    ri_op_qp_create_t ri_op_qp_create;
    ri_op_qp_query_t ri_op_qp_query;
    ri_op_qp_modify_t ri_op_qp_modify;
    ri_op_qp_destroy_t ri_op_qp_destroy;
    ri_op_qp_postsq_t ri_op_qp_postsq;
    ri_op_qp_post_send_t ri_op_qp_post_send;
    ri_op_qp_post_rdma_read_t ri_op_qp_post_rdma_read;
    ri_op_qp_post_rdma_write_t ri_op_qp_post_rdma_write;
    ri_op_qp_post_bind_t ri_op_qp_post_bind;
    ri_op_qp_post_fmr_t ri_op_qp_post_fmr;
    ri_op_qp_post_local_invalidate_t ri_op_qp_post_local_invalidate;
    ri_op_qp_post_atomic_t ri_op_qp_post_atomic;
    ri_op_qp_post_datagram_t ri_op_qp_post_datagram;
    ri_op_qp_postrq_t ri_op_qp_postrq;
    ri_op_qp_post_recv_t ri_op_qp_post_recv;
    ri_op_srq_create_t ri_op_srq_create;
    ri_op_srq_query_t ri_op_srq_query;
    ri_op_srq_modify_t ri_op_srq_modify;
    ri_op_srq_destroy_t ri_op_srq_destroy;
    ri_op_srq_post_t ri_op_srq_post;
    ri_op_srq_post_recv_t ri_op_srq_post_recv;
    ri_op_ltag_alloc_t ri_op_ltag_alloc;
    ri_op_mr_reg_t ri_op_mr_reg;
    ri_op_mr_query_t ri_op_mr_query;
    ri_op_mr_rereg_t ri_op_mr_rereg;
    ri_op_mr_dereg_t ri_op_mr_dereg;
    ri_op_mr_reg_phys_t ri_op_mr_reg_phys;
    ri_op_mr_rereg_phys_t ri_op_mr_rereg_phys;
    ri_op_mr_reg_shared_t ri_op_mr_reg_shared;
    ri_op_mw_alloc_t ri_op_mw_alloc;
    ri_op_mw_dealloc_t ri_op_mw_dealloc;
    ri_op_mw_query_t ri_op_mw_query;
    ri_op_mem_pin_t ri_op_mem_pin;
    ri_op_mem_unpin_t ri_op_mem_unpin;
    ri_op_mem_map_t ri_op_mem_map;
    ri_op_mem_unmap_t ri_op_mem_unmap;
    ri_op_mem_sync_rread_t ri_op_mem_sync_rread;
    ri_op_mem_sync_rwrite_t ri_op_mem_sync_rwrite;
    ri_op_ah_create_t ri_op_ah_create;
    ri_op_ah_query_t ri_op_ah_query;
    ri_op_ah_modify_t ri_op_ah_modify;
    ri_op_ah_destroy_t ri_op_ah_destroy;
    ri_op_mcast_attach_t ri_op_mcast_attach;
    ri_op_mcast_detach_t ri_op_mcast_detach;
    ri_op_process_sma_mad_t ri_op_process_sma_mad;
};
typedef struct ri_ops ri_ops_t;

/* ======================================================================
 * Services implemented by the access layer (SVC-RNICPI)
 * ==================================================================== */

/* Kernel provider registers a device with the access layer. */
ri_api_return_t ri_svc_attach(IN ri_vp_handle_t vp_hdl, IN ri_dev_info_t dev_info,
                              IN ri_services_dev_arg_t *svcs, IN ri_ops_t *al_locking_ops,
                              IN ri_ops_t *vp_locking_ops, OUT ri_err_data_t *err_data);

/* Kernel provider withdraws a device (only after ri_rnic_close()). */
ri_api_return_t ri_svc_detach(IN ri_vp_handle_t vp_hdl, OUT ri_err_data_t *err_data);

/* User-space provider library registers itself with the user access layer. */
ri_api_return_t ri_svc_lib_reg(IN char *lib_path, IN ri_ops_t *al_locking_ops,
                               IN ri_ops_t *vp_locking_ops, IN OUT ri_os_data_t os_data,
                               OUT ri_err_data_t *err_data);

/* Reference-counted pinning service; unpin must repeat the exact range. */
ri_api_return_t ri_svc_mem_pin(IN ri_vaddr_t vaddr, IN ri_length_t len, IN ri_os_data_t os_data,
                               OUT ri_err_data_t *err_data);

ri_api_return_t ri_svc_mem_unpin(IN ri_vaddr_t vaddr, IN ri_length_t len, IN ri_os_data_t os_data,
                                 OUT ri_err_data_t *err_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#include <rnicpi/rnicpi_osdfunc.h>

#endif /* RNICPI_RNICPI_H_ */
