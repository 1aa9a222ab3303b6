// The shm transport's rings: single-producer, single-consumer entry rings in a peer's
// segment (layout.hpp), with the acquire/release helpers they use on shared memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "transport/shm/entry.hpp"
#include "transport/shm/layout.hpp"

namespace softrnic::transport::shm::detail {

namespace L = layout;

// ThreadSanitizer cannot see that two mappings of one segment (both ends in one process)
// are the same memory: every release/acquire on a segment also releases/acquires a key
// common to both ends (sync_key of the owner's address of the segment). A no-op in normal
// builds and between processes (key nullptr).
//
// The key is a byte of static storage chosen by that address, never the address itself:
// the owner unmaps its segment while the other end may still annotate (a close racing the
// peer's destroy), and TSan faults on a key in unmapped memory. Two live segments that
// share a key only add a happens-before edge between them.
inline const void *sync_key(const void *segment) {
    static constexpr size_t kKeys = 4096;
    static char keys[kKeys];
    if (!segment) return nullptr;
    // Segments are page-aligned mappings: the page number spreads them over the keys.
    return &keys[(reinterpret_cast<uintptr_t>(segment) >> 12) % kKeys];
}
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
inline void sync_release(const void *key) {
    if (key) __tsan_release(const_cast<void *>(key));
}
inline void sync_acquire(const void *key) {
    if (key) __tsan_acquire(const_cast<void *>(key));
}
#else
inline void sync_release(const void *) {}
inline void sync_acquire(const void *) {}
#endif

template <class T>
T load_acquire(T &x) {
    return std::atomic_ref<T>(x).load(std::memory_order_acquire);
}
template <class T>
void store_release(T &x, T v) {
    std::atomic_ref<T>(x).store(v, std::memory_order_release);
}

// ----------------------------------------------------------------------------- rings

// Producer side of a ring that lives in the peer's segment. Used by one thread at a time.
class Producer {
  public:
    void init(std::byte *slots, uint32_t n, uint64_t *cons, const void *key) {
        slots_ = slots;
        n_ = n;
        mask_ = n - 1;
        cons_ = cons;
        key_ = key;
    }
    // A contiguous run of k slots at the producer position (a Pad entry fills the tail
    // first when needed), or nullptr when the ring is full. `broken` is set when the
    // consumer's index is impossible.
    L::EntryHdr *reserve(uint32_t k, bool &broken) {
        uint32_t pos = static_cast<uint32_t>(prod_ & mask_);
        uint32_t tail = n_ - pos;
        uint64_t need = k <= tail ? k : uint64_t{tail} + k;
        if (prod_ + need - cons_cache_ > n_) {
            cons_cache_ = load_acquire(*cons_);
            sync_acquire(key_);
            if (cons_cache_ > prod_ || prod_ - cons_cache_ > n_) {
                broken = true;
                return nullptr;
            }
            if (prod_ + need - cons_cache_ > n_) {
                blocked_cons_.store(prod_ + need - n_, std::memory_order_release);
                return nullptr;
            }
        }
        blocked_cons_.store(0, std::memory_order_relaxed);
        if (k > tail) {
            auto *pad = at(prod_);
            pad->type = L::Type::Pad;
            pad->nslots = static_cast<uint16_t>(tail);
            pad->len = 0;
            sync_release(key_);
            store_release(pad->stamp, prod_ + 1);
            prod_ += tail;
        }
        return at(prod_);
    }
    void publish(L::EntryHdr *h, uint32_t k) {
        h->nslots = static_cast<uint16_t>(k);
        sync_release(key_);
        store_release(h->stamp, prod_ + 1);
        prod_ += k;
        // For the progress context's stall check (ShmConnection::peer_stalled): a count, no data
        // is read through it, so relaxed.
        published_.store(prod_, std::memory_order_relaxed);
    }
    // Slots published so far (Pad entries included, as in the consumer's index); readable
    // from any thread.
    uint64_t published() const { return published_.load(std::memory_order_relaxed); }
    // The consumer's index, for the same check (untrusted: the peer writes it); relaxed for
    // the same reason.
    uint64_t consumed() const {
        return std::atomic_ref<uint64_t>(*cons_).load(std::memory_order_relaxed);
    }
    // True when the last failed reserve() would now fit (readable from any thread).
    bool space_returned() const {
        uint64_t want = blocked_cons_.load(std::memory_order_acquire);
        return want != 0 && load_acquire(*cons_) >= want;
    }
    bool blocked() const { return blocked_cons_.load(std::memory_order_acquire) != 0; }

  private:
    L::EntryHdr *at(uint64_t p) const {
        return reinterpret_cast<L::EntryHdr *>(slots_ + (p & mask_) * L::kSlot);
    }
    std::byte *slots_ = nullptr;
    uint32_t n_ = 1;
    uint64_t mask_ = 0;  // n_ is a power of two: positions wrap with a mask, not a division
    uint64_t *cons_ = nullptr;
    const void *key_ = nullptr;
    uint64_t prod_ = 0;
    uint64_t cons_cache_ = 0;
    std::atomic<uint64_t> blocked_cons_{0};
    std::atomic<uint64_t> published_{0};
};

// Consumer side of a ring in our own segment. Progress context only.
class Consumer {
  public:
    void init(std::byte *slots, uint32_t n, uint64_t *cons, const void *key) {
        slots_ = slots;
        n_ = n;
        mask_ = n - 1;
        cons_ = cons;
        key_ = key;
    }
    bool ready() const { return load_acquire(at(pos_)->stamp) == pos_ + 1; }
    enum class Peek : uint8_t { Empty, Entry, Bad };
    // Copies the next entry's header (the peer could change the slot under us) and
    // validates its size; skips Pad entries.
    Peek peek(L::EntryHdr &h, const std::byte *&payload) {
        for (;;) {
            L::EntryHdr *e = at(pos_);
            if (load_acquire(e->stamp) != pos_ + 1) return Peek::Empty;
            sync_acquire(key_);
            std::memcpy(&h, e, sizeof h);
            uint32_t room = n_ - static_cast<uint32_t>(pos_ & mask_);
            if (!entry_fits(h, room)) return Peek::Bad;
            if (h.type == L::Type::Pad) {
                pos_ += h.nslots;
                continue;
            }
            payload = reinterpret_cast<const std::byte *>(e) + L::kHdrBytes;
            return Peek::Entry;
        }
    }
    void pop(const L::EntryHdr &h) { pos_ += h.nslots; }
    // Slots consumed but not yet published to the producer.
    uint64_t uncommitted() const { return pos_ - committed_; }
    // Publishes consumption; true when something new was released to the producer.
    bool commit() {
        if (pos_ == committed_) return false;
        sync_release(key_);
        store_release(*cons_, pos_);
        committed_ = pos_;
        return true;
    }

  private:
    L::EntryHdr *at(uint64_t p) const {
        return reinterpret_cast<L::EntryHdr *>(slots_ + (p & mask_) * L::kSlot);
    }
    std::byte *slots_ = nullptr;
    uint32_t n_ = 1;
    uint64_t mask_ = 0;
    uint64_t *cons_ = nullptr;
    const void *key_ = nullptr;
    uint64_t pos_ = 0;
    uint64_t committed_ = 0;
};

}  // namespace softrnic::transport::shm::detail
