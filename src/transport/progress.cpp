#include "transport/progress.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "base/config.hpp"
#include "base/stats.hpp"
#include "base/sync.hpp"

namespace softrnic::transport {

namespace {

constexpr uint32_t kRunning = 1;
constexpr uint32_t kPending = 2;
constexpr uint32_t kDead = 4;

// How often a parked thread checks whether the pollers stopped (bounds the delay before a
// source nobody polls any more is served again). The thread stays parked while inline polls
// happened since its last look. Tests lengthen it (set_park_recheck_for_testing) so that
// only a wake-up can end a park, which makes "the peer rang us" observable.
constexpr int kParkRecheckMs = 1;
std::atomic<int> g_park_recheck_ms{kParkRecheckMs};

// Initial-exec: the library is linked by programs (and by the DAT provider, itself loaded
// early), and the default dynamic model costs a __tls_get_addr call per kick.
[[gnu::tls_model("initial-exec")]] thread_local ProgressSource *tls_current = nullptr;
// True while the calling thread is inside poll_inline() (an application polling its CQ).
[[gnu::tls_model("initial-exec")]] thread_local bool tls_inline_poll = false;

uint64_t pack(uint32_t gen, uint32_t slot) {
    return (uint64_t{gen} << 32) | slot;
}

void drain_eventfd(int fd) {
    uint64_t v;
    [[maybe_unused]] ssize_t r = ::read(fd, &v, sizeof v);
}

using base::cpu_relax;
using base::mono_ns;

// After the progress thread served a wake-up it keeps polling its sources for this long
// (re-armed by every pass that found work) before it sleeps again: a passive RDMA target
// (reads, atomics, pulled writes) otherwise pays a sleep/wake-up per request, 20-45 us on
// a small VM. SOFTRNIC_PROGRESS_SPIN_US overrides it (0: never spin).
int64_t spin_after_work_ns() {
    static const int64_t ns = [] {
        const char *v = base::env_value(base::EnvVar::ProgressSpinUs);
        if (!v || !*v) return int64_t{20'000};
        char *end = nullptr;
        long us = std::strtol(v, &end, 10);
        if (*end != 0 || us < 0 || us > 1'000'000) return int64_t{20'000};
        return int64_t{us} * 1000;
    }();
    return ns;
}

}  // namespace

ProgressSource *ProgressEngine::current() {
    return tls_current;
}

ProgressEngine::~ProgressEngine() {
    if (thread_.joinable()) {
        stop_.store(true, std::memory_order_seq_cst);
        uint64_t one = 1;
        [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
        thread_.join();
    }
    if (ep_ >= 0) ::close(ep_);
    if (slow_ep_ >= 0) ::close(slow_ep_);
    if (thread_ep_ >= 0) ::close(thread_ep_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    for (auto &c : chunks_)
        delete[] c.load(std::memory_order_relaxed);
}

ProgressEngine::Slot *ProgressEngine::slot(uint32_t i) const {
    if (i >= kMaxSlots) return nullptr;
    Slot *chunk = chunks_[i / kChunk].load(std::memory_order_acquire);
    return chunk ? &chunk[i % kChunk] : nullptr;
}

ProgressEngine::Slot *ProgressEngine::lookup(Token t) const {
    Slot *s = slot(t.slot);
    if (!s || s->gen.load(std::memory_order_acquire) != t.gen) return nullptr;
    return s;
}

bool ProgressEngine::start_locked() {
    if (thread_.joinable()) return true;
    if (ep_ < 0) ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (thread_ep_ < 0) thread_ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (slow_ep_ < 0) slow_ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (wake_fd_ < 0) wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ep_ < 0 || thread_ep_ < 0 || slow_ep_ < 0 || wake_fd_ < 0) return false;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    if (::epoll_ctl(thread_ep_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0 && errno != EEXIST) return false;
    ev.data.u64 = 1;
    if (::epoll_ctl(thread_ep_, EPOLL_CTL_ADD, ep_, &ev) != 0 && errno != EEXIST) return false;
    ev.data.u64 = 2;
    if (::epoll_ctl(thread_ep_, EPOLL_CTL_ADD, slow_ep_, &ev) != 0 && errno != EEXIST) return false;
    if (!polled_) polled_ = std::make_unique<std::atomic<uint64_t>[]>(kMaxSlots);
    try {
        thread_ = std::thread([this] { thread_main(); });
    } catch (...) {
        return false;
    }
    return true;
}

ProgressEngine::Token ProgressEngine::add(ProgressSource *src, bool memory_polled) {
    if (!src) return {};
    std::lock_guard lk(mu_);
    if (!start_locked()) return {};
    uint32_t idx;
    if (!free_.empty()) {
        idx = free_.back();
        free_.pop_back();
    } else {
        idx = next_slot_.load(std::memory_order_relaxed);
        if (idx >= kMaxSlots) return {};
        if (!chunks_[idx / kChunk].load(std::memory_order_relaxed)) {
            Slot *chunk = new (std::nothrow) Slot[kChunk];
            if (!chunk) return {};
            chunks_[idx / kChunk].store(chunk, std::memory_order_release);
        }
        next_slot_.store(idx + 1, std::memory_order_release);
    }
    // The slot's chunk exists: it was made above, or `idx` came back from a slot in it.
    // (Not slot(): GCC follows its null branch into the stores below and warns.)
    Slot &s = chunks_[idx / kChunk].load(std::memory_order_relaxed)[idx % kChunk];
    s.src.store(src, std::memory_order_relaxed);
    s.events.store(0, std::memory_order_relaxed);
    s.wanted.store(false, std::memory_order_relaxed);
    s.fd = -1;
    s.memory_polled = memory_polled;
    s.state.store(0, std::memory_order_release);
    uint32_t gen = s.gen.load(std::memory_order_relaxed) + 1;
    if (gen == 0) gen = 1;
    s.gen.store(gen, std::memory_order_release);
    if (memory_polled) {
        uint32_t n = npolled_.load(std::memory_order_relaxed);
        polled_[n].store(pack(gen, idx), std::memory_order_relaxed);
        npolled_.store(n + 1, std::memory_order_release);
    }
    sources_.fetch_add(1, std::memory_order_release);
    if (memory_polled) {
        // A thread already asleep never armed this source (arm_wakeup): wake it so that
        // it goes round and arms it, or the source's producers would never signal.
        uint64_t one = 1;
        [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
    }
    return {idx, gen};
}

void ProgressEngine::drop_fd_locked(Slot &s) {
    if (s.fd < 0) return;
    ::epoll_ctl(s.fd_thread_only ? slow_ep_ : ep_, EPOLL_CTL_DEL, s.fd, nullptr);
    bool polled_fd = !s.fd_thread_only;
    s.fd = -1;
    s.fd_thread_only = false;
    if (polled_fd) {
        fd_sources_.fetch_sub(1, std::memory_order_relaxed);
        update_sole_locked();
    }
}

void ProgressEngine::update_sole_locked() {
    uint64_t sole = ~uint64_t{0};
    if (fd_sources_.load(std::memory_order_relaxed) == 1) {
        uint32_t n = next_slot_.load(std::memory_order_relaxed);
        for (uint32_t i = 0; i < n; ++i) {
            Slot *s = slot(i);
            if (s && s->fd >= 0 && !s->fd_thread_only) {
                sole = pack(s->gen.load(std::memory_order_relaxed), i);
                break;
            }
        }
    }
    sole_fd_source_.store(sole, std::memory_order_release);
}

bool ProgressEngine::watch(Token t, int fd, uint32_t events, bool thread_only) {
    std::lock_guard lk(mu_);
    Slot *s = lookup(t);
    if (!s || fd < 0) return false;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = pack(t.gen, t.slot);
    int set = thread_only ? slow_ep_ : ep_;
    if (s->fd == fd && s->fd_thread_only == thread_only)
        return ::epoll_ctl(set, EPOLL_CTL_MOD, fd, &ev) == 0;
    drop_fd_locked(*s);
    if (::epoll_ctl(set, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
    s->fd = fd;
    s->fd_thread_only = thread_only;
    if (!thread_only) {
        fd_sources_.fetch_add(1, std::memory_order_relaxed);
        update_sole_locked();
    }
    return true;
}

void ProgressEngine::unwatch(Token t) {
    std::lock_guard lk(mu_);
    Slot *s = lookup(t);
    if (!s) return;
    drop_fd_locked(*s);
}

void ProgressEngine::remove(Token t) {
    Slot *s;
    {
        std::lock_guard lk(mu_);
        s = lookup(t);
        if (!s) return;
        drop_fd_locked(*s);
        // New lookups (epoll data, polled list, wake) now fail the generation check.
        s->gen.store(s->gen.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        if (s->memory_polled) {
            uint32_t n = npolled_.load(std::memory_order_relaxed);
            for (uint32_t i = 0; i < n; ++i)
                if (static_cast<uint32_t>(polled_[i].load(std::memory_order_relaxed)) == t.slot) {
                    polled_[i].store(polled_[n - 1].load(std::memory_order_relaxed),
                                     std::memory_order_relaxed);
                    npolled_.store(n - 1, std::memory_order_release);
                    break;
                }
        }
        sources_.fetch_sub(1, std::memory_order_release);
    }
    // A kicker that passed the generation check before may still be running progress():
    // wait for it (progress() is short and never blocks), then close the slot for good.
    uint32_t st = s->state.load(std::memory_order_acquire);
    for (;;) {
        if (st & kRunning) {
            std::this_thread::yield();
            st = s->state.load(std::memory_order_acquire);
            continue;
        }
        if (s->state.compare_exchange_weak(st, kDead, std::memory_order_acq_rel)) break;
    }
    std::lock_guard lk(mu_);
    s->src.store(nullptr, std::memory_order_relaxed);
    free_.push_back(t.slot);
}

void ProgressEngine::wake(Token t) {
    Slot *s = lookup(t);
    if (!s) return;
    s->wanted.store(true, std::memory_order_release);
    any_wanted_.store(true, std::memory_order_seq_cst);
    // Dekker pair with thread_main: it publishes thread_waiting_ before checking
    // any_wanted_, we publish any_wanted_ before checking thread_waiting_.
    if (thread_waiting_.load(std::memory_order_seq_cst)) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t r = ::write(wake_fd_, &one, sizeof one);
    }
}

void ProgressEngine::kick(Slot &s, uint32_t events) {
    if (events) s.events.fetch_or(events, std::memory_order_release);
    uint32_t st = s.state.load(std::memory_order_acquire);
    for (;;) {
        if (st & kDead) return;
        if (st & kRunning) {
            // The runner goes round again before it lets go.
            if ((st & kPending) ||
                s.state.compare_exchange_weak(st, st | kPending, std::memory_order_acq_rel))
                return;
            continue;
        }
        if (s.state.compare_exchange_weak(st, kRunning, std::memory_order_acq_rel)) break;
    }
    ProgressSource *src = s.src.load(std::memory_order_acquire);
    ProgressSource *prev = tls_current;
    tls_current = src;
    for (;;) {
        // Inline polls of memory-polled sources come with no events: a load, not an RMW.
        uint32_t ev = s.events.load(std::memory_order_acquire) != 0
                          ? s.events.exchange(0, std::memory_order_acq_rel)
                          : 0;
        if (src) src->progress(ev);
        uint32_t expect = kRunning;
        if (s.state.compare_exchange_strong(expect, 0, std::memory_order_acq_rel)) break;
        // kPending was set: clear it (a later kicker sets it again) and run once more.
        while (!s.state.compare_exchange_weak(expect, kRunning, std::memory_order_acq_rel)) {
        }
    }
    tls_current = prev;
}

void ProgressEngine::drain(int n, const void *raw) {
    const auto *evs = static_cast<const epoll_event *>(raw);
    for (int i = 0; i < n; ++i) {
        auto idx = static_cast<uint32_t>(evs[i].data.u64);
        auto gen = static_cast<uint32_t>(evs[i].data.u64 >> 32);
        Slot *s = slot(idx);
        if (!s || s->gen.load(std::memory_order_acquire) != gen) continue;
        kick(*s, evs[i].events);
    }
}

void ProgressEngine::run_wanted() {
    if (!any_wanted_.exchange(false, std::memory_order_seq_cst)) return;
    uint32_t n = next_slot_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) {
        Slot *s = slot(i);
        if (s && s->wanted.load(std::memory_order_relaxed) &&
            s->wanted.exchange(false, std::memory_order_acq_rel))
            kick(*s, 0);
    }
}

// Runs fn(src) on `s` with its progress() excluded (the slot's RUNNING bit). False when the
// slot is dead or busy on another thread. A kick that arrived meanwhile (PENDING) is
// served before the slot is released, as in kick().
bool ProgressEngine::exclusive(Slot &s, bool (*fn)(ProgressSource *)) {
    uint32_t st = 0;
    if (!s.state.compare_exchange_strong(st, kRunning, std::memory_order_acq_rel)) return false;
    ProgressSource *src = s.src.load(std::memory_order_acquire);
    bool r = src ? fn(src) : false;
    uint32_t expect = kRunning;
    if (s.state.compare_exchange_strong(expect, 0, std::memory_order_acq_rel)) return r;
    ProgressSource *prev = tls_current;
    tls_current = src;
    for (;;) {
        while (!s.state.compare_exchange_weak(expect, kRunning, std::memory_order_acq_rel)) {
        }
        uint32_t ev = s.events.exchange(0, std::memory_order_acq_rel);
        if (src) src->progress(ev);
        expect = kRunning;
        if (s.state.compare_exchange_strong(expect, 0, std::memory_order_acq_rel)) break;
    }
    tls_current = prev;
    return r;
}

// Before blocking: arm every memory-polled source. True when one of them already has work
// (or is busy on another thread, so it could not be armed): the thread must not block.
bool ProgressEngine::arm_polled() {
    bool ready = false;
    uint32_t np = npolled_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < np; ++i) {
        uint64_t v = polled_[i].load(std::memory_order_relaxed);
        Slot *s = slot(static_cast<uint32_t>(v));
        if (!s || s->gen.load(std::memory_order_acquire) != static_cast<uint32_t>(v >> 32))
            continue;
        uint32_t st = s->state.load(std::memory_order_acquire);
        if (st & kDead) continue;
        if (st & kRunning) {
            ready = true;  // an inline poller has it: cannot arm, so do not sleep
            continue;
        }
        bool armed = exclusive(*s, [](ProgressSource *src) { return !src->arm_wakeup(); });
        if (!armed) {
            ready = true;
            kick(*s, 0);  // work is there (or it raced with a poller): run it now
        }
    }
    return ready;
}

void ProgressEngine::disarm_polled() {
    uint32_t np = npolled_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < np; ++i) {
        uint64_t v = polled_[i].load(std::memory_order_relaxed);
        Slot *s = slot(static_cast<uint32_t>(v));
        if (!s || s->gen.load(std::memory_order_acquire) != static_cast<uint32_t>(v >> 32))
            continue;
        exclusive(*s, [](ProgressSource *src) {
            src->disarm_wakeup();
            return true;
        });
    }
}

bool ProgressEngine::inline_polls_since(uint64_t &seen) const {
    uint64_t now = inline_epoch_.load(std::memory_order_relaxed);
    if (now == seen) return false;
    seen = now;
    return true;
}

std::chrono::milliseconds ProgressEngine::set_park_recheck_for_testing(
    std::chrono::milliseconds every) {
    return std::chrono::milliseconds(
        g_park_recheck_ms.exchange(static_cast<int>(every.count()), std::memory_order_relaxed));
}

bool ProgressEngine::inline_poll_context() {
    return tls_inline_poll;
}

bool ProgressEngine::poll_inline() {
    if (!active()) return false;
    const bool outer = tls_inline_poll;
    tls_inline_poll = true;
    // Not a clock read: on this kind of VM clock_gettime was a third of an empty poll.
    // Pollers on several threads may lose each other's increments; any change will do.
    inline_epoch_.store(inline_epoch_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    bool did = false;
    uint64_t sole = sole_fd_source_.load(std::memory_order_acquire);
    if (sole != ~uint64_t{0}) {
        // One socket: let its progress() try to read (EAGAIN when nothing came).
        Slot *s = slot(static_cast<uint32_t>(sole));
        if (s && s->gen.load(std::memory_order_acquire) == static_cast<uint32_t>(sole >> 32)) {
            kick(*s, EPOLLIN);
            did = true;
        }
    } else if (fd_sources_.load(std::memory_order_relaxed) != 0) {
        epoll_event evs[32];
        int n = ::epoll_wait(ep_, evs, 32, 0);
        if (n > 0) {
            drain(n, evs);
            did = true;
        }
    }
    uint32_t np = npolled_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < np; ++i) {
        uint64_t v = polled_[i].load(std::memory_order_relaxed);
        Slot *s = slot(static_cast<uint32_t>(v));
        if (!s || s->gen.load(std::memory_order_acquire) != static_cast<uint32_t>(v >> 32))
            continue;
        kick(*s, 0);
        did = true;
    }
    if (any_wanted_.load(std::memory_order_acquire)) {
        run_wanted();
        did = true;
    }
    tls_inline_poll = outer;
    return did;
}

bool ProgressEngine::serve_from_thread() {
    const uint64_t work0 = work_seq_.load(std::memory_order_relaxed);
    bool fd_work = false;
    if (fd_sources_.load(std::memory_order_relaxed) != 0) {
        epoll_event evs[32];
        int n = ::epoll_wait(ep_, evs, 32, 0);
        if (n > 0) {
            drain(n, evs);
            fd_work = true;
        }
    }
    uint32_t np = npolled_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < np; ++i) {
        uint64_t v = polled_[i].load(std::memory_order_relaxed);
        Slot *s = slot(static_cast<uint32_t>(v));
        if (s && s->gen.load(std::memory_order_acquire) == static_cast<uint32_t>(v >> 32))
            kick(*s, 0);
    }
    run_wanted();
    return fd_work || work_seq_.load(std::memory_order_relaxed) != work0;
}

void ProgressEngine::spin_after_work(uint64_t seen_epoch) {
    const int64_t window = spin_after_work_ns();
    if (window == 0) return;
    int64_t until = mono_ns() + window;
    while (!stop_.load(std::memory_order_acquire)) {
        // Pollers are back: they serve the sources, and the loop parks the thread.
        if (inline_epoch_.load(std::memory_order_relaxed) != seen_epoch) return;
        bool worked = serve_from_thread();
        int64_t now = mono_ns();
        if (worked)
            until = now + window;
        else if (now >= until)
            return;
        cpu_relax();
    }
}

void ProgressEngine::thread_main() {
    epoll_event evs[64];
    uint64_t seen_epoch = inline_epoch_.load(std::memory_order_relaxed);
    while (!stop_.load(std::memory_order_acquire)) {
        if (inline_polls_since(seen_epoch)) {
            // Parked: the pollers serve the sources; wake-ups and thread-only descriptors
            // (which the pollers never look at) still reach us.
            pollfd p[2] = {{wake_fd_, POLLIN, 0}, {slow_ep_, POLLIN, 0}};
            if (::poll(p, 2, g_park_recheck_ms.load(std::memory_order_relaxed)) > 0) {
                if (p[0].revents) drain_eventfd(wake_fd_);
                if (p[1].revents) {
                    int k = ::epoll_wait(slow_ep_, evs, 64, 0);
                    if (k > 0) drain(k, evs);
                }
            }
            run_wanted();
            continue;
        }
        thread_waiting_.store(true, std::memory_order_seq_cst);
        if (any_wanted_.load(std::memory_order_seq_cst) || stop_.load(std::memory_order_seq_cst)) {
            thread_waiting_.store(false, std::memory_order_relaxed);
            run_wanted();
            continue;
        }
        // Memory-polled sources learn that nobody polls them any more: their producers
        // must signal from now on (and one that already has work keeps us awake).
        if (arm_polled()) {
            thread_waiting_.store(false, std::memory_order_relaxed);
            disarm_polled();
            run_wanted();
            // A source busy on a poller's thread could not be armed: the poller has moved
            // the epoch (next round parks); otherwise let the holder finish instead of
            // spinning against it on a machine with few CPUs.
            std::this_thread::yield();
            continue;
        }
        // Only polls made while we block count as "pollers active" when we wake: the
        // events that woke us are served first, without parking.
        seen_epoch = inline_epoch_.load(std::memory_order_relaxed);
        int n = ::epoll_wait(thread_ep_, evs, 3, -1);
        thread_waiting_.store(false, std::memory_order_relaxed);
        base::stat_add(base::Stat::ProgressWakeups);
        disarm_polled();
        bool sources_ready = false, slow_ready = false;
        for (int i = 0; i < n; ++i) {
            if (evs[i].data.u64 == 0)
                drain_eventfd(wake_fd_);
            else if (evs[i].data.u64 == 1)
                sources_ready = true;
            else
                slow_ready = true;
        }
        if (sources_ready) {
            int k = ::epoll_wait(ep_, evs, 64, 0);
            if (k > 0) drain(k, evs);
        }
        if (slow_ready) {
            int k = ::epoll_wait(slow_ep_, evs, 64, 0);
            if (k > 0) drain(k, evs);
        }
        run_wanted();
        // Woken by a source or a doorbell, with nobody polling inline: stay awake a little
        // for the next request instead of paying another wake-up for it.
        if (n > 0) spin_after_work(seen_epoch);
    }
}

}  // namespace softrnic::transport
