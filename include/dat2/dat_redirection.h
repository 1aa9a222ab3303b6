/*
 * dat_redirection.h - the provider dispatch table's entry types, and the
 * DAT_* macros that call through it.
 *
 * Every non-IA handle points at memory whose first word is the DAT_PROVIDER
 * of the provider that made it, so the registry (and a provider that wants to
 * call itself the same way) reaches the implementation with
 *     (*DAT_HANDLE_TO_PROVIDER(handle)->xxx_func)(handle, ...)
 * The DAT_XXX(...) macros below spell that out for each call. The
 * DAT_XXX_FUNC typedefs are the slot types of struct dat_provider
 * (udat_redirection.h); their signatures equal the dat_xxx prototypes, except
 * DAT_IA_OPEN_FUNC, which has no version arguments.
 */
#ifndef _DAT_REDIRECTION_H_
#define _DAT_REDIRECTION_H_

#if !defined(_UDAT_H_) && !defined(_KDAT_H_)
#include "udat.h"
#endif

#include <stdarg.h> /* va_list, for the extension slot */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dat_provider DAT_PROVIDER;

#ifndef DAT_HANDLE_TO_PROVIDER
#define DAT_HANDLE_TO_PROVIDER(handle) (*(DAT_PROVIDER **)(handle))
#endif

/* ---------------------------------------------------------------------------
 * Calls through the owning provider's table
 * ------------------------------------------------------------------------- */

#define DAT_IA_QUERY(ia, evd, ia_msk, ia_ptr, p_msk, p_ptr) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->ia_query_func)((ia), (evd), (ia_msk), (ia_ptr), (p_msk), (p_ptr))
#define DAT_SET_CONSUMER_CONTEXT(handle, context) \
    (*DAT_HANDLE_TO_PROVIDER(handle)->set_consumer_context_func)((handle), (context))
#define DAT_GET_CONSUMER_CONTEXT(handle, context) \
    (*DAT_HANDLE_TO_PROVIDER(handle)->get_consumer_context_func)((handle), (context))
#define DAT_GET_HANDLE_TYPE(handle, handle_type) \
    (*DAT_HANDLE_TO_PROVIDER(handle)->get_handle_type_func)((handle), (handle_type))

#define DAT_CR_QUERY(cr, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(cr)->cr_query_func)((cr), (mask), (param))
#define DAT_CR_ACCEPT(cr, ep, size, pdata) \
    (*DAT_HANDLE_TO_PROVIDER(cr)->cr_accept_func)((cr), (ep), (size), (pdata))
#define DAT_CR_REJECT(cr, size, pdata) \
    (*DAT_HANDLE_TO_PROVIDER(cr)->cr_reject_func)((cr), (size), (pdata))
#define DAT_CR_HANDOFF(cr, qual) (*DAT_HANDLE_TO_PROVIDER(cr)->cr_handoff_func)((cr), (qual))

#define DAT_EVD_QUERY(evd, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(evd)->evd_query_func)((evd), (mask), (param))
#define DAT_EVD_RESIZE(evd, qsize) (*DAT_HANDLE_TO_PROVIDER(evd)->evd_resize_func)((evd), (qsize))
#define DAT_EVD_POST_SE(evd, event) (*DAT_HANDLE_TO_PROVIDER(evd)->evd_post_se_func)((evd), (event))
#define DAT_EVD_DEQUEUE(evd, event) (*DAT_HANDLE_TO_PROVIDER(evd)->evd_dequeue_func)((evd), (event))
#define DAT_EVD_FREE(evd) (*DAT_HANDLE_TO_PROVIDER(evd)->evd_free_func)((evd))

#define DAT_EP_CREATE(ia, pz, in_evd, out_evd, connect_evd, attr, ep)                             \
    (*DAT_HANDLE_TO_PROVIDER(ia)->ep_create_func)((ia), (pz), (in_evd), (out_evd), (connect_evd), \
                                                  (attr), (ep))
