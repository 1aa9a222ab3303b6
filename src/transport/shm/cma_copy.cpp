// Large CMA copies, in one call or split with a helper thread: see cma_copy.hpp.
#include "transport/shm/cma_copy.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "base/config.hpp"
#include "base/sync.hpp"

namespace softrnic::transport::shm {
namespace {

// Longest iovec list a half may have: the transport's lists (kMaxIov + the last-byte
// entry) fit; longer ones are copied in one call.
constexpr size_t kMaxSliceIov = 16;
// The helper keeps polling this long after its last half before it sleeps: back-to-back
// large operations (a window of RDMA writes) then never pay its 30-45 us wake-up.
constexpr int64_t kCopyHelperSpinNs = 200'000;
// process_vm_readv/writev pin at most this many remote pages before they copy (a batch:
// PVM_MAX_KMALLOC_PAGES / sizeof(struct page *)), so the caller's first pinning phase,
// the one the helper's stagger waits out, covers no more.
constexpr uint64_t kKernelPinBatchPages = 1024;

using base::cpu_relax;
using base::mono_ns;

bool one_call(pid_t pid, CmaDir dir, const iovec *local, size_t nlocal, const iovec *remote,
              size_t nremote, size_t total) {
    ssize_t got = dir == CmaDir::Read ? ::process_vm_readv(pid, local, nlocal, remote, nremote, 0)
                                      : ::process_vm_writev(pid, local, nlocal, remote, nremote, 0);
    return got == static_cast<ssize_t>(total);
}

// The half a caller offers. Lives on the caller's stack: the helper must not touch it
// after storing kDone.
struct Job {
    enum : uint32_t { kOffered, kDone };
    pid_t pid = 0;
    int caller_cpu = -1;
    CmaDir dir = CmaDir::Read;
    std::array<iovec, kMaxSliceIov> local{}, remote{};
    size_t nlocal = 0, nremote = 0, len = 0;
    bool ok = false;         // written by the helper before kDone (release)
    int64_t copy_start = 0;  // mono_ns: when the caller's cma_copy began
    int64_t not_before = 0;  // mono_ns: the helper starts its call no earlier
    std::atomic<uint32_t> state{kOffered};
};

std::atomic<uint64_t> g_split{0};
std::atomic<uint64_t> g_helper_halves{0};
std::atomic<uint64_t> g_whole{0};
std::atomic<int64_t> g_last_helper_delay{0};
CmaSplitChooser g_chooser;

// The CPUs this process may use: the main thread's affinity (its tid is the pid), not the
// calling thread's, which may be a pinned progress or application thread.
bool process_cpus(cpu_set_t &set) {
    CPU_ZERO(&set);
    return ::sched_getaffinity(::getpid(), sizeof set, &set) == 0;
}

class Helper {
  public:
    // The process's helper, its thread started on first use; nullptr when disabled or
    // the thread could not start. A forked child gets its own (the parent's thread does
    // not exist there).
    static Helper *get() {
        Helper *h = instance_.load(std::memory_order_acquire);
        if (!h) [[unlikely]] {
            if (!cma_copy_helper_enabled()) return nullptr;
            h = create();
            if (!h) return nullptr;
        }
        return h->ensure_running() ? h : nullptr;
    }

    // Ends the helper's thread and returns once it has exited (joined); the next large
    // copy starts a new one. Serialised with starting by life_mu_.
    static void stop() {
        Helper *h = instance_.load(std::memory_order_acquire);
        if (!h) return;
        std::lock_guard lk(h->life_mu_);
        if (!h->running_.load(std::memory_order_relaxed)) return;
        h->stop_.store(true, std::memory_order_seq_cst);
        h->wake();
        ::pthread_join(h->tid_, nullptr);
        // A half offered meanwhile and not taken is taken back by its caller.
        h->running_.store(false, std::memory_order_release);
        h->stop_.store(false, std::memory_order_relaxed);
    }

