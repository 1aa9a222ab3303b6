// Memory: LMRs (RNICPI MRs), RMRs (RNICPI MWs) and I/O mappings: it_lmr_create (the 1.0,
// 2.0 and 2.1 bindings), it_lmr_free, it_lmr_query, it_lmr_modify, it_rmr_create (1.0 and
// 2.0), it_rmr_free, it_rmr_query, it_mem_map, it_mem_unmap. The registration itself is the
// shared api::MemoryRegion; what is IT-API's here is the checks, the codes and the
// attributes. See it_internal.hpp for what the sources share.
#include <arpa/inet.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "it_internal.hpp"

namespace softrnic::itapi {

namespace {

constexpr uint32_t kPrivKnown = IT_PRIV_ALL;
constexpr uint32_t kPrivRemote = IT_PRIV_REMOTE_READ | IT_PRIV_REMOTE_WRITE;
constexpr uint32_t kLmrFlagsKnown =
    IT_LMR_FLAG_NONE | IT_LMR_FLAG_SHARED | IT_LMR_FLAG_NONCOHERENT | IT_LMR_FLAG_NON_SHAREABLE;
constexpr uint32_t kLmrParamAll = 0x7fff;  // IT_LMR_PARAM_ALL .. IT_LMR_PARAM_IOBL_TYPE
constexpr uint32_t kLmrModifiable = IT_LMR_PARAM_PZ | IT_LMR_PARAM_MEM_PRIV;
constexpr uint32_t kRmrParamAll = 0x07ff;  // IT_RMR_PARAM_ALL .. IT_RMR_PARAM_ADDR_MODE

// IT-API L6505-L6506: no privileges at all, or remote write without local write, is invalid;
// so is any bit it_mem_priv_t does not define.
bool privs_valid(uint32_t privs) {
    if (privs == 0 || (privs & ~kPrivKnown)) return false;
    return !((privs & IT_PRIV_REMOTE_WRITE) && !(privs & IT_PRIV_LOCAL_WRITE));
}

// The RNICPI attributes of an LMR. Binding is always allowed, so that RMRs can be linked to
// any LMR. IT_PRIV_ATOMIC grants nothing: the IA offers no atomics (IT-API L8062-L8063).
// Relative Addressing is RNICPI's zero-based virtual addressing: remote addresses are offsets
// from the LMR's first byte (IT-API L12518).
ri_mem_attr_t mem_attr(uint32_t privs, uint32_t addr_mode) {
    unsigned a = RI_MEM_FLAGS_BINDING;
    if (privs & IT_PRIV_LOCAL_READ) a |= RI_MEM_FLAGS_LOCAL_READ;
    if (privs & IT_PRIV_LOCAL_WRITE) a |= RI_MEM_FLAGS_LOCAL_WRITE;
    if (privs & IT_PRIV_REMOTE_READ) a |= RI_MEM_FLAGS_REMOTE_READ;
    if (privs & IT_PRIV_REMOTE_WRITE) a |= RI_MEM_FLAGS_REMOTE_WRITE;
    if (addr_mode == IT_ADDR_MODE_RELATIVE) a |= RI_MEM_FLAGS_ZBVA;
    return static_cast<ri_mem_attr_t>(a);
}

// An RMR Context as the consumer sees it: the STag in network byte order (IT-API L6557).
it_rmr_context_t context_of(ri_rtag_t stag) {
    return htonl(stag);
}

// Whether every page of [va, va + len) is mapped in the process: mincore() fails with ENOMEM
// on a range with a hole. Asked in bounded steps, so that a huge length needs no huge vector.
bool range_mapped(uintptr_t va, size_t len) {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    constexpr size_t kStep = 1024;  // pages per mincore() call
    unsigned char vec[kStep];
    const uintptr_t end = va + len;  // the caller made sure it does not wrap
    for (uintptr_t at = va & ~(page - 1); at < end;) {
        const uintptr_t n = std::min<uintptr_t>(end - at, kStep * page);
        if (::mincore(reinterpret_cast<void *>(at), n, vec) != 0) return false;
        at += n;
    }
    return true;
}

bool relative_supported(const Ia *ia) {
    return (ia->attr.rnic_flags & RI_RNIC_EXT_ZBVA) != 0;
}
bool wide_supported(const Ia *ia) {
    return (ia->attr.rnic_flags & RI_RNIC_WIDE_WINDOWS_SUPPORTED) != 0;
}

}  // namespace

// ------------------------------------------------------------------------------ LMR

it_status_t lmr_create(it_pz_handle_t h, void *addr, const it_iobl_t *iobl, it_length_t length,
                       uint32_t addr_mode, uint32_t privs, uint32_t flags, uint32_t shared_id,
                       it_lmr_handle_t *out, it_rmr_context_t *rmr_context) {
    Pz *pz = as_pz(h);
    if (!pz) return IT_ERR_INVALID_PZ;
    if (!out) return IT_ERR_FAULT;
    // An IOBL is for a Privileged Consumer only (IT-API L6480), and this IA takes none
    // (iobl_types_supported is empty): every type is unsupported (IT-API L6617).
    if (iobl) return privileged() ? IT_ERR_INVALID_IOBL : IT_ERR_NO_PERMISSION;
    if (addr_mode != IT_ADDR_MODE_ABSOLUTE &&
        !(addr_mode == IT_ADDR_MODE_RELATIVE && relative_supported(pz->ia)))
        return IT_ERR_INVALID_ADDR_MODE;
    if (!privs_valid(privs)) return IT_ERR_INVALID_PRIVS;
    if (flags & ~kLmrFlagsKnown) return IT_ERR_INVALID_FLAGS;
    // An empty region: the call's length code (docs/spec-deviations.md).
    if (length == 0) return IT_ERR_INVALID_LENGTH;
    const auto va = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr));
    if (va == 0 || va + length < va) return IT_ERR_FAULT;
    auto lmr = std::make_unique<Lmr>(IT_HANDLE_TYPE_LMR, pz->ia);
    switch (lmr->mr.reg(pz->ia->rnic, pz->pd, va, length, mem_attr(privs, addr_mode), lmr.get())) {
        case api::MemFailure::None:
            break;
        case api::MemFailure::Fault:
        case api::MemFailure::Length:
            return IT_ERR_FAULT;
        case api::MemFailure::Access:
            return IT_ERR_ACCESS;
        case api::MemFailure::Rights:
            return IT_ERR_INVALID_PRIVS;
        default:
            return IT_ERR_RESOURCES;
    }
    lmr->pz = pz;
    lmr->addr = addr;
    lmr->length = length;
    lmr->addr_mode = addr_mode;
    lmr->privs = privs;
    // No LMR is ever matched with another (so IT_LMR_FLAG_SHARED is clear) and non-coherent
    // mode is not offered (the flag is ignored, IT-API L6540-L6542): the LMR has the
    // remaining flags.
    lmr->flags = flags & (IT_LMR_FLAG_NONE | IT_LMR_FLAG_NON_SHAREABLE);
    lmr->shared_id = shared_id;
    pz->users.fetch_add(1, std::memory_order_acq_rel);
    Lmr *l = lmr.release();
    add_child(l);
    *out = reinterpret_cast<it_lmr_handle_t>(l);
    // Written only when the LMR has remote rights; undefined otherwise (IT-API L6552-L6556).
    if (rmr_context && (privs & kPrivRemote)) *rmr_context = context_of(l->mr.rtag());
    return IT_SUCCESS;
}