#define DAT_EP_CREATE_WITH_SRQ(ia, pz, in_evd, out_evd, connect_evd, srq, attr, ep)         \
    (*DAT_HANDLE_TO_PROVIDER(ia)->ep_create_with_srq_func)((ia), (pz), (in_evd), (out_evd), \
                                                           (connect_evd), (srq), (attr), (ep))
#define DAT_EP_QUERY(ep, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_query_func)((ep), (mask), (param))
#define DAT_EP_MODIFY(ep, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_modify_func)((ep), (mask), (param))
#define DAT_EP_CONNECT(ep, ia_addr, conn_qual, timeout, psize, pdata, qos, flags)           \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_connect_func)((ep), (ia_addr), (conn_qual), (timeout), \
                                                   (psize), (pdata), (qos), (flags))
#define DAT_EP_COMMON_CONNECT(ep, addr, timeout, psize, pdata) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_common_connect_func)((ep), (addr), (timeout), (psize), (pdata))
#define DAT_EP_DUP_CONNECT(ep, dup, timeout, psize, pdata, qos)                                  \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_dup_connect_func)((ep), (dup), (timeout), (psize), (pdata), \
                                                       (qos))
#define DAT_EP_DISCONNECT(ep, flags) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_disconnect_func)((ep), (flags))
#define DAT_EP_POST_SEND(ep, size, lbuf, cookie, flags) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_post_send_func)((ep), (size), (lbuf), (cookie), (flags))
#define DAT_EP_POST_SEND_WITH_INVALIDATE(ep, size, lbuf, cookie, flags, inv_flag, rmr_context) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_post_send_with_invalidate_func)(                          \
        (ep), (size), (lbuf), (cookie), (flags), (inv_flag), (rmr_context))
#define DAT_EP_POST_RECV(ep, size, lbuf, cookie, flags) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_post_recv_func)((ep), (size), (lbuf), (cookie), (flags))
#define DAT_EP_POST_RDMA_READ(ep, size, lbuf, cookie, rbuf, flags)                                \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_post_rdma_read_func)((ep), (size), (lbuf), (cookie), (rbuf), \
                                                          (flags))
#define DAT_EP_POST_RDMA_READ_TO_RMR(ep, lbuf, cookie, rbuf, flags)                              \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_post_rdma_read_to_rmr_func)((ep), (lbuf), (cookie), (rbuf), \
                                                                 (flags))
#define DAT_EP_POST_RDMA_WRITE(ep, size, lbuf, cookie, rbuf, flags)                                \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_post_rdma_write_func)((ep), (size), (lbuf), (cookie), (rbuf), \
                                                           (flags))
#define DAT_EP_GET_STATUS(ep, ep_state, recv_idle, request_idle) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_get_status_func)((ep), (ep_state), (recv_idle), (request_idle))
#define DAT_EP_FREE(ep) (*DAT_HANDLE_TO_PROVIDER(ep)->ep_free_func)((ep))
#define DAT_EP_RESET(ep) (*DAT_HANDLE_TO_PROVIDER(ep)->ep_reset_func)((ep))
#define DAT_EP_RECV_QUERY(ep, nbuf_alloc, buf_span) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_recv_query_func)((ep), (nbuf_alloc), (buf_span))
#define DAT_EP_SET_WATERMARK(ep, soft_wm, hard_wm) \
    (*DAT_HANDLE_TO_PROVIDER(ep)->ep_set_watermark_func)((ep), (soft_wm), (hard_wm))

#define DAT_LMR_QUERY(lmr, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(lmr)->lmr_query_func)((lmr), (mask), (param))
#define DAT_LMR_FREE(lmr) (*DAT_HANDLE_TO_PROVIDER(lmr)->lmr_free_func)((lmr))
#define DAT_LMR_SYNC_RDMA_READ(ia, lbuf, size) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->lmr_sync_rdma_read_func)((ia), (lbuf), (size))
#define DAT_LMR_SYNC_RDMA_WRITE(ia, lbuf, size) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->lmr_sync_rdma_write_func)((ia), (lbuf), (size))

