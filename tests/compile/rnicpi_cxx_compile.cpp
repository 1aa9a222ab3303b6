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

/* Work request types (digest 4.1, seed L9838-9857) */
RNICPI_SA(RI_WR_TYPE_SEND == 0);
RNICPI_SA(RI_WR_TYPE_SEND_INVALIDATE == 1);
RNICPI_SA(RI_WR_TYPE_RDMA_WRITE == 2);
RNICPI_SA(RI_WR_TYPE_RDMA_READ == 3);
RNICPI_SA(RI_WR_TYPE_BIND == 4);
RNICPI_SA(RI_WR_TYPE_FAST_REGISTER == 5);
RNICPI_SA(RI_WR_TYPE_LOCAL_INVALIDATE_MR == 6);
RNICPI_SA(RI_WR_TYPE_LOCAL_INVALIDATE_MW == 7);
RNICPI_SA(RI_WR_TYPE_RDMA_READ_LOCAL_INVALIDATE == 8);
RNICPI_SA(RI_WR_TYPE_COMPARE_AND_SWAP == 9);
RNICPI_SA(RI_WR_TYPE_FETCH_AND_ADD == 10);
RNICPI_SA(RI_WR_TYPE_SEND_IMMEDIATE == 11);
RNICPI_SA(RI_WR_TYPE_RDMA_WRITE_IMMEDIATE == 12);

/* Work request flags (digest 4.1, seed L9859-9890) */
RNICPI_SA(RI_WR_SIGNALED_FLAG == 0x01);
RNICPI_SA(RI_WR_LOCAL_SOLICITED_FLAG == 0x02);
RNICPI_SA(RI_WR_SOLICITED_EVENT_FLAG == 0x04);
RNICPI_SA(RI_WR_READ_FENCE_FLAG == 0x08);
RNICPI_SA(RI_WR_LOCAL_FENCE_FLAG == 0x10);
RNICPI_SA(RI_WR_COALESCE_FLAG == 0x20);
RNICPI_SA(RI_WR_INLINE_OK_FLAG == 0x40);
RNICPI_SA(RI_WR_CONSUMER_FLAG2 == 0x02);
RNICPI_SA(RI_WR_CONSUMER_FLAG1 == (1 << 29));
RNICPI_SA(RI_WR_CONSUMER_FLAG0 == (1 << 30));

/* Work completion types (digest 4.3, seed L10319-10331) */
RNICPI_SA(RI_WC_TYPE_SEND == 1);
RNICPI_SA(RI_WC_TYPE_DATA_RECEIVED == 2);
RNICPI_SA(RI_WC_TYPE_RDMA_WRITE == 4);
RNICPI_SA(RI_WC_TYPE_RDMA_READ == 5);
RNICPI_SA(RI_WC_TYPE_BIND == 6);
RNICPI_SA(RI_WC_TYPE_FAST_REGISTER == 7);
RNICPI_SA(RI_WC_TYPE_LOCAL_INVALIDATE == 8);
RNICPI_SA(RI_WC_TYPE_RDMA_READ_LOCAL_INVALIDATE == 9);
RNICPI_SA(RI_WC_TYPE_COMPARE_AND_SWAP == 10);
RNICPI_SA(RI_WC_TYPE_FETCH_AND_ADD == 11);
RNICPI_SA(RI_WC_TYPE_RDMA_IMMEDIATE_RECEIVED == 12);

/* Work completion flags (digest 4.3) */
RNICPI_SA(RI_WC_FLAG_SOLICITED_EVENT == (1 << 0));
RNICPI_SA(RI_WC_FLAG_LOCAL_SOLICITED == (1 << 1));
RNICPI_SA(RI_WC_FLAG_RTAG_INVALIDATE == (1 << 2));
RNICPI_SA(RI_WC_FLAG_IMMEDIATE_DATA == (1 << 3));
RNICPI_SA(RI_WC_FLAG_CONSUMER2 == (1 << 1));
RNICPI_SA(RI_WC_FLAG_CONSUMER1 == (1 << 29));
RNICPI_SA(RI_WC_FLAG_CONSUMER0 == (1 << 30));

