// The registry of a face's live objects, which validates the handles the face hands out
// (uDAPL today; IT-API, the IB Access Layer and the Lane15 CI need the same thing, so
// nothing here knows a face's types: an object is an address and a small integer kind).
//
// Why: uDAPL handles are raw pointers (the registry dispatches through their first word),
// so a freed or forged handle cannot be recognised by looking at it. Every live object is
// registered here with its kind; a lookup that misses means "invalid handle" and nothing
// is dereferenced. Freed objects are not deleted at once but parked in a bounded
// quarantine, so a stale pointer held by a late callback still points at readable memory
// and handle values are not reused immediately (uDAPL L2202 asks providers to delay reuse).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_map>

namespace softrnic::api {

class ObjectRegistry {
  public:
    using Deleter = std::function<void(void *)>;

    void add(void *h, int kind) {
        std::unique_lock lk(mu_);
        live_[h] = kind;
    }
    // True when `h` is live and of `kind` (kind < 0: any kind).
    //
    // Every data-path call validates its handle, so the common case avoids the lock: each
    // thread remembers the last few handles it found live, tagged with the registry's epoch,
    // which every removal advances. A remembered answer is used only while the epoch is
    // unchanged, i.e. while no handle has been removed since: a handle freed by a call
    // that happened before this one is never taken as live (the acquire load sees the
    // new epoch). A removal racing with this call may still be missed, exactly as with the
    // locked lookup, where it can land between the lookup and the use; the quarantine
    // covers that window either way.
    //
    // The hit is inline and compares two words per way: the handle, and a stamp that joins
    // the registry's id and its epoch. It runs several times per data-path call (the handle
    // itself, and each completion's EP when events are made), where the out-of-line
    // version cost ~44 instructions a lookup, a quarter of the provider's own per call.
    bool valid(const void *h, int kind) const {
        const uint64_t stamp = stamp_.load(std::memory_order_acquire);
        if (Remembered *mem = tls_cache_; mem != nullptr && h != nullptr) [[likely]] {
            for (const Remembered::Entry &e : mem->set_for(h).ways)
                if (e.handle == h && e.stamp == stamp) return kind < 0 || e.kind == kind;
        }
        return valid_slow(h, kind);
    }
    // Lookups on this thread, of any registry, that the per-thread cache could not answer.
    static uint64_t thread_misses() {
        const Remembered *mem = remembered();
        return mem != nullptr ? mem->misses : 0;
    }
    std::size_t live_count() const {
        std::shared_lock lk(mu_);
        return live_.size();
    }
    int kind_of(const void *h) const {
        std::shared_lock lk(mu_);
        auto it = live_.find(const_cast<void *>(h));
        return it == live_.end() ? -1 : it->second;
    }
    // Unregisters `h` now (lookups fail from here on) without parking it yet.
    void remove(void *h) {
        std::unique_lock lk(mu_);
        live_.erase(h);
        stamp_.fetch_add(1, std::memory_order_release);
    }
    // Unregisters `h` and parks it; the oldest parked object is destroyed with `del`
    // once the quarantine is full.
    void retire(void *h, Deleter del) {
        std::unique_lock lk(mu_);
        live_.erase(h);
        stamp_.fetch_add(1, std::memory_order_release);
        parked_.emplace_back(h, std::move(del));
        if (parked_.size() > kQuarantine) {
            auto old = std::move(parked_.front());
            parked_.pop_front();
            lk.unlock();
            old.second(old.first);
        }
    }
    ~ObjectRegistry() {
        for (auto &p : parked_)
            p.second(p.first);
    }

