// The InfiniBand-only calls (address handles, multicast, SMA MADs).
#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct XportOps {
    using Serial = SerialScope<Locked>;

    static ri_api_return_t ah_create(ri_rnic_handle_t h, ri_pd_handle_t, ri_ud_address_vector_t *,
                                     ri_address_handle_t *, ri_vp_data_t, ri_os_data_t,
                                     ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ah_query(ri_rnic_handle_t h, ri_address_handle_t,
                                    ri_ud_address_vector_t *, ri_pd_handle_t *,
                                    ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ah_modify(ri_rnic_handle_t h, ri_address_handle_t,
                                     ri_ud_address_vector_t *, ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ah_destroy(ri_rnic_handle_t h, ri_address_handle_t, ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t mcast_attach(ri_rnic_handle_t h, ri_lid_t, ri_gid_t *, ri_qp_handle_t,
                                        ri_vp_data_t, ri_os_data_t, ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t mcast_detach(ri_rnic_handle_t h, ri_lid_t, ri_gid_t *, ri_qp_handle_t,
                                        ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t process_sma_mad(ri_rnic_handle_t h, uint8_t, char *, char *,
                                           ri_err_data_t *err) {
        return ib_only(h, err);
    }
    static ri_api_return_t ib_only(ri_rnic_handle_t h, ri_err_data_t *err) {
        return guarded(err, [&] {
            if (!slow_rnic(h)) return RI_RET_RNIC_INVALID_HANDLE;
            return RI_RET_XPORT_UNSUPPORTED;
        });
    }

    static void fill(ri_ops_t &t) {
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

void fill_xport_ops(ri_ops_t &t, bool locked) {
    if (locked)
        XportOps<true>::fill(t);
    else
        XportOps<false>::fill(t);
}

}  // namespace softrnic::rnicpi::ops
