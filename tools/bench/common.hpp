// Shared pieces of `softrnic bench`: options, operations, statistics, timing helpers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace softrnic::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

enum class Op : uint8_t { Send, Write, Read };

inline const char *op_name(Op op) {
    switch (op) {
        case Op::Send:
            return "send";
        case Op::Write:
            return "write";
        default:
            return "read";
    }
}

// Which side of a two-process run this process plays.
enum class Role : uint8_t {
    Both,    // no --server/--connect: spawn a server process, be its client
    Server,  // --server [ADDR]
    Client,  // --connect HOST
};

// How busy-wait loops wait (see Spinner in session.hpp): spin only, or spin and
// sched_yield() whenever a poll comes back empty.
struct WaitPolicy {
    bool lat_yield = false;  // ping-pongs and single reads (--lat-wait); spin: like raw TCP
    bool bw_yield = true;    // windowed streams (--bw-wait)
    // --lat-wait memory: spin, and the RDMA Write ping-pong waits for the peer's write by
    // polling the last byte of its buffer only, taking its own write's completion right
    // after the post (dtest -W, perftest): the CQ is not polled while the peer's write is
    // on its way, so the transport cannot progress it inside a CQ poll.
    bool lat_memory = false;
    // The SETUP word for the latency policy, and back.
    const char *lat_word() const { return lat_memory ? "memory" : lat_yield ? "yield" : "spin"; }
    static WaitPolicy from_words(const std::string &lat, const std::string &bw) {
        WaitPolicy w;
        w.lat_yield = lat == "yield";
        w.lat_memory = lat == "memory";
        w.bw_yield = bw == "yield";
        return w;
    }
};

struct Options {
    std::vector<size_t> sizes{8, 64, 4096, 65536, size_t{1} << 20};
    std::vector<Op> ops{Op::Send, Op::Write, Op::Read};
    uint64_t iters = 0;    // 0: sized by `seconds` after a calibration run
    double seconds = 0.2;  // time per measurement when iters == 0
    unsigned rounds = 0;   // 0: 3 for two-process runs, 1 for loopback
    unsigned window = 32;  // outstanding operations in bandwidth runs
    WaitPolicy wait;
    bool json = false;
    bool refs = true;  // raw TCP ping-pong / stream references (two-process runs)
    bool crc = false;  // ask for MPA CRC32c
    std::string transport = "auto";
    Role role = Role::Both;
    std::string host;   // server: address to bind ("" = any); client: server host
    uint16_t port = 0;  // control port (data ports derive from it)
    bool port_set = false;
    int ready_fd = -1;  // spawned server: write the control port here, stay quiet
    bool progress = true;
    // Connection set-up mode (dtestcm's pattern at the RNICPI level): this many connections
    // instead of the data tests, connected in bursts of `burst`; 0: off.
    uint32_t connections = 0;
    uint32_t burst = 100;
};

inline constexpr uint16_t kDefaultPort = 18515;  // perftest's default, for familiarity

// Raised for anything that stops a measurement; main() prints it and exits non-zero.
struct BenchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Percentile of a sample (nearest rank, p in [0,1]); reorders `v`.
inline double percentile(std::vector<double> &v, double p) {
    if (v.empty()) return 0;
    size_t k = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    k = std::min(k, v.size() - 1);
    std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v[k];
}

// The arithmetic mean (what tools that print total time / iterations report, dtest's
// latency line among them: its tail counts, where a percentile's does not).
inline double mean(const std::vector<double> &v) {
    if (v.empty()) return 0;
    double sum = 0;
    for (double x : v)
        sum += x;
    return sum / static_cast<double>(v.size());
}

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Median with spread, the form every aggregated figure is reported in.
struct Spread {
    double med = 0, min = 0, max = 0;
    size_t n = 0;
};

inline Spread spread(const std::vector<double> &v) {
    Spread s;
    if (v.empty()) return s;
    s.med = median(v);
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    s.n = v.size();
    return s;
}

// Default number of operations per measurement: the cap when sizing by time, or the
// count with --iters absent and no time budget.
inline uint64_t default_iters(size_t size) {
    if (size >= (size_t{1} << 20)) return 2000;
    if (size >= 65536) return 20000;
    return 200000;
}

inline std::string format_size(size_t n) {
    if (n >= (size_t{1} << 20) && n % (size_t{1} << 20) == 0)
        return std::to_string(n >> 20) + " MiB";
    if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
    return std::to_string(n) + " B";
}

}  // namespace softrnic::bench
