/*
 * rnicpi_osdfunc.h - consumer-side dispatchers for the RNICPI 1.0 provider
 * interface (softrnic edition).
 *
 * Each ri_X() below forwards to the ri_op_X member of the ri_ops_t vector
 * found at the start of the handle it is given: the VP handle for
 * ri_rnic_open/close, ri_async_set_event_handler, ri_cq_set_event_handler
 * and ri_rnic_free_hdl, the RNIC handle for everything else.
 *
 * ri_rnic_get_hdl() is the one exception: it is a real (extern) function,
 * because the ops vector chosen for that call fixes the locking model of
 * the RNIC handle it returns.
 *
 * Normally included through <rnicpi/rnicpi.h>.
 */
#ifndef RNICPI_RNICPI_OSDFUNC_H_
#define RNICPI_RNICPI_OSDFUNC_H_

#include <rnicpi/rnicpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Real function, provided by the access layer / provider library. */
extern ri_api_return_t ri_rnic_get_hdl(IN ri_vp_handle_t vp_hdl, IN ri_consumer_domain_t location,
                                       OUT ri_rnic_handle_t *rnic, IN OUT ri_vp_data_t vp_data,
                                       IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data);

static inline ri_api_return_t ri_rnic_open(IN ri_vp_handle_t vp_hdl, IN ri_pbl_mode_t pbl_mode,
                                           IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(vp_hdl)->ri_op_rnic_open(vp_hdl, pbl_mode, os_data, err_data);
}

static inline ri_api_return_t ri_rnic_close(IN ri_vp_handle_t vp_hdl, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(vp_hdl)->ri_op_rnic_close(vp_hdl, err_data);
}

static inline ri_api_return_t ri_async_set_event_handler(
    IN ri_vp_handle_t vp_hdl, IN ri_async_event_callback_t async_event_callback,
    OUT ri_err_data_t *err_data) {
    return ri_svc_ops(vp_hdl)->ri_op_async_set_event_handler(vp_hdl, async_event_callback,
                                                             err_data);
}

static inline ri_api_return_t ri_rnic_query(IN ri_rnic_handle_t rnic,
                                            IN ri_rnic_query_flags_t flags,
                                            OUT ri_rnic_attr_t *attrs, IN OUT uint_t *attr_size,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_rnic_query(rnic, flags, attrs, attr_size, err_data);
}

static inline ri_api_return_t ri_rnic_modify(IN ri_rnic_handle_t rnic,
                                             IN ri_rnic_attr_mask_t attr_mask,
                                             IN ri_rnic_modify_req_t *attrs,
                                             OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_rnic_modify(rnic, attr_mask, attrs, err_data);
}

static inline ri_api_return_t ri_rnic_free_hdl(IN ri_vp_handle_t vp_hdl, IN ri_rnic_handle_t rnic,
                                               OUT ri_err_data_t *err_data) {
    return ri_svc_ops(vp_hdl)->ri_op_rnic_free_hdl(vp_hdl, rnic, err_data);
}

static inline ri_api_return_t ri_rnic_diag(IN ri_rnic_handle_t rnic, IN ri_diag_op_type_t op,
                                           IN void *arg, IN OUT unsigned char *opval,
                                           IN OUT ri_length_t *oplen, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_rnic_diag(rnic, op, arg, opval, oplen, err_data);
}

