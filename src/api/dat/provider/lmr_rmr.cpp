// Memory: LMRs (memory regions) and RMRs (memory windows and their binds), registered through
// the faces' shared api::MemoryRegion and api::MemoryWindow. See provider.hpp for what the
// sources share.
#include <cstring>
#include <mutex>

#include "provider.hpp"

namespace softrnic::dapl {

// ------------------------------------------------------------------------------ LMR / RMR

// The standard privileges and the IB extension's remote atomic one.
constexpr unsigned kRemoteAtomic = DAT_IB_MEM_PRIV_REMOTE_ATOMIC;
constexpr unsigned kMemPrivKnown = unsigned(DAT_MEM_PRIV_ALL_FLAG) | kRemoteAtomic;

ri_mem_attr_t mem_attr(DAT_MEM_PRIV_FLAGS p) {
    unsigned a = RI_MEM_FLAGS_BINDING;
    if (p & DAT_MEM_PRIV_LOCAL_READ_FLAG) a |= RI_MEM_FLAGS_LOCAL_READ;
    if (p & DAT_MEM_PRIV_LOCAL_WRITE_FLAG) a |= RI_MEM_FLAGS_LOCAL_WRITE;
    if (p & DAT_MEM_PRIV_REMOTE_READ_FLAG) a |= RI_MEM_FLAGS_REMOTE_READ | RI_MEM_FLAGS_LOCAL_READ;
    // Remote write needs local write in RNICPI (and on IB hardware).
    if (p & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
        a |= RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_LOCAL_WRITE;
    // The IB extension's atomic target privilege; atomics write too.
    if (p & kRemoteAtomic) a |= RI_MEM_FLAGS_ATOMICS | RI_MEM_FLAGS_LOCAL_WRITE;
    return static_cast<ri_mem_attr_t>(a);
}

DAT_RETURN lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
                      DAT_VLEN length, DAT_PZ_HANDLE pzh, DAT_MEM_PRIV_FLAGS priv,
                      DAT_VA_TYPE va_type, DAT_LMR_HANDLE *out, DAT_LMR_CONTEXT *lctx,
                      DAT_RMR_CONTEXT *rctx, DAT_VLEN *reg_size, DAT_VADDR *reg_addr) {
    Ia *ia = as_ia(h);
    if (!ia) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    Pz *pz = as<Pz>(pzh, DAT_HANDLE_TYPE_PZ);
    if (!pz) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (priv & ~kMemPrivKnown) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
    if (va_type == DAT_VA_TYPE_ZB) return err(DAT_MODEL_NOT_SUPPORTED);  // zb_supported FALSE
    if (va_type != DAT_VA_TYPE_VA) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
    DAT_VADDR va = 0;
    switch (type) {
        case DAT_MEM_TYPE_VIRTUAL:
            va = reinterpret_cast<uintptr_t>(region.for_va);
            break;
        case DAT_MEM_TYPE_LMR: {
            Lmr *src = as<Lmr>(region.for_lmr_handle, DAT_HANDLE_TYPE_LMR);
            if (!src) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
            va = src->addr;
            length = src->length;  // the length argument is ignored (L7805)
            break;
        }
        case DAT_MEM_TYPE_SHARED_VIRTUAL:
            return err(DAT_MODEL_NOT_SUPPORTED);  // not in lmr_mem_types_supported
        default:
            return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    }
    // An empty region is a length error (no subtype exists, L13146), as dapltest's FFT mem
    // case 2 expects, though the list at L7860 names only DAT_INVALID_PARAMETER: any applicable
    // error may be returned (L8828). Checked before the address: that case passes NULL too.
    if (length == 0) return err(DAT_LENGTH_ERROR);
    if (va == 0) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    auto *lmr = new Lmr(ia->provider, DAT_HANDLE_TYPE_LMR, ia);
    api::MemFailure f = lmr->mr.reg(ia->rnic, pz->pd, va, length, mem_attr(priv), lmr);
    if (f != api::MemFailure::None) {
        delete lmr;
        if (f == api::MemFailure::Resources)
            return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
        return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);  // memory not validly mapped (L1471)
    }
    const ri_ltag_t lt = lmr->mr.ltag();
    const ri_rtag_t rt = lmr->mr.rtag();
    lmr->pz = pz;
    lmr->mem_type = type;
    lmr->region = region;
    lmr->length = length;
    lmr->priv = priv;
    lmr->addr = va;
    lmr->lmr_context = lt;
    // No remote privileges: no rmr_context (L7853).
    lmr->rmr_context =
        (priv & (DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG | kRemoteAtomic))
            ? rt
            : 0;
    pz->users.fetch_add(1, std::memory_order_relaxed);
    add_child(ia, lmr);
    *out = lmr;
    if (lctx) *lctx = lmr->lmr_context;
    if (rctx) *rctx = lmr->rmr_context;
    if (reg_size) *reg_size = length;
    if (reg_addr) *reg_addr = va;
    return DAT_SUCCESS;
}

