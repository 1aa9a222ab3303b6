// SRQs. See provider.hpp for what the sources share.
#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ SRQ

DAT_RETURN srq_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pzh, DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    Pz *pz = as<Pz>(pzh, DAT_HANDLE_TYPE_PZ);
    if (!pz) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (!attr || attr->max_recv_dtos <= 0 || attr->max_recv_iov <= 0 ||
        uint32_t(attr->max_recv_dtos) > ia->attr.max_wrs_srq ||
        uint32_t(attr->max_recv_iov) > ia->attr.max_sgl_srq ||
        attr->low_watermark != DAT_SRQ_LW_DEFAULT)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if (!ia->attr.max_srq) return err(DAT_MODEL_NOT_SUPPORTED);
    auto *s = new Srq(ia->provider, DAT_HANDLE_TYPE_SRQ, ia);
    ri_srq_attr_t a{};
    a.max_wrs = uint32_t(attr->max_recv_dtos);
    a.max_sgl = uint32_t(attr->max_recv_iov);
    a.pd = pz->pd;
    ri_err_data_t e = 0;
    if (ri_srq_create(ia->rnic, &a, &s->srq, nullptr, s, &e) != RI_RET_SUCCESS) {
        delete s;
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_SRQ);
    }
    s->pz = pz;
    s->attr = *attr;
    pz->users.fetch_add(1, std::memory_order_relaxed);
    add_child(ia, s);
    *out = s;
    return DAT_SUCCESS;
}
DAT_RETURN srq_free(DAT_SRQ_HANDLE h) {
    Srq *s = as<Srq>(h, DAT_HANDLE_TYPE_SRQ);
    if (!s) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    if (s->users.load(std::memory_order_acquire) > 0)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);  // L4893
    ri_err_data_t e = 0;
    if (ri_srq_destroy(s->ia->rnic, s->srq, &e) != RI_RET_SUCCESS)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_SRQ_IN_USE);
    s->pz->users.fetch_sub(1, std::memory_order_relaxed);
    retire(s);
    return DAT_SUCCESS;
}
DAT_RETURN srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
                         DAT_DTO_COOKIE cookie) {
    Srq *s = as<Srq>(h, DAT_HANDLE_TYPE_SRQ);
    if (!s) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    if (n < 0 || n > s->attr.max_recv_iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (n > 0 && !iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    Sgl sg;
    if (!sg.build(n, iov)) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ri_wr_recv_t wr{};
    wr.id = cookie.as_64;
    wr.sg_list = sg.segs;
    wr.num_sgls = sg.n;
    uint_t cnt = 1;
    ri_err_data_t e = 0;
    return from_ri(ri_srq_post(s->ia->rnic, s->srq, &wr, &cnt, &e));
}
DAT_RETURN srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask, DAT_SRQ_PARAM *p) {
    Srq *s = as<Srq>(h, DAT_HANDLE_TYPE_SRQ);
    if (!s) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    if (mask & ~DAT_SRQ_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = s->ia;
    p->srq_state = DAT_SRQ_STATE_OPERATIONAL;
    p->pz_handle = s->pz;
    p->max_recv_dtos = s->attr.max_recv_dtos;
    p->max_recv_iov = s->attr.max_recv_iov;
    p->low_watermark = s->attr.low_watermark;
    p->available_dto_count = DAT_VALUE_UNKNOWN;  // srq_info_supported is 0
    p->outstanding_dto_count = DAT_VALUE_UNKNOWN;
    return DAT_SUCCESS;
}
DAT_RETURN srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT n) {
    Srq *s = as<Srq>(h, DAT_HANDLE_TYPE_SRQ);
    if (!s) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    if (n <= 0 || uint32_t(n) > s->ia->attr.max_wrs_srq)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ri_srq_attr_t a{};
    a.max_wrs = uint32_t(n);
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_srq_modify(s->ia->rnic, s->srq, RI_SRQ_ATTR_MAX_WRS, &a, &e);
    if (r != RI_RET_SUCCESS) return err(DAT_INVALID_STATE);  // fewer than outstanding
    s->attr.max_recv_dtos = n;
    return DAT_SUCCESS;
}
DAT_RETURN srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT lw) {
    Srq *s = as<Srq>(h, DAT_HANDLE_TYPE_SRQ);
    if (!s) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_SRQ);
    if (lw < 0 || lw > s->attr.max_recv_dtos) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    ri_srq_attr_t a{};
    a.lowat = uint32_t(lw);
    ri_err_data_t e = 0;
    if (ri_srq_modify(s->ia->rnic, s->srq, RI_SRQ_ATTR_LOWAT, &a, &e) != RI_RET_SUCCESS)
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    s->attr.low_watermark = lw;
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
