// Progress engine: one per RNIC instance (engine::Device). It moves data for every
// connected stream of that instance whether or not the application calls into the library
// (a one-sided RDMA Read or Write needs the target to progress), and lets a consumer that
// polls its CQ make progress itself for low latency.
//
//   - A progress thread, started with the first source, blocks in epoll when nothing is
//     ready (idle costs no CPU).
//   - poll_inline(), called by a consumer that found its CQ empty, runs what is ready now
//     without blocking (one epoll_wait(0) for socket sources, a direct call for sources
//     that are polled in memory).
//   - While consumers poll inline, the thread parks (stops waiting on the sources and
//     re-checks every kParkRecheck): on a 2-vCPU machine a thread woken per message takes
//     the CPU the poller needs and costs 30-45 us per wake-up.
//
// A source's progress() is never run by two threads at once: each source has a state word
// (RUNNING/PENDING/DEAD). A thread that finds it RUNNING sets PENDING and leaves; the
// runner runs it again before releasing it. So inline pollers never wait for the thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace softrnic::transport {

class ProgressSource {
  public:
    virtual ~ProgressSource() = default;
    // Does the receive/transmit work that is ready, without blocking. `events` holds the
    // epoll events seen on the source's descriptor (0 when run because of wake() or an
    // inline poll of a memory-polled source).
    virtual void progress(uint32_t events) = 0;
    // Memory-polled sources whose producers only signal a sleeping consumer (e.g. a shared
    // memory ring whose peer writes a descriptor only when asked to).
    //
    // arm_wakeup(): the progress thread is about to block in epoll. Ask the producers to
    // signal (make one of the source's watched descriptors readable) from now on, then
    // re-check: return true when work is already there, and the thread runs the source
    // instead of blocking. Returning false promises that new work makes the descriptor
    // readable (the Dekker pair: publish "wake me", fence, re-check; producers publish
    // work, fence, check the flag). Runs with the source's progress() excluded.
    virtual bool arm_wakeup() { return false; }
    // The thread is running again: producers may stop signalling. Best effort (skipped
    // when progress() is running elsewhere at that moment: that only costs a signal).
    virtual void disarm_wakeup() {}
};

class ProgressEngine {
  public:
    // Identifies a registration; stale tokens are refused (generation check).
    struct Token {
        uint32_t slot = ~0u;
        uint32_t gen = 0;
        bool valid() const { return slot != ~0u; }
    };

    ProgressEngine() = default;
    ~ProgressEngine();
    ProgressEngine(const ProgressEngine &) = delete;
    ProgressEngine &operator=(const ProgressEngine &) = delete;

    // Registers a source. `memory_polled`: poll_inline() runs it on every call (its
    // progress(0) must be cheap when idle, e.g. a ring-index check). Starts the thread on
    // first use. Returns an invalid token when the thread or epoll set cannot be created.
    Token add(ProgressSource *src, bool memory_polled = false);
    // Watches `fd` (level-triggered) for `events` on behalf of the source; one descriptor
    // per source. watch() again changes the events; unwatch() stops (before close(fd)).
    // `thread_only`: only the progress thread waits on it (also while parked, re-checked
    // every kParkRecheck); inline pollers do not, so a memory-polled source whose
    // descriptor is only a doorbell or a liveness signal costs pollers no system call.
    bool watch(Token t, int fd, uint32_t events, bool thread_only = false);
    void unwatch(Token t);
    // After it returns, progress() of the source is not running and never runs again.
    // Must not be called from inside that source's progress().
    void remove(Token t);
    // Asks for src->progress(0) soon: by an inline poller if one is active, else by the
    // thread. Cheap when nothing is pending; safe from any thread, including progress().
    void wake(Token t);

    // Runs what is ready now, never blocks. True when some source ran.
    bool poll_inline();
    // True while sources are registered (the CQ poll path checks this before calling
    // poll_inline, so instances without connected streams pay nothing).
    bool active() const { return sources_.load(std::memory_order_acquire) != 0; }

