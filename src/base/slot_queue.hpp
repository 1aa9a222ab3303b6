// Bounded multi-producer multi-consumer queue (sequence-numbered slots, after D. Vyukov)
// whose slots carry a fixed header plus a per-queue number of trailing elements. It is the
// one ring behind receive queues, shared receive queues and completion queues: post and
// poll are a CAS and two atomic accesses, no locks, no allocation.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include "base/sync.hpp"

namespace softrnic::base {

template <class Header, class Trailer = std::byte>
class SlotQueue {
    static_assert(std::is_trivially_copyable_v<Header>);
    static_assert(std::is_trivially_copyable_v<Trailer>);

  public:
    SlotQueue() = default;
    SlotQueue(uint64_t min_capacity, uint32_t trailers) { reset(min_capacity, trailers); }

    void reset(uint64_t min_capacity, uint32_t trailers) {
        capacity_ = round_up_pow2(min_capacity ? min_capacity : 1);
        mask_ = capacity_ - 1;
        trailers_ = trailers;
        stride_ = (sizeof(Slot) + sizeof(Trailer) * trailers + alignof(Slot) - 1) / alignof(Slot) *
                  alignof(Slot);
        storage_.reset(new (std::align_val_t{kCacheLine}) std::byte[stride_ * capacity_]);
        for (uint64_t i = 0; i < capacity_; ++i) {
            new (slot(i)) Slot{};
            slot(i)->seq.store(i, std::memory_order_relaxed);
        }
        head_.store(0, std::memory_order_relaxed);
        tail_.store(0, std::memory_order_relaxed);
    }

    uint64_t capacity() const { return capacity_; }
    uint32_t trailers() const { return trailers_; }
    // Exact when no push or pop runs concurrently; otherwise a snapshot.
    uint64_t size() const {
        uint64_t t = tail_.load(std::memory_order_acquire);
        uint64_t h = head_.load(std::memory_order_acquire);
        return t >= h ? t - h : 0;
    }

    // fill(Header&, std::span<Trailer>) writes the entry. Returns false when full.
    template <class Fill>
    bool push(Fill &&fill) {
        uint64_t pos = tail_.load(std::memory_order_relaxed);
        unsigned spins = 0;
        for (;;) {
            Slot *s = slot(pos & mask_);
            uint64_t seq = s->seq.load(std::memory_order_acquire);
            int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
            if (diff == 0) {
                if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    fill(s->header, trailer_span(s));
                    s->seq.store(pos + 1, std::memory_order_release);
                    return true;
                }
            } else if (diff < 0) {
                // The slot still holds the previous lap's entry. If a consumer has already
                // claimed it (head is past it), it is being copied out right now: wait for
                // that instead of reporting a full queue that is not full.
                if (head_.load(std::memory_order_acquire) > pos - capacity_) {
                    relax(spins);
                    pos = tail_.load(std::memory_order_relaxed);
                    continue;
                }
                return false;
            } else {
                pos = tail_.load(std::memory_order_relaxed);
            }
        }
    }

    // take(const Header&, std::span<const Trailer>) reads the entry. Returns false when empty.
    template <class Take>
    bool pop(Take &&take) {
        uint64_t pos = head_.load(std::memory_order_relaxed);
        for (;;) {
            Slot *s = slot(pos & mask_);
            uint64_t seq = s->seq.load(std::memory_order_acquire);
            int64_t diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos + 1);
            if (diff == 0) {
                if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
                    take(std::as_const(s->header), std::span<const Trailer>(trailer_span(s)));
                    s->seq.store(pos + capacity_, std::memory_order_release);
                    return true;
                }
            } else if (diff < 0) {
                return false;
            } else {
                pos = head_.load(std::memory_order_relaxed);
            }
        }
    }

    // pop() for a queue whose consumers never run concurrently (a CQ: RNICPI serialises
    // the calls on one CQ, L1316-1363): no CAS on the head, which only its one consumer
    // moves. Producers may run concurrently.
    template <class Take>
    bool pop_single_consumer(Take &&take) {
        const uint64_t pos = head_.load(std::memory_order_relaxed);
        Slot *s = slot(pos & mask_);
        if (s->seq.load(std::memory_order_acquire) != pos + 1) return false;
        take(std::as_const(s->header), std::span<const Trailer>(trailer_span(s)));
        // The head first: a producer that finds the slot free (seq) then sees the queue
        // with this entry gone in size() and in its full-queue check.
        head_.store(pos + 1, std::memory_order_relaxed);
        s->seq.store(pos + capacity_, std::memory_order_release);
        return true;
    }
    // True when the next pop_single_consumer() finds an entry (its consumer only).
    bool ready_for_single_consumer() const {
        const uint64_t pos = head_.load(std::memory_order_relaxed);
        return slot(pos & mask_)->seq.load(std::memory_order_acquire) == pos + 1;
    }
    // Exchanges contents with `o`. Caller excludes all users of both.
    void swap(SlotQueue &o) {
        std::swap(storage_, o.storage_);
        std::swap(capacity_, o.capacity_);
        std::swap(mask_, o.mask_);
        std::swap(stride_, o.stride_);
        std::swap(trailers_, o.trailers_);
        uint64_t h = head_.load(std::memory_order_relaxed),
                 t = tail_.load(std::memory_order_relaxed);
        head_.store(o.head_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        tail_.store(o.tail_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        o.head_.store(h, std::memory_order_relaxed);
        o.tail_.store(t, std::memory_order_relaxed);
    }

    // Moves every entry into `to` (which must be large enough). Caller excludes all users.
    void move_into(SlotQueue &to) {
        while (pop([&](const Header &h, std::span<const Trailer> t) {
            to.push([&](Header &dh, std::span<Trailer> dt) {
                dh = h;
                std::memcpy(dt.data(), t.data(), std::min(dt.size(), t.size()) * sizeof(Trailer));
            });
        })) {
        }
    }

  private:
    struct Slot {
        std::atomic<uint64_t> seq{0};
        Header header{};
    };
    struct AlignedDelete {
        void operator()(std::byte *p) const {
            ::operator delete[](p, std::align_val_t{kCacheLine});
        }
    };

    Slot *slot(uint64_t i) const {
        return std::launder(reinterpret_cast<Slot *>(storage_.get() + i * stride_));
    }
    std::span<Trailer> trailer_span(Slot *s) const {
        return {reinterpret_cast<Trailer *>(reinterpret_cast<std::byte *>(s) + sizeof(Slot)),
                trailers_};
    }

    alignas(kCacheLine) std::atomic<uint64_t> head_{0};
    alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
    alignas(kCacheLine) std::unique_ptr<std::byte[], AlignedDelete> storage_;
    uint64_t capacity_ = 0;
    uint64_t mask_ = 0;
    uint64_t stride_ = 0;
    uint32_t trailers_ = 0;
};

}  // namespace softrnic::base
