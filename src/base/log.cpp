#include "base/log.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string_view>

#include "base/config.hpp"

// Constant-initialised (no constructor runs): a log point in any static constructor finds
// kLogUnread and reads the environment.
std::atomic<uint8_t> softrnic_log_threshold[softrnic::base::kLogSubsysCount] = {
    softrnic::base::kLogUnread, softrnic::base::kLogUnread, softrnic::base::kLogUnread,
    softrnic::base::kLogUnread, softrnic::base::kLogUnread, softrnic::base::kLogUnread,
    softrnic::base::kLogUnread, softrnic::base::kLogUnread};
static_assert(softrnic::base::kLogSubsysCount == 8, "one initialiser per subsystem");

namespace softrnic::base {

namespace {

constexpr LogLevel kDefaultLevel = LogLevel::Warn;

// Where lines go: stderr, or the SOFTRNIC_LOG_FILE descriptor; a test's redirection wins.
std::atomic<int> g_sink{STDERR_FILENO};
std::atomic<int> g_redirect{-1};
int g_file = -1;  // the SOFTRNIC_LOG_FILE descriptor we opened (configure() only)

constexpr const char *kLevelNames[] = {"error", "warn", "info", "debug", "trace"};
constexpr const char *kLevelTags[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
constexpr const char *kSubsysNames[kLogSubsysCount] = {"base", "engine", "rnicpi", "transport",
                                                       "tcp",  "shm",    "cm",     "dat"};

bool same_word(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if ((a[i] | 0x20) != (b[i] | 0x20)) return false;  // ASCII, case-insensitive
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// One line: the prefix, the message (cut to the buffer, marked "..."), a newline, one
// write(2).
void emit(uint8_t level, uint8_t subsys, const char *fmt, va_list ap) noexcept {
    char line[1024];
    constexpr size_t kRoom = sizeof line - 1;  // the newline always fits
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    using namespace std::chrono;
    const sys_seconds secs{seconds{ts.tv_sec}};
    const sys_days day = floor<days>(secs);
    const year_month_day ymd{day};
    const hh_mm_ss<seconds> hms{secs - day};
    const char *tag = level >= 1 && level <= 5 ? kLevelTags[level - 1] : "?";
    const char *sub = subsys < kLogSubsysCount ? kSubsysNames[subsys] : "?";
    const int n = std::snprintf(
        line, kRoom,
        "%04d-%02u-%02uT%02ld:%02ld:%02lld.%06ldZ softrnic[%ld:%ld] %s %s: ", int(ymd.year()),
        unsigned(ymd.month()), unsigned(ymd.day()), long(hms.hours().count()),
        long(hms.minutes().count()), static_cast<long long>(hms.seconds().count()),
        long(ts.tv_nsec / 1000), long(::getpid()), long(::syscall(SYS_gettid)), tag, sub);
    if (n < 0) return;
    size_t len = std::min(size_t(n), kRoom);
    if (len < kRoom) {
        int m = std::vsnprintf(line + len, kRoom - len + 1, fmt, ap);
        if (m > 0) {
            if (len + size_t(m) > kRoom) {
                std::memcpy(line + kRoom - 3, "...", 3);
                len = kRoom;
            } else {
                len += size_t(m);
            }
        }
    }
    line[len++] = '\n';
    int fd = g_redirect.load(std::memory_order_acquire);
    if (fd < 0) fd = g_sink.load(std::memory_order_acquire);
    // One line at a time from this process: a sink opened without O_APPEND (a shell's
    // `2> file`) shares one file position, which concurrent writes may both use.
    static std::mutex write_mu;
    std::lock_guard lk(write_mu);
    for (size_t off = 0; off < len;) {
        ssize_t w = ::write(fd, line + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;  // nowhere to report a failing log sink
        off += size_t(w);
    }
}

// The logger's own complaints (bad values): printed whatever the subsystem filter says.
[[gnu::format(printf, 1, 2)]] void warn_config(const char *fmt, ...) noexcept {
    va_list ap;
    va_start(ap, fmt);
    emit(static_cast<uint8_t>(LogLevel::Warn), static_cast<uint8_t>(LogSubsys::Base), fmt, ap);
    va_end(ap);
}

// Appends `text` to the bounded `buf` (cut when full; fixed buffers: no allocation, so
// nothing here can throw).
template <size_t N>
void append(char (&buf)[N], size_t &len, std::string_view text) {
    const size_t n = std::min(text.size(), N - 1 - len);
    std::memcpy(buf + len, text.data(), n);
    len += n;
    buf[len] = '\0';
}

// SOFTRNIC_LOG_FILE, with every "%p" replaced by the process id (one file per process
// of a multi-process job). -1 when it cannot be opened.
int open_log_file(const char *pattern) {
    char path[PATH_MAX] = {};
    size_t len = 0;
    char pid[24];
    std::snprintf(pid, sizeof pid, "%ld", long(::getpid()));
    for (const char *p = pattern; *p; ++p) {
        if (p[0] == '%' && p[1] == 'p') {
            append(path, len, pid);
            ++p;
        } else {
            append(path, len, std::string_view(p, 1));
        }
    }
    if (len == sizeof path - 1) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// Reads the three variables and publishes the thresholds; then warns about what it could
// not use, once per reading.
void configure() noexcept {
    LogLevel level = kDefaultLevel;
    const char *bad_level = nullptr;
    if (const char *v = env_value(EnvVar::Log); v && *v) {
        bad_level = v;
        for (size_t i = 0; i < std::size(kLevelNames); ++i)
            if (same_word(v, kLevelNames[i])) {
                level = static_cast<LogLevel>(i + 1);
                bad_level = nullptr;
            }
    }

    bool on[kLogSubsysCount];
    std::fill(std::begin(on), std::end(on), true);
    char unknown[128] = {};  // the names SOFTRNIC_LOG_SUBSYS gave that are no subsystem
    size_t unknown_len = 0;
    if (const char *v = env_value(EnvVar::LogSubsys); v && *v && !same_word(trim(v), "all")) {
        bool chosen[kLogSubsysCount] = {};
        bool any = false;
        std::string_view rest = v;
        while (!rest.empty()) {
            size_t comma = rest.find(',');
            std::string_view name = trim(rest.substr(0, comma));
            rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
            if (name.empty()) continue;
            const bool all = same_word(name, "all");
            bool known = all;
            for (size_t i = 0; i < kLogSubsysCount; ++i) {
                if (!all && !same_word(name, kSubsysNames[i])) continue;
                chosen[i] = true;
                known = true;
            }
            any = any || known;
            if (!known) {
                if (unknown_len) append(unknown, unknown_len, ",");
                append(unknown, unknown_len, name);
            }
        }
        if (any) std::copy(std::begin(chosen), std::end(chosen), std::begin(on));
    }

    int file = -1, file_err = 0;
    const char *file_name = env_value(EnvVar::LogFile);
    if (file_name && *file_name) {
        file = open_log_file(file_name);
        if (file < 0) file_err = errno;
    }
    const int old_file = g_file;
    g_file = file;
    g_sink.store(file >= 0 ? file : STDERR_FILENO, std::memory_order_release);
    if (old_file >= 0) ::close(old_file);

    for (size_t i = 0; i < kLogSubsysCount; ++i)
        softrnic_log_threshold[i].store(on[i] ? static_cast<uint8_t>(level) : 0,
                                        std::memory_order_release);

    if (bad_level)
        warn_config("SOFTRNIC_LOG=%s is not a level (error, warn, info, debug, trace): using warn",
                    bad_level);
    if (unknown_len)
        warn_config(
            "SOFTRNIC_LOG_SUBSYS: no subsystem named %s (known: base, engine, rnicpi, "
            "transport, tcp, shm, cm, dat, all)",
            unknown);
    if (file_err != 0)
        warn_config("SOFTRNIC_LOG_FILE=%s cannot be opened (%s): logging to stderr", file_name,
                    std::strerror(file_err));
}

void ensure_configured() noexcept {
    // Thread-safe once: concurrent first log points wait for the one reading.
    static const bool configured = (configure(), true);
    (void)configured;
}

}  // namespace

const char *log_level_name(LogLevel l) {
    const auto i = static_cast<size_t>(l);
    return i >= 1 && i <= std::size(kLevelNames) ? kLevelNames[i - 1] : "?";
}

const char *log_subsys_name(LogSubsys s) {
    const auto i = static_cast<size_t>(s);
    return i < kLogSubsysCount ? kSubsysNames[i] : "?";
}

void log_reload() {
    ensure_configured();  // the once-only reading must not run again after this one
    configure();
}

int log_redirect(int fd) {
    ensure_configured();
    return g_redirect.exchange(fd < 0 ? -1 : fd, std::memory_order_acq_rel);
}

}  // namespace softrnic::base

extern "C" void softrnic_log_write(uint8_t level, uint8_t subsys, const char *fmt, ...) noexcept {
    using namespace softrnic::base;
    ensure_configured();
    if (level == 0 || subsys >= kLogSubsysCount ||
        level > softrnic_log_threshold[subsys].load(std::memory_order_relaxed))
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(level, subsys, fmt, ap);
    va_end(ap);
}