#define DAT_RMR_CREATE(pz, rmr) (*DAT_HANDLE_TO_PROVIDER(pz)->rmr_create_func)((pz), (rmr))
#define DAT_RMR_CREATE_FOR_EP(pz, rmr) \
    (*DAT_HANDLE_TO_PROVIDER(pz)->rmr_create_for_ep_func)((pz), (rmr))
#define DAT_RMR_QUERY(rmr, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(rmr)->rmr_query_func)((rmr), (mask), (param))
#define DAT_RMR_BIND(rmr, lmr, lmr_triplet, mem_priv, va_type, ep, cookie, flags, context) \
    (*DAT_HANDLE_TO_PROVIDER(rmr)->rmr_bind_func)((rmr), (lmr), (lmr_triplet), (mem_priv), \
                                                  (va_type), (ep), (cookie), (flags), (context))
#define DAT_RMR_FREE(rmr) (*DAT_HANDLE_TO_PROVIDER(rmr)->rmr_free_func)((rmr))

#define DAT_PSP_CREATE(ia, conn_qual, evd, flags, handle) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->psp_create_func)((ia), (conn_qual), (evd), (flags), (handle))
#define DAT_PSP_CREATE_ANY(ia, conn_qual, evd, flags, handle) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->psp_create_any_func)((ia), (conn_qual), (evd), (flags), (handle))
#define DAT_PSP_QUERY(psp, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(psp)->psp_query_func)((psp), (mask), (param))
#define DAT_PSP_FREE(psp) (*DAT_HANDLE_TO_PROVIDER(psp)->psp_free_func)((psp))

#define DAT_RSP_CREATE(ia, conn_qual, ep, evd, handle) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->rsp_create_func)((ia), (conn_qual), (ep), (evd), (handle))
#define DAT_RSP_QUERY(rsp, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(rsp)->rsp_query_func)((rsp), (mask), (param))
#define DAT_RSP_FREE(rsp) (*DAT_HANDLE_TO_PROVIDER(rsp)->rsp_free_func)((rsp))

#define DAT_CSP_CREATE(ia, comm, addr, evd, handle) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->csp_create_func)((ia), (comm), (addr), (evd), (handle))
#define DAT_CSP_QUERY(csp, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(csp)->csp_query_func)((csp), (mask), (param))
#define DAT_CSP_FREE(csp) (*DAT_HANDLE_TO_PROVIDER(csp)->csp_free_func)((csp))

#define DAT_PZ_CREATE(ia, pz) (*DAT_HANDLE_TO_PROVIDER(ia)->pz_create_func)((ia), (pz))
#define DAT_PZ_QUERY(pz, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(pz)->pz_query_func)((pz), (mask), (param))
#define DAT_PZ_FREE(pz) (*DAT_HANDLE_TO_PROVIDER(pz)->pz_free_func)((pz))

#define DAT_SRQ_CREATE(ia, pz, attr, srq) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->srq_create_func)((ia), (pz), (attr), (srq))
#define DAT_SRQ_SET_LW(srq, lw) (*DAT_HANDLE_TO_PROVIDER(srq)->srq_set_lw_func)((srq), (lw))
#define DAT_SRQ_FREE(srq) (*DAT_HANDLE_TO_PROVIDER(srq)->srq_free_func)((srq))
#define DAT_SRQ_QUERY(srq, mask, param) \
    (*DAT_HANDLE_TO_PROVIDER(srq)->srq_query_func)((srq), (mask), (param))
#define DAT_SRQ_RESIZE(srq, qsize) (*DAT_HANDLE_TO_PROVIDER(srq)->srq_resize_func)((srq), (qsize))
#define DAT_SRQ_POST_RECV(srq, size, lbuf, cookie) \
    (*DAT_HANDLE_TO_PROVIDER(srq)->srq_post_recv_func)((srq), (size), (lbuf), (cookie))

/* The deployed header spells this one as an object-like macro naming a slot
 * that does not exist, so no program can use it; this is the working form. */
#define DAT_IA_HA_RELATED(ia, name, answer) \
    (*DAT_HANDLE_TO_PROVIDER(ia)->ia_ha_related_func)((ia), (name), (answer))

