// Cross-memory-attach copies of the shm transport (internal to src/transport/shm/).
//
// A large transfer (>= kCmaSplitMin) is copied by two threads at once: the calling
// progress context and a process-wide helper thread each move half with their own
// process_vm_readv/writev. One core's copy runs at 12-13 GB/s here while two reach
// 16-20 GB/s, so a 1 MiB RDMA write or read no longer ends where one core's copy does.
//
// The caller offers the second half to the helper, copies the first half, then either
// takes the second half back (the helper had not started it: asleep, or busy with another
// caller's half) or waits for the helper to finish it. So the call returns only when
// every byte has moved, exactly as a single call would, and it is never slower than two
// back-to-back calls. The helper is one thread per process, started by the first large
// copy; it polls (yielding) for 200 us after each half and then sleeps on a futex, so an
// idle process keeps no core busy. It keeps off the CPU of the caller it serves.
//
// SOFTRNIC_SHM_COPY_THREADS=1 turns the helper off (one call per copy, as before); it is
// off by itself where the process may run on a single CPU.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

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

// Copies of at least this many bytes are split between the caller and the helper.
inline constexpr size_t kCmaSplitMin = 256 << 10;

// What the split did, for tests and diagnostics (process totals).
struct CmaCopyStats {
    uint64_t split;          // copies offered to the helper in two halves
    uint64_t helper_halves;  // halves the helper copied (the rest the caller took back)
};
CmaCopyStats cma_copy_stats();

// True when this process uses the helper (SOFTRNIC_SHM_COPY_THREADS and the CPU count,
// read once).
bool cma_copy_helper_enabled();

// Ends the helper's thread, if it runs, and returns once it has; the next large copy
// starts it again. For tests that count this process's threads.
void cma_copy_helper_stop();

// Cuts the byte range [off, off + len) out of the iovec list `in` into `out` (at most
// in.size() entries). Returns the number of entries written. Exposed for tests.
size_t cma_slice(std::span<const iovec> in, size_t off, size_t len, iovec *out);

}  // namespace softrnic::transport::shm