/* Work completion status (digest 4.3, seed L3351-3400) */
RNICPI_SA(RI_WC_STATUS_SUCCESS == 0);
RNICPI_SA(RI_WC_STATUS_WR_FLUSHED_ERROR == 1);
RNICPI_SA(RI_WC_STATUS_LOCAL_QP_CATASTROPHIC == 2);
RNICPI_SA(RI_WC_STATUS_LOCAL_QP_OP_ERROR == 2);
RNICPI_SA(RI_WC_STATUS_WQE_FORMAT_ERROR == 3);
RNICPI_SA(RI_WC_STATUS_REMOTE_TERMINATION_ERROR == 4);
RNICPI_SA(RI_WC_STATUS_INVALID_STAG_ERROR == 5);
RNICPI_SA(RI_WC_STATUS_BASE_BOUNDS_VIOLATION_ERROR == 6);
RNICPI_SA(RI_WC_STATUS_ACCESS_VIOLATION_ERROR == 7);
RNICPI_SA(RI_WC_STATUS_INVALID_PD_ERROR == 8);
RNICPI_SA(RI_WC_STATUS_ADDRESS_WRAP_ERROR == 9);
RNICPI_SA(RI_WC_STATUS_STAG_INVALIDATE_ERROR == 10);
RNICPI_SA(RI_WC_STATUS_ZERO_ORD_ERROR == 11);
RNICPI_SA(RI_WC_STATUS_FMR_QP_NOT_PRIVILEGED_ERROR == 12);
RNICPI_SA(RI_WC_STATUS_STAG_NOT_IN_INVALID_STATE_ERROR == 13);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_PAGE_SIZE_ERROR == 14);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_BLOCK_SIZE_ERROR == 15);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_PBL_ENTRY_ERROR == 16);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_FBO_ERROR == 17);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_LENGTH_ERROR == 18);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_PERMS_ERROR == 19);
RNICPI_SA(RI_WC_STATUS_FMR_PBL_TOO_LONG_ERROR == 20);
RNICPI_SA(RI_WC_STATUS_INVALID_FMR_VA_ERROR == 21);
RNICPI_SA(RI_WC_STATUS_INVALID_BIND_MR_ERROR == 22);
RNICPI_SA(RI_WC_STATUS_INVALID_BIND_MW_ERROR == 23);
RNICPI_SA(RI_WC_STATUS_HUGE_PAYLOAD_ERROR == 24);
RNICPI_SA(RI_WC_STATUS_LOCAL_LENGTH_ERROR == 25);
RNICPI_SA(RI_WC_STATUS_LOCAL_PROTECTION_ERROR == 26);
RNICPI_SA(RI_WC_STATUS_MEMORY_MGMT_ERROR == 27);
RNICPI_SA(RI_WC_STATUS_BAD_RESPONSE_ERROR == 28);
RNICPI_SA(RI_WC_STATUS_LOCAL_ACCESS_ERROR == 29);
RNICPI_SA(RI_WC_STATUS_REMOTE_INVALID_REQ_ERROR == 30);
RNICPI_SA(RI_WC_STATUS_REMOTE_ACCESS_ERROR == 31);
RNICPI_SA(RI_WC_STATUS_REMOTE_OP_ERROR == 32);
RNICPI_SA(RI_WC_STATUS_TRANSPORT_RETRY_EXCEEDED == 33);
RNICPI_SA(RI_WC_STATUS_RNR_RETRY_EXCEEDED == 34);
RNICPI_SA(RI_WC_STATUS_REMOTE_ABORTED_ERROR == 35);

/* QP states (digest 3.1, seed L9695-9717) */
RNICPI_SA(RI_QP_STATE_IDLE == 0);
RNICPI_SA(RI_QP_STATE_READY_TO_SEND == 1);
RNICPI_SA(RI_QP_STATE_ERROR == 2);
RNICPI_SA(RI_QP_STATE_TERMINATE == 3);
RNICPI_SA(RI_QP_STATE_CLOSING == 4);
RNICPI_SA(RI_QP_STATE_SEND_QUEUE_ERROR == 5);
RNICPI_SA(RI_QP_STATE_INITIALIZED == 6);
RNICPI_SA(RI_QP_STATE_READY_TO_RECEIVE == 7);
RNICPI_SA(RI_QP_STATE_SEND_QUEUE_DRAINING == 8);
RNICPI_SA(RI_QP_STATE_SEND_QUEUE_DRAINED == 9);
RNICPI_SA(RI_QP_STATE_TIMEWAIT == 10);

