// Memory regions, memory windows and the STag table.
//
// An STag is a 24-bit index (provider-owned) and an 8-bit key (consumer-owned) (RNICPI
// L1555-1594). Indexes are drawn at random from the table's free slots plus random high
// bits, so a peer cannot walk the table by guessing the next STag.
//
// Readers on the data path (local SGE checks, remote tagged access) never lock: they enter
// the entry's Gate, check the STag word, use the fields, and leave. Writers (invalidate,
// bind, dereg, fast-register) close the gate, wait for readers to leave, change the fields
// and reopen it. So once invalidate or dereg returns, no access through the old STag is in
// progress or can start (L5417-5424).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/base_names.hpp"
#include "engine/handles.hpp"
#include "engine/object.hpp"
#include "rnicpi/rnicpi.h"

namespace softrnic::engine {

class Pd;
class Qp;

enum class MemKind : uint8_t { Free, Region, FastRegRegion, Window1, Window2 };

// Access a data-path operation needs from an STag.
enum class Need : uint32_t {
    LocalRead = RI_MEM_FLAGS_LOCAL_READ,
    LocalWrite = RI_MEM_FLAGS_LOCAL_WRITE,
    RemoteWrite = RI_MEM_FLAGS_REMOTE_WRITE,
    RemoteRead = RI_MEM_FLAGS_REMOTE_READ,
    Atomic = RI_MEM_FLAGS_ATOMICS,
};

// Added to a local `need`: a memory window may serve. RNICPI lets a window be the data
// sink of an RDMA Read (L8925, "tag.rtag must be set since Memory Window does not have an
// Ltag"); every other local use of an STag names a region. Outside every RI_MEM_FLAGS bit.
inline constexpr uint32_t kWindowAsReadSink = 1u << 31;

// Why an STag check failed; mapped to WC status, async event and Terminate code by callers.
enum class MemFault : uint8_t { None, InvalidStag, Bounds, Access, Pd, Wrap, QpMismatch };

// Pages shared between regions registered with ri_mr_reg_shared.
struct RegionPages {
    std::byte *base = nullptr;  // host address of the first byte
    uint64_t length = 0;
};

struct MemEntry {
    Gate gate;
    // Serialises slow-path writers of this entry (bind, fast-register, dereg, rereg,
    // dealloc); data-path readers never take it.
    std::mutex change_mu;
    // stag (index << 8 | key) and a valid bit; 0 while free.
    std::atomic<uint64_t> word{0};
    std::atomic<uint32_t> handle_generation{0};
    // Read by handle lookups on the data path while a slow path may free the entry.
    std::atomic<MemKind> kind_{MemKind::Free};
    MemKind kind() const { return kind_.load(std::memory_order_acquire); }
    uint32_t index = 0;  // 24-bit STag index
    Use<Pd> pd;
    uint32_t access = 0;   // ri_mem_attr_t bits
    uint64_t to_base = 0;  // tagged offset of the first byte (VA, or 0 for ZBVA)
    uint64_t length = 0;
    std::byte *host = nullptr;  // host address of the first byte
    bool zbva = false;
    ri_os_data_t os_data = nullptr;
    // The owner's RNIC handle, read without a lock by handle checks; `owner` holds the
    // handle's use while the entry is allocated.
    std::atomic<void *> owner_rnic{nullptr};
    Use<RnicHandle> owner;
    // Regions: pages (shared between reg_shared siblings), windows bound to it.
    std::shared_ptr<RegionPages> pages;
    std::atomic<uint32_t> bound_windows{0};
    uint32_t pbl_capacity = 0;  // fast-register regions: PBL entries reserved
    // Windows: the region it is bound to, and for type 2 the QP it is bound through.
    MemEntry *parent = nullptr;
    std::atomic<Qp *> bound_qp{nullptr};
    // A transport let a peer place writes into this STag's range itself
    // (Endpoint::rx_tagged_grant): whoever changes what the STag accepts withdraws those
    // grants (withdraw_grants) once the change is visible to new checks.
    std::atomic<bool> granted{false};