#ifdef DAT_EXTENSIONS
#define DAT_HANDLE_EXTENDEDOP(handle, op, args) \
    (*DAT_HANDLE_TO_PROVIDER(handle)->handle_extendedop_func)((handle), (op), (args))
#endif

/* ---------------------------------------------------------------------------
 * Slot types shared by uDAPL and kDAPL
 * ------------------------------------------------------------------------- */

/* A provider's IA open: name, async EVD minimum queue length, INOUT async
 * EVD, OUT provider IA handle. The registry has already matched the version. */
typedef DAT_RETURN(DAT_API *DAT_IA_OPEN_FUNC)(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *,
                                              DAT_IA_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_IA_OPENV_FUNC)(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *,
                                               DAT_IA_HANDLE *, DAT_UINT32, DAT_UINT32,
                                               DAT_BOOLEAN);
typedef DAT_RETURN(DAT_API *DAT_IA_CLOSE_FUNC)(DAT_IA_HANDLE, DAT_CLOSE_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_IA_QUERY_FUNC)(DAT_IA_HANDLE, DAT_EVD_HANDLE *, DAT_IA_ATTR_MASK,
                                               DAT_IA_ATTR *, DAT_PROVIDER_ATTR_MASK,
                                               DAT_PROVIDER_ATTR *);
/* ia, name of the other IA, OUT related */
typedef DAT_RETURN(DAT_API *DAT_IA_HA_RELATED_FUNC)(DAT_IA_HANDLE, const DAT_NAME_PTR,
                                                    DAT_BOOLEAN *);

typedef DAT_RETURN(DAT_API *DAT_SET_CONSUMER_CONTEXT_FUNC)(DAT_HANDLE, DAT_CONTEXT);
typedef DAT_RETURN(DAT_API *DAT_GET_CONSUMER_CONTEXT_FUNC)(DAT_HANDLE, DAT_CONTEXT *);
typedef DAT_RETURN(DAT_API *DAT_GET_HANDLE_TYPE_FUNC)(DAT_HANDLE, DAT_HANDLE_TYPE *);

typedef DAT_RETURN(DAT_API *DAT_CR_QUERY_FUNC)(DAT_CR_HANDLE, DAT_CR_PARAM_MASK, DAT_CR_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_CR_ACCEPT_FUNC)(DAT_CR_HANDLE, DAT_EP_HANDLE, DAT_COUNT,
                                                const DAT_PVOID);
typedef DAT_RETURN(DAT_API *DAT_CR_REJECT_FUNC)(DAT_CR_HANDLE, DAT_COUNT, const DAT_PVOID);
typedef DAT_RETURN(DAT_API *DAT_CR_HANDOFF_FUNC)(DAT_CR_HANDLE, DAT_CONN_QUAL);

typedef DAT_RETURN(DAT_API *DAT_EVD_RESIZE_FUNC)(DAT_EVD_HANDLE, DAT_COUNT);
typedef DAT_RETURN(DAT_API *DAT_EVD_POST_SE_FUNC)(DAT_EVD_HANDLE, const DAT_EVENT *);
typedef DAT_RETURN(DAT_API *DAT_EVD_DEQUEUE_FUNC)(DAT_EVD_HANDLE, DAT_EVENT *);
typedef DAT_RETURN(DAT_API *DAT_EVD_FREE_FUNC)(DAT_EVD_HANDLE);
typedef DAT_RETURN(DAT_API *DAT_EVD_QUERY_FUNC)(DAT_EVD_HANDLE, DAT_EVD_PARAM_MASK,
                                                DAT_EVD_PARAM *);

