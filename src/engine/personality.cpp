// The default personality: the spec's "not supported" answers.
#include "engine/personality.hpp"

namespace softrnic::engine {

namespace {

// Not an InfiniBand device (L2407; per call L2370, L4178, L6426, L6688).
template <class... Args>
ri_api_return_t not_infiniband(Args...) {
    return RI_RET_XPORT_UNSUPPORTED;
}

ri_api_return_t no_state_machine(Qp &, uint32_t, ri_qp_attr_t &) {
    return RI_RET_OP_UNSUPPORTED;
}

// No service type is offered (L3636), so no QP can be created.
ri_api_return_t no_service_type(RnicHandle &, const ri_qp_attr_t &) {
    return RI_RET_QP_INVALID_SERVICE_TYPE;
}

Personality make_default() {
    Personality p;
    p.name = "none";
    p.rnic_modify = not_infiniband<RnicHandle &, uint32_t, ri_rnic_modify_req_t *>;
    p.qp_create_check = no_service_type;
    p.qp_modify = no_state_machine;
    p.special_qp_get = not_infiniband<RnicHandle &, uint8_t, uint32_t, ri_qp_attr_t *,
                                      ri_qp_handle_t *, ri_vp_data_t, ri_os_data_t>;
    p.qp_post_datagram = not_infiniband<RnicHandle &, ri_qp_handle_t, ri_wr_type_t, ri_wr_flags_t,
                                        ri_wr_id_t, ri_data_seg_t *, uint_t, uint32_t,
                                        ri_address_handle_t, uint32_t, uint32_t, uint8_t>;
    p.ah_create = not_infiniband<RnicHandle &, ri_pd_handle_t, ri_ud_address_vector_t *,
                                 ri_address_handle_t *, ri_vp_data_t, ri_os_data_t>;
    p.ah_query = not_infiniband<RnicHandle &, ri_address_handle_t, ri_ud_address_vector_t *,
                                ri_pd_handle_t *>;
    p.ah_modify = not_infiniband<RnicHandle &, ri_address_handle_t, ri_ud_address_vector_t *>;
    p.ah_destroy = not_infiniband<RnicHandle &, ri_address_handle_t>;
    p.mcast_attach = not_infiniband<RnicHandle &, ri_lid_t, ri_gid_t *, ri_qp_handle_t,
                                    ri_vp_data_t, ri_os_data_t>;
    p.mcast_detach = not_infiniband<RnicHandle &, ri_lid_t, ri_gid_t *, ri_qp_handle_t>;
    p.process_sma_mad = not_infiniband<RnicHandle &, uint8_t, char *, char *>;
    return p;
}

template <class F>
void fill(F &entry, F fallback) {
    if (!entry) entry = fallback;
}

}  // namespace

const Personality &default_personality() {
    static const Personality p = make_default();
    return p;
}

Personality with_defaults(const Personality &overrides) {
    const Personality &d = default_personality();
    Personality p = overrides;
    if (!p.name) p.name = d.name;
    fill(p.rnic_modify, d.rnic_modify);
    fill(p.qp_create_check, d.qp_create_check);
    fill(p.qp_modify, d.qp_modify);
    fill(p.special_qp_get, d.special_qp_get);
    fill(p.qp_post_datagram, d.qp_post_datagram);
    fill(p.ah_create, d.ah_create);
    fill(p.ah_query, d.ah_query);
    fill(p.ah_modify, d.ah_modify);
    fill(p.ah_destroy, d.ah_destroy);
    fill(p.mcast_attach, d.mcast_attach);
    fill(p.mcast_detach, d.mcast_detach);
    fill(p.process_sma_mad, d.process_sma_mad);
    return p;
}

}  // namespace softrnic::engine