    // The source whose progress() the calling thread is inside, or nullptr.
    static ProgressSource *current();
    // A source found work in progress() (it ran something, not just looked): keeps the
    // thread's post-wake-up spin going. Cheap: a relaxed load and store.
    void note_work() {
        work_seq_.store(work_seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    // True when the calling thread runs progress() from poll_inline(): an application
    // polling its CQ, which calls again within microseconds (unlike the progress thread).
    static bool inline_poll_context();
    // Tests only: how often parked threads (of every instance) re-check for pollers, from
    // their next park on. Returns the previous value.
    static std::chrono::milliseconds set_park_recheck_for_testing(std::chrono::milliseconds every);

  private:
    struct Slot {
        std::atomic<uint32_t> gen{0};
        std::atomic<uint32_t> state{0};   // kRunning | kPending | kDead
        std::atomic<uint32_t> events{0};  // accumulated epoll events + kWanted
        std::atomic<bool> wanted{false};
        std::atomic<ProgressSource *> src{nullptr};
        int fd = -1;                  // guarded by mu_
        bool fd_thread_only = false;  // guarded by mu_: fd is in slow_ep_, not ep_
        bool memory_polled = false;
    };
    static constexpr uint32_t kChunk = 256;
    static constexpr uint32_t kChunks = 1024;  // 262,144 sources per instance
    static constexpr uint32_t kMaxSlots = kChunk * kChunks;

    Slot *slot(uint32_t i) const;
    Slot *lookup(Token t) const;
    bool start_locked();
    void kick(Slot &s, uint32_t events);
    void run_wanted();
    void drain(int n, const void *evs);
    void drop_fd_locked(Slot &s);
    void update_sole_locked();
    void thread_main();
    bool exclusive(Slot &s, bool (*fn)(ProgressSource *));
    bool arm_polled();
    void disarm_polled();
    // True (and `seen` updated) when inline polls happened since `seen` was taken.
    bool inline_polls_since(uint64_t &seen) const;
    // The thread's own pass over the sources (fd sources through epoll_wait(0), memory-
    // polled ones directly, wanted ones); true when some source reported work.
    bool serve_from_thread();
    // After a wake-up: serve_from_thread() until the spin window passes without work or
    // inline pollers appear (the inline epoch moved from `seen_epoch`).
    void spin_after_work(uint64_t seen_epoch);

    mutable std::mutex mu_;  // registration changes only
    std::array<std::atomic<Slot *>, kChunks> chunks_{};
    std::vector<uint32_t> free_;
    std::atomic<uint32_t> next_slot_{0};
    std::atomic<uint32_t> sources_{0};
    std::atomic<uint32_t> fd_sources_{0};
    // When exactly one source has a descriptor in ep_: (gen << 32 | slot) of it, else ~0.
    // Inline pollers then run it directly (its own recv() finds out whether anything came)
    // instead of asking epoll first: one system call per message instead of two.
    std::atomic<uint64_t> sole_fd_source_{~uint64_t{0}};
    // Memory-polled registrations as (gen << 32 | slot), [0, npolled_) valid; edited under
    // mu_, read lock-free (a stale entry fails the generation check).
    std::unique_ptr<std::atomic<uint64_t>[]> polled_;
    std::atomic<uint32_t> npolled_{0};
    std::atomic<bool> any_wanted_{false};
    // Bumped by every inline poll; the thread compares it with what it saw last.
    alignas(64) std::atomic<uint64_t> inline_epoch_{0};
    // Bumped by note_work(); the thread's spin compares it across a pass.
    alignas(64) std::atomic<uint64_t> work_seq_{0};
    alignas(64) std::atomic<bool> thread_waiting_{
        false};  // thread blocked (epoll or park): wake() must signal
    std::atomic<bool> stop_{false};
    int ep_ = -1;         // the sources' descriptors (inline pollers wait on it with timeout 0)
    int thread_ep_ = -1;  // the thread's set: wake_fd_, ep_ and slow_ep_ (nested)
    int slow_ep_ = -1;    // thread-only descriptors (see watch())
    int wake_fd_ = -1;
    std::thread thread_;
};

}  // namespace softrnic::transport
