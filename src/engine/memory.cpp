#include "engine/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/slot_table.hpp"
#include "engine/qp.hpp"
#include "transport/transport.hpp"

namespace softrnic::engine {

// Checks that [va, va+len) is mapped (and writable when asked) in this process: the access
// layer's duty before registration (L1219-1221), done here because we are our own kAL.
bool range_mapped(uint64_t va, uint64_t len, bool need_write) {
    if (len == 0 || va + len < va) return false;
    std::ifstream maps("/proc/self/maps");
    if (!maps) return true;
    uint64_t pos = va, end = va + len;
    std::string line;
    struct Range {
        uint64_t lo, hi;
        bool w;
    };
    std::vector<Range> ranges;
    while (std::getline(maps, line)) {
        unsigned long long lo = 0, hi = 0;
        char perms[5] = {};
        if (std::sscanf(line.c_str(), "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
        ranges.push_back({lo, hi, perms[1] == 'w'});
    }
    for (const Range &r : ranges) {
        if (pos >= r.lo && pos < r.hi) {
            if (need_write && !r.w) return false;
            pos = r.hi;
            if (pos >= end) return true;
        }
    }
    return pos >= end;
}

StagTable::StagTable(uint32_t capacity) {
    // Capacity is a power of two no larger than 2^24 so the slot is the low bits of the index.
    cap_ = static_cast<uint32_t>(round_up_pow2(std::min<uint32_t>(capacity, 1u << 24)));
    slot_bits_ = static_cast<uint32_t>(__builtin_ctz(cap_));
    entries_ = std::make_unique<std::atomic<MemEntry *>[]>(cap_);  // value-initialised: null
    std::random_device rd;
    rng_state_ = (uint64_t{rd()} << 32) | rd();
    rng_state_ |= 1;  // xorshift must not start at 0
    free_.reserve(cap_);
    // Slot 0 is never used, so no STag index is ever 0 (STag0 is the special STag, L1589).
    for (uint32_t i = 1; i < cap_; ++i)
        free_.push_back(i);
}

StagTable::~StagTable() {
    for (uint32_t i = 0; i < cap_; ++i)
        delete entries_[i].load(std::memory_order_relaxed);
}

uint64_t StagTable::next_random() {
    rng_state_ ^= rng_state_ << 13;
    rng_state_ ^= rng_state_ >> 7;
    rng_state_ ^= rng_state_ << 17;
    return rng_state_;
}

MemEntry *StagTable::allocate(MemKind kind) {
    std::lock_guard lk(mu_);
    if (free_.empty()) return nullptr;
    // A random free slot: swap it to the back and take it.
    size_t pick = static_cast<size_t>(next_random() % free_.size());
    std::swap(free_[pick], free_.back());
    uint32_t slot = free_.back();
    MemEntry *e = entries_[slot].load(std::memory_order_relaxed);
    if (!e) {
        try {
            e = new MemEntry();
        } catch (const std::bad_alloc &) {
            return nullptr;  // the slot stays free
        }
        // Release: a data-path reader that finds the pointer sees a constructed entry.
        entries_[slot].store(e, std::memory_order_release);
    }
    free_.pop_back();
    // The index's high bits are random too; index 0 is never handed out (STag0 is special).
    uint32_t high_bits = 24 - slot_bits_;
    uint32_t high = high_bits ? static_cast<uint32_t>(next_random() & ((1u << high_bits) - 1)) : 0;
    uint32_t index = (high << slot_bits_) | slot;
    e->kind_.store(kind, std::memory_order_release);
    e->index = index;
    e->word.store(uint64_t{index} << 8, std::memory_order_release);  // invalid, key 0
    uint32_t gen = e->handle_generation.load(std::memory_order_relaxed);
    e->handle_generation.store(gen + 1 ? gen + 1 : 1, std::memory_order_release);
    return e;
}

void StagTable::release(MemEntry *e) {
    std::lock_guard lk(mu_);
    e->word.store(0, std::memory_order_release);
    e->kind_.store(MemKind::Free, std::memory_order_release);
    e->pd.reset();
    e->owner.reset();
    e->access = 0;
    e->to_base = 0;
    e->length = 0;
    e->host = nullptr;
    e->zbva = false;
    e->pages.reset();
    e->parent = nullptr;
    e->bound_qp.store(nullptr, std::memory_order_relaxed);
    e->bound_windows.store(0, std::memory_order_relaxed);
    e->pbl_capacity = 0;
    e->handle_generation.fetch_add(1, std::memory_order_acq_rel);
    free_.push_back(e->index & ((1u << slot_bits_) - 1));
}

void *StagTable::handle_of(const MemEntry *e, bool window) const {
    uint32_t slot = e->index & ((1u << slot_bits_) - 1);
    return base::encode_slot_handle({slot, kind_tag(window ? ObjKind::Mw : ObjKind::Mr),
                                     e->handle_generation.load(std::memory_order_acquire)});
}

MemEntry *StagTable::from_handle(const void *h, bool window) const {
    base::SlotHandle p;
    if (!base::decode_slot_handle(h, kind_tag(window ? ObjKind::Mw : ObjKind::Mr), p) ||
        p.index >= cap_)
        return nullptr;
    MemEntry *e = entries_[p.index].load(std::memory_order_acquire);
    if (!e) return nullptr;
    if (e->handle_generation.load(std::memory_order_acquire) != p.generation) return nullptr;
    MemKind k = e->kind();
    bool is_window = k == MemKind::Window1 || k == MemKind::Window2;
    if (k == MemKind::Free || is_window != window) return nullptr;
    return e;
}

MemEntry *StagTable::by_stag(uint32_t stag) const {
    uint32_t index = stag >> 8;
    MemEntry *e = entries_[index & ((1u << slot_bits_) - 1)].load(std::memory_order_acquire);
    if (!e) return nullptr;
    uint64_t w = e->word.load(std::memory_order_acquire);
    if (w == 0 || ((w >> 8) & 0xFFFFFF) != index) return nullptr;
    return e;
}

MemFault StagTable::acquire(uint32_t stag, uint64_t to, uint64_t len, uint32_t need, const Pd *pd,
                            const Qp *qp, MemRef &out) const {
    MemEntry *e = by_stag(stag);
    if (!e) return MemFault::InvalidStag;
    if (!e->gate.try_enter()) return MemFault::InvalidStag;  // being changed: not valid now
    uint64_t w = e->word.load(std::memory_order_acquire);
    if (!(w & MemEntry::kValid) || static_cast<uint32_t>(w) != stag) {
        e->gate.leave();
        return MemFault::InvalidStag;
    }
    MemFault f = MemFault::None;
    const MemKind kind = e->kind();
    const bool window = kind == MemKind::Window1 || kind == MemKind::Window2;
    const uint32_t rights = need & ~kWindowAsReadSink;
    if (window && (rights & RI_MEM_FLAGS_LOCAL) && !(need & kWindowAsReadSink))
        f = MemFault::Access;  // windows carry local rights only for RDMA Read sinks
    else if (kind == MemKind::Window2 && e->bound_qp.load(std::memory_order_acquire) != qp)
        f = MemFault::QpMismatch;
    else if (e->pd != pd)
        f = MemFault::Pd;
    else if ((e->access & rights) != rights)
        f = MemFault::Access;
    else if (to + len < to)
        f = MemFault::Wrap;
    else if (to < e->to_base || to + len > e->to_base + e->length)
        f = MemFault::Bounds;
    if (f != MemFault::None) {
        e->gate.leave();
        return f;
    }
    out.entry = e;
    out.ptr = e->host + (to - e->to_base);
    out.len = len;
    return MemFault::None;
}

void withdraw_grants(MemEntry &e) {
    if (e.granted.exchange(false, std::memory_order_seq_cst)) transport::revoke_remote_placement();
}

InvalidateFault StagTable::invalidate(MemEntry &e, uint32_t stag, const Pd *pd, const Qp *via) {
    if (!e.gate.try_enter()) return InvalidateFault::InvalidStag;  // being changed right now
    InvalidateFault f = InvalidateFault::None;
    uint64_t w = e.word.load(std::memory_order_acquire);
    bool window = e.kind() == MemKind::Window1 || e.kind() == MemKind::Window2;
    if (!(w & MemEntry::kValid) || static_cast<uint32_t>(w) != stag)
        f = InvalidateFault::InvalidStag;
    else if (e.pd != pd)
        f = InvalidateFault::Pd;
    else if (e.kind() == MemKind::Window1)
        f = InvalidateFault::NotAllowed;
    else if (e.kind() == MemKind::Window2 && e.bound_qp.load(std::memory_order_acquire) != via)
        f = InvalidateFault::NotAllowed;
    else if (!window && (e.bound_windows.load(std::memory_order_acquire) != 0 ||
                         (e.pages && e.pages.use_count() > 1)))
        f = InvalidateFault::NotAllowed;  // L5220
    // Sequentially consistent, as the granted flag withdraw_grants reads: a transport marks
    // the entry granted and then re-reads this word (Qp::rx_tagged_grant).
    else if (!e.word.compare_exchange_strong(w, w & ~MemEntry::kValid, std::memory_order_seq_cst))
        f = InvalidateFault::InvalidStag;  // someone else invalidated it first
    else if (window && e.parent) {
        // Only the invalidation that won the exchange unbinds, so the region's window
        // count drops exactly once.
        e.parent->bound_windows.fetch_sub(1, std::memory_order_acq_rel);
        e.parent = nullptr;
    }
    e.gate.leave();
    // Peers that place writes themselves must stop using the STag too.
    if (f == InvalidateFault::None) withdraw_grants(e);
    return f;
}

}  // namespace softrnic::engine