    // Offers `j` to the helper. False when another caller's half is waiting there.
    bool offer(Job &j) {
        Job *none = nullptr;
        // seq_cst: a Dekker pair with the helper's "sleeping = 1, then read the slot".
        if (!slot_.compare_exchange_strong(none, &j, std::memory_order_seq_cst)) return false;
        wake();
        return true;
    }

    // Takes `j` back if the helper has not taken it. False when the helper copies it; the
    // caller then waits for j.state == kDone.
    bool take_back(Job &j) {
        Job *mine = &j;
        return slot_.compare_exchange_strong(mine, nullptr, std::memory_order_acq_rel);
    }

  private:
    static Helper *create() {
        // Registered once, before any helper is published: a child forked after that has
        // no helper thread, so it drops the object and its next large copy makes a new one
        // (the parent's object stays allocated; the child's copy of it is unused).
        static const bool registered = ::pthread_atfork(nullptr, nullptr, [] {
                                           instance_.store(nullptr, std::memory_order_relaxed);
                                       }) == 0;
        if (!registered) return nullptr;
        auto *h = new (std::nothrow) Helper;
        if (!h) return nullptr;
        Helper *none = nullptr;
        if (!instance_.compare_exchange_strong(none, h, std::memory_order_acq_rel)) {
            delete h;  // another caller's won
            return none;
        }
        return h;  // never freed: callers hold it without a reference count
    }

    bool ensure_running() {
        if (running_.load(std::memory_order_acquire)) [[likely]]
            return true;
        std::lock_guard lk(life_mu_);
        if (running_.load(std::memory_order_relaxed)) return true;
        pthread_attr_t attr;
        ::pthread_attr_init(&attr);
        // The process's CPUs, not the first caller's (a pinned thread's mask would leave
        // the helper no other CPU to copy on).
        cpu_set_t cpus;
        if (process_cpus(cpus)) ::pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus);
        // No signals for the helper: it must not take a process-directed signal meant for
        // the application's threads.
        sigset_t all, old;
        ::sigfillset(&all);
        ::pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = ::pthread_create(&tid_, &attr, &Helper::main, this);
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
        ::pthread_attr_destroy(&attr);
        if (rc != 0) return false;  // this copy goes in one call; a later one tries again
        running_.store(true, std::memory_order_release);
        return true;
    }