typedef DAT_RETURN(DAT_API *DAT_EP_CREATE_FUNC)(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE,
                                                DAT_EVD_HANDLE, DAT_EVD_HANDLE, const DAT_EP_ATTR *,
                                                DAT_EP_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_EP_CREATE_WITH_SRQ_FUNC)(DAT_IA_HANDLE, DAT_PZ_HANDLE,
                                                         DAT_EVD_HANDLE, DAT_EVD_HANDLE,
                                                         DAT_EVD_HANDLE, DAT_SRQ_HANDLE,
                                                         const DAT_EP_ATTR *, DAT_EP_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_EP_QUERY_FUNC)(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, DAT_EP_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_EP_MODIFY_FUNC)(DAT_EP_HANDLE, DAT_EP_PARAM_MASK,
                                                const DAT_EP_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_EP_CONNECT_FUNC)(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR, DAT_CONN_QUAL,
                                                 DAT_TIMEOUT, DAT_COUNT, const DAT_PVOID, DAT_QOS,
                                                 DAT_CONNECT_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_COMMON_CONNECT_FUNC)(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR,
                                                        DAT_TIMEOUT, DAT_COUNT, const DAT_PVOID);
typedef DAT_RETURN(DAT_API *DAT_EP_DUP_CONNECT_FUNC)(DAT_EP_HANDLE, DAT_EP_HANDLE, DAT_TIMEOUT,
                                                     DAT_COUNT, const DAT_PVOID, DAT_QOS);
typedef DAT_RETURN(DAT_API *DAT_EP_DISCONNECT_FUNC)(DAT_EP_HANDLE, DAT_CLOSE_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_POST_SEND_FUNC)(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
                                                   DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_POST_SEND_WITH_INVALIDATE_FUNC)(DAT_EP_HANDLE, DAT_COUNT,
                                                                   DAT_LMR_TRIPLET *,
                                                                   DAT_DTO_COOKIE,
                                                                   DAT_COMPLETION_FLAGS,
                                                                   DAT_BOOLEAN, DAT_RMR_CONTEXT);
typedef DAT_RETURN(DAT_API *DAT_EP_POST_RECV_FUNC)(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
                                                   DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_POST_RDMA_READ_FUNC)(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
                                                        DAT_DTO_COOKIE, const DAT_RMR_TRIPLET *,
                                                        DAT_COMPLETION_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_POST_RDMA_READ_TO_RMR_FUNC)(DAT_EP_HANDLE,
                                                               const DAT_RMR_TRIPLET *,
                                                               DAT_DTO_COOKIE,
                                                               const DAT_RMR_TRIPLET *,
                                                               DAT_COMPLETION_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_POST_RDMA_WRITE_FUNC)(DAT_EP_HANDLE, DAT_COUNT,
                                                         DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
                                                         const DAT_RMR_TRIPLET *,
                                                         DAT_COMPLETION_FLAGS);
typedef DAT_RETURN(DAT_API *DAT_EP_GET_STATUS_FUNC)(DAT_EP_HANDLE, DAT_EP_STATE *, DAT_BOOLEAN *,
                                                    DAT_BOOLEAN *);
typedef DAT_RETURN(DAT_API *DAT_EP_FREE_FUNC)(DAT_EP_HANDLE);
typedef DAT_RETURN(DAT_API *DAT_EP_RESET_FUNC)(DAT_EP_HANDLE);
typedef DAT_RETURN(DAT_API *DAT_EP_RECV_QUERY_FUNC)(DAT_EP_HANDLE, DAT_COUNT *, DAT_COUNT *);
typedef DAT_RETURN(DAT_API *DAT_EP_SET_WATERMARK_FUNC)(DAT_EP_HANDLE, DAT_COUNT, DAT_COUNT);

typedef DAT_RETURN(DAT_API *DAT_LMR_FREE_FUNC)(DAT_LMR_HANDLE);
typedef DAT_RETURN(DAT_API *DAT_LMR_SYNC_RDMA_READ_FUNC)(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *,
                                                         DAT_VLEN);
typedef DAT_RETURN(DAT_API *DAT_LMR_SYNC_RDMA_WRITE_FUNC)(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *,
                                                          DAT_VLEN);