DAT_RETURN lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask, DAT_LMR_PARAM *p) {
    Lmr *l = as<Lmr>(h, DAT_HANDLE_TYPE_LMR);
    if (!l) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
    if (mask & ~DAT_LMR_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = l->ia;
    p->mem_type = l->mem_type;
    p->region_desc = l->region;
    p->length = l->length;
    p->pz_handle = l->pz;
    p->mem_priv = l->priv;
    p->va_type = l->va_type;
    p->lmr_context = l->lmr_context;
    p->rmr_context = l->rmr_context;
    p->registered_size = l->length;
    p->registered_address = l->addr;
    return DAT_SUCCESS;
}

DAT_RETURN lmr_free(DAT_LMR_HANDLE h) {
    Lmr *l = as<Lmr>(h, DAT_HANDLE_TYPE_LMR);
    if (!l) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
    if (l->bound.load(std::memory_order_acquire) > 0)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE);  // L7933
    if (l->mr.dereg() != api::MemFailure::None)
        return err(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE);
    l->pz->users.fetch_sub(1, std::memory_order_relaxed);
    retire(l);
    return DAT_SUCCESS;
}

DAT_RETURN lmr_sync(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *iov, DAT_VLEN n) {
    if (!as_ia(h)) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
    if (n > 0 && !iov) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    return DAT_SUCCESS;  // coherent memory: lmr_sync_req is FALSE
}

DAT_RETURN rmr_create_common(DAT_PZ_HANDLE h, DAT_RMR_HANDLE *out, bool ep_scope) {
    Pz *pz = as<Pz>(h, DAT_HANDLE_TYPE_PZ);
    if (!pz) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
    if (!out) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    auto *r = new Rmr(pz->ia->provider, DAT_HANDLE_TYPE_RMR, pz->ia);
    if (r->mw.alloc(pz->ia->rnic, pz->pd, ep_scope ? RI_MW_TYPE_2 : RI_MW_TYPE_1, r) !=
        api::MemFailure::None) {
        delete r;
        return err(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
    }
    r->rtag = r->mw.rtag();
    r->pz = pz;
    r->scope = ep_scope ? DAT_RMR_SCOPE_EP : DAT_RMR_SCOPE_PZ;
    pz->users.fetch_add(1, std::memory_order_relaxed);
    add_child(pz->ia, r);
    *out = r;
    return DAT_SUCCESS;
}
DAT_RETURN rmr_create(DAT_PZ_HANDLE h, DAT_RMR_HANDLE *out) {
    return rmr_create_common(h, out, false);
}
DAT_RETURN rmr_create_for_ep(DAT_PZ_HANDLE h, DAT_RMR_HANDLE *out) {
    return rmr_create_common(h, out, true);
}

DAT_RETURN rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask, DAT_RMR_PARAM *p) {
    Rmr *r = as<Rmr>(h, DAT_HANDLE_TYPE_RMR);
    if (!r) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
    if (mask & ~DAT_RMR_FIELD_ALL) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
    if (!p) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    p->ia_handle = r->ia;
    p->pz_handle = r->pz;
    p->lmr_triplet = r->triplet;
    p->mem_priv = r->priv;
    p->rmr_context = r->rtag;
    p->rmr_scope = r->scope;
    p->va_type = DAT_VA_TYPE_VA;
    return DAT_SUCCESS;
}