    void wake() {
        if (sleeping_.load(std::memory_order_seq_cst) != 0) {
            sleeping_.store(0, std::memory_order_relaxed);
            ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&sleeping_), FUTEX_WAKE_PRIVATE, 1,
                      nullptr, nullptr, 0);
        }
    }

    static void *main(void *arg) {
        ::pthread_setname_np(::pthread_self(), "softrnic-copy");
        static_cast<Helper *>(arg)->run();
        return nullptr;
    }

    // Keeps this thread off the CPU of the caller whose half it copies: with as many
    // runnable threads as CPUs the scheduler would otherwise often leave both halves on
    // one CPU, one after the other. Re-pinned only when the caller moved.
    void keep_off(int cpu, int &kept_off) {
        if (cpu < 0 || cpu == kept_off) return;
        cpu_set_t set = allowed_;
        CPU_CLR(cpu, &set);
        if (CPU_COUNT(&set) == 0) return;
        if (::sched_setaffinity(0, sizeof set, &set) == 0) kept_off = cpu;
    }

    void run() {
        if (!process_cpus(allowed_)) CPU_ZERO(&allowed_);
        int kept_off = -1;
        int64_t idle_since = mono_ns();
        uint32_t spins = 0;
        while (!stop_.load(std::memory_order_acquire)) {
            Job *j = slot_.load(std::memory_order_acquire);
            if (j && slot_.compare_exchange_strong(j, nullptr, std::memory_order_acq_rel)) {
                keep_off(j->caller_cpu, kept_off);
                // The stagger (a few us; at most 100 ns x 1,024 pages): the caller's pages
                // get pinned meanwhile. A spin, not a yield: a yield on a CPU shared with a
                // busy thread could cost a time slice, and the chooser times the whole
                // copy, so a stagger that costs more than it saves is not taken.
                int64_t now = mono_ns();
                while (now < j->not_before) {
                    cpu_relax();
                    now = mono_ns();
                }
                g_last_helper_delay.store(now - j->copy_start, std::memory_order_relaxed);
                j->ok = one_call(j->pid, j->dir, j->local.data(), j->nlocal, j->remote.data(),
                                 j->nremote, j->len);
                g_helper_halves.fetch_add(1, std::memory_order_relaxed);
                j->state.store(Job::kDone, std::memory_order_release);
                idle_since = mono_ns();
                spins = 0;
                continue;
            }
            // Idle polling yields often: on a machine with as many busy threads as CPUs
            // (2 vCPUs: the application, its progress thread and this one), a thread
            // sharing this CPU must not wait for a time slice to end.
            if ((++spins & 15) != 0) {
                cpu_relax();
                continue;
            }
            if (mono_ns() - idle_since < kCopyHelperSpinNs) {
                ::sched_yield();
                continue;
            }
            sleeping_.store(1, std::memory_order_seq_cst);
            if (slot_.load(std::memory_order_seq_cst) == nullptr &&
                !stop_.load(std::memory_order_seq_cst))
                ::syscall(SYS_futex, reinterpret_cast<uint32_t *>(&sleeping_), FUTEX_WAIT_PRIVATE,
                          1, nullptr, nullptr, 0);
            sleeping_.store(0, std::memory_order_relaxed);
            idle_since = mono_ns();
        }
    }

    cpu_set_t allowed_{};  // the process's CPUs, read by the helper thread at its start
    std::mutex life_mu_;   // starting and stopping the thread
    pthread_t tid_{};      // under life_mu_
    std::atomic<bool> running_{false};  // written under life_mu_
    std::atomic<bool> stop_{false};
    alignas(64) std::atomic<Job *> slot_{nullptr};
    alignas(64) std::atomic<uint32_t> sleeping_{0};

    static inline std::atomic<Helper *> instance_{nullptr};
};

// The helper runs this library's code, so it must be gone before the library is unmapped:
// the DAT registry dlcloses its provider (and with it this library) after the last IA
// closed. Today libsoftrnic stays mapped anyway (a GNU_UNIQUE symbol of the standard
// library marks it not unloadable), which a toolchain need not keep doing. Also runs at
// exit, where it only ends a helper that would otherwise be killed with the process.
[[gnu::destructor]] void stop_helper_at_unload() {
    Helper::stop();
}

CmaSplitMode split_mode_from_env_and_cpus() {
    if (const char *v = base::env_value(base::EnvVar::ShmCopyThreads)) {
        if (std::strcmp(v, "1") == 0) return CmaSplitMode::Never;
        if (std::strcmp(v, "2") == 0) return CmaSplitMode::Always;
    }
    cpu_set_t set;
    return process_cpus(set) && CPU_COUNT(&set) >= 2 ? CmaSplitMode::Measured : CmaSplitMode::Never;
}

}  // namespace

uint32_t CmaSplitChooser::best_split() const {
    uint32_t best = kWhole;
    uint64_t best_cost = 0;
    for (uint32_t w = 1; w < kWays; ++w) {
        const uint64_t c = cost(w);
        if (c != 0 && (best == kWhole || c < best_cost)) best = w, best_cost = c;
    }
    return best;
}