typedef DAT_RETURN(DAT_API *DAT_RMR_CREATE_FUNC)(DAT_PZ_HANDLE, DAT_RMR_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_RMR_CREATE_FOR_EP_FUNC)(DAT_PZ_HANDLE, DAT_RMR_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_RMR_QUERY_FUNC)(DAT_RMR_HANDLE, DAT_RMR_PARAM_MASK,
                                                DAT_RMR_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_RMR_BIND_FUNC)(DAT_RMR_HANDLE, DAT_LMR_HANDLE,
                                               const DAT_LMR_TRIPLET *, DAT_MEM_PRIV_FLAGS,
                                               DAT_VA_TYPE, DAT_EP_HANDLE, DAT_RMR_COOKIE,
                                               DAT_COMPLETION_FLAGS, DAT_RMR_CONTEXT *);
typedef DAT_RETURN(DAT_API *DAT_RMR_FREE_FUNC)(DAT_RMR_HANDLE);

typedef DAT_RETURN(DAT_API *DAT_PSP_CREATE_FUNC)(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EVD_HANDLE,
                                                 DAT_PSP_FLAGS, DAT_PSP_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_PSP_CREATE_ANY_FUNC)(DAT_IA_HANDLE, DAT_CONN_QUAL *, DAT_EVD_HANDLE,
                                                     DAT_PSP_FLAGS, DAT_PSP_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_PSP_QUERY_FUNC)(DAT_PSP_HANDLE, DAT_PSP_PARAM_MASK,
                                                DAT_PSP_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_PSP_FREE_FUNC)(DAT_PSP_HANDLE);

typedef DAT_RETURN(DAT_API *DAT_RSP_CREATE_FUNC)(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EP_HANDLE,
                                                 DAT_EVD_HANDLE, DAT_RSP_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_RSP_QUERY_FUNC)(DAT_RSP_HANDLE, DAT_RSP_PARAM_MASK,
                                                DAT_RSP_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_RSP_FREE_FUNC)(DAT_RSP_HANDLE);

typedef DAT_RETURN(DAT_API *DAT_CSP_CREATE_FUNC)(DAT_IA_HANDLE, DAT_COMM *, DAT_IA_ADDRESS_PTR,
                                                 DAT_EVD_HANDLE, DAT_CSP_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_CSP_QUERY_FUNC)(DAT_CSP_HANDLE, DAT_CSP_PARAM_MASK,
                                                DAT_CSP_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_CSP_FREE_FUNC)(DAT_CSP_HANDLE);

typedef DAT_RETURN(DAT_API *DAT_PZ_CREATE_FUNC)(DAT_IA_HANDLE, DAT_PZ_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_PZ_QUERY_FUNC)(DAT_PZ_HANDLE, DAT_PZ_PARAM_MASK, DAT_PZ_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_PZ_FREE_FUNC)(DAT_PZ_HANDLE);

typedef DAT_RETURN(DAT_API *DAT_SRQ_CREATE_FUNC)(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_SRQ_ATTR *,
                                                 DAT_SRQ_HANDLE *);
typedef DAT_RETURN(DAT_API *DAT_SRQ_SET_LW_FUNC)(DAT_SRQ_HANDLE, DAT_COUNT);
typedef DAT_RETURN(DAT_API *DAT_SRQ_FREE_FUNC)(DAT_SRQ_HANDLE);
typedef DAT_RETURN(DAT_API *DAT_SRQ_QUERY_FUNC)(DAT_SRQ_HANDLE, DAT_SRQ_PARAM_MASK,
                                                DAT_SRQ_PARAM *);
typedef DAT_RETURN(DAT_API *DAT_SRQ_RESIZE_FUNC)(DAT_SRQ_HANDLE, DAT_COUNT);
typedef DAT_RETURN(DAT_API *DAT_SRQ_POST_RECV_FUNC)(DAT_SRQ_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
                                                    DAT_DTO_COOKIE);

#ifdef DAT_EXTENSIONS
/* dat_extension_op lands here with its variable arguments collected. */
typedef DAT_RETURN(DAT_API *DAT_HANDLE_EXTENDEDOP_FUNC)(DAT_HANDLE, DAT_EXTENDED_OP, va_list);
#endif

#ifdef __cplusplus
}
#endif

#endif /* _DAT_REDIRECTION_H_ */
