// The InfiniBand personality (docs/ib-personality.md): an HCA with ports (Device::hca).
// It implements ri_rnic_modify, RC and UD QPs with the IB state machine
// (qp_ib_state.cpp), the special QPs (QP0, QP1), address handles (ah.cpp) and UD datagrams
// in the process (qp_datagram.cpp); every other entry keeps the default answer until its
// step of the plan lands (§10): multicast and SMA MADs answer RI_RET_XPORT_UNSUPPORTED.
#include "engine/abi.hpp"
#include "engine/device.hpp"
#include "engine/personality.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

namespace {

constexpr uint32_t kKnownPortMask =
    RI_IB_PORT_ATTR_SHUTDOWN | RI_IB_PORT_ATTR_INIT_TYPE | RI_IB_PORT_ATTR_QKEY_RESET |
    RI_IB_PORT_ATTR_CAP_SET | RI_IB_PORT_ATTR_CAP_FLAG_SM | RI_IB_PORT_ATTR_CAP_FLAG_SNMP |
    RI_IB_PORT_ATTR_CAP_FLAG_DEVMGT | RI_IB_PORT_ATTR_CAP_FLAG_VENDOR;
constexpr uint32_t kCapFlagMask = RI_IB_PORT_ATTR_CAP_FLAG_SM | RI_IB_PORT_ATTR_CAP_FLAG_SNMP |
                                  RI_IB_PORT_ATTR_CAP_FLAG_DEVMGT | RI_IB_PORT_ATTR_CAP_FLAG_VENDOR;

// The capability bits a CAP_SET request leaves set (L2386-2389).
ri_ib_port_flags_t capabilities_of(uint32_t mask) {
    uint32_t f = 0;
    if (mask & RI_IB_PORT_ATTR_CAP_FLAG_SM) f |= RI_IB_PORT_SM;
    if (mask & RI_IB_PORT_ATTR_CAP_FLAG_SNMP) f |= RI_IB_PORT_SNMP_TUNNEL;
    if (mask & RI_IB_PORT_ATTR_CAP_FLAG_DEVMGT) f |= RI_IB_PORT_DEV_MGT;
    if (mask & RI_IB_PORT_ATTR_CAP_FLAG_VENDOR) f |= RI_IB_PORT_VENDOR_CLASS;
    return static_cast<ri_ib_port_flags_t>(f);
}

// ri_rnic_modify (L2293-2410), all or nothing: every request is checked before any is
// applied. Of the optional items (L2392) the system image GUID and the Q_Key violation
// counter are offered (RI_IB_SI_GUID, RI_IB_QKEY_CNTR); port shutdown and InitType are
// not (no RI_IB_SHUTDOWN_PORT, no RI_IB_INIT_TYPE): RI_RET_OP_UNSUPPORTED (L2393).
ri_api_return_t ib_rnic_modify(RnicHandle &r, uint32_t mask, ri_rnic_modify_req_t *req) {
    transport::ib::Hca &hca = *r.dev->hca;
    if (!req) return RI_RET_INVALID_PARAMETER;      // L2402
    if (mask & ~uint32_t(RI_IB_RNIC_ATTR_SI_GUID))  // L2360
        return RI_RET_INVALID_PARAMETER;
    // A system image GUID of 0 would read "not supported" (L7955).
    if ((mask & RI_IB_RNIC_ATTR_SI_GUID) && req->si_guid == 0) return RI_RET_INVALID_PARAMETER;
    if (req->port_list_size && !req->port_attrs) return RI_RET_INVALID_PARAMETER;
    bool unsupported = false;
    for (uint8_t i = 0; i < req->port_list_size; ++i) {
        const ri_port_modify_req_t &p = req->port_attrs[i];
        uint32_t m = raw(p.port_attr_mask);
        if (m & ~kKnownPortMask) return RI_RET_INVALID_PARAMETER;  // L2380
        if (p.port_number != RI_IB_ALL_PORTS && p.port_number > hca.num_ports())
            return RI_RET_INVALID_PARAMETER;  // L2383
        if ((m & kCapFlagMask) && !(m & RI_IB_PORT_ATTR_CAP_SET))
            return RI_RET_INVALID_PARAMETER;  // L2386-2389
        if (m & (RI_IB_PORT_ATTR_SHUTDOWN | RI_IB_PORT_ATTR_INIT_TYPE)) unsupported = true;
    }
    if (unsupported) return RI_RET_OP_UNSUPPORTED;
    if (mask & RI_IB_RNIC_ATTR_SI_GUID) hca.set_system_image_guid(req->si_guid);
    for (uint8_t i = 0; i < req->port_list_size; ++i) {
        const ri_port_modify_req_t &p = req->port_attrs[i];
        uint32_t m = raw(p.port_attr_mask);
        uint8_t first = p.port_number == RI_IB_ALL_PORTS ? 1 : p.port_number;
        uint8_t last = p.port_number == RI_IB_ALL_PORTS ? hca.num_ports() : p.port_number;
        for (uint8_t n = first; n <= last; ++n) {
            if (m & RI_IB_PORT_ATTR_QKEY_RESET) hca.reset_qkey_counter(n);
            if (m & RI_IB_PORT_ATTR_CAP_SET) hca.set_capabilities(n, capabilities_of(m));
        }
    }
    return RI_RET_SUCCESS;
}

// The service types RNICPI names (L8607): RC and UD.
ri_api_return_t ib_qp_create_check(RnicHandle &, const ri_qp_attr_t &a) {
    const uint32_t t = raw(a.qp_xport.qp_ib.trans_type);
    if (t != RI_SERVICE_RELIABLE_CONNECTION && t != RI_SERVICE_UNRELIABLE_DATAGRAM)
        return RI_RET_QP_INVALID_SERVICE_TYPE;
    return RI_RET_SUCCESS;
}

ri_api_return_t ib_qp_modify(Qp &qp, uint32_t mask, ri_qp_attr_t &attrs) {
    return qp.ib_modify(mask, attrs);
}

// ri_special_qp_get (L4069-4171): QP0 or QP1 of a port, a UD-like QP whose port is fixed.
ri_api_return_t ib_special_qp_get(RnicHandle &r, uint8_t port, uint32_t type, ri_qp_attr_t *attrs,
                                  ri_qp_handle_t *qp, ri_vp_data_t, ri_os_data_t os) {
    if (!attrs || !qp) return RI_RET_INVALID_PARAMETER;  // L4165
    Qp *q = nullptr;
    ri_api_return_t ret = r.dev->create_special_qp(r, port, type, *attrs, os, q);
    if (ret == RI_RET_SUCCESS) *qp = q->handle;
    return ret;
}

// ri_qp_post_datagram (L4190): one datagram WR through the UD QP's send queue
// (qp_datagram.cpp), as ri_qp_postsq would take it. The static rate is not enforced.
ri_api_return_t ib_qp_post_datagram(RnicHandle &r, ri_qp_handle_t qp, ri_wr_type_t type,
                                    ri_wr_flags_t flags, ri_wr_id_t id, ri_data_seg_t *sg,
                                    uint_t num_sgl, uint32_t imm, ri_address_handle_t ah,
                                    uint32_t dest_qp, uint32_t qkey, uint8_t rate) {
    Qp *q = r.dev->qps.lookup(qp);
    if (!q || q->owner != &r) return RI_RET_QP_INVALID_HANDLE;
    // Only a UD QP takes datagrams (A10); special QPs' traffic comes later.
    if (!q->ib || q->ib->service != IbService::Ud) return RI_RET_WR_INVALID_TYPE;
    ri_wr_t wr{};
    ri_wr_datagram_t &d = wr.wr_datagram;
    d.type = type;
    d.flags = flags;
    d.id = id;
    d.sg_list = sg;
    d.num_sgls = num_sgl;
    d.imm_data = imm;
    d.remote_node_address = ah;
    d.dest_qp = dest_qp;
    d.dest_qkey = qkey;
    d.max_static_rate = rate;
    uint32_t one = 1;
    return q->post_sq(&wr, one);
}

// Address handles (RNICPI L6361-6598; ah.cpp).
ri_api_return_t ib_ah_create(RnicHandle &r, ri_pd_handle_t pd, ri_ud_address_vector_t *av,
                             ri_address_handle_t *ah, ri_vp_data_t, ri_os_data_t os) {
    if (!av || !ah) return RI_RET_INVALID_PARAMETER;  // L6415
    Ah *a = nullptr;
    ri_api_return_t ret = r.dev->create_ah(r, pd, *av, os, a);
    if (ret == RI_RET_SUCCESS) *ah = a->handle;
    return ret;
}

ri_api_return_t ib_ah_query(RnicHandle &r, ri_address_handle_t ah, ri_ud_address_vector_t *av,
                            ri_pd_handle_t *pd) {
    // The handle is checked first: a bad one is ADDRESS_HANDLE_INVALID whatever the outputs.
    if (!r.dev->owned_ah(ah, &r)) return RI_RET_ADDRESS_HANDLE_INVALID;
    if (!av || !pd) return RI_RET_INVALID_PARAMETER;  // L6451
    void *p = nullptr;
    ri_api_return_t ret = r.dev->query_ah(r, ah, *av, p);
    if (ret == RI_RET_SUCCESS) *pd = p;
    return ret;
}

ri_api_return_t ib_ah_modify(RnicHandle &r, ri_address_handle_t ah, ri_ud_address_vector_t *av) {
    if (!r.dev->owned_ah(ah, &r)) return RI_RET_ADDRESS_HANDLE_INVALID;
    if (!av) return RI_RET_INVALID_PARAMETER;  // L6486
    return r.dev->modify_ah(r, ah, *av);
}

ri_api_return_t ib_ah_destroy(RnicHandle &r, ri_address_handle_t ah) {
    return r.dev->destroy_ah(r, ah);
}

Personality make_ib() {
    Personality p;
    p.name = "ib";
    p.rnic_modify = ib_rnic_modify;
    p.qp_create_check = ib_qp_create_check;
    p.qp_modify = ib_qp_modify;
    p.special_qp_get = ib_special_qp_get;
    p.qp_post_datagram = ib_qp_post_datagram;
    p.ah_create = ib_ah_create;
    p.ah_query = ib_ah_query;
    p.ah_modify = ib_ah_modify;
    p.ah_destroy = ib_ah_destroy;
    return with_defaults(p);
}

}  // namespace

const Personality &ib_personality() {
    static const Personality p = make_ib();
    return p;
}

}  // namespace softrnic::engine
