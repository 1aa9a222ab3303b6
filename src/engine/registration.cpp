// Device's memory registration: validating a registration's rights and range, and
// publishing the STag (RNICPI L1555-1594): the entry's fields are written first and the
// valid STag word last, with release order, so a data-path check that sees the STag valid
// sees the region behind it. The RNICPI ops file only translates handles, arguments and
// return codes around these.
#include <memory>
#include <mutex>

#include "base/stats.hpp"
#include "engine/abi.hpp"
#include "engine/device.hpp"
#include "engine/qp.hpp"

namespace softrnic::engine {

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

}  // namespace

Pd *Device::owned_pd(void *h, const RnicHandle *r) {
    Pd *p = pds.lookup(h);
    return (p && p->owner == r) ? p : nullptr;
}

MemEntry *Device::owned_mem(void *h, bool window, const RnicHandle *r) {
    MemEntry *e = stags.from_handle(h, window);
    return (e && e->owner_rnic.load(std::memory_order_acquire) == r) ? e : nullptr;
}

MemEntry *Device::new_mem(MemKind kind, RnicHandle &owner, Pd &pd, ri_os_data_t os) {
    MemEntry *e = stags.allocate(kind);
    if (!e) return nullptr;
    e->pd.reset(&pd);
    e->os_data = os;
    e->owner_rnic.store(&owner, std::memory_order_release);
    e->owner.reset(&owner);
    return e;
}

