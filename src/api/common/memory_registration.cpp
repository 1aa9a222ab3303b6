// Memory registration over RNICPI for a face's memory objects (memory_registration.hpp).
#include "api/common/memory_registration.hpp"

namespace softrnic::api {

namespace {

constexpr unsigned kWriteRights =
    RI_MEM_FLAGS_LOCAL_WRITE | RI_MEM_FLAGS_REMOTE_WRITE | RI_MEM_FLAGS_ATOMICS;

MemFailure simple(ri_api_return_t r) {
    switch (r) {
        case RI_RET_SUCCESS:
            return MemFailure::None;
        case RI_RET_MEM_INVALID_ACCESS:
            return MemFailure::Rights;
        case RI_RET_MEM_INVALID_ADDRESS:
            return MemFailure::Fault;
        case RI_RET_MEM_INVALID_LENGTH:
            return MemFailure::Length;
        case RI_RET_PD_INVALID_HANDLE:
            return MemFailure::Pd;
        case RI_RET_WINDOWS_BOUND:
            return MemFailure::Busy;
        case RI_RET_RESOURCE_SHORTAGE:
            return MemFailure::Resources;
        default:
            return MemFailure::Other;
    }
}

}  // namespace

MemFailure MemoryRegion::classify(ri_api_return_t r, ri_rnic_handle_t rnic, ri_pd_handle_t pd,
                                  uint64_t va, uint64_t length, ri_mem_attr_t attr) {
    MemFailure f = simple(r);
    if (length != 0 && va + length < va) return MemFailure::Fault;  // wraps: not a range
    if (f != MemFailure::Fault || !(unsigned(attr) & kWriteRights) || va == 0) return f;
    // Refused as an address with write rights: mapped but read-only, or not mapped at all.
    // Read-only rights on the same range tell the two apart.
    ri_mr_reg_attr_t a{};
    a.va = va;
    a.length = length;
    a.mem_attr = RI_MEM_FLAGS_LOCAL_READ;
    a.pd = pd;
    ri_mr_handle_t probe = nullptr;
    ri_ltag_t lt = 0;
    ri_rtag_t rt = 0;
    ri_err_data_t e = 0;
    if (ri_mr_reg(rnic, &a, &probe, &lt, &rt, nullptr, nullptr, &e) != RI_RET_SUCCESS)
        return MemFailure::Fault;
    ri_mr_dereg(rnic, probe, &e);
    return MemFailure::Access;
}

MemFailure MemoryRegion::reg(ri_rnic_handle_t rnic, ri_pd_handle_t pd, uint64_t va, uint64_t length,
                             ri_mem_attr_t attr, void *os_data) {
    if (registered()) return MemFailure::Other;
    ri_mr_reg_attr_t a{};
    a.va = va;
    a.length = length;
    a.mem_attr = attr;
    a.pd = pd;
    ri_mr_handle_t mr = nullptr;
    ri_ltag_t lt = 0;
    ri_rtag_t rt = 0;
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_mr_reg(rnic, &a, &mr, &lt, &rt, nullptr, os_data, &e);
    if (r != RI_RET_SUCCESS) return classify(r, rnic, pd, va, length, attr);
    rnic_ = rnic;
    mr_ = mr;
    ltag_ = lt;
    rtag_ = rt;
    va_ = va;
    length_ = length;
    return MemFailure::None;
}

MemFailure MemoryRegion::modify(ri_pd_handle_t pd, ri_mem_attr_t attr) {
    if (!registered()) return MemFailure::Other;
    ri_mr_reg_attr_t a{};
    a.va = va_;
    a.length = length_;
    a.mem_attr = attr;
    a.pd = pd;
    ri_mr_handle_t out = nullptr;
    ri_ltag_t lt = ltag_;
    ri_rtag_t rt = 0;
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_mr_rereg(rnic_, mr_, ri_mr_rereg_t(RI_MR_REREG_PD | RI_MR_REREG_ACCESS),
                                    &a, &out, &lt, &rt, nullptr, nullptr, &e);
    if (r == RI_RET_SUCCESS) {
        mr_ = out;
        ltag_ = lt;
        rtag_ = rt;
        return MemFailure::None;
    }
    if (r == RI_RET_WINDOWS_BOUND) return MemFailure::Busy;
    // Both registrations are gone (RNICPI L5347-L5348); the handle may still name the
    // entry, so a deregistration makes sure, and its failure is expected.
    ri_mr_dereg(rnic_, mr_, &e);
    rnic_ = nullptr;
    mr_ = nullptr;
    // New write rights on pages the process may only read: the rights were refused.
    if (r == RI_RET_MEM_INVALID_ACCESS && (unsigned(attr) & kWriteRights))
        return MemFailure::Access;
    return simple(r);
}

MemFailure MemoryRegion::dereg() {
    if (!registered()) return MemFailure::None;
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_mr_dereg(rnic_, mr_, &e);
    if (r == RI_RET_WINDOWS_BOUND) return MemFailure::Busy;
    rnic_ = nullptr;
    mr_ = nullptr;
    return simple(r);
}

MemFailure MemoryWindow::alloc(ri_rnic_handle_t rnic, ri_pd_handle_t pd, ri_mw_type_t type,
                               void *os_data) {
    if (allocated()) return MemFailure::Other;
    ri_mw_handle_t mw = nullptr;
    ri_rtag_t rt = 0;
    ri_err_data_t e = 0;
    ri_api_return_t r = ri_mw_alloc(rnic, pd, type, &mw, &rt, nullptr, os_data, &e);
    if (r != RI_RET_SUCCESS) return simple(r);
    rnic_ = rnic;
    mw_ = mw;
    rtag_ = rt;
    type_ = type;
    return MemFailure::None;
}

void MemoryWindow::dealloc() {
    if (!allocated()) return;
    ri_err_data_t e = 0;
    ri_mw_dealloc(rnic_, mw_, &e);
    rnic_ = nullptr;
    mw_ = nullptr;
}

}  // namespace softrnic::api