/* QP attribute mask bits (digest 3.3, seed L10511-10548) */
RNICPI_SA(RI_QP_ATTR_NEXT_STATE == (1 << 0));
RNICPI_SA(RI_QP_ATTR_SQ_SIZE == (1 << 1));
RNICPI_SA(RI_QP_ATTR_RQ_SIZE == (1 << 2));
RNICPI_SA(RI_QP_ATTR_MAX_RDMA_READ_OUTGOING == (1 << 3));
RNICPI_SA(RI_QP_ATTR_MAX_RDMA_READ_INCOMING == (1 << 4));
RNICPI_SA(RI_QP_ATTR_RQ_HIWAT == (1 << 5));
RNICPI_SA(RI_QP_ATTR_RQ_ARMED == (1 << 6));
RNICPI_SA(RI_QP_ATTR_LLQ_STREAM_HANDLE == (1 << 7));
RNICPI_SA(RI_QP_ATTR_STREAM_MSG_BUFFER == (1 << 8));
RNICPI_SA(RI_QP_ATTR_MPA_ATTR == (1 << 9));
RNICPI_SA(RI_QP_ATTR_ENABLE_RDMA_READ == (1 << 5));
RNICPI_SA(RI_QP_ATTR_ENABLE_RDMA_WRITE == (1 << 6));
RNICPI_SA(RI_QP_ATTR_ENABLE_ATOMICS == (1 << 7));
RNICPI_SA(RI_QP_ATTR_DEST_QPID == (1 << 8));
RNICPI_SA(RI_QP_ATTR_ENABLE_SQD == (1 << 9));
RNICPI_SA(RI_QP_ATTR_QKEY == (1 << 10));
RNICPI_SA(RI_QP_ATTR_SEND_PSN == (1 << 11));
RNICPI_SA(RI_QP_ATTR_RECV_PSN == (1 << 12));
RNICPI_SA(RI_QP_ATTR_MIN_RNR_TIMER == (1 << 13));
RNICPI_SA(RI_QP_ATTR_PRIMARY_PATH == (1 << 14));
RNICPI_SA(RI_QP_ATTR_ALTERNATE_PATH == (1 << 15));
RNICPI_SA(RI_QP_ATTR_MIGSTATE == (1 << 16));
RNICPI_SA(RI_QP_ATTR_PRIMARY_PKEY == (1 << 17));
RNICPI_SA(RI_QP_ATTR_PORT_NUM == (1 << 18));

/* Memory attribute flags (digest 5.2, seed L9618-9637) */
RNICPI_SA(RI_MEM_FLAGS_LOCAL_READ == (1 << 0));
RNICPI_SA(RI_MEM_FLAGS_LOCAL_WRITE == (1 << 1));
RNICPI_SA(RI_MEM_FLAGS_LOCAL == 0x3);
RNICPI_SA(RI_MEM_FLAGS_REMOTE_WRITE == (1 << 2));
RNICPI_SA(RI_MEM_FLAGS_REMOTE_READ == (1 << 3));
RNICPI_SA(RI_MEM_FLAGS_REMOTE == 0xC);
RNICPI_SA(RI_MEM_FLAGS_ATOMICS == (1 << 4));
RNICPI_SA(RI_MEM_FLAGS_BINDING == (1 << 5));
RNICPI_SA(RI_MEM_FLAGS_CONSUMER_OWNS_KEY == (1 << 6));
RNICPI_SA(RI_MEM_FLAGS_ZBVA == (1 << 7));
RNICPI_SA(RI_MEM_FLAGS_NONCOHERENT == (1 << 8));
RNICPI_SA(RI_MEM_FLAGS_USER_VA == (1 << 9));
RNICPI_SA(RI_MEM_FLAGS_SHARED_REG_IOVA == (1 << 10));

/* Return codes (sample; seed L9110-9232) */
RNICPI_SA(RI_RET_SUCCESS == 0);
RNICPI_SA(RI_RET_RESOURCE_SHORTAGE == 1);
RNICPI_SA(RI_RET_INVALID_PARAMETER == 2);
RNICPI_SA(RI_RET_NO_PERMISSION == 3);
RNICPI_SA(RI_RET_XPORT_UNSUPPORTED == 4);
RNICPI_SA(RI_RET_OP_UNSUPPORTED == 5);
RNICPI_SA(RI_RET_BUFFER_TOO_SMALL == 6);
RNICPI_SA(RI_RET_FAIL == 7);
RNICPI_SA(RI_RET_QP_RESIZE_UNSUPPORTED == 8);
RNICPI_SA(RI_RET_RNIC_ATOMICS_UNSUPPORTED == 14);
RNICPI_SA(RI_RET_VP_INVALID_HANDLE == 15);
RNICPI_SA(RI_RET_RNIC_INVALID_HANDLE == 21);
RNICPI_SA(RI_RET_CQ_EMPTY == 28);
RNICPI_SA(RI_RET_QP_INVALID_HANDLE == 35);
RNICPI_SA(RI_RET_QP_INVALID_STATE == 41);
RNICPI_SA(RI_RET_STILL_FLUSHING_WQES == 54);
RNICPI_SA(RI_RET_WR_SG_INVALID_FORMAT == 57);
RNICPI_SA(RI_RET_SRQ_INVALID_HANDLE == 58);
RNICPI_SA(RI_RET_MR_INVALID_HANDLE == 64);
RNICPI_SA(RI_RET_MEM_INVALID_RTAG == 72);
RNICPI_SA(RI_RET_MW_INVALID_HANDLE == 73);
RNICPI_SA(RI_RET_ADDRESS_HANDLE_INVALID == 77);
RNICPI_SA(RI_RET_INVALID_LL_HANDLE == 82);
RNICPI_SA(RI_RET_INVALID_DDP_RDMAP_VERSION == 83);
RNICPI_SA(RI_RET_LL_BAD_STATE == 84);
RNICPI_SA(RI_RET_MPA_ATTR_UNSUPPORTED == 85);

