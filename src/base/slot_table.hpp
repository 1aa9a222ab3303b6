// A table of owned objects behind opaque handles (the engine's PD, CQ, QP, SRQ, MR and MW
// handles are its slots).
//
// A handle is not a pointer: it packs a slot index, a kind tag and the slot's generation,
// so a freed, foreign or forged handle is rejected without touching freed memory (RNICPI
// L1390-1415). Lookup is lock-free; insert and erase take the table's mutex
// (slow path only).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

namespace softrnic::base {

// index + 1 in bits 0-23 (0 is never a handle), the kind tag in bits 24-31, the generation
// in bits 32-63.
struct SlotHandle {
    uint32_t index;
    uint8_t kind;
    uint32_t generation;
};

inline void *encode_slot_handle(SlotHandle p) {
    uint64_t v = (uint64_t{p.generation} << 32) | (uint64_t{p.kind} << 24) | (p.index + 1);
    return reinterpret_cast<void *>(static_cast<uintptr_t>(v));
}

inline bool decode_slot_handle(const void *h, uint8_t kind, SlotHandle &out) {
    uint64_t v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
    uint32_t idx1 = static_cast<uint32_t>(v & 0xFFFFFF);
    if (idx1 == 0 || static_cast<uint8_t>((v >> 24) & 0xFF) != kind) return false;
    out = {idx1 - 1, kind, static_cast<uint32_t>(v >> 32)};
    return true;
}

template <class T>
class SlotTable {
  public:
    SlotTable(uint8_t kind, uint32_t capacity) : kind_(kind), slots_(capacity) {
        free_.reserve(capacity);
        for (uint32_t i = capacity; i-- > 0;)
            free_.push_back(i);
        std::random_device rd;
        gen_seed_ = rd();
    }

    uint32_t capacity() const { return static_cast<uint32_t>(slots_.size()); }
    uint32_t live() const { return live_.load(std::memory_order_relaxed); }

    // Takes ownership; returns the handle, or nullptr when the table is full.
    void *insert(std::unique_ptr<T> obj, uint32_t *slot_out = nullptr) {
        std::lock_guard lk(mu_);
        if (free_.empty()) return nullptr;
        uint32_t idx = free_.back();
        free_.pop_back();
        Slot &s = slots_[idx];
        uint32_t gen = s.generation.load(std::memory_order_relaxed);
        if (gen == 0) gen = (gen_seed_ ^ (idx * 2654435761u)) | 1;  // first use: unpredictable
        s.generation.store(gen, std::memory_order_relaxed);
        s.owned = std::move(obj);
        s.object.store(s.owned.get(), std::memory_order_release);
        live_.fetch_add(1, std::memory_order_relaxed);
        if (slot_out) *slot_out = idx;
        return encode_slot_handle({idx, kind_, gen});
    }

    T *lookup(const void *h) const {
        SlotHandle p;
        if (!decode_slot_handle(h, kind_, p) || p.index >= slots_.size()) return nullptr;
        const Slot &s = slots_[p.index];
        T *obj = s.object.load(std::memory_order_acquire);
        if (!obj || s.generation.load(std::memory_order_acquire) != p.generation) return nullptr;
        return obj;
    }

    // Unpublishes the object; returns ownership so the caller decides when it dies.
    std::unique_ptr<T> erase(const void *h) {
        std::lock_guard lk(mu_);
        SlotHandle p;
        if (!decode_slot_handle(h, kind_, p) || p.index >= slots_.size()) return nullptr;
        Slot &s = slots_[p.index];
        if (!s.object.load(std::memory_order_relaxed) ||
            s.generation.load(std::memory_order_relaxed) != p.generation)
            return nullptr;
        s.object.store(nullptr, std::memory_order_release);
        uint32_t next = p.generation + 2;  // stays odd, never 0
        s.generation.store(next, std::memory_order_release);
        free_.push_back(p.index);
        live_.fetch_sub(1, std::memory_order_relaxed);
        return std::move(s.owned);
    }

    template <class F>
    void for_each(F &&f) {
        std::lock_guard lk(mu_);
        for (auto &s : slots_)
            if (T *o = s.object.load(std::memory_order_acquire)) f(*o);
    }

  private:
    struct Slot {
        std::atomic<T *> object{nullptr};
        std::atomic<uint32_t> generation{0};
        std::unique_ptr<T> owned;
    };
    uint8_t kind_;
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
    std::atomic<uint32_t> live_{0};
    uint32_t gen_seed_ = 0;
    mutable std::mutex mu_;
};

}  // namespace softrnic::base