DAT_RETURN rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lh, const DAT_LMR_TRIPLET *t,
                    DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE eph,
                    DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT *ctx) {
    Rmr *r = as<Rmr>(h, DAT_HANDLE_TYPE_RMR);
    if (!r) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
    Ep *ep = as_ep(eph);
    if (!ep) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
    if (!t) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
    if (priv & ~kMemPrivKnown) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
    if (va_type == DAT_VA_TYPE_ZB) return err(DAT_MODEL_NOT_SUPPORTED);
    if (va_type != DAT_VA_TYPE_VA) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
    Lmr *l = nullptr;
    if (t->segment_length != 0) {
        l = as<Lmr>(lh, DAT_HANDLE_TYPE_LMR);
        if (!l) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
        // Window rights need the matching local rights of the region (L8257).
        if (((priv &
              (DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG | kRemoteAtomic)) &&
             !(l->priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)) ||
            ((priv & DAT_MEM_PRIV_REMOTE_READ_FLAG) && !(l->priv & DAT_MEM_PRIV_LOCAL_READ_FLAG)))
            return err(DAT_PRIVILEGES_VIOLATION);
        if (t->virtual_address < l->addr ||
            t->virtual_address + t->segment_length > l->addr + l->length)
            return err(DAT_PROTECTION_VIOLATION);
    }
    unsigned rf = 0;
    if (DAT_RETURN rr = request_flags(ep, flags, rf, DAT_INVALID_ARG8)) return rr;
    if (DAT_RETURN rr = post_state(ep)) return rr;
    if (ep->pz != r->pz) return err(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);  // L1535
    ri_rtag_t next = (r->rtag & ~0xFFu) | ((r->rtag + 1) & 0xFFu);
    ri_wr_t wr;
    std::memset(&wr, 0, sizeof wr);
    wr.wr_bind.type = RI_WR_TYPE_BIND;
    wr.wr_bind.flags = static_cast<ri_wr_flags_t>(rf);
    wr.wr_bind.id = reinterpret_cast<uintptr_t>(r);
    wr.wr_bind.mw_handle = r->mw.handle();
    wr.wr_bind.rtag = next;
    // An unbind (length 0, L8269) still names a region for the verbs layer: the one given,
    // else the one the window is bound into.
    Lmr *named = l;
    if (!named) named = as<Lmr>(lh, DAT_HANDLE_TYPE_LMR);
    if (!named && r->lmr && handles().valid(r->lmr, DAT_HANDLE_TYPE_LMR)) named = r->lmr;
    if (!named) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
    wr.wr_bind.mr_handle = named->mr.handle();
    wr.wr_bind.ltag = named->lmr_context;
    wr.wr_bind.vaddr = t->virtual_address;
    wr.wr_bind.length = t->segment_length;
    unsigned ma = 0;
    if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG) ma |= RI_MEM_FLAGS_REMOTE_READ;
    if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG) ma |= RI_MEM_FLAGS_REMOTE_WRITE;
    if (priv & kRemoteAtomic) ma |= RI_MEM_FLAGS_ATOMICS;
    // Local write lets the window be an RDMA Read sink (dat_ep_post_rdma_read_to_rmr).
    if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG) ma |= RI_MEM_FLAGS_LOCAL_WRITE;
    wr.wr_bind.mem_attr = static_cast<ri_mem_attr_t>(ma);
    r->cookie = cookie;
    if (DAT_RETURN rr = post_sq(ep, wr)) return rr;
    if (r->lmr) r->lmr->bound.fetch_sub(1, std::memory_order_relaxed);
    r->lmr = l;
    if (l) l->bound.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lk(r->ia->mu);
        auto it = r->ia->rmr_contexts.find(r->rtag);
        if (it != r->ia->rmr_contexts.end() && it->second == r) r->ia->rmr_contexts.erase(it);
        r->rtag = next;
        r->triplet = *t;
        r->priv = priv;
        r->ep = ep;
        if (t->segment_length != 0) r->ia->rmr_contexts[next] = r;  // length 0: unbound
    }
    if (ctx) *ctx = next;
    return DAT_SUCCESS;
}

DAT_RETURN rmr_free(DAT_RMR_HANDLE h) {
    Rmr *r = as<Rmr>(h, DAT_HANDLE_TYPE_RMR);
    if (!r) return err(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
    r->mw.dealloc();
    {
        std::lock_guard lk(r->ia->mu);
        auto it = r->ia->rmr_contexts.find(r->rtag);
        if (it != r->ia->rmr_contexts.end() && it->second == r) r->ia->rmr_contexts.erase(it);
    }
    if (r->lmr && handles().valid(r->lmr, DAT_HANDLE_TYPE_LMR))
        r->lmr->bound.fetch_sub(1, std::memory_order_relaxed);
    r->pz->users.fetch_sub(1, std::memory_order_relaxed);
    retire(r);
    return DAT_SUCCESS;
}

}  // namespace softrnic::dapl