it_status_t lmr_create_unlinked(it_pz_handle_t h, uint32_t flags, it_lmr_handle_t *) {
    if (!as_pz(h)) return IT_ERR_INVALID_PZ;
    if (flags & ~kLmrFlagsKnown) return IT_ERR_INVALID_FLAGS;
    return IT_ERR_OP_NOT_SUPPORTED;  // lmr_link_support is IT_FALSE (IT-API L6766)
}

void lmr_free_now(Lmr *lmr) {
    if (!handles().valid(lmr, IT_HANDLE_TYPE_LMR)) return;
    lmr->mr.dereg();
    if (lmr->pz) lmr->pz->users.fetch_sub(1, std::memory_order_acq_rel);
    retire(lmr);
}

it_status_t lmr_free(it_lmr_handle_t h) {
    Lmr *lmr = as_lmr(h);
    if (!lmr) return IT_ERR_INVALID_LMR;
    if (lmr->rmr_links.load(std::memory_order_acquire) > 0) return IT_ERR_LMR_BUSY;
    {
        std::lock_guard lk(lmr->mu);
        if (lmr->mr.dereg() == api::MemFailure::Busy) return IT_ERR_LMR_BUSY;
    }
    lmr->pz->users.fetch_sub(1, std::memory_order_acq_rel);
    retire(lmr);
    return IT_SUCCESS;
}

