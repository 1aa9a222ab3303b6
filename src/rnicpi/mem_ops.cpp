// Memory: STag allocation, memory regions (virtual, physical, shared, re-registration),
// memory windows, and the pin/map/sync services a provider offers its consumers.
#include <cstring>
#include <memory>

#include "rnicpi/ops.hpp"

namespace softrnic::rnicpi::ops {

namespace {

constexpr uint32_t kMemAttrKnown = RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE | RI_MEM_FLAGS_ATOMICS |
                                   RI_MEM_FLAGS_BINDING | RI_MEM_FLAGS_CONSUMER_OWNS_KEY |
                                   RI_MEM_FLAGS_ZBVA | RI_MEM_FLAGS_NONCOHERENT |
                                   RI_MEM_FLAGS_USER_VA | RI_MEM_FLAGS_SHARED_REG_IOVA;

// Rights that let anything write the pages (locally, remotely, or by an atomic).
bool writes(uint32_t attr) {
    return attr & (RI_MEM_FLAGS_LOCAL_WRITE | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS);
}

ri_api_return_t check_access(uint32_t attr) {
    if (attr & ~kMemAttrKnown) return RI_RET_MEM_INVALID_ACCESS;
    if (attr & RI_MEM_FLAGS_NONCOHERENT) return RI_RET_MEM_INVALID_ACCESS;  // not offered
    // Remote write and atomics need local write (RDMAC Verbs memory access rules).
    if ((attr & (RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS)) &&
        !(attr & RI_MEM_FLAGS_LOCAL_WRITE))
        return RI_RET_MEM_INVALID_ACCESS;
    return RI_RET_SUCCESS;
}

uint8_t next_key(MemEntry &e, uint32_t requested, uint32_t attr) {
    if (attr & RI_MEM_FLAGS_CONSUMER_OWNS_KEY) return static_cast<uint8_t>(requested);
    return static_cast<uint8_t>((e.stag() & 0xFF) + 1 + (reinterpret_cast<uintptr_t>(&e) >> 6));
}

void publish_region(MemEntry &e, std::byte *host, uint64_t va, uint64_t len, uint32_t attr,
                    uint8_t key) {
    e.host = host;
    e.zbva = attr & RI_MEM_FLAGS_ZBVA;
    e.to_base = e.zbva ? 0 : va;
    e.length = len;
    e.access = attr | RI_MEM_FLAGS_LOCAL_READ;
    e.word.store(uint64_t{e.index} << 8 | key | MemEntry::kValid, std::memory_order_release);
}

// Validates a physical buffer list under the identity map; returns the host range.
ri_api_return_t phys_range(const Device &d, const ri_mr_reg_phys_attr_t &a, uint64_t &start,
                           uint64_t &total) {
    if (a.nbufs == 0 || !a.phys_buf_list) return RI_RET_MEM_INVALID_PBLE;
    if (a.nbufs > Limits::kMaxPbl) return RI_RET_MEM_INVALID_PBLE;
    total = 0;
    if (a.pble_size) {
        if (d.pbl_mode != RI_PHYS_PAGE_LIST_MODE) return RI_RET_RNIC_NOT_IN_PAGE_MODE;
        if (a.pble_size != Limits::kPageSize) return RI_RET_MEM_INVALID_PBLE_LENGTH;
        auto *pages = static_cast<const ri_phys_addr_t *>(a.phys_buf_list);
        for (uint32_t i = 0; i < a.nbufs; ++i) {
            if (pages[i] % Limits::kPageSize || pages[i] != pages[0] + i * Limits::kPageSize)
                return RI_RET_MEM_INVALID_PBLE;
        }
        start = pages[0];
        total = uint64_t{a.nbufs} * Limits::kPageSize;
    } else {
        if (d.pbl_mode != RI_PHYS_BLOCK_LIST_MODE) return RI_RET_RNIC_NOT_IN_BLOCK_MODE;
        auto *bufs = static_cast<const ri_phys_buf_t *>(a.phys_buf_list);
        start = bufs[0].phys_address;
        for (uint32_t i = 0; i < a.nbufs; ++i) {
            if (bufs[i].phys_len == 0) return RI_RET_MEM_INVALID_PBLE_LENGTH;
            if (bufs[i].phys_address != start + total) return RI_RET_MEM_INVALID_PBLE;
            total += bufs[i].phys_len;
        }
    }
    if (start + total < start) return RI_RET_MEM_INVALID_PBLE;
    if (a.address_offset >= total) return RI_RET_MEM_INVALID_OFFSET;
    // Written so it cannot wrap: offset < total is known.
    if (a.common.length == 0 || a.common.length > total - a.address_offset)
        return RI_RET_MEM_INVALID_LENGTH;
    if (!range_mapped(start, total, writes(raw(a.common.mem_attr)))) return RI_RET_MEM_INVALID_PBLE;
    return RI_RET_SUCCESS;
}

template <bool Locked>
struct MemOps {
    using Serial = SerialScope<Locked>;

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
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            if (*list_len == 0 || *list_len > Limits::kMaxPbl) return RI_RET_INVALID_PARAMETER;
            MemEntry *e = r->dev->stags.allocate(MemKind::FastRegRegion);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            e->pd.reset(p);
            e->access = static_cast<uint32_t>(attr) | RI_MEM_FLAGS_LOCAL_READ;
            e->pbl_capacity = *list_len;
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            e->owner.reset(r);
            // Invalid until fast-registered; the key comes from the input *ltag (L5018).
            e->word.store(uint64_t{e->index} << 8 | (*ltag & 0xFF), std::memory_order_release);
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *mr = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
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
            uint32_t attr = raw(a->mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            if (a->length == 0) return RI_RET_MEM_INVALID_LENGTH;
            if (a->va == 0) return RI_RET_MEM_INVALID_ADDRESS;
            if (a->va + a->length < a->va) return RI_RET_MEM_INVALID_LENGTH;
            if (!range_mapped(a->va, a->length, writes(attr))) return RI_RET_MEM_INVALID_ADDRESS;
            MemEntry *e = r->dev->stags.allocate(MemKind::Region);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            auto pages = std::make_shared<RegionPages>();
            pages->base = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(a->va));
            pages->length = a->length;
            e->pages = pages;
            e->pd.reset(p);
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            e->owner.reset(r);
            publish_region(*e, pages->base, a->va, a->length, attr, next_key(*e, *ltag, attr));
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *mr = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
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
        if (mask & ~uint32_t(RI_MR_REREG_TRANSLATE | RI_MR_REREG_PD | RI_MR_REREG_ACCESS))
            return RI_RET_INVALID_PARAMETER;
        Device &d = *r->dev;
        MemEntry *e = owned_mem(d, handle, false, r);
        if (!e) return RI_RET_MR_INVALID_HANDLE;
        std::lock_guard change(e->change_mu);
        // Looked up again under the entry's writer lock: a concurrent dereg may have won.
        if (owned_mem(d, handle, false, r) != e || e->kind() != MemKind::Region)
            return RI_RET_MR_INVALID_HANDLE;
        // The gate stays closed until the new registration is published or dropped, so no
        // access runs on half-changed fields; binds check the window count from inside it.
        e->gate.close();
        if (e->bound_windows.load(std::memory_order_acquire)) {
            e->gate.open();
            return RI_RET_WINDOWS_BOUND;
        }
        withdraw_grants(*e);
        // Conceptually a deregistration followed by a registration (L5263): from here on the
        // old STag is invalid, whatever happens to the new one (L5339-5347). The entry is
        // kept, so nothing else can claim its index in between (L5380).
        e->word.fetch_and(~MemEntry::kValid, std::memory_order_acq_rel);
        // Any later failure frees the region: both old and new registrations are gone
        // (L3787-3788), and the handle is no longer valid.
        auto dropped = [&](ri_api_return_t c) {
            d.stags.release(e);
            e->gate.open();
            return c;
        };
        Pd *new_pd = e->pd;
        uint32_t attr = e->access;
        std::byte *host = e->host;
        uint64_t va = e->zbva ? reinterpret_cast<uintptr_t>(e->host) : e->to_base;
        uint64_t len = e->length;
        if (mask & RI_MR_REREG_PD) {
            new_pd = owned(d.pds, a->pd, r);
            if (!new_pd) return dropped(RI_RET_PD_INVALID_HANDLE);
        }
        if (mask & RI_MR_REREG_ACCESS) {
            attr = raw(a->mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return dropped(c);
        }
        if (mask & RI_MR_REREG_TRANSLATE) {
            if (phys) {
                uint64_t start = 0, total = 0;
                if (ri_api_return_t c = phys_range(d, *phys, start, total); c != RI_RET_SUCCESS)
                    return dropped(c);
                host = reinterpret_cast<std::byte *>(
                    static_cast<uintptr_t>(start + phys->address_offset));
                va = phys->common.va;
                len = phys->common.length;
            } else {
                if (a->length == 0 || a->va + a->length < a->va)
                    return dropped(RI_RET_MEM_INVALID_LENGTH);
                if (a->va == 0) return dropped(RI_RET_MEM_INVALID_ADDRESS);
                if (!range_mapped(a->va, a->length, writes(attr)))
                    return dropped(RI_RET_MEM_INVALID_ADDRESS);
                host = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(a->va));
                va = a->va;
                len = a->length;
            }
            auto pages = std::make_shared<RegionPages>();
            pages->base = host;
            pages->length = len;
            e->pages = pages;
        } else if (writes(attr) && !range_mapped(reinterpret_cast<uintptr_t>(host), len, true)) {
            // New rights on the old pages: they must allow what the rights allow.
            return dropped(RI_RET_MEM_INVALID_ACCESS);
        }
        if (new_pd != e->pd) e->pd.reset(new_pd);
        publish_region(*e, host, va, len, attr, next_key(*e, *ltag, attr));
        e->gate.open();
        *ltag = e->stag();
        if (rtag) *rtag = e->stag();
        *out_mr = d.stags.handle_of(e, false);
        return RI_RET_SUCCESS;
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
            MemEntry *e = owned_mem(*r->dev, mr, false, r);
            if (!e) return RI_RET_MR_INVALID_HANDLE;
            std::lock_guard change(e->change_mu);
            if (owned_mem(*r->dev, mr, false, r) != e) return RI_RET_MR_INVALID_HANDLE;
            // Every access through the STag has finished when the gate closes (L5423). The
            // window count is read with the gate closed: a bind counts itself from inside.
            e->gate.close();
            if (e->bound_windows.load(std::memory_order_acquire)) {
                e->gate.open();
                return RI_RET_WINDOWS_BOUND;
            }
            e->word.fetch_and(~MemEntry::kValid, std::memory_order_acq_rel);
            withdraw_grants(*e);  // peers' own writes finish too (L5423)
            r->dev->stags.release(e);
            e->gate.open();
            return RI_RET_SUCCESS;
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
            uint32_t attr = raw(a->common.mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            uint64_t start = 0, total = 0;
            if (ri_api_return_t c = phys_range(*r->dev, *a, start, total); c != RI_RET_SUCCESS)
                return c;
            MemEntry *e = r->dev->stags.allocate(MemKind::Region);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            auto pages = std::make_shared<RegionPages>();
            pages->base =
                reinterpret_cast<std::byte *>(static_cast<uintptr_t>(start + a->address_offset));
            pages->length = a->common.length;
            e->pages = pages;
            e->pd.reset(p);
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            e->owner.reset(r);
            publish_region(*e, pages->base, a->common.va, a->common.length, attr,
                           next_key(*e, *ltag, attr));
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *mr = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
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
            uint32_t attr = raw(a->mem_attr);
            if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
            std::lock_guard change(src->change_mu);
            if (owned_mem(*r->dev, in, false, r) != src || !src->pages)
                return RI_RET_MR_INVALID_HANDLE;
            // The pages must allow what the new rights allow.
            if (!range_mapped(reinterpret_cast<uintptr_t>(src->pages->base), src->pages->length,
                              writes(attr)))
                return RI_RET_MEM_INVALID_ACCESS;
            uint64_t va = a->va;
            if (!(attr & RI_MEM_FLAGS_ZBVA) && va == 0) va = src->to_base;
            MemEntry *e = r->dev->stags.allocate(MemKind::Region);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            e->pages = src->pages;
            e->pd.reset(p);
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            e->owner.reset(r);
            // The length is the original region's; the input length is ignored (L5722).
            publish_region(*e, src->pages->base, va, src->pages->length,
                           attr & ~uint32_t(RI_MEM_FLAGS_SHARED_REG_IOVA),
                           next_key(*e, *ltag, attr));
            a->length = src->pages->length;
            *ltag = e->stag();
            if (rtag) *rtag = e->stag();
            *out = r->dev->stags.handle_of(e, false);
            return RI_RET_SUCCESS;
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
            uint32_t kind = raw(type);
            if (kind != RI_MW_TYPE_1 && kind != RI_MW_TYPE_2) return RI_RET_WINDOW_TYPE_UNSUPPORTED;
            MemEntry *e =
                r->dev->stags.allocate(kind == RI_MW_TYPE_1 ? MemKind::Window1 : MemKind::Window2);
            if (!e) return RI_RET_RESOURCE_SHORTAGE;
            e->pd.reset(p);
            e->os_data = os;
            e->owner_rnic.store(r, std::memory_order_release);
            e->owner.reset(r);
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
            MemEntry *e = owned_mem(*r->dev, mw, true, r);
            if (!e) return RI_RET_MW_INVALID_HANDLE;
            std::lock_guard change(e->change_mu);
            if (owned_mem(*r->dev, mw, true, r) != e) return RI_RET_MW_INVALID_HANDLE;
            e->gate.close();  // in-flight remote users finish first; later ones fail (L5962)
            withdraw_grants(*e);
            if (e->valid() && e->parent)
                e->parent->bound_windows.fetch_sub(1, std::memory_order_acq_rel);
            r->dev->stags.release(e);
            e->gate.open();
            return RI_RET_SUCCESS;
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
    if (locked)
        MemOps<true>::fill(t);
    else
        MemOps<false>::fill(t);
}

}  // namespace softrnic::rnicpi::ops
