// Cross-memory-attach copies of the shm transport (internal to src/transport/shm/).
//
// A large transfer (>= kCmaSplitMin) may be copied by two threads at once: the calling
// progress context and a process-wide helper thread each move half with their own
// process_vm_readv/writev. Whether that pays depends on the machine, and on when the
// helper starts. The kernel pins the remote process's pages of a call first (page by
// page, each under the lock of the page table that maps it: one lock per 2 MiB of
// address space), then copies. Two calls whose remote ranges share a page table and pin
// at the same moment fight over that lock; under a hypervisor a contended lock parks
// the waiting vCPU, and the two halves then move less than one call alone. On a 2-vCPU
// Xeon, 1 MiB cache-hot: one call 20-24 GB/s; two halves started together 12-14 GB/s
// (16-18 in softrnic's stream; 49-59 when the buffer happened to straddle a 2 MiB
// boundary at its middle, each half under its own lock); the helper started 4 us
// (~35-40 ns per page of the caller's half) after the caller, once the caller's pages
// are pinned: 42-46 GB/s. On a 2-vCPU AMD EPYC two halves at once already beat one call
// (16-20 GB/s against 12-13). So the copies themselves decide (CmaSplitChooser): every
// large copy is timed, and the fastest of "one call" and "split, the helper starting
// after a stagger of s ns per page" (a few values of s) is taken, its neighbours
// retried now and then.
//
// A split copy: the caller offers the second half to the helper, copies the first half,
// then either takes the second half back (the helper had not started it: asleep, or busy
// with another caller's half) or waits for the helper to finish it. So the call returns
// only when every byte has moved, exactly as a single call would. The helper is one thread
// per process, started by the first split; it polls (yielding) for 200 us after each half
// and then sleeps on a futex, so an idle process keeps no core busy. It keeps off the CPU
// of the caller it serves.
//
// SOFTRNIC_SHM_COPY_THREADS=1 never splits, =2 always splits, with no stagger and no
// measuring; unset, the chooser decides, and a process that may run on a single CPU never
// splits.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace softrnic::transport::shm {

enum class CmaDir : uint8_t {
    Read,  // process_vm_readv: from the peer's `remote` into our `local`
    Write  // process_vm_writev: from our `local` into the peer's `remote`
};

// Copies `total` bytes between our `local` iovecs and process `pid`'s `remote` iovecs (both
// lists cover exactly `total` bytes). True when every byte moved.
bool cma_copy(pid_t pid, CmaDir dir, std::span<const iovec> local, std::span<const iovec> remote,
              size_t total);

// Copies of at least this many bytes may be split between the caller and the helper.
inline constexpr size_t kCmaSplitMin = 256 << 10;

// Picks, per large copy, a way: one call (way 0) or a split whose helper starts its half
// kStaggerNsPerPage[way - 1] ns per page of the caller's half after the copy began (way >= 1;
// pages counted up to the kernel's pinning batch). It keeps a moving average of ns per MiB
// per way. The first kWarmup * kWays copies take the ways in turn. Then the cheapest way is
// taken, and the last copies of every kPeriod probe another way, in a rotation of four:
// - best way a split: one copy (the helper is polling anyway) of one call, of the next
//   smaller stagger, of the next larger one, or of any split way (the first without a
//   sample, else each in turn). The cost over staggers is a cliff (too early: lock
//   contention) then a slope (too late: idle helper), so probing the two neighbours keeps
//   the best stagger found as the machine drifts, and the fourth probe keeps a way judged
//   under other conditions from being written off for good;
// - best way one call: a burst of kProbe copies (so that the helper woken by the first
//   of them is still polling for the rest and their times are its real ones) of the best
//   split, of its smaller and larger neighbours, or of any split way, in the same turns.
// A split sample counts only when the helper copied its half (a half taken back measured
// one thread). The way taken moves its average by 1/8 per copy, a probed way (and any
// way during the warm-up) by 1/2.
//
// Safe to call from several threads at once: the averages are plain relaxed words, and a
// sample lost to a race only delays the average. Exposed for tests.
class CmaSplitChooser {
  public:
    static constexpr std::array<uint32_t, 9> kStaggerNsPerPage{0, 10, 20, 30, 40, 50, 65, 80, 100};
    static constexpr uint32_t kWays = 1 + kStaggerNsPerPage.size();
    static constexpr uint32_t kWhole = 0;
    static constexpr uint32_t kWarmup = 4;
    static constexpr uint64_t kPeriod = 64;
    static constexpr uint64_t kProbe = 4;

    // The way the next large copy takes.
    uint32_t next();
    // A finished copy of `bytes` that took `ns`, the way `way` (a split only if the helper
    // copied a half).
    void record(uint32_t way, size_t bytes, int64_t ns);
    // The moving average of a way in ns per MiB; 0 until it has a sample.
    uint64_t cost(uint32_t way) const {
        return way < kWays ? ways_[way].load(std::memory_order_relaxed) : 0;
    }
    // The split way with the lowest average (kWhole when none has a sample).
    uint32_t best_split() const;

  private:
    std::array<std::atomic<uint64_t>, kWays> ways_{};  // ns per MiB, 0: no sample
    std::atomic<uint32_t> best_{kWays};  // the way taken outside probes; kWays: warm-up
    std::atomic<uint64_t> copies_{0};
};

// cma_copy, the way `way` of CmaSplitChooser (a split only from kCmaSplitMin on, and only
// where the helper is enabled: not with SOFTRNIC_SHM_COPY_THREADS=1), timed for nobody;
// false for a way that does not exist. For tests.
bool cma_copy_way(pid_t pid, CmaDir dir, std::span<const iovec> local,
                  std::span<const iovec> remote, size_t total, uint32_t way);

// What the split did, for tests and diagnostics (process totals).
struct CmaCopyStats {
    uint64_t split;                // copies offered to the helper in two halves
    uint64_t helper_halves;        // halves the helper copied (the rest the caller took back)
    uint64_t whole;                // large copies the chooser sent as one call
    uint64_t whole_cost;           // the chooser's averages, ns per MiB (0: no sample yet)
    uint64_t split_cost;           // of its best split way
    uint32_t split_stagger;        // that way's stagger, ns per page
    int64_t last_helper_delay_ns;  // from the start of the split copy (the caller's
                                   // cma_copy) to the start of the helper's last call
};
CmaCopyStats cma_copy_stats();

// How this process copies large transfers: SOFTRNIC_SHM_COPY_THREADS and the CPU count,
// read once.
enum class CmaSplitMode : uint8_t { Never, Always, Measured };
CmaSplitMode cma_copy_split_mode();

// True when this process may use the helper (mode other than Never).
bool cma_copy_helper_enabled();

// Ends the helper's thread, if it runs, and returns once it has; the next large copy
// starts it again. For tests that count this process's threads.
void cma_copy_helper_stop();

// Cuts the byte range [off, off + len) out of the iovec list `in` into `out` (at most
// in.size() entries). Returns the number of entries written. Exposed for tests.
size_t cma_slice(std::span<const iovec> in, size_t off, size_t len, iovec *out);

}  // namespace softrnic::transport::shm