uint32_t CmaSplitChooser::next() {
    const uint64_t n = copies_.fetch_add(1, std::memory_order_relaxed);
    // Warming up: every way in turn. A split the helper does not get to copy (asleep, or
    // no CPU for it) records nothing; its way is sampled later, by the probes.
    if (n < kWays * kWarmup) return static_cast<uint32_t>(n % kWays);
    const uint32_t split = best_split();
    const uint64_t whole_cost = cost(kWhole), split_cost = cost(split);
    const bool split_best = split != kWhole && (whole_cost == 0 || split_cost < whole_cost);
    best_.store(split_best ? split : kWhole, std::memory_order_relaxed);
    const uint64_t pos = n % kPeriod;
    const uint64_t period = n / kPeriod;
    const uint64_t turn = period % 4;
    // The split way a probe of this turn looks at: 0 `w` itself, 1 the next smaller
    // stagger, 2 the next larger one, 3 any: the first way without a sample, else each in
    // turn (so a way judged under other conditions, or never sampled because the helper
    // did not copy in the warm-up, is tried again: the neighbours alone could leave the
    // chooser on one call or on a contended stagger for good).
    auto probe = [turn, period, this](uint32_t w) -> uint32_t {
        if (turn == 3) {
            for (uint32_t v = 1; v < kWays; ++v)
                if (cost(v) == 0) return v;
            return 1 + static_cast<uint32_t>((period / 4) % (kWays - 1));
        }
        if (w == kWhole) return 1;  // no split sampled yet: the first
        if (turn == 1) return w > 1 ? w - 1 : w + 1;
        if (turn == 2) return w + 1 < kWays ? w + 1 : w - 1;
        return w;
    };
    if (split_best) {
        if (pos != kPeriod - 1) return split;
        return turn == 0 ? kWhole : probe(split);
    }
    if (pos < kPeriod - kProbe) return kWhole;
    return probe(split);
}

void CmaSplitChooser::record(uint32_t way, size_t bytes, int64_t ns) {
    if (ns <= 0 || bytes == 0 || way >= kWays) return;
    uint64_t sample = (static_cast<uint64_t>(ns) << 20) / bytes;
    std::atomic<uint64_t> &avg = ways_[way];
    const uint64_t old = avg.load(std::memory_order_relaxed);
    uint64_t next = sample;
    if (old != 0) {
        // A copy that was preempted or faulted pages in must not outweigh many normal
        // ones: a sample counts at most 4x the average (which still lets a machine that
        // really became slower pull the average up). The way taken moves by 1/8 per
        // copy; a probed one by 1/2, so that the few probes it gets replace an average
        // left from other conditions (a ping-pong phase before a stream, say). In the
        // warm-up no way is taken yet (best_ is kWays): all move by 1/2, so a first
        // sample taken cold weighs no more in one way than in another.
        sample = std::min(sample, 4 * old);
        next = way == best_.load(std::memory_order_relaxed) ? old - old / 8 + sample / 8
                                                            : old / 2 + sample / 2;
    }
    avg.store(std::max<uint64_t>(next, 1), std::memory_order_relaxed);
}

CmaSplitMode cma_copy_split_mode() {
    static const CmaSplitMode mode = split_mode_from_env_and_cpus();
    return mode;
}

bool cma_copy_helper_enabled() {
    return cma_copy_split_mode() != CmaSplitMode::Never;
}

size_t cma_slice(std::span<const iovec> in, size_t off, size_t len, iovec *out) {
    size_t n = 0, base = 0;
    const size_t end = off + len;
    for (const iovec &v : in) {
        size_t s = base, e = base + v.iov_len;
        size_t lo = std::max(s, off), hi = std::min(e, end);
        if (lo < hi) out[n++] = {static_cast<char *>(v.iov_base) + (lo - s), hi - lo};
        base = e;
        if (base >= end) break;
    }
    return n;
}