ri_api_return_t Device::alloc_fastreg_mr(RnicHandle &owner, Pd &pd, uint32_t attr,
                                         uint32_t list_len, uint32_t key, ri_os_data_t os,
                                         MemEntry *&out) {
    if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
    if (list_len == 0 || list_len > Limits::kMaxPbl) return RI_RET_INVALID_PARAMETER;
    MemEntry *e = new_mem(MemKind::FastRegRegion, owner, pd, os);
    if (!e) return RI_RET_RESOURCE_SHORTAGE;
    e->access = attr | RI_MEM_FLAGS_LOCAL_READ;
    e->pbl_capacity = list_len;
    // Invalid until fast-registered; the key comes from the input *ltag (L5018).
    e->word.store(uint64_t{e->index} << 8 | (key & 0xFF), std::memory_order_release);
    out = e;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::register_mr(RnicHandle &owner, Pd &pd, const ri_mr_reg_attr_t &a,
                                    uint32_t key, ri_os_data_t os, MemEntry *&out) {
    uint32_t attr = raw(a.mem_attr);
    if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
    if (a.length == 0) return RI_RET_MEM_INVALID_LENGTH;
    if (a.va == 0) return RI_RET_MEM_INVALID_ADDRESS;
    if (a.va + a.length < a.va) return RI_RET_MEM_INVALID_LENGTH;
    if (!range_mapped(a.va, a.length, writes(attr))) return RI_RET_MEM_INVALID_ADDRESS;
    MemEntry *e = new_mem(MemKind::Region, owner, pd, os);
    if (!e) return RI_RET_RESOURCE_SHORTAGE;
    auto pages = std::make_shared<RegionPages>();
    pages->base = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(a.va));
    pages->length = a.length;
    e->pages = pages;
    publish_region(*e, pages->base, a.va, a.length, attr, next_key(*e, key, attr));
    out = e;
    base::stat_add(base::Stat::MrsRegistered);
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::register_phys_mr(RnicHandle &owner, Pd &pd, const ri_mr_reg_phys_attr_t &a,
                                         uint32_t key, ri_os_data_t os, MemEntry *&out) {
    uint32_t attr = raw(a.common.mem_attr);
    if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
    uint64_t start = 0, total = 0;
    if (ri_api_return_t c = phys_range(*this, a, start, total); c != RI_RET_SUCCESS) return c;
    MemEntry *e = new_mem(MemKind::Region, owner, pd, os);
    if (!e) return RI_RET_RESOURCE_SHORTAGE;
    auto pages = std::make_shared<RegionPages>();
    pages->base = reinterpret_cast<std::byte *>(static_cast<uintptr_t>(start + a.address_offset));
    pages->length = a.common.length;
    e->pages = pages;
    publish_region(*e, pages->base, a.common.va, a.common.length, attr, next_key(*e, key, attr));
    out = e;
    base::stat_add(base::Stat::MrsRegistered);
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::register_shared_mr(RnicHandle &owner, MemEntry &shared, void *src_handle,
                                           Pd &pd, ri_mr_reg_attr_t &a, uint32_t key,
                                           ri_os_data_t os, MemEntry *&out) {
    MemEntry *src = &shared;
    uint32_t attr = raw(a.mem_attr);
    if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return c;
    std::lock_guard change(src->change_mu);
    if (owned_mem(src_handle, false, &owner) != src || !src->pages) return RI_RET_MR_INVALID_HANDLE;
    // The pages must allow what the new rights allow.
    if (!range_mapped(reinterpret_cast<uintptr_t>(src->pages->base), src->pages->length,
                      writes(attr)))
        return RI_RET_MEM_INVALID_ACCESS;
    uint64_t va = a.va;
    if (!(attr & RI_MEM_FLAGS_ZBVA) && va == 0) va = src->to_base;
    MemEntry *e = new_mem(MemKind::Region, owner, pd, os);
    if (!e) return RI_RET_RESOURCE_SHORTAGE;
    e->pages = src->pages;
    // The length is the original region's; the input length is ignored (L5722).
    publish_region(*e, src->pages->base, va, src->pages->length,
                   attr & ~uint32_t(RI_MEM_FLAGS_SHARED_REG_IOVA), next_key(*e, key, attr));
    a.length = src->pages->length;
    out = e;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::reregister_mr(RnicHandle &owner, void *handle, uint32_t mask,
                                      const ri_mr_reg_attr_t *a, const ri_mr_reg_phys_attr_t *phys,
                                      uint32_t key, MemEntry *&out) {
    if (mask & ~uint32_t(RI_MR_REREG_TRANSLATE | RI_MR_REREG_PD | RI_MR_REREG_ACCESS))
        return RI_RET_INVALID_PARAMETER;
    MemEntry *e = owned_mem(handle, false, &owner);
    if (!e) return RI_RET_MR_INVALID_HANDLE;
    std::lock_guard change(e->change_mu);
    // Looked up again under the entry's writer lock: a concurrent dereg may have won.
    if (owned_mem(handle, false, &owner) != e || e->kind() != MemKind::Region)
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
        stags.release(e);
        e->gate.open();
        return c;
    };
    Pd *new_pd = e->pd;
    uint32_t attr = e->access;
    std::byte *host = e->host;
    uint64_t va = e->zbva ? reinterpret_cast<uintptr_t>(e->host) : e->to_base;
    uint64_t len = e->length;
    if (mask & RI_MR_REREG_PD) {
        new_pd = owned_pd(a->pd, &owner);
        if (!new_pd) return dropped(RI_RET_PD_INVALID_HANDLE);
    }
    if (mask & RI_MR_REREG_ACCESS) {
        attr = raw(a->mem_attr);
        if (ri_api_return_t c = check_access(attr); c != RI_RET_SUCCESS) return dropped(c);
    }
    if (mask & RI_MR_REREG_TRANSLATE) {
        if (phys) {
            uint64_t start = 0, total = 0;
            if (ri_api_return_t c = phys_range(*this, *phys, start, total); c != RI_RET_SUCCESS)
                return dropped(c);
            host =
                reinterpret_cast<std::byte *>(static_cast<uintptr_t>(start + phys->address_offset));
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
    publish_region(*e, host, va, len, attr, next_key(*e, key, attr));
    e->gate.open();
    out = e;
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::deregister_mr(RnicHandle &owner, void *handle) {
    MemEntry *e = owned_mem(handle, false, &owner);
    if (!e) return RI_RET_MR_INVALID_HANDLE;
    std::lock_guard change(e->change_mu);
    if (owned_mem(handle, false, &owner) != e) return RI_RET_MR_INVALID_HANDLE;
    // Every access through the STag has finished when the gate closes (L5423). The
    // window count is read with the gate closed: a bind counts itself from inside.
    e->gate.close();
    if (e->bound_windows.load(std::memory_order_acquire)) {
        e->gate.open();
        return RI_RET_WINDOWS_BOUND;
    }
    e->word.fetch_and(~MemEntry::kValid, std::memory_order_acq_rel);
    withdraw_grants(*e);  // peers' own writes finish too (L5423)
    stags.release(e);     // gives back its uses of the PD and the handle
    e->gate.open();
    base::stat_add(base::Stat::MrsDeregistered);
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::alloc_mw(RnicHandle &owner, Pd &pd, uint32_t type, ri_os_data_t os,
                                 MemEntry *&out) {
    if (type != RI_MW_TYPE_1 && type != RI_MW_TYPE_2) return RI_RET_WINDOW_TYPE_UNSUPPORTED;
    MemEntry *e =
        new_mem(type == RI_MW_TYPE_1 ? MemKind::Window1 : MemKind::Window2, owner, pd, os);
    if (!e) return RI_RET_RESOURCE_SHORTAGE;
    out = e;  // its STag is invalid until bound (L5848)
    return RI_RET_SUCCESS;
}

ri_api_return_t Device::dealloc_mw(RnicHandle &owner, void *handle) {
    MemEntry *e = owned_mem(handle, true, &owner);
    if (!e) return RI_RET_MW_INVALID_HANDLE;
    std::lock_guard change(e->change_mu);
    if (owned_mem(handle, true, &owner) != e) return RI_RET_MW_INVALID_HANDLE;
    e->gate.close();  // in-flight remote users finish first; later ones fail (L5962)
    withdraw_grants(*e);
    if (e->valid() && e->parent) e->parent->bound_windows.fetch_sub(1, std::memory_order_acq_rel);
    stags.release(e);
    e->gate.open();
    return RI_RET_SUCCESS;
}

}  // namespace softrnic::engine