it_status_t lmr_query(it_lmr_handle_t h, uint32_t mask, it_lmr_param_t *p) {
    Lmr *lmr = as_lmr(h);
    if (!lmr) return IT_ERR_INVALID_LMR;
    if (mask & ~kLmrParamAll) return IT_ERR_INVALID_MASK;
    if (mask == 0) return IT_SUCCESS;
    if (!p) return IT_ERR_FAULT;
    const bool all = mask & IT_LMR_PARAM_ALL;
    auto want = [&](uint32_t bit) { return all || (mask & bit); };
    std::lock_guard lk(lmr->mu);
    if (want(IT_LMR_PARAM_IA)) p->ia = reinterpret_cast<it_ia_handle_t>(lmr->ia);
    if (want(IT_LMR_PARAM_PZ)) p->pz = reinterpret_cast<it_pz_handle_t>(lmr->pz);
    if (want(IT_LMR_PARAM_ADDR)) p->addr = lmr->addr;
    if (want(IT_LMR_PARAM_LENGTH)) p->length = lmr->length;
    if (want(IT_LMR_PARAM_MEM_PRIV)) p->privs = static_cast<it_mem_priv_t>(lmr->privs);
    if (want(IT_LMR_PARAM_FLAG)) p->flags = static_cast<it_lmr_flag_t>(lmr->flags);
    if (want(IT_LMR_PARAM_SHARED_ID)) p->shared_id = lmr->shared_id;
    // Undefined without remote rights (IT-API L7387): 0 then.
    if (want(IT_LMR_PARAM_RMR_CONTEXT))
        p->rmr_context = (lmr->privs & kPrivRemote) ? context_of(lmr->mr.rtag()) : 0;
    // Byte granularity: the actual range is the requested one (IT-API L7409-L7410).
    if (want(IT_LMR_PARAM_ACTUAL_ADDR)) p->actual_addr = lmr->addr;
    if (want(IT_LMR_PARAM_ACTUAL_LENGTH)) p->actual_length = lmr->length;
    if (want(IT_LMR_PARAM_ADDR_MODE)) p->addr_mode = static_cast<it_addr_mode_t>(lmr->addr_mode);
    if (want(IT_LMR_PARAM_LINKED)) p->linked = IT_TRUE;  // it_lmr_create makes it linked
    // No IOBL: none allocated, no type (both Implementation-dependent here, IT-API L7395-L7399).
    if (want(IT_LMR_PARAM_IOBL_NUM_ELTS)) p->iobl_num_elts = 0;
    if (want(IT_LMR_PARAM_IOBL_TYPE)) p->iobl_type = static_cast<it_iobl_type_t>(0);
    return IT_SUCCESS;
}

it_status_t lmr_modify(it_lmr_handle_t h, uint32_t mask, const it_lmr_param_t *p) {
    Lmr *lmr = as_lmr(h);
    if (!lmr) return IT_ERR_INVALID_LMR;
    // Only the PZ and the privileges can be changed (IT-API L7246-L7247).
    if (mask & ~kLmrModifiable) return IT_ERR_INVALID_MASK;
    if (mask == 0) return IT_SUCCESS;
    if (!p) return IT_ERR_FAULT;
    // A bad handle or mask, or a linked RMR, leaves the LMR as it was (IT-API L7275-L7277).
    if (lmr->rmr_links.load(std::memory_order_acquire) > 0) return IT_ERR_LMR_BUSY;
    std::unique_lock lk(lmr->mu);
    Pz *to = lmr->pz;
    uint32_t privs = lmr->privs;
    it_status_t failed = IT_SUCCESS;
    if (mask & IT_LMR_PARAM_PZ) {
        to = as_pz(p->pz);
        if (!to || to->ia != lmr->ia) failed = IT_ERR_INVALID_PZ;
    }
    if (failed == IT_SUCCESS && (mask & IT_LMR_PARAM_MEM_PRIV)) {
        privs = raw(p->privs);
        if (!privs_valid(privs)) failed = IT_ERR_INVALID_PRIVS;
    }
    if (failed == IT_SUCCESS) {
        switch (lmr->mr.modify(to->pd, mem_attr(privs, lmr->addr_mode))) {
            case api::MemFailure::None:
                if (to != lmr->pz) {
                    to->users.fetch_add(1, std::memory_order_acq_rel);
                    lmr->pz->users.fetch_sub(1, std::memory_order_acq_rel);
                    lmr->pz = to;
                }
                lmr->privs = privs;
                return IT_SUCCESS;
            case api::MemFailure::Busy:
                return IT_ERR_LMR_BUSY;  // windows bound: unchanged
            case api::MemFailure::Access:
                failed = IT_ERR_ACCESS;
                break;
            case api::MemFailure::Rights:
                failed = IT_ERR_INVALID_PRIVS;
                break;
            case api::MemFailure::Pd:
                failed = IT_ERR_INVALID_PZ;
                break;
            default:
                failed = IT_ERR_RESOURCES;
                break;
        }
    }
    // Every other error frees the LMR, as it_lmr_free would (IT-API L7279-L7281).
    lk.unlock();
    lmr_free_now(lmr);
    return failed;
}

