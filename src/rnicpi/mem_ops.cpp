// Memory: STag allocation, memory regions (virtual, physical, shared, re-registration),
// memory windows, and the pin/map/sync services a provider offers its consumers.
#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

template <bool Locked>
struct MemOps {
    using Serial = SerialScope<Locked>;

    // The STag outputs of a registration.
    static ri_api_return_t stag_out(Device &d, ri_api_return_t ret, MemEntry *e, ri_mr_handle_t *mr,
                                    ri_ltag_t *ltag, ri_rtag_t *rtag) {
        if (ret != RI_RET_SUCCESS) return ret;
        *ltag = e->stag();
        if (rtag) *rtag = e->stag();
        *mr = d.stags.handle_of(e, false);
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t ltag_alloc(ri_rnic_handle_t h, uint_t *list_len, ri_pd_handle_t pd,
                                      ri_mem_attr_t attr, ri_mr_handle_t *mr, ri_ltag_t *ltag,
                                      ri_rtag_t *rtag, ri_vp_data_t, ri_os_data_t os,
                                      ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            if (!list_len || !mr || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            MemEntry *e = nullptr;
            ri_api_return_t ret =
                r->dev->alloc_fastreg_mr(*r, *p, raw(attr), *list_len, *ltag, os, e);
            return stag_out(*r->dev, ret, e, mr, ltag, rtag);
        });
    }

