// Protection Zones (RNICPI PDs): it_pz_create, it_pz_free, it_pz_query. See it_internal.hpp
// for what the sources share.
#include "it_internal.hpp"

namespace softrnic::itapi {

it_status_t pz_create(it_ia_handle_t h, it_pz_handle_t *out) {
    Ia *ia = as_ia(h);
    if (!ia) return IT_ERR_INVALID_IA;
    if (!out) return IT_ERR_FAULT;
    auto *pz = new Pz(IT_HANDLE_TYPE_PZ, ia);
    ri_err_data_t e = 0;
    if (ri_pd_alloc(ia->rnic, &pz->pd, nullptr, pz, &e) != RI_RET_SUCCESS) {
        delete pz;
        return IT_ERR_RESOURCES;
    }
    add_child(pz);
    *out = reinterpret_cast<it_pz_handle_t>(pz);
    return IT_SUCCESS;
}

it_status_t pz_free(it_pz_handle_t h) {
    Pz *pz = as_pz(h);
    if (!pz) return IT_ERR_INVALID_PZ;
    // Busy while any EP, LMR, RMR, S-RQ or address handle names it (IT-API L10302-L10305).
    if (pz->users.load(std::memory_order_acquire) > 0) return IT_ERR_PZ_BUSY;
    ri_err_data_t e = 0;
    if (ri_pd_dealloc(pz->ia->rnic, pz->pd, &e) != RI_RET_SUCCESS) return IT_ERR_PZ_BUSY;
    retire(pz);
    return IT_SUCCESS;
}

void pz_free_now(Pz *pz) {
    if (!handles().valid(pz, IT_HANDLE_TYPE_PZ)) return;
    ri_err_data_t e = 0;
    ri_pd_dealloc(pz->ia->rnic, pz->pd, &e);
    retire(pz);
}

it_status_t pz_query(it_pz_handle_t h, uint32_t mask, it_pz_param_t *p) {
    Pz *pz = as_pz(h);
    if (!pz) return IT_ERR_INVALID_PZ;
    if (mask & ~(IT_PZ_PARAM_ALL | IT_PZ_PARAM_IA)) return IT_ERR_INVALID_MASK;
    if (mask == 0) return IT_SUCCESS;
    if (!p) return IT_ERR_FAULT;
    p->ia = reinterpret_cast<it_ia_handle_t>(pz->ia);
    return IT_SUCCESS;
}

}  // namespace softrnic::itapi