/* Asynchronous event types (sample; seed L10180-10238) */
RNICPI_SA(RI_EVENT_QP_LLQ_CLOSE_COMPLETE == 0);
RNICPI_SA(RI_EVENT_QP_TERMINATE_MESSAGE_RECEIVED == 1);
RNICPI_SA(RI_EVENT_QP_LLQ_CONNECTION_RESET == 2);
RNICPI_SA(RI_EVENT_QP_LLQ_CONNECTION_LOST == 3);
RNICPI_SA(RI_EVENT_QP_PROTECTION_ERROR_WRAP_ERROR == 19);
RNICPI_SA(RI_EVENT_TYPE_BAD_CLOSE == 20);
RNICPI_SA(RI_EVENT_QP_BAD_LLQ_CLOSE == 21);
RNICPI_SA(RI_EVENT_QP_IRRQ_PROTECTION_ERROR_TOO_MANY_RDMA_READS == 24);
RNICPI_SA(RI_EVENT_QP_RQ_LIMIT_REACHED == 38);
RNICPI_SA(RI_EVENT_SRQ_LIMIT_REACHED == 39);
RNICPI_SA(RI_EVENT_LOCAL_CATASTROPHIC_ERROR == 41);
RNICPI_SA(RI_EVENT_RNIC_LOCAL_CATASTROPHIC_ERROR == 41);
RNICPI_SA(RI_EVENT_QP_LAST_WQE_REACHED == 42);
RNICPI_SA(RI_EVENT_TYPE_QP_PATH_MIGRATED == 43);
RNICPI_SA(RI_EVENT_CQ_ERROR == 46);
RNICPI_SA(RI_EVENT_PORT_EVENT == 51);
RNICPI_SA(RI_EVENT_CLIENT_REG_EVENT == 52);

/* Layout facts the engine relies on */
RNICPI_SA(sizeof(ri_length_t) == 8);
RNICPI_SA(sizeof(ri_err_data_t) == 8);
RNICPI_SA(sizeof(ri_wr_id_t) == 8);
RNICPI_SA(sizeof(ri_ltag_t) == 4);
RNICPI_SA(sizeof(ri_rtag_t) == 4);
RNICPI_SA(sizeof(ri_boolean_t) == sizeof(unsigned short));
RNICPI_SA(sizeof(ri_llp_stream_handle_t) == sizeof(int));
RNICPI_SA(sizeof(uint_t) == sizeof(unsigned int));
RNICPI_SA(sizeof(ri_handle_t) == sizeof(void *));
RNICPI_SA(offsetof(struct ri_handle_struct, ops) == 0);
RNICPI_SA(offsetof(ri_wr_t, wr_common.type) == offsetof(ri_wr_t, wr_send.type));
RNICPI_SA(offsetof(ri_wr_send_t, id) == offsetof(ri_wr_common_t, id));
RNICPI_SA(offsetof(ri_wr_datagram_t, id) == offsetof(ri_wr_common_t, id));
RNICPI_SA(offsetof(ri_rc_wc_t, op_type) == 0);
RNICPI_SA(offsetof(ri_gen_wc_t, op_type) == 0);
RNICPI_SA(sizeof(((ri_data_seg_t *)0)->len) == 4);
RNICPI_SA(sizeof(((ri_iwarp_qp_attr_t *)0)->terminate_buffer) == 52);
RNICPI_SA(sizeof(((ri_rnic_attr_t *)0)->addl_vendor_info) == RI_MAX_VENDOR_STRING_LEN);
RNICPI_SA(sizeof(ri_ops_t) == 63 * sizeof(ri_op_rnic_open_t));

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