    static ri_api_return_t mr_reg(ri_rnic_handle_t h, const ri_mr_reg_attr_t *a, ri_mr_handle_t *mr,
                                  ri_ltag_t *ltag, ri_rtag_t *rtag, ri_vp_data_t, ri_os_data_t os,
                                  ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!a || !mr || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, a->pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            MemEntry *e = nullptr;
            ri_api_return_t ret = r->dev->register_mr(*r, *p, *a, *ltag, os, e);
            return stag_out(*r->dev, ret, e, mr, ltag, rtag);
        });
    }

    static ri_api_return_t mr_query(ri_rnic_handle_t h, ri_mr_handle_t mr, ri_mr_info_t *info,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, mr, false, r);
            if (!e) return RI_RET_MR_INVALID_HANDLE;
            if (!info) return RI_RET_INVALID_PARAMETER;
            ri_mr_info_t out{};
            out.attr.va = e->zbva ? 0 : e->to_base;
            out.attr.length = e->length;
            out.attr.mem_attr = static_cast<ri_mem_attr_t>(e->access);
            out.attr.pd = (e->pd ? e->pd->handle : nullptr);
            out.ltag = e->stag();
            out.rtag = e->stag();
            out.is_shared_region = e->pages && e->pages.use_count() > 1;
            if (e->length) {
                out.local_lb = e->to_base;
                out.local_ub = e->to_base + e->length - 1;
                if (e->access & (RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_ATOMICS)) {
                    out.remote_lb = out.local_lb;
                    out.remote_ub = out.local_ub;
                }
            }
            out.stag_state = e->valid() ? RI_STAG_STATE_VALID : RI_STAG_STATE_INVALID;
            *info = out;
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t rereg_common(RnicHandle *r, void *handle, uint32_t mask,
                                        const ri_mr_reg_attr_t *a,
                                        const ri_mr_reg_phys_attr_t *phys, ri_mr_handle_t *out_mr,
                                        ri_ltag_t *ltag, ri_rtag_t *rtag) {
        MemEntry *e = nullptr;
        ri_api_return_t ret = r->dev->reregister_mr(*r, handle, mask, a, phys, *ltag, e);
        return stag_out(*r->dev, ret, e, out_mr, ltag, rtag);
    }

    static ri_api_return_t mr_rereg(ri_rnic_handle_t h, ri_mr_handle_t in, ri_mr_rereg_t mask,
                                    const ri_mr_reg_attr_t *a, ri_mr_handle_t *out, ri_ltag_t *ltag,
                                    ri_rtag_t *rtag, ri_vp_data_t, ri_os_data_t,
                                    ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, in, false, r);
            if (!e || e->kind() != MemKind::Region) return RI_RET_MR_INVALID_HANDLE;
            if (!out || !ltag || (raw(mask) && !a)) return RI_RET_INVALID_PARAMETER;
            return rereg_common(r, in, raw(mask), a, nullptr, out, ltag, rtag);
        });
    }

    static ri_api_return_t mr_dereg(ri_rnic_handle_t h, ri_mr_handle_t mr, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return r->dev->deregister_mr(*r, mr);
        });
    }

    static ri_api_return_t mr_reg_phys(ri_rnic_handle_t h, ri_mr_reg_phys_attr_t *a,
                                       ri_mr_handle_t *mr, ri_ltag_t *ltag, ri_rtag_t *rtag,
                                       ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            if (!a || !mr || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, a->common.pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            MemEntry *e = nullptr;
            ri_api_return_t ret = r->dev->register_phys_mr(*r, *p, *a, *ltag, os, e);
            return stag_out(*r->dev, ret, e, mr, ltag, rtag);
        });
    }

    static ri_api_return_t mr_rereg_phys(ri_rnic_handle_t h, ri_mr_handle_t in, ri_mr_rereg_t mask,
                                         ri_mr_reg_phys_attr_t *a, ri_mr_handle_t *out,
                                         ri_ltag_t *ltag, ri_rtag_t *rtag, ri_vp_data_t,
                                         ri_os_data_t, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            MemEntry *e = owned_mem(*r->dev, in, false, r);
            if (!e || e->kind() != MemKind::Region) return RI_RET_MR_INVALID_HANDLE;
            if (e->pages && e->pages.use_count() > 1) return RI_RET_MR_INVALID_HANDLE;  // L5656
            if (!out || !ltag || (raw(mask) && !a)) return RI_RET_INVALID_PARAMETER;
            return rereg_common(r, in, raw(mask), a ? &a->common : nullptr, a, out, ltag, rtag);
        });
    }

    static ri_api_return_t mr_reg_shared(ri_rnic_handle_t h, ri_mr_handle_t in, ri_mr_reg_attr_t *a,
                                         ri_mr_handle_t *out, ri_ltag_t *ltag, ri_rtag_t *rtag,
                                         ri_vp_data_t, ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *src = owned_mem(*r->dev, in, false, r);
            if (!src || src->kind() != MemKind::Region || !src->pages)
                return RI_RET_MR_INVALID_HANDLE;
            if (!a || !out || !ltag) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, a->pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            MemEntry *e = nullptr;
            ri_api_return_t ret = r->dev->register_shared_mr(*r, *src, in, *p, *a, *ltag, os, e);
            return stag_out(*r->dev, ret, e, out, ltag, rtag);
        });
    }

    static ri_api_return_t mw_alloc(ri_rnic_handle_t h, ri_pd_handle_t pd, ri_mw_type_t type,
                                    ri_mw_handle_t *mw, ri_rtag_t *rtag, ri_vp_data_t,
                                    ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!mw) return RI_RET_INVALID_PARAMETER;
            Pd *p = owned(r->dev->pds, pd, r);
            if (!p) return RI_RET_PD_INVALID_HANDLE;
            MemEntry *e = nullptr;
            ri_api_return_t ret = r->dev->alloc_mw(*r, *p, raw(type), os, e);
            if (ret != RI_RET_SUCCESS) return ret;
            if (rtag) *rtag = e->stag();  // invalid until bound (L5848)
            *mw = r->dev->stags.handle_of(e, true);
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mw_query(ri_rnic_handle_t h, ri_mw_handle_t mw, ri_mw_type_t *type,
                                    ri_stag_state_t *state, ri_pd_handle_t *pd, ri_mem_attr_t *attr,
                                    ri_rtag_t *rtag, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            MemEntry *e = owned_mem(*r->dev, mw, true, r);
            if (!e) return RI_RET_MW_INVALID_HANDLE;
            if (type) *type = e->kind() == MemKind::Window1 ? RI_MW_TYPE_1 : RI_MW_TYPE_2;
            if (state) *state = e->valid() ? RI_STAG_STATE_VALID : RI_STAG_STATE_INVALID;
            if (pd) *pd = (e->pd ? e->pd->handle : nullptr);
            if (attr) *attr = static_cast<ri_mem_attr_t>(e->valid() ? e->access : 0);
            if (rtag) *rtag = e->stag();
            return RI_RET_SUCCESS;
        });
    }

    static ri_api_return_t mw_dealloc(ri_rnic_handle_t h, ri_mw_handle_t mw, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            return r->dev->dealloc_mw(*r, mw);
        });
    }

    static ri_api_return_t mem_pin(ri_rnic_handle_t h, ri_vaddr_t va, ri_length_t len,
                                   ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            ri_err_data_t e2 = 0;
            return ri_svc_mem_pin(va, len, os, &e2);
        });
    }

    static ri_api_return_t mem_unpin(ri_rnic_handle_t h, ri_vaddr_t va, ri_length_t len,
                                     ri_os_data_t os, ri_err_data_t *err) {
        return guarded(err, [&] {
            RnicHandle *r = slow_rnic(h);
            if (!r) return RI_RET_RNIC_INVALID_HANDLE;
            if (!r->privileged()) return RI_RET_NO_PERMISSION;
            ri_err_data_t e2 = 0;
            return ri_svc_mem_unpin(va, len, os, &e2);
        });
    }

    static ri_api_return_t mem_map(ri_rnic_handle_t h, ri_vaddr_t va, ri_length_t len,
                                   ri_phys_buf_t *io, ri_os_data_t, ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        if (!r->privileged()) return RI_RET_NO_PERMISSION;
        if (!io || !va || len == 0) return RI_RET_INVALID_PARAMETER;
        // Identity map: the whole range is one "bus-contiguous" chunk.
        io->phys_address = reinterpret_cast<uintptr_t>(va);
        io->phys_len = len;
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t mem_unmap(ri_rnic_handle_t h, ri_phys_buf_t *io, ri_os_data_t,
                                     ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        if (!r->privileged()) return RI_RET_NO_PERMISSION;
        if (!io) return RI_RET_INVALID_PARAMETER;
        return RI_RET_SUCCESS;
    }

    static ri_api_return_t mem_sync(ri_rnic_handle_t h, ri_data_seg_t *segs, uint_t n,
                                    ri_err_data_t *err) {
        if (err) *err = 0;
        RnicHandle *r = fast_rnic(h);
        if (!r) return RI_RET_RNIC_INVALID_HANDLE;
        if (n && !segs) return RI_RET_INVALID_PARAMETER;
        // Coherent memory only: nothing to flush, but the segments must name real memory.
        for (uint_t i = 0; i < n; ++i) {
            MemEntry *e = r->dev->stags.by_stag(segs[i].tag.ltag);
            if (!e || !e->valid() || e->stag() != segs[i].tag.ltag) return RI_RET_MEM_INVALID_LTAG;
            uint64_t to = segs[i].addr.vaddr;
            if (to < e->to_base || to >= e->to_base + e->length) return RI_RET_MEM_INVALID_ADDRESS;
            if (to + segs[i].len > e->to_base + e->length) return RI_RET_MEM_INVALID_LENGTH;
        }
        return RI_RET_SUCCESS;
    }

    static void fill(ri_ops_t &t) {
        t.ri_op_ltag_alloc = ltag_alloc;
        t.ri_op_mr_reg = mr_reg;
        t.ri_op_mr_query = mr_query;
        t.ri_op_mr_rereg = mr_rereg;
        t.ri_op_mr_dereg = mr_dereg;
        t.ri_op_mr_reg_phys = mr_reg_phys;
        t.ri_op_mr_rereg_phys = mr_rereg_phys;
        t.ri_op_mr_reg_shared = mr_reg_shared;
        t.ri_op_mw_alloc = mw_alloc;
        t.ri_op_mw_dealloc = mw_dealloc;
        t.ri_op_mw_query = mw_query;
        t.ri_op_mem_pin = mem_pin;
        t.ri_op_mem_unpin = mem_unpin;
        t.ri_op_mem_map = mem_map;
        t.ri_op_mem_unmap = mem_unmap;
        t.ri_op_mem_sync_rread = mem_sync;
        t.ri_op_mem_sync_rwrite = mem_sync;
    }
};

}  // namespace

void fill_mem_ops(ri_ops_t &t, bool locked) {
    fill_both<MemOps>(t, locked);
}

}  // namespace softrnic::rnicpi::ops
