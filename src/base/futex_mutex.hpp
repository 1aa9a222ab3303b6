// A mutex that is one atomic word: the lock of a uDAPL EVD, and of any face object whose
// lock sits on a fast path.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace softrnic::base {

// Every dat_evd_dequeue takes its EVD's lock, and glibc's pthread_mutex_lock and
// unlock cost about 55 instructions a pair around their two atomic RMWs (attribute and
// owner bookkeeping this lock never uses): a tenth of the provider's instructions per
// dequeue. Uncontended, lock and unlock here are one RMW each and nothing else; a
// contended lock sleeps on a futex (U. Drepper, "Futexes Are Tricky", mutex 3), as a
// dequeue may hold it across a progress pass that copies a large message.
class FutexMutex {
  public:
    void lock() {
        uint32_t c = kFree;
        if (state_.compare_exchange_strong(c, kLocked, std::memory_order_acquire,
                                           std::memory_order_relaxed)) [[likely]]
            return;
        lock_contended(c);
    }
    bool try_lock() {
        uint32_t c = kFree;
        return state_.compare_exchange_strong(c, kLocked, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    void unlock() {
        if (state_.exchange(kFree, std::memory_order_release) == kWaiters) [[unlikely]]
            wake_one();
    }

  private:
    static constexpr uint32_t kFree = 0, kLocked = 1, kWaiters = 2;
    [[gnu::noinline]] void lock_contended(uint32_t c) {
        if (c != kWaiters) c = state_.exchange(kWaiters, std::memory_order_acquire);
        while (c != kFree) {
            ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&state_), FUTEX_WAIT_PRIVATE,
                      kWaiters, nullptr, nullptr, 0);
            c = state_.exchange(kWaiters, std::memory_order_acquire);
        }
    }
    [[gnu::noinline]] void wake_one() {
        ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&state_), FUTEX_WAKE_PRIVATE, 1, nullptr,
                  nullptr, 0);
    }
    std::atomic<uint32_t> state_{kFree};
    static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
};

}  // namespace softrnic::base
