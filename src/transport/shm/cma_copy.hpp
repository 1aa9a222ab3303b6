// Cross-memory-attach copies of the shm transport (internal to src/transport/shm/).
//
// A large transfer (>= kCmaSplitMin) may be copied by two threads at once: the calling
// progress context and a process-wide helper thread each move half with their own
// process_vm_readv/writev. Whether that pays depends on the machine. On a 2-vCPU AMD EPYC
// (1 MiB L2 per core) one core's copy of 1 MiB runs at 12-13 GB/s and two halves at once
// at 16-20 GB/s. On a 2-vCPU Xeon (2 MiB L2 per vCPU) one core copies cache-hot 1 MiB
// buffers at 22 GB/s and two threads at 12 GB/s in a raw loop, and softrnic's 1 MiB write
// stream with every copy split ran at 16-49 GB/s from run to run, mostly 17-18, against a
// steady 20-22 GB/s with one thread. So the copies themselves decide (CmaSplitChooser):
// every large copy is timed, the faster way is taken, and the other is retried in a short
// burst now and then.
//
// A split copy: the caller offers the second half to the helper, copies the first half,
// then either takes the second half back (the helper had not started it: asleep, or busy
// with another caller's half) or waits for the helper to finish it. So the call returns
// only when every byte has moved, exactly as a single call would. The helper is one thread
// per process, started by the first split; it polls (yielding) for 200 us after each half
// and then sleeps on a futex, so an idle process keeps no core busy. It keeps off the CPU
// of the caller it serves.
//
// SOFTRNIC_SHM_COPY_THREADS=1 never splits, =2 always splits (no measuring); unset, the
// chooser decides, and a process that may run on a single CPU never splits.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

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

// Picks, per large copy, one call or a split, from what earlier copies cost (ns per MiB,
// a moving average per way). Until each way has kWarmup samples the two alternate. Then
// the cheaper way is taken, except for the last kProbe copies of every kPeriod, which
// take the other way: a burst, so that the helper woken by the first of them is still
// polling for the rest and their times are the helper's real ones. A split sample counts
// only when the helper copied its half (a half taken back measured one thread).
//
// Safe to call from several threads at once: the averages are plain relaxed words, and a
// sample lost to a race only delays the average. Exposed for tests.
class CmaSplitChooser {
  public:
    static constexpr uint32_t kWarmup = 4;
    static constexpr uint64_t kPeriod = 64;
    static constexpr uint64_t kProbe = 4;

    // Whether the next large copy should be split.
    bool split_next();
    // A finished copy of `bytes` that took `ns`, split (the helper copied a half) or not.
    void record(bool split, size_t bytes, int64_t ns);
    // The moving average of a way in ns per MiB; 0 until it has a sample.
    uint64_t cost(bool split) const {
        return way(split).ns_per_mib.load(std::memory_order_relaxed);
    }

  private:
    struct Way {
        std::atomic<uint64_t> ns_per_mib{0};
        std::atomic<uint32_t> samples{0};
    };
    const Way &way(bool split) const { return split ? split_ : whole_; }
    Way &way(bool split) { return split ? split_ : whole_; }
    Way whole_, split_;
    std::atomic<uint64_t> copies_{0};
};

// What the split did, for tests and diagnostics (process totals).
struct CmaCopyStats {
    uint64_t split;          // copies offered to the helper in two halves
    uint64_t helper_halves;  // halves the helper copied (the rest the caller took back)
    uint64_t whole;          // large copies the chooser sent as one call
    uint64_t whole_cost;     // the chooser's averages, ns per MiB (0: no sample yet)
    uint64_t split_cost;
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
