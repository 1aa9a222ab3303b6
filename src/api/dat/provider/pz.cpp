// PZs (protection zones: RNICPI PDs). See provider.hpp for what the sources share.

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ PZ

DAT_RETURN pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto *pz = new Pz(ia->provider, DAT_HANDLE_TYPE_PZ, ia);
    ri_err_data_t e = 0;
    if (ri_pd_alloc(ia->rnic, &pz->pd, nullptr, pz, &e) != RI_RET_SUCCESS) {
        delete pz;
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
    }
    add_child(ia, pz);
    *out = pz;
    return DAT_SUCCESS;
}
DAT_RETURN pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask, DAT_PZ_PARAM *p) {
    auto *pz = as<Pz>(h, DAT_HANDLE_TYPE_PZ);
    if (!pz) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (mask & ~DAT_PZ_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = pz->ia;
    return DAT_SUCCESS;
}
DAT_RETURN pz_free(DAT_PZ_HANDLE h) {
    auto *pz = as<Pz>(h, DAT_HANDLE_TYPE_PZ);
    if (!pz) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (pz->users.load(std::memory_order_acquire) > 0)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
    ri_err_data_t e = 0;
    if (ri_pd_dealloc(pz->ia->rnic, pz->pd, &e) != RI_RET_SUCCESS)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
    retire(pz);
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