namespace {

// A large copy the way `way` (CmaSplitChooser); `measured`: its time goes to the chooser.
bool copy_way(pid_t pid, CmaDir dir, std::span<const iovec> local, std::span<const iovec> remote,
              size_t total, uint32_t way, bool measured) {
    const int64_t start = mono_ns();
    Helper *h = way != CmaSplitChooser::kWhole ? Helper::get() : nullptr;
    // Halves on a page boundary of the byte stream.
    const size_t first = (total / 2) & ~size_t{4095};
    Job j;
    if (h) {
        const uint64_t pages = std::min<uint64_t>(first / 4096 + 1, kKernelPinBatchPages);
        j.copy_start = start;
        j.not_before =
            start + static_cast<int64_t>(CmaSplitChooser::kStaggerNsPerPage[way - 1] * pages);
        j.pid = pid;
        j.caller_cpu = ::sched_getcpu();
        j.dir = dir;
        j.len = total - first;
        j.nlocal = cma_slice(local, first, j.len, j.local.data());
        j.nremote = cma_slice(remote, first, j.len, j.remote.data());
        if (!h->offer(j)) h = nullptr;  // another caller's half is waiting there
    }
    if (!h) {
        g_whole.fetch_add(1, std::memory_order_relaxed);
        const bool ok =
            one_call(pid, dir, local.data(), local.size(), remote.data(), remote.size(), total);
        if (measured && ok) g_chooser.record(CmaSplitChooser::kWhole, total, mono_ns() - start);
        return ok;
    }
    g_split.fetch_add(1, std::memory_order_relaxed);

    std::array<iovec, kMaxSliceIov> l1, r1;
    size_t nl1 = cma_slice(local, 0, first, l1.data());
    size_t nr1 = cma_slice(remote, 0, first, r1.data());
    bool ok = one_call(pid, dir, l1.data(), nl1, r1.data(), nr1, first);

    // Taken back: this thread copied both halves, which says nothing about the split.
    if (h->take_back(j))
        return one_call(pid, dir, j.local.data(), j.nlocal, j.remote.data(), j.nremote, j.len) &&
               ok;
    // The helper is copying it: a syscall of about the length of ours. Spin briefly, then
    // yield, in case the helper shares this CPU with us.
    for (uint32_t spins = 0; j.state.load(std::memory_order_acquire) != Job::kDone; ++spins) {
        if (spins < 256)
            cpu_relax();
        else
            ::sched_yield();
    }
    ok = ok && j.ok;
    if (measured && ok) g_chooser.record(way, total, mono_ns() - start);
    return ok;
}

bool splittable(std::span<const iovec> local, std::span<const iovec> remote, size_t total) {
    return total >= kCmaSplitMin && local.size() <= kMaxSliceIov && remote.size() <= kMaxSliceIov;
}

}  // namespace

bool cma_copy(pid_t pid, CmaDir dir, std::span<const iovec> local, std::span<const iovec> remote,
              size_t total) {
    const CmaSplitMode mode = cma_copy_split_mode();
    if (mode == CmaSplitMode::Never || !splittable(local, remote, total))
        return one_call(pid, dir, local.data(), local.size(), remote.data(), remote.size(), total);
    if (mode == CmaSplitMode::Always) return copy_way(pid, dir, local, remote, total, 1, false);
    return copy_way(pid, dir, local, remote, total, g_chooser.next(), true);
}

bool cma_copy_way(pid_t pid, CmaDir dir, std::span<const iovec> local,
                  std::span<const iovec> remote, size_t total, uint32_t way) {
    if (way >= CmaSplitChooser::kWays) return false;
    if (way == CmaSplitChooser::kWhole || !splittable(local, remote, total))
        return one_call(pid, dir, local.data(), local.size(), remote.data(), remote.size(), total);
    return copy_way(pid, dir, local, remote, total, way, false);
}

void cma_copy_helper_stop() {
    Helper::stop();
}

CmaCopyStats cma_copy_stats() {
    return {g_split.load(std::memory_order_relaxed),
            g_helper_halves.load(std::memory_order_relaxed),
            g_whole.load(std::memory_order_relaxed),
            g_chooser.cost(CmaSplitChooser::kWhole),
            g_chooser.cost(g_chooser.best_split()),
            g_chooser.best_split() == CmaSplitChooser::kWhole
                ? 0
                : CmaSplitChooser::kStaggerNsPerPage[g_chooser.best_split() - 1],
            g_last_helper_delay.load(std::memory_order_relaxed)};
}

}  // namespace softrnic::transport::shm
