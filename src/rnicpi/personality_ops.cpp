// The calls whose behaviour depends on the RNIC instance's personality (iWARP today,
// InfiniBand later; engine/personality.hpp): each checks what every personality would
// (the RNIC handle, the caller's privilege, the QP of ri_qp_modify) and then dispatches
// through the instance's table.
#include "engine/personality.hpp"
#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct PersonalityOps {
    using Serial = SerialScope<Locked>;

    static const Personality &of(const RnicHandle &r) { return *r.dev->personality; }

    static ri_api_return_t rnic_modify(ri_rnic_handle_t h, ri_rnic_attr_mask_t mask,
                                       ri_rnic_modify_req_t *req, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            return of(*r).rnic_modify(*r, raw(mask), req);
        });
    }

    static ri_api_return_t qp_modify(ri_rnic_handle_t h, ri_qp_handle_t qp, ri_qp_attr_mask_t mask,
                                     ri_qp_attr_t *a, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            Qp *q = owned(r->dev->qps, qp, r);
            if (!q) return RI_RET_QP_INVALID_HANDLE;
            if (!a) return RI_RET_INVALID_PARAMETER;
            return of(*r).qp_modify(*q, raw(mask), *a);
        });
    }

    static ri_api_return_t special_qp_get(ri_rnic_handle_t h, uint8_t port, ri_sqp_type_t type,
                                          ri_qp_attr_t *attrs, ri_qp_handle_t *qp, ri_vp_data_t vp,
                                          ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            return of(*r).special_qp_get(*r, port, raw(type), attrs, qp, vp, os);
        });
    }

    static ri_api_return_t qp_post_datagram(ri_rnic_handle_t h, ri_qp_handle_t qp,
                                            ri_wr_type_t type, ri_wr_flags_t flags, ri_wr_id_t id,
                                            ri_data_seg_t *sg, uint_t num, uint32_t imm,
                                            ri_address_handle_t ah, uint32_t dest_qp, uint32_t qkey,
                                            uint8_t rate, ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        Serial s(r);
        return of(*r).qp_post_datagram(*r, qp, type, flags, id, sg, num, imm, ah, dest_qp, qkey,
                                       rate);
    }

    static ri_api_return_t ah_create(ri_rnic_handle_t h, ri_pd_handle_t pd,
                                     ri_ud_address_vector_t *av, ri_address_handle_t *ah,
                                     ri_vp_data_t vp, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            return of(*r).ah_create(*r, pd, av, ah, vp, os);
        });
    }

    static ri_api_return_t ah_query(ri_rnic_handle_t h, ri_address_handle_t ah,
                                    ri_ud_address_vector_t *av, ri_pd_handle_t *pd,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            return of(*r).ah_query(*r, ah, av, pd);
        });
    }

    static ri_api_return_t ah_modify(ri_rnic_handle_t h, ri_address_handle_t ah,
                                     ri_ud_address_vector_t *av, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            return of(*r).ah_modify(*r, ah, av);
        });
    }

    static ri_api_return_t ah_destroy(ri_rnic_handle_t h, ri_address_handle_t ah,
                                      ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            Serial s(r);
            return of(*r).ah_destroy(*r, ah);
        });
    }

    static ri_api_return_t mcast_attach(ri_rnic_handle_t h, ri_lid_t mlid, ri_gid_t *mgid,
                                        ri_qp_handle_t qp, ri_vp_data_t vp, ri_os_data_t os,
                                        ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return of(*r).mcast_attach(*r, mlid, mgid, qp, vp, os);
        });
    }

    static ri_api_return_t mcast_detach(ri_rnic_handle_t h, ri_lid_t mlid, ri_gid_t *mgid,
                                        ri_qp_handle_t qp, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return of(*r).mcast_detach(*r, mlid, mgid, qp);
        });
    }

    static ri_api_return_t process_sma_mad(ri_rnic_handle_t h, uint8_t port, char *in, char *out,
                                           ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return of(*r).process_sma_mad(*r, port, in, out);
        });
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_rnic_modify = rnic_modify;
        t.ri_op_qp_modify = qp_modify;
        t.ri_op_special_qp_get = special_qp_get;
        t.ri_op_qp_post_datagram = qp_post_datagram;
        t.ri_op_ah_create = ah_create;
        t.ri_op_ah_query = ah_query;
        t.ri_op_ah_modify = ah_modify;
        t.ri_op_ah_destroy = ah_destroy;
        t.ri_op_mcast_attach = mcast_attach;
        t.ri_op_mcast_detach = mcast_detach;
        t.ri_op_process_sma_mad = process_sma_mad;
    }
};

}  // namespace

void fill_personality_ops(ri_ops_t &t, bool locked) {
    fill_both<PersonalityOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
