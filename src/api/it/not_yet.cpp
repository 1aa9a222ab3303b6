// The routines of IT-API 2.1 that this slice of the library does not build yet: RMR links
// and unlinks, S-RQs, endpoints, connection management, data transfer, UD addressing and
// service resolution, paths and address conversion. Every one is exported (libit.map
// names all 83) and answers IT_ERR_OP_NOT_SUPPORTED without reading its arguments or
// writing its outputs, the code the specification uses for a feature an IA does not offer
// (IT-API L6766, L8567, L11334-L11336); docs/it-api.md lists them ("Status").
#include "it_internal.hpp"

#define IT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
constexpr it_status_t kNotYet = IT_ERR_OP_NOT_SUPPORTED;
}  // namespace

IT_EXPORT it_status_t it_address_handle_create(it_pz_handle_t, const it_path_t *, it_ah_flags_t,
                                               it_addr_handle_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_address_handle_free(it_addr_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_address_handle_modify(it_addr_handle_t, it_addr_param_mask_t,
                                               const it_addr_param_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_address_handle_query(it_addr_handle_t, it_addr_param_mask_t,
                                              it_addr_param_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_convert_net_addr(const it_net_addr_t *, it_net_addr_type_t,
                                          it_net_addr_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_accept(it_ep_handle_t, it_cn_est_identifier_t, const unsigned char *,
                                   size_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_connect(it_ep_handle_t, const it_path_t *, const it_conn_attributes_t *,
                                    const it_conn_qual_t *, it_cn_est_flags_t,
                                    const unsigned char *, size_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_disconnect(it_ep_handle_t, const unsigned char *, size_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_free(it_ep_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_modify(it_ep_handle_t, it_ep_param_mask_t, const it_ep_attributes_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_query(it_ep_handle_t, it_ep_param_mask_t, it_ep_param_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_rc_create(it_pz_handle_t, it_evd_handle_t, it_evd_handle_t,
                                      it_evd_handle_t, it_ep_rc_creation_flags_t,
                                      const it_ep_attributes_t *, it_ep_handle_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_reset(it_ep_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ep_ud_create(it_pz_handle_t, it_evd_handle_t, it_evd_handle_t,
                                      const it_ep_attributes_t *, size_t, it_ep_handle_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_get_pathinfo(it_ia_handle_t, size_t, const it_net_addr_t *, size_t *,
                                      size_t *, it_path_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_handoff(const it_conn_qual_t *, size_t, it_cn_est_identifier_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_listen_create(it_ia_handle_t, size_t, it_evd_handle_t, it_listen_flags_t,
                                       it_conn_qual_t *, it_listen_handle_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_listen_free(it_listen_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_listen_query(it_listen_handle_t, it_listen_param_mask_t,
                                      it_listen_param_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_atomic(it_ep_handle_t, it_atomic_op_t, uint64_t, uint64_t,
                                     const it_lmr_triplet_t *, it_dto_cookie_t, it_dto_flags_t,
                                     it_rdma_addr_t, it_rmr_context_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_rdma_read(it_ep_handle_t, const it_lmr_triplet_t *, size_t,
                                        it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
                                        it_rmr_context_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_rdma_read_to_rmr(it_ep_handle_t, const it_rmr_triplet_t *, size_t,
                                               it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
                                               it_rmr_context_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_rdma_write(it_ep_handle_t, const it_lmr_triplet_t *, size_t,
                                         it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
                                         it_rmr_context_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_recv(it_handle_t, const it_lmr_triplet_t *, size_t, it_dto_cookie_t,
                                   it_dto_flags_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_recvfrom(it_ep_handle_t, const it_lmr_triplet_t *, size_t,
                                       it_dto_cookie_t, it_dto_flags_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_send(it_ep_handle_t, const it_lmr_triplet_t *, size_t,
                                   it_dto_cookie_t, it_dto_flags_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_send_and_unlink(it_ep_handle_t, const it_lmr_triplet_t *, size_t,
                                              it_dto_cookie_t, it_dto_flags_t, it_rmr_context_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_post_sendto(it_ep_handle_t, const it_lmr_triplet_t *, size_t,
                                     it_dto_cookie_t, it_dto_flags_t,
                                     const it_dg_remote_ep_addr_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_reject(it_cn_est_identifier_t, const unsigned char *, size_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_rmr_bind10(it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
                                    it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t, it_dto_flags_t,
                                    it_rmr_context_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_rmr_link(it_rmr_handle_t, it_lmr_handle_t, void *, it_length_t,
                                  it_addr_mode_t, it_mem_priv_t, it_ep_handle_t, it_dto_cookie_t,
                                  it_dto_flags_t, it_rmr_context_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_rmr_unlink(it_rmr_handle_t, it_ep_handle_t, it_dto_cookie_t,
                                    it_dto_flags_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_socket_convert(int, it_ep_handle_t, it_sc_flags_t, const unsigned char *,
                                        size_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_srq_create(it_pz_handle_t, size_t, size_t, it_srq_handle_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_srq_free(it_srq_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_srq_modify(it_srq_handle_t, it_srq_param_mask_t, const it_srq_param_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_srq_query(it_srq_handle_t, it_srq_param_mask_t, it_srq_param_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ud_service_reply(it_ud_svc_req_identifier_t, it_ud_svc_req_status_t,
                                          it_remote_ep_info_t, const unsigned char *, size_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ud_service_request(it_ud_svc_req_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ud_service_request_handle_create(const it_conn_qual_t *, it_evd_handle_t,
                                                          const it_path_t *, const unsigned char *,
                                                          size_t, it_ud_svc_req_handle_t *) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ud_service_request_handle_free(it_ud_svc_req_handle_t) {
    return kNotYet;
}
IT_EXPORT it_status_t it_ud_service_request_handle_query(it_ud_svc_req_handle_t,
                                                         it_ud_svc_req_param_mask_t,
                                                         it_ud_svc_req_param_t *) {
    return kNotYet;
}