    static constexpr uint64_t kValid = uint64_t{1} << 32;
    uint32_t stag() const {
        return static_cast<uint32_t>(word.load(std::memory_order_acquire) & 0xFFFFFFFFu);
    }
    bool valid() const { return word.load(std::memory_order_acquire) & kValid; }
};

// True when [va, va+len) is mapped in this process, and writable when `need_write`: the
// host's check before pages are registered (RNICPI L1219-1221); softrnic is its own host.
bool range_mapped(uint64_t va, uint64_t len, bool need_write);

// After a change to what `e` accepts (its gate closed, or its valid bit cleared): when a
// transport granted a peer direct placement into it, every such grant is withdrawn and
// the peers' writes under way have finished on return (transport::revoke_remote_placement).
// One atomic exchange otherwise.
void withdraw_grants(MemEntry &e);

// Why an invalidation was refused.
enum class InvalidateFault : uint8_t { None, InvalidStag, Pd, NotAllowed };

// A resolved, access-checked piece of memory. While a MemRef is held the entry's gate is
// entered, so the memory cannot be deregistered or invalidated under it.
struct MemRef {
    MemEntry *entry = nullptr;
    std::byte *ptr = nullptr;
    uint64_t len = 0;
};

class StagTable {
  public:
    explicit StagTable(uint32_t capacity);
    ~StagTable();
    StagTable(const StagTable &) = delete;
    StagTable &operator=(const StagTable &) = delete;

    uint32_t capacity() const { return cap_; }

    // Allocates an entry with a fresh random index; returns nullptr when full.
    MemEntry *allocate(MemKind kind);
    void release(MemEntry *e);

    // Handle <-> entry, generation-checked like an ObjectTable.
    void *handle_of(const MemEntry *e, bool window) const;
    MemEntry *from_handle(const void *h, bool window) const;

    // Entry for an STag (index part only); nullptr when out of range or free.
    MemEntry *by_stag(uint32_t stag) const;

    // Data-path check: resolves [to, to+len) of `stag` for `need` by a QP in `pd`.
    // A local `need` (RI_MEM_FLAGS_LOCAL bits) refuses windows unless it carries
    // kWindowAsReadSink. On success the entry's gate is entered (release with put()).
    MemFault acquire(uint32_t stag, uint64_t to, uint64_t len, uint32_t need, const Pd *pd,
                     const Qp *qp, MemRef &out) const;
    // Flips a valid STag to invalid (local or remote invalidation, read with local
    // invalidate). Regions with windows bound, shared regions and type 1 windows cannot be
    // invalidated; a type 2 window only through the QP it is bound to (`via`). Does not
    // wait for operations already using the STag (they may finish; new ones fail), so it
    // is safe while the caller itself still holds a reference to the same entry.
    static InvalidateFault invalidate(MemEntry &e, uint32_t stag, const Pd *pd, const Qp *via);

    static void put(MemRef &r) {
        if (r.entry) r.entry->gate.leave();
        r.entry = nullptr;
    }

    template <class F>
    void for_each_live(F &&f) {
        std::lock_guard lk(mu_);
        for (uint32_t i = 0; i < cap_; ++i) {
            MemEntry *e = entries_[i].load(std::memory_order_relaxed);
            if (e && e->kind() != MemKind::Free) f(*e);
        }
    }

  private:
    // Slot -> entry, created the first time allocate() hands the slot out and kept (with
    // its generation) until the table dies, so a pointer read on the data path stays
    // valid. Creating all of them up front cost every RNIC instance ~117 MiB and ~70 ms
    // (262,144 entries of 448 bytes) before its first registration.
    std::unique_ptr<std::atomic<MemEntry *>[]> entries_;
    uint32_t cap_ = 0;
    // Free slots; allocate() takes a random one (a lazy Fisher-Yates draw), so the order
    // in which indexes are handed out is not guessable without shuffling up front.
    std::vector<uint32_t> free_;
    uint32_t slot_bits_ = 0;
    uint64_t rng_state_ = 0;  // xorshift64, under mu_
    uint64_t next_random();
    std::mutex mu_;
};

}  // namespace softrnic::engine