// ------------------------------------------------------------------------------ RMR

it_status_t rmr_create(it_pz_handle_t h, uint32_t type, it_rmr_handle_t *out) {
    Pz *pz = as_pz(h);
    if (!pz) return IT_ERR_INVALID_PZ;
    if (!out) return IT_ERR_FAULT;
    // The default is Narrow, which every iWARP IA has (IT-API L10543); Wide where the RNIC
    // reports wide windows (rmr_types_supported).
    if (type == IT_RMR_TYPE_DEFAULT) type = IT_RMR_TYPE_NARROW;
    if (type != IT_RMR_TYPE_NARROW && !(type == IT_RMR_TYPE_WIDE && wide_supported(pz->ia)))
        return IT_ERR_INVALID_RMR_TYPE;
    auto rmr = std::make_unique<Rmr>(IT_HANDLE_TYPE_RMR, pz->ia);
    const ri_mw_type_t mw = type == IT_RMR_TYPE_NARROW ? RI_MW_TYPE_NARROW : RI_MW_TYPE_WIDE;
    if (rmr->mw.alloc(pz->ia->rnic, pz->pd, mw, rmr.get()) != api::MemFailure::None)
        return IT_ERR_RESOURCES;
    rmr->pz = pz;
    rmr->type = type;
    pz->users.fetch_add(1, std::memory_order_acq_rel);
    Rmr *r = rmr.release();
    add_child(r);
    *out = reinterpret_cast<it_rmr_handle_t>(r);
    return IT_SUCCESS;
}

void rmr_free_now(Rmr *rmr) {
    if (!handles().valid(rmr, IT_HANDLE_TYPE_RMR)) return;
    // Freeing a linked RMR destroys the linking too (IT-API L10618-L10619).
    if (rmr->lmr && handles().valid(rmr->lmr, IT_HANDLE_TYPE_LMR))
        rmr->lmr->rmr_links.fetch_sub(1, std::memory_order_acq_rel);
    rmr->lmr = nullptr;
    rmr->mw.dealloc();
    rmr->pz->users.fetch_sub(1, std::memory_order_acq_rel);
    retire(rmr);
}

it_status_t rmr_free(it_rmr_handle_t h) {
    Rmr *rmr = as_rmr(h);
    if (!rmr) return IT_ERR_INVALID_RMR;
    rmr_free_now(rmr);
    return IT_SUCCESS;
}

