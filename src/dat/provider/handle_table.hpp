// Handle registry for API-layer objects (uDAPL today; IT-API and the IB Access Layer need
// the same thing, so this header has no DAT dependency and could move to a shared
// src/api/ folder unchanged).
//
// Why: uDAPL handles are raw pointers (the registry dispatches through their first word),
// so a freed or forged handle cannot be recognised by looking at it. Every live object is
// registered here with its kind; a lookup that misses means "invalid handle" and nothing
// is dereferenced. Freed objects are not deleted at once but parked in a bounded
// quarantine, so a stale pointer held by a late callback still points at readable memory
// and handle values are not reused immediately (uDAPL L2202 asks providers to delay reuse).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace softrnic::api {

class HandleTable {
  public:
    using Deleter = std::function<void(void *)>;

    void add(void *h, int kind) {
        std::unique_lock lk(mu_);
        live_[h] = kind;
    }
    // True when `h` is live and of `kind` (kind < 0: any kind).
    bool valid(const void *h, int kind) const {
        if (h == nullptr) return false;
        std::shared_lock lk(mu_);
        auto it = live_.find(const_cast<void *>(h));
        return it != live_.end() && (kind < 0 || it->second == kind);
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
    }
    // Unregisters `h` and parks it; the oldest parked object is destroyed with `del`
    // once the quarantine is full.
    void retire(void *h, Deleter del) {
        std::unique_lock lk(mu_);
        live_.erase(h);
        parked_.emplace_back(h, std::move(del));
        if (parked_.size() > kQuarantine) {
            auto old = std::move(parked_.front());
            parked_.pop_front();
            lk.unlock();
            old.second(old.first);
        }
    }
    ~HandleTable() {
        for (auto &p : parked_)
            p.second(p.first);
    }

  private:
    static constexpr std::size_t kQuarantine = 4096;
    mutable std::shared_mutex mu_;
    std::unordered_map<void *, int> live_;
    std::deque<std::pair<void *, Deleter>> parked_;
};

}  // namespace softrnic::api