static inline ri_api_return_t ri_pd_alloc(IN ri_rnic_handle_t rnic, OUT ri_pd_handle_t *pd,
                                          IN OUT ri_vp_data_t vp_data, IN OUT ri_os_data_t os_data,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_pd_alloc(rnic, pd, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_pd_dealloc(IN ri_rnic_handle_t rnic, IN ri_pd_handle_t pd,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_pd_dealloc(rnic, pd, err_data);
}

static inline ri_api_return_t ri_cq_create(IN ri_rnic_handle_t rnic, IN OUT ri_cq_attr_t *cq_attr,
                                           OUT ri_cq_handle_t *cq, IN OUT ri_vp_data_t vp_data,
                                           IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_cq_create(rnic, cq_attr, cq, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_cq_query(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                          OUT ri_cq_attr_t *cq_attr, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_cq_query(rnic, cq, cq_attr, err_data);
}

static inline ri_api_return_t ri_cq_modify(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                           IN ri_cq_modify_mask_t mask,
                                           IN OUT ri_cq_attr_t *cq_attr,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_cq_modify(rnic, cq, mask, cq_attr, err_data);
}

static inline ri_api_return_t ri_cq_destroy(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_cq_destroy(rnic, cq, err_data);
}

static inline ri_api_return_t ri_special_qp_get(IN ri_rnic_handle_t rnic, IN uint8_t port,
                                                IN ri_sqp_type_t qp_type,
                                                IN OUT ri_qp_attr_t *attrs, OUT ri_qp_handle_t *qp,
                                                IN OUT ri_vp_data_t vp_data,
                                                IN OUT ri_os_data_t os_data,
                                                OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_special_qp_get(rnic, port, qp_type, attrs, qp, vp_data, os_data,
                                                  err_data);
}

static inline ri_api_return_t ri_cq_set_event_handler(IN ri_vp_handle_t vp_hdl,
                                                      IN OUT ri_cq_event_handler_id_t *handler_id,
                                                      IN ri_cq_event_callback_t cq_callback,
                                                      OUT ri_err_data_t *err_data) {
    return ri_svc_ops(vp_hdl)->ri_op_cq_set_event_handler(vp_hdl, handler_id, cq_callback,
                                                          err_data);
}

static inline ri_api_return_t ri_cq_req_notification(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                                     IN ri_cmplt_notify_type_t type,
                                                     OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_cq_req_notification(rnic, cq, type, err_data);
}

static inline ri_api_return_t ri_cq_poll(IN ri_rnic_handle_t rnic, IN ri_cq_handle_t cq,
                                         OUT ri_wc_t *wcs, IN OUT uint_t *num_wcs,
                                         OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_cq_poll(rnic, cq, wcs, num_wcs, err_data);
}

static inline ri_api_return_t ri_qp_create(IN ri_rnic_handle_t rnic, IN OUT ri_qp_attr_t *attrs,
                                           OUT ri_qp_handle_t *qp, IN OUT ri_vp_data_t vp_data,
                                           IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_create(rnic, attrs, qp, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_qp_query(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                          OUT ri_qp_attr_t *attrs, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_query(rnic, qp, attrs, err_data);
}

static inline ri_api_return_t ri_qp_modify(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                           IN ri_qp_attr_mask_t qp_mask, IN OUT ri_qp_attr_t *attrs,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_modify(rnic, qp, qp_mask, attrs, err_data);
}

static inline ri_api_return_t ri_qp_destroy(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_destroy(rnic, qp, err_data);
}

static inline ri_api_return_t ri_qp_postsq(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                           IN ri_wr_t *wr, IN OUT uint_t *num_wrs,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_postsq(rnic, qp, wr, num_wrs, err_data);
}

static inline ri_api_return_t ri_qp_post_send(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                              IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                              IN ri_wr_id_t id, IN ri_data_seg_t *sg_list,
                                              IN ri_rtag_t rtag, IN uint_t num_sgls,
                                              IN uint32_t imm_data, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_send(rnic, qp, type, flags, id, sg_list, rtag, num_sgls,
                                                imm_data, err_data);
}

static inline ri_api_return_t ri_qp_post_rdma_read(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                                   IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                                   IN ri_wr_id_t id, IN ri_data_seg_t *sg_list,
                                                   IN uint64_t rdma_addr, IN uint_t num_sgls,
                                                   IN ri_rtag_t rtag, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_rdma_read(rnic, qp, type, flags, id, sg_list, rdma_addr,
                                                     num_sgls, rtag, err_data);
}

static inline ri_api_return_t ri_qp_post_rdma_write(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                                    IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                                    IN ri_wr_id_t id, IN ri_data_seg_t *sg_list,
                                                    IN uint64_t rdma_addr, IN ri_rtag_t rtag,
                                                    IN uint_t num_sgls, IN uint32_t imm_data,
                                                    OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_rdma_write(rnic, qp, type, flags, id, sg_list, rdma_addr,
                                                      rtag, num_sgls, imm_data, err_data);
}

static inline ri_api_return_t ri_qp_post_bind(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                              IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                              IN ri_wr_id_t id, IN ri_mw_handle_t mw_handle,
                                              IN ri_rtag_t rtag, IN ri_mr_handle_t mr_handle,
                                              IN ri_ltag_t ltag, IN ri_addr_t vaddr,
                                              IN ri_length_t length, IN ri_mem_attr_t mem_attr,
                                              OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_bind(rnic, qp, type, flags, id, mw_handle, rtag,
                                                mr_handle, ltag, vaddr, length, mem_attr, err_data);
}

static inline ri_api_return_t ri_qp_post_fmr(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp,
                                             IN ri_wr_type_t type, IN ri_wr_flags_t flags,
                                             IN ri_wr_id_t id, IN ri_mr_reg_phys_attr_t *attr,
                                             IN ri_ltag_t ltag, IN ri_rtag_t rtag,
                                             IN ri_mr_handle_t mr_handle,
                                             OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_fmr(rnic, qp, type, flags, id, attr, ltag, rtag,
                                               mr_handle, err_data);
}

static inline ri_api_return_t ri_qp_post_local_invalidate(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_ltag_t ltag, IN ri_rtag_t rtag, IN ri_mr_handle_t mrw_handle,
    OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_local_invalidate(rnic, qp, type, flags, id, ltag, rtag,
                                                            mrw_handle, err_data);
}

static inline ri_api_return_t ri_qp_post_atomic(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_rtag_t rtag, IN uint64_t atomic_operand1, IN uint64_t atomic_operand2,
    IN ri_data_seg_t *atomic_result, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_atomic(rnic, qp, type, flags, id, rtag, atomic_operand1,
                                                  atomic_operand2, atomic_result, err_data);
}

static inline ri_api_return_t ri_qp_post_datagram(
    IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp, IN ri_wr_type_t type, IN ri_wr_flags_t flags,
    IN ri_wr_id_t id, IN ri_data_seg_t *sg_list, IN uint_t num_sgls, IN uint32_t imm_data,
    IN ri_address_handle_t remote_node_address, IN uint32_t dest_qp, IN uint32_t dest_qkey,
    IN uint8_t max_static_rate, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_datagram(rnic, qp, type, flags, id, sg_list, num_sgls,
                                                    imm_data, remote_node_address, dest_qp,
                                                    dest_qkey, max_static_rate, err_data);
}

static inline ri_api_return_t ri_qp_postrq(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp_handle,
                                           IN ri_wr_recv_t *wr, IN OUT uint_t *num_wrs,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_postrq(rnic, qp_handle, wr, num_wrs, err_data);
}

static inline ri_api_return_t ri_qp_post_recv(IN ri_rnic_handle_t rnic, IN ri_qp_handle_t qp_handle,
                                              IN ri_wr_flags_t flags, IN ri_wr_id_t id,
                                              IN ri_data_seg_t *sg_list, IN uint_t num_sgls,
                                              OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_qp_post_recv(rnic, qp_handle, flags, id, sg_list, num_sgls,
                                                err_data);
}

static inline ri_api_return_t ri_srq_create(IN ri_rnic_handle_t rnic,
                                            IN OUT ri_srq_attr_t *srq_attrs,
                                            OUT ri_srq_handle_t *srq, IN OUT ri_vp_data_t vp_data,
                                            IN OUT ri_os_data_t os_data,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_srq_create(rnic, srq_attrs, srq, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_srq_query(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq,
                                           OUT ri_srq_attr_t *srq_attrs,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_srq_query(rnic, srq, srq_attrs, err_data);
}

static inline ri_api_return_t ri_srq_modify(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq,
                                            IN ri_srq_attr_mask_t srqmask,
                                            IN OUT ri_srq_attr_t *attrs,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_srq_modify(rnic, srq, srqmask, attrs, err_data);
}

static inline ri_api_return_t ri_srq_destroy(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq,
                                             OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_srq_destroy(rnic, srq, err_data);
}

static inline ri_api_return_t ri_srq_post(IN ri_rnic_handle_t rnic, IN ri_srq_handle_t srq_handle,
                                          IN ri_wr_recv_t *wr, IN OUT uint_t *num_wrs,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_srq_post(rnic, srq_handle, wr, num_wrs, err_data);
}

static inline ri_api_return_t ri_srq_post_recv(IN ri_rnic_handle_t rnic,
                                               IN ri_srq_handle_t srq_handle,
                                               IN ri_wr_flags_t flags, IN ri_wr_id_t id,
                                               IN ri_data_seg_t *sg_list, IN uint_t num_sgls,
                                               OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_srq_post_recv(rnic, srq_handle, flags, id, sg_list, num_sgls,
                                                 err_data);
}

static inline ri_api_return_t ri_ltag_alloc(
    IN ri_rnic_handle_t rnic, IN OUT uint_t *address_list_length, IN ri_pd_handle_t pd,
    IN ri_mem_attr_t attr, OUT ri_mr_handle_t *mr, IN OUT ri_ltag_t *ltag, OUT ri_rtag_t *rtag,
    IN OUT ri_vp_data_t vp_data, IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_ltag_alloc(rnic, address_list_length, pd, attr, mr, ltag, rtag,
                                              vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_mr_reg(IN ri_rnic_handle_t rnic,
                                        IN const ri_mr_reg_attr_t *mr_reg_attr,
                                        OUT ri_mr_handle_t *mr, IN OUT ri_ltag_t *ltag,
                                        OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                        IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_reg(rnic, mr_reg_attr, mr, ltag, rtag, vp_data, os_data,
                                          err_data);
}

static inline ri_api_return_t ri_mr_query(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t mr,
                                          OUT ri_mr_info_t *mr_info, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_query(rnic, mr, mr_info, err_data);
}

static inline ri_api_return_t ri_mr_rereg(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t in_mr,
                                          IN ri_mr_rereg_t change_mask,
                                          IN const ri_mr_reg_attr_t *mr_attr,
                                          OUT ri_mr_handle_t *out_mr, IN OUT ri_ltag_t *ltag,
                                          OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                          IN OUT ri_os_data_t os_data,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_rereg(rnic, in_mr, change_mask, mr_attr, out_mr, ltag, rtag,
                                            vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_mr_dereg(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t mr,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_dereg(rnic, mr, err_data);
}

static inline ri_api_return_t ri_mr_reg_phys(IN ri_rnic_handle_t rnic,
                                             IN OUT ri_mr_reg_phys_attr_t *mr_phys_attr,
                                             OUT ri_mr_handle_t *mr, IN OUT ri_ltag_t *ltag,
                                             OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                             IN OUT ri_os_data_t os_data,
                                             OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_reg_phys(rnic, mr_phys_attr, mr, ltag, rtag, vp_data, os_data,
                                               err_data);
}

static inline ri_api_return_t ri_mr_rereg_phys(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t in_mr,
                                               IN ri_mr_rereg_t change_mask,
                                               IN OUT ri_mr_reg_phys_attr_t *mr_phys_attr,
                                               OUT ri_mr_handle_t *out_mr, IN OUT ri_ltag_t *ltag,
                                               IN OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                               IN OUT ri_os_data_t os_data,
                                               OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_rereg_phys(rnic, in_mr, change_mask, mr_phys_attr, out_mr,
                                                 ltag, rtag, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_mr_reg_shared(IN ri_rnic_handle_t rnic, IN ri_mr_handle_t in_mr,
                                               IN OUT ri_mr_reg_attr_t *mr_reg_attr,
                                               OUT ri_mr_handle_t *out_mr, IN OUT ri_ltag_t *ltag,
                                               OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                               IN OUT ri_os_data_t os_data,
                                               OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mr_reg_shared(rnic, in_mr, mr_reg_attr, out_mr, ltag, rtag,
                                                 vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_mw_alloc(IN ri_rnic_handle_t rnic, IN ri_pd_handle_t pd,
                                          IN ri_mw_type_t mw_type, OUT ri_mw_handle_t *mw,
                                          OUT ri_rtag_t *rtag, IN OUT ri_vp_data_t vp_data,
                                          IN OUT ri_os_data_t os_data,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mw_alloc(rnic, pd, mw_type, mw, rtag, vp_data, os_data,
                                            err_data);
}

static inline ri_api_return_t ri_mw_dealloc(IN ri_rnic_handle_t rnic, IN ri_mw_handle_t mw,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mw_dealloc(rnic, mw, err_data);
}

static inline ri_api_return_t ri_mw_query(IN ri_rnic_handle_t rnic, IN ri_mw_handle_t mw,
                                          OUT ri_mw_type_t *mw_type,
                                          OUT ri_stag_state_t *stag_state, OUT ri_pd_handle_t *pd,
                                          OUT ri_mem_attr_t *attr, OUT ri_rtag_t *rtag,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mw_query(rnic, mw, mw_type, stag_state, pd, attr, rtag,
                                            err_data);
}

static inline ri_api_return_t ri_mem_pin(IN ri_rnic_handle_t rnic, IN ri_vaddr_t vaddr,
                                         IN ri_length_t len, IN OUT ri_os_data_t os_data,
                                         OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mem_pin(rnic, vaddr, len, os_data, err_data);
}

static inline ri_api_return_t ri_mem_unpin(IN ri_rnic_handle_t rnic, IN ri_vaddr_t vaddr,
                                           IN ri_length_t len, IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mem_unpin(rnic, vaddr, len, os_data, err_data);
}

static inline ri_api_return_t ri_mem_map(IN ri_rnic_handle_t rnic, IN ri_vaddr_t vaddr,
                                         IN ri_length_t len, OUT ri_phys_buf_t *io,
                                         IN OUT ri_os_data_t os_data, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mem_map(rnic, vaddr, len, io, os_data, err_data);
}

static inline ri_api_return_t ri_mem_unmap(IN ri_rnic_handle_t rnic, IN ri_phys_buf_t *io,
                                           IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mem_unmap(rnic, io, os_data, err_data);
}

static inline ri_api_return_t ri_mem_sync_rread(IN ri_rnic_handle_t rnic,
                                                IN ri_data_seg_t *local_seg_list, IN uint_t num_seg,
                                                OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mem_sync_rread(rnic, local_seg_list, num_seg, err_data);
}

static inline ri_api_return_t ri_mem_sync_rwrite(IN ri_rnic_handle_t rnic,
                                                 IN ri_data_seg_t *local_seg_list,
                                                 IN uint_t num_seg, OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mem_sync_rwrite(rnic, local_seg_list, num_seg, err_data);
}

static inline ri_api_return_t ri_ah_create(IN ri_rnic_handle_t rnic, IN ri_pd_handle_t pd,
                                           IN ri_ud_address_vector_t *av,
                                           OUT ri_address_handle_t *ah, IN OUT ri_vp_data_t vp_data,
                                           IN OUT ri_os_data_t os_data,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_ah_create(rnic, pd, av, ah, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_ah_query(IN ri_rnic_handle_t rnic, IN ri_address_handle_t ah,
                                          OUT ri_ud_address_vector_t *av, OUT ri_pd_handle_t *pd,
                                          OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_ah_query(rnic, ah, av, pd, err_data);
}

static inline ri_api_return_t ri_ah_modify(IN ri_rnic_handle_t rnic, IN ri_address_handle_t ah,
                                           IN ri_ud_address_vector_t *av,
                                           OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_ah_modify(rnic, ah, av, err_data);
}

static inline ri_api_return_t ri_ah_destroy(IN ri_rnic_handle_t rnic, IN ri_address_handle_t ah,
                                            OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_ah_destroy(rnic, ah, err_data);
}

static inline ri_api_return_t ri_mcast_attach(IN ri_rnic_handle_t rnic, IN ri_lid_t mlid,
                                              IN ri_gid_t *mgid, IN ri_qp_handle_t qp,
                                              IN OUT ri_vp_data_t vp_data,
                                              IN OUT ri_os_data_t os_data,
                                              OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mcast_attach(rnic, mlid, mgid, qp, vp_data, os_data, err_data);
}

static inline ri_api_return_t ri_mcast_detach(IN ri_rnic_handle_t rnic, IN ri_lid_t mlid,
                                              IN ri_gid_t *mgid, IN ri_qp_handle_t qp,
                                              OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_mcast_detach(rnic, mlid, mgid, qp, err_data);
}

static inline ri_api_return_t ri_process_sma_mad(IN ri_rnic_handle_t rnic, IN uint8_t port_num,
                                                 IN char *in_mad, OUT char *out_mad,
                                                 OUT ri_err_data_t *err_data) {
    return ri_svc_ops(rnic)->ri_op_process_sma_mad(rnic, port_num, in_mad, out_mad, err_data);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RNICPI_RNICPI_OSDFUNC_H_ */
