// One connected measurement between the client and the server process: softrnic QPs
// (rdma_test.hpp) or plain TCP sockets (raw_tcp.hpp). The client runs a phase and times
// it; the server runs the same phase as the responder. Both sides are told `n`, so no
// in-band stop message is needed.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/common.hpp"

namespace softrnic::bench {

enum class Phase : uint8_t {
    Lat,  // one operation in flight, each one timed
    Bw,   // a window of operations in flight, timed as a whole
};

struct PhaseResult {
    std::vector<double> lat_us;  // per operation: one-way (ping-pong) or round trip (read)
    double seconds = 0;          // whole phase, first post to last confirmation
    uint64_t ops = 0;
    uint64_t bytes = 0;
};

// Called while spinning; throws when the peer reported a failure on the control channel.
using AbortCheck = std::function<void()>;

class Session {
  public:
    virtual ~Session() = default;
    virtual PhaseResult run(Phase phase, uint64_t n) = 0;
    // Whether this session has the phase at all (raw ping-pong has no Bw, ...).
    virtual bool has(Phase phase) const = 0;
    // Server side: true when the phase needs the server to do nothing (RDMA read/write
    // target); the server then waits on the control channel, sleeping.
    virtual bool passive(Phase) const { return false; }
};

// Busy-wait bookkeeping: a spin loop calls spin() when nothing happened and progressed()
// when something did. After `stall` without progress it throws; every few thousand spins
// it runs the abort check (a failed peer ends the wait at once instead of at the stall).
// With `yield`, an empty spin also calls sched_yield(): a streaming loop then leaves the
// CPU to a runnable transport thread instead of waiting for the scheduler to preempt it
// (on 2 vCPUs that wait dominates), and costs one cheap system call when none is runnable.
class Spinner {
  public:
    Spinner(const char *what, const AbortCheck *abort, bool yield = false,
            std::chrono::seconds stall = std::chrono::seconds(15))
        : what_(what), abort_(abort), yield_(yield), stall_(stall) {}
    void progressed() {
        spins_ = 0;
        timing_ = false;
    }
    void spin() {
        if (yield_) sched_yield();
        if ((++spins_ & 0x3FFF) == 0) check();
    }

  private:
    void check() {
        if (abort_ && *abort_) (*abort_)();
        auto now = Clock::now();
        if (!timing_) {
            timing_ = true;
            since_ = now;
        } else if (now - since_ > stall_) {
            throw BenchError(std::string("no progress for ") + std::to_string(stall_.count()) +
                             " s while waiting for " + what_);
        }
    }
    const char *what_;
    const AbortCheck *abort_;
    bool yield_;
    std::chrono::seconds stall_;
    uint32_t spins_ = 0;
    bool timing_ = false;
    Clock::time_point since_{};
};

}  // namespace softrnic::bench
