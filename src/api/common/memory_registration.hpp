// Memory registration over RNICPI for a face's memory objects (a DAT LMR, an IT-API LMR; an
// IB Access Layer MR next): registering a virtual range in a PD, changing its PD and rights,
// deregistering it, and RNICPI memory windows, with every failure sorted into what the faces
// must tell apart.
//
// Why here: each face answers a failed registration with its own codes, but what failed is
// the same question for all of them, and RNICPI answers it only in part. A range that is
// mapped read-only, registered with write rights, is refused as an invalid address, like an
// unmapped one; IT-API wants the first to be IT_ERR_ACCESS and the second IT_ERR_FAULT
// (IT-API L6611-L6613), uDAPL a privileges violation and a parameter error. The registration
// tells them apart by registering the range again with local read only.
#pragma once

#include <rnicpi/rnicpi.h>

#include <cstdint>

namespace softrnic::api {

// Why a registration, a change or a deregistration failed.
enum class MemFailure {
    None,
    Rights,     // RNICPI refuses the combination of rights (remote write without local write)
    Fault,      // the range is not mapped in the process (or starts at 0, or wraps)
    Access,     // the range is mapped, but not writable as the rights ask
    Length,     // the range is empty
    Pd,         // the PD is not one of this RNIC's
    Busy,       // memory windows are bound to the region
    Resources,  // the RNIC is out of STags or memory
    Other,      // any other RNICPI failure
};

// A registered memory region (RNICPI MR). Not copyable; the face frees it with dereg() before
// the RNIC closes (the destructor deregisters what is still registered, for error paths).
class MemoryRegion {
  public:
    MemoryRegion() = default;
    ~MemoryRegion() { dereg(); }
    MemoryRegion(const MemoryRegion &) = delete;
    MemoryRegion &operator=(const MemoryRegion &) = delete;

    // Registers [va, va + length) in `pd` with `attr`; `os_data` is what RNICPI hands the
    // face's handlers about it.
    MemFailure reg(ri_rnic_handle_t rnic, ri_pd_handle_t pd, uint64_t va, uint64_t length,
                   ri_mem_attr_t attr, void *os_data);
    // Moves the region to `pd` and gives it `attr` (RNICPI re-registration, which issues a new
    // STag and invalidates the old one). Busy leaves the region as it was; after any other
    // failure the region is gone (RNICPI frees it: registered() is false).
    MemFailure modify(ri_pd_handle_t pd, ri_mem_attr_t attr);
    // Busy while windows are bound; otherwise the region is gone afterwards.
    MemFailure dereg();

    bool registered() const { return rnic_ != nullptr; }
    ri_mr_handle_t handle() const { return mr_; }
    ri_ltag_t ltag() const { return ltag_; }
    ri_rtag_t rtag() const { return rtag_; }
    uint64_t va() const { return va_; }
    uint64_t length() const { return length_; }

  private:
    // What a failed registration of [va, va + length) with `attr` means.
    static MemFailure classify(ri_api_return_t r, ri_rnic_handle_t rnic, ri_pd_handle_t pd,
                               uint64_t va, uint64_t length, ri_mem_attr_t attr);

    ri_rnic_handle_t rnic_ = nullptr;  // set while registered
    ri_mr_handle_t mr_ = nullptr;
    ri_ltag_t ltag_ = 0;
    ri_rtag_t rtag_ = 0;
    uint64_t va_ = 0, length_ = 0;
};

// An RNICPI memory window. Allocated unbound; the face frees it with dealloc() before the
// RNIC closes (the destructor deallocates what is still allocated, for error paths).
class MemoryWindow {
  public:
    MemoryWindow() = default;
    ~MemoryWindow() { dealloc(); }
    MemoryWindow(const MemoryWindow &) = delete;
    MemoryWindow &operator=(const MemoryWindow &) = delete;

    MemFailure alloc(ri_rnic_handle_t rnic, ri_pd_handle_t pd, ri_mw_type_t type, void *os_data);
    void dealloc();

    bool allocated() const { return rnic_ != nullptr; }
    ri_mw_handle_t handle() const { return mw_; }
    // The window's STag: invalid until a bind makes it valid.
    ri_rtag_t rtag() const { return rtag_; }
    ri_mw_type_t type() const { return type_; }

  private:
    ri_rnic_handle_t rnic_ = nullptr;  // set while allocated
    ri_mw_handle_t mw_ = nullptr;
    ri_rtag_t rtag_ = 0;
    ri_mw_type_t type_ = RI_MW_TYPE_1;
};

}  // namespace softrnic::api
