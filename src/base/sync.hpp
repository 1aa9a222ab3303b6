// Lock-free building blocks shared by the engine's queues and tables.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace softrnic::base {

inline constexpr std::size_t kCacheLine = 64;

// The body of a spin-wait loop: one pause, which eases the other hyperthread and the
// memory-order machine while the loop re-reads a shared word.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call), for spin windows and stall
// checks.
inline int64_t mono_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Spins briefly, then yields: used only on slow paths that wait for a fast path to leave.
inline void relax(unsigned &spins) {
    if (++spins < 64)
        cpu_relax();
    else
        std::this_thread::yield();
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

  protected:
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

// ---------------------------------------------------------------------- scoped gates
//
// A Gate costs its fast-path user two locked read-modify-writes per entry. The receive path
// of one small message crosses several gates (the transport's endpoint, the QP's arrivals,
// the CQ's resize), all of them entered and left by one thread within one call, while
// their closers (detach, flush, resize, destroy) run a few times per connection. A
// ScopedGate moves the cost to the closer: a user publishes "I am inside gate G" with a
// plain store into a slot of its own thread and then checks the gate, and a closer raises
// the gate, makes every thread of the process execute a full memory barrier
// (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), and waits until no thread's slot
// names the gate. The barrier gives the store-load ordering the user skipped: either the
// user's slot store is visible to the closer's scan, or the user's check sees the gate
// raised. Where membarrier is unavailable (old kernels, seccomp) users order the pair
// with a fenced store instead: one RMW where a Gate pays two.
//
// Scoped entries belong to the entering thread and must be left in reverse order of
// entry, on the same thread (GateScope is an RAII object on the stack). A reference that
// travels between threads or outlives the call keeps using the counted entries
// (try_enter/enter/leave), which a ScopedGate also offers and its close() also waits for.

namespace detail {

inline constexpr uint32_t kScopedDepth = 6;

// One thread's scoped entries. Blocks are never freed: a block whose thread exited is
// taken over by the next new thread, so closers walk the list without a lock.
struct alignas(kCacheLine) ReaderSlots {
    std::atomic<const void *> held[kScopedDepth];
    uint32_t depth = 0;  // entries in use; owner thread only
    std::atomic<bool> owned{false};
    ReaderSlots *next = nullptr;  // immutable once published
};
static_assert(sizeof(ReaderSlots) == kCacheLine);

// This thread's block; null before its first scoped entry and after its exit began.
// constinit: no dynamic initialisation, so users read it without a TLS wrapper call.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local ReaderSlots *tls_reader_slots;
// First scoped entry on this thread: takes or allocates a block. Null once the thread's
// exit destroyed its registration (entries then fall back to counting).
ReaderSlots *reader_slots_first_use();
// Whether users rely on closers' process-wide barrier. Set once while the library loads,
// before any gate can be used, and never changed: users and closers must agree.
extern bool g_asymmetric_fences;
// Closer side: every thread of the process passes a full barrier (or nothing, when users
// fence their own stores).
void process_wide_barrier();
// Waits until no thread's slot names `gate`.
void wait_scoped_users(const void *gate);

}  // namespace detail

class GateScope;

class ScopedGate : private Gate {
  public:
    // Counted entries: a reference that may be released on another thread or later.
    using Gate::enter;
    using Gate::is_closed;
    using Gate::leave;
    using Gate::open;
    using Gate::revive;
    using Gate::try_enter;

    // Raises the gate and waits for every user, counted or scoped, to leave.
    void close() {
        raise();
        wait_users();
    }
    // Closes for good: entries then fail instead of waiting.
    void shut() {
        dead_.store(true, std::memory_order_release);
        close();
    }
    // The two halves of close(), for a closer that may itself be inside the gate (it raises,
    // and waits only when it is not).
    void raise() {
        closed_.store(true, std::memory_order_seq_cst);
        detail::process_wide_barrier();
    }
    void wait_users() {
        unsigned spins = 0;
        while (users_.load(std::memory_order_acquire) != 0)
            relax(spins);
        detail::wait_scoped_users(this);
    }
    void shut_no_wait() {
        dead_.store(true, std::memory_order_release);
        raise();
    }

  private:
    friend class GateScope;
};

// A scoped entry into a ScopedGate: `wait` waits while the gate is closed (not shut), like
// GateGuard; otherwise a closed gate just leaves the scope outside. The fast path is a
// handful of instructions (it runs several times per message): anything else (first use
// on a thread, deep nesting, a closed gate) goes to enter_slow().
class GateScope {
  public:
    [[gnu::always_inline]] explicit GateScope(ScopedGate &g, bool wait = false) {
        detail::ReaderSlots *s = detail::tls_reader_slots;
        if (s != nullptr && s->depth < detail::kScopedDepth) [[likely]] {
            std::atomic<const void *> &slot = s->held[s->depth];
            if (detail::g_asymmetric_fences) [[likely]] {
                // Release (free on x86): a closer that reads this entry into another gate
                // also sees everything done inside the slot's previous gate.
                slot.store(&g, std::memory_order_release);
                // The closer's barrier orders this store before the load below; the
                // compiler must not reorder them either.
                std::atomic_signal_fence(std::memory_order_seq_cst);
            } else {
                slot.store(&g, std::memory_order_seq_cst);
            }
            if (!g.closed_.load(std::memory_order_seq_cst)) [[likely]] {
                ++s->depth;
                slot_ = &slot;
                return;
            }
            slot.store(nullptr, std::memory_order_release);
        }
        enter_slow(g, wait);
    }
    [[gnu::always_inline]] ~GateScope() { exit(); }
    // Leaves before the scope ends (once; the destructor then does nothing). Still the
    // most recent entry of this thread: scoped entries end in reverse order.
    [[gnu::always_inline]] void exit() {
        if (slot_ != nullptr) [[likely]] {
            slot_->store(nullptr, std::memory_order_release);
            --detail::tls_reader_slots->depth;
            slot_ = nullptr;
        } else if (counted_ != nullptr) {
            counted_->leave();
            counted_ = nullptr;
        }
    }
    explicit operator bool() const { return slot_ != nullptr || counted_ != nullptr; }
    GateScope(const GateScope &) = delete;
    GateScope &operator=(const GateScope &) = delete;

  private:
    [[gnu::noinline]] void enter_slow(ScopedGate &g, bool wait);

    std::atomic<const void *> *slot_ = nullptr;  // entered through this thread's slot
    ScopedGate *counted_ = nullptr;              // entered by counting (no slot to use)
};

inline uint64_t round_up_pow2(uint64_t v) {
    if (v <= 1) return 1;
    return uint64_t{1} << (64 - __builtin_clzll(v - 1));
}

}  // namespace softrnic::base