it_status_t rmr_query(it_rmr_handle_t h, uint32_t mask, it_rmr_param_t *p) {
    Rmr *rmr = as_rmr(h);
    if (!rmr) return IT_ERR_INVALID_RMR;
    if (mask & ~kRmrParamAll) return IT_ERR_INVALID_MASK;
    if (mask == 0) return IT_SUCCESS;
    if (!p) return IT_ERR_FAULT;
    const bool all = mask & IT_RMR_PARAM_ALL;
    auto want = [&](uint32_t bit) { return all || (mask & bit); };
    Lmr *lmr = rmr->lmr;
    if (want(IT_RMR_PARAM_IA)) p->ia = reinterpret_cast<it_ia_handle_t>(rmr->ia);
    if (want(IT_RMR_PARAM_PZ)) p->pz = reinterpret_cast<it_pz_handle_t>(rmr->pz);
    if (want(IT_RMR_PARAM_LINKED)) p->linked = lmr ? IT_TRUE : IT_FALSE;
    // The link's attributes are undefined while unlinked (IT-API L11023-L11028): nothing, then.
    if (want(IT_RMR_PARAM_LMR)) p->lmr = reinterpret_cast<it_lmr_handle_t>(lmr);
    if (want(IT_RMR_PARAM_ADDR)) p->addr = nullptr;
    if (want(IT_RMR_PARAM_LENGTH)) p->length = 0;
    if (want(IT_RMR_PARAM_MEM_PRIV)) p->privs = IT_PRIV_NONE;
    // The window's STag, in network byte order; it grants nothing until a link.
    if (want(IT_RMR_PARAM_RMR_CONTEXT)) p->rmr_context = context_of(rmr->mw.rtag());
    if (want(IT_RMR_PARAM_TYPE)) p->type = static_cast<it_rmr_type_t>(rmr->type);
    if (want(IT_RMR_PARAM_ADDR_MODE)) p->addr_mode = IT_ADDR_MODE_ABSOLUTE;
    return IT_SUCCESS;
}

// ------------------------------------------------------------------------------ I/O mappings

// softrnic's IA reaches the process's memory by its virtual addresses: RNICPI maps a buffer
// to itself, in one piece. `aspace_id` names the address space; there is one, the caller's.
it_status_t mem_map(it_ia_handle_t h, void *vaddr, size_t len, it_io_addr_t *io_addr,
                    size_t *mapped_len) {
    Ia *ia = as_ia(h);
    if (!ia) return IT_ERR_INVALID_IA;
    if (!privileged()) return IT_ERR_NO_PERMISSION;  // IT-API L7762
    if (!io_addr || !mapped_len) return IT_ERR_FAULT;
    const auto va = reinterpret_cast<uintptr_t>(vaddr);
    if (va == 0 || len == 0 || va + len < va || !range_mapped(va, len)) return IT_ERR_FAULT;
    ri_phys_buf_t io{};
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_mem_map(ia->rnic, vaddr, len, &io, nullptr, &e);
    if (r == RI_RET_NO_PERMISSION) return IT_ERR_NO_PERMISSION;
    if (r != RI_RET_SUCCESS) return IT_ERR_FAULT;
    {
        std::lock_guard lk(ia->mu);
        ia->io_maps.emplace(io.phys_address, io.phys_len);
    }
    *io_addr = reinterpret_cast<it_io_addr_t>(static_cast<uintptr_t>(io.phys_address));
    *mapped_len = static_cast<size_t>(io.phys_len);
    return IT_SUCCESS;
}

it_status_t mem_unmap(it_ia_handle_t h, it_io_addr_t io_addr, size_t mapped_len) {
    Ia *ia = as_ia(h);
    if (!ia) return IT_ERR_INVALID_IA;
    if (!privileged()) return IT_ERR_NO_PERMISSION;  // IT-API L7829
    const auto io = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(io_addr));
    {
        // Only what it_mem_map returned, as it returned it (IT-API L7845-L7846).
        std::lock_guard lk(ia->mu);
        auto [b, e] = ia->io_maps.equal_range(io);
        auto it = b;
        while (it != e && it->second != mapped_len)
            ++it;
        if (it == e) return IT_ERR_FAULT;
        ia->io_maps.erase(it);
    }
    ri_phys_buf_t buf{};
    buf.phys_address = io;
    buf.phys_len = mapped_len;
    ri_err_data_t err = 0;
    ri_mem_unmap(ia->rnic, &buf, nullptr, &err);
    return IT_SUCCESS;
}

void mem_unmap_all(Ia *ia) {
    std::multimap<uint64_t, uint64_t> maps;
    {
        std::lock_guard lk(ia->mu);
        maps.swap(ia->io_maps);
    }
    for (const auto &[io, len] : maps) {
        ri_phys_buf_t buf{};
        buf.phys_address = io;
        buf.phys_len = len;
        ri_err_data_t err = 0;
        ri_mem_unmap(ia->rnic, &buf, nullptr, &err);
    }
}

}  // namespace softrnic::itapi
