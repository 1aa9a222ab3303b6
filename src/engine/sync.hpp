// Lock-free building blocks shared by the engine's queues and tables.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace softrnic::engine {

inline constexpr std::size_t kCacheLine = 64;

// Spins briefly, then yields: used only on slow paths that wait for a fast path to leave.
inline void relax(unsigned &spins) {
    if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        std::this_thread::yield();
    }
}

// Lets a slow-path operation (resize, invalidate, detach) exclude fast-path users without
// giving the fast path a lock. Fast path: enter() / leave() are one RMW each. Slow path:
// close() raises the gate and waits until every user that got in has left; open() lowers it.
// enter() and close() both use seq_cst so that a user either sees the gate raised or is
// counted before close() starts waiting (the store-load ordering a mutex would give).
class Gate {
  public:
    bool try_enter() {
        users_.fetch_add(1, std::memory_order_seq_cst);
        if (closed_.load(std::memory_order_seq_cst)) {
            users_.fetch_sub(1, std::memory_order_release);
            return false;
        }
        return true;
    }
    // Waits while the gate is closed (a resize is short); returns false only if shut for good.
    bool enter() {
        unsigned spins = 0;
        while (!try_enter()) {
            if (dead_.load(std::memory_order_acquire)) return false;
            relax(spins);
        }
        return true;
    }
    void leave() { users_.fetch_sub(1, std::memory_order_release); }

    void close() {
        closed_.store(true, std::memory_order_seq_cst);
        unsigned spins = 0;
        while (users_.load(std::memory_order_acquire) != 0)
            relax(spins);
    }
    bool is_closed() const { return closed_.load(std::memory_order_acquire); }
    // Reopens unless shut for good (a destroy's shut() is never undone by an error path).
    void open() {
        if (!dead_.load(std::memory_order_acquire)) closed_.store(false, std::memory_order_release);
    }
    // Closes for good: enter() then fails instead of waiting.
    void shut() {
        dead_.store(true, std::memory_order_release);
        close();
    }
    void revive() {
        dead_.store(false, std::memory_order_release);
        closed_.store(false, std::memory_order_release);
    }

  private:
    alignas(kCacheLine) std::atomic<uint32_t> users_{0};
    alignas(kCacheLine) std::atomic<bool> closed_{false};
    std::atomic<bool> dead_{false};
};

class GateGuard {
  public:
    explicit GateGuard(Gate &g) : gate_(g), in_(g.enter()) {}
    ~GateGuard() {
        if (in_) gate_.leave();
    }
    explicit operator bool() const { return in_; }
    GateGuard(const GateGuard &) = delete;
    GateGuard &operator=(const GateGuard &) = delete;

  private:
    Gate &gate_;
    bool in_;
};

inline uint64_t round_up_pow2(uint64_t v) {
    if (v <= 1) return 1;
    return uint64_t{1} << (64 - __builtin_clzll(v - 1));
}

}  // namespace softrnic::engine
