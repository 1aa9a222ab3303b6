// Logging, in the manner of libfabric's FI_LOG_LEVEL and UCX_LOG_LEVEL: one line per event,
// filtered by level (SOFTRNIC_LOG=error|warn|info|debug|trace, default warn) and by
// subsystem (SOFTRNIC_LOG_SUBSYS=cm,shm,...; default all), written to stderr or to
// SOFTRNIC_LOG_FILE. A line reads
//   2025-01-31T12:00:00.123456Z softrnic[pid:tid] WARN cm: <message>
//
// A log point costs one predictable branch on a cached byte when its level is off: no
// formatting, no getenv, no lock. The environment is read once, by the first log point
// that finds its subsystem's threshold still unread. Each line is formatted into a stack
// buffer and written with one write(2), so lines of concurrent threads (and, with
// SOFTRNIC_LOG_FILE, of processes appending to one file) never interleave.
//
// The state and the writer are C symbols exported by libsoftrnic.so (libsoftrnic.map's
// softrnic_*), so that the face libraries log through the same threshold, sink and
// once-only warnings as the core.
//
//   SOFTRNIC_LOG(Warn, Cm, "connection %llu failed: %s", id, why);
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softrnic::base {

enum class LogLevel : uint8_t { Error = 1, Warn, Info, Debug, Trace };

// SOFTRNIC_LOG_SUBSYS names them in lower case (log_subsys_name).
enum class LogSubsys : uint8_t {
    Base,       // the logger and the configuration
    Engine,     // RDMA semantics: objects, queues, completions, async events
    Rnicpi,     // the verbs provider and host services
    Transport,  // the transport seam, progress engine, loopback
    Tcp,        // the TCP/iWARP channel
    Shm,        // the shared-memory channel
    Cm,         // the connection manager
    Dat,        // the uDAPL provider
};
inline constexpr size_t kLogSubsysCount = static_cast<size_t>(LogSubsys::Dat) + 1;

// A threshold not read from the environment yet: above every level, so the first log
// point of each subsystem takes the slow path, which reads it.
inline constexpr uint8_t kLogUnread = 0xFF;

const char *log_level_name(LogLevel l);
const char *log_subsys_name(LogSubsys s);

// Tests: reads SOFTRNIC_LOG, SOFTRNIC_LOG_SUBSYS and SOFTRNIC_LOG_FILE again (and warns
// again about invalid values). Not for concurrent use with log points.
void log_reload();
// Tests: sends lines to `fd` instead (negative: back to stderr or SOFTRNIC_LOG_FILE);
// returns the redirection in force before (-1: none).
int log_redirect(int fd);

}  // namespace softrnic::base

extern "C" {
// The most verbose level each subsystem logs (0: none), indexed by LogSubsys; kLogUnread
// until the environment has been read.
[[gnu::visibility("default")]] extern std::atomic<uint8_t>
    softrnic_log_threshold[softrnic::base::kLogSubsysCount];
// Formats and writes one line when `level` is on for `subsys` (reading the environment
// first if nobody has yet). Never throws.
[[gnu::visibility("default"), gnu::format(printf, 3, 4), gnu::cold]] void softrnic_log_write(
    uint8_t level, uint8_t subsys, const char *fmt, ...) noexcept;
}

namespace softrnic::base {

// Whether a log point of `level` in `subsys` writes (or has yet to read the environment).
[[gnu::always_inline]] inline bool log_on(LogLevel level, LogSubsys subsys) noexcept {
    return static_cast<uint8_t>(level) <=
           softrnic_log_threshold[static_cast<size_t>(subsys)].load(std::memory_order_relaxed);
}

}  // namespace softrnic::base

// The arguments are evaluated only when the level is on.
#define SOFTRNIC_LOG(level, subsys, ...)                                                    \
    do {                                                                                    \
        if (::softrnic::base::log_on(::softrnic::base::LogLevel::level,                     \
                                     ::softrnic::base::LogSubsys::subsys)) [[unlikely]]     \
            ::softrnic_log_write(static_cast<uint8_t>(::softrnic::base::LogLevel::level),   \
                                 static_cast<uint8_t>(::softrnic::base::LogSubsys::subsys), \
                                 __VA_ARGS__);                                              \
    } while (0)