  private:
    [[gnu::noinline]] bool valid_slow(const void *h, int kind) const {
        if (h == nullptr) return false;
        Remembered *mem = remembered();
        Remembered::Set *set = nullptr;
        if (mem != nullptr) {
            set = &mem->set_for(h);
            // The stamp again: the cache may have been made just now (first use).
            const uint64_t stamp = stamp_.load(std::memory_order_acquire);
            for (const Remembered::Entry &e : set->ways)
                if (e.handle == h && e.stamp == stamp) return kind < 0 || e.kind == kind;
            ++mem->misses;
        }
        std::shared_lock lk(mu_);
        auto it = live_.find(const_cast<void *>(h));
        if (it == live_.end()) return false;
        // The stamp read under the lock: no removal can be between it and the lookup.
        // The newest answer goes first; the one it displaces stays as the second way.
        if (set != nullptr) {
            set->ways[1] = set->ways[0];
            set->ways[0] = Remembered::Entry{h, stamp_.load(std::memory_order_relaxed), it->second};
        }
        return kind < 0 || it->second == kind;
    }
    // Per thread: handles found live, in a small 2-way set-associative cache (two probes
    // per lookup). A program posts to and polls a handful of objects in its loop, but an
    // MPI rank may cycle through dozens of EPs; the 4-entry list this replaces was scanned
    // in full on every call and thrashed past 4 handles. Keyed by the registry's id too, so
    // that entries of a destroyed registry can never match a new one at the same address.
    struct Remembered {
        struct Entry {
            const void *handle = nullptr;
            uint64_t stamp = 0;  // the registry's stamp_ when the handle was found live
            int kind = -1;
        };
        struct Set {
            Entry ways[2];
        };
        static constexpr unsigned kSetBits = 5;
        Set sets[1u << kSetBits];
        uint64_t misses = 0;
        Set &set_for(const void *h) {
            // Fibonacci hashing of the address: heap objects differ in their middle bits.
            const auto key = uint64_t(reinterpret_cast<uintptr_t>(h) >> 4);
            return sets[(key * 0x9E3779B97F4A7C15ull) >> (64 - kSetBits)];
        }
    };
    // The cache of this thread, or null once the thread is exiting (its cache is gone).
    //
    // The pointer is initial-exec TLS: one %fs-relative load. This header is compiled into
    // a provider that libdat2 dlopens, where an ordinary thread_local costs a
    // __tls_get_addr call per access, several per DAT call (a tenth of a send/recv
    // cycle's instructions in the provider). Initial-exec in a dlopen'ed library takes
    // its bytes from the static TLS surplus glibc keeps for this; 9 bytes here, as
    // libsoftrnic's progress engine does with its own two words.
    static Remembered *remembered() {
        if (Remembered *mem = tls_cache_; mem != nullptr) [[likely]]
            return mem;
        return remembered_first_use();
    }
    [[gnu::noinline]] static Remembered *remembered_first_use() {
        if (tls_cache_gone_) return nullptr;  // validation still works, uncached
        // On the heap: a module with initial-exec TLS must fit its whole TLS block in the
        // static surplus (glibc refuses the dlopen otherwise), so the block stays small.
        struct Owner {
            std::unique_ptr<Remembered> cache;
            ~Owner() {
                tls_cache_ = nullptr;
                tls_cache_gone_ = true;  // a later thread-exit destructor validates uncached
            }
        };
        static thread_local Owner owner;
        if (!owner.cache) owner.cache.reset(new (std::nothrow) Remembered);
        tls_cache_ = owner.cache.get();  // null without memory: uncached, retried next call
        return tls_cache_;
    }
    [[gnu::tls_model("initial-exec")]] static inline thread_local Remembered *tls_cache_ = nullptr;
    [[gnu::tls_model("initial-exec")]] static inline thread_local bool tls_cache_gone_ = false;
    static uint64_t next_id() {
        static std::atomic<uint64_t> ids{0};
        return ids.fetch_add(1, std::memory_order_relaxed) + 1;
    }

    static constexpr std::size_t kQuarantine = 4096;
    // The registry's id (high 24 bits: ids repeat only after 2^24 registries, so entries of a
    // destroyed registry do not match a new one at the same address) and its epoch (low 40
    // bits), advanced by every removal (remove, retire).
    std::atomic<uint64_t> stamp_{next_id() << 40};
    mutable std::shared_mutex mu_;
    std::unordered_map<void *, int> live_;
    std::deque<std::pair<void *, Deleter>> parked_;
};

// A face library's one registry of all its handles. Heap-allocated, so that a process
// exiting with objects still open (whose threads may still look handles up) never sees it
// destroyed; released when the library is unloaded with nothing live (dlclose after the
// last object went), so the library leaves nothing behind.
struct LibraryRegistry {
    ObjectRegistry *registry = new ObjectRegistry;
    LibraryRegistry() = default;
    LibraryRegistry(const LibraryRegistry &) = delete;
    LibraryRegistry &operator=(const LibraryRegistry &) = delete;
    ~LibraryRegistry() {
        if (registry && registry->live_count() == 0) {
            delete registry;
            registry = nullptr;
        }
    }
};

}  // namespace softrnic::api
