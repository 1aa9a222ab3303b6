// `softrnic stats [PID...] [--json]`: reads each process's counters file
// (/dev/shm/softrnic-stats.<pid>, src/base/stats.hpp) while the process runs, as
// `rdma statistic` reads a NIC's counters. Without PIDs, every process that has one; a file
// whose process is gone (it crashed before it could remove it) is removed.
#include "stats.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/stats_reader.hpp"
#include "json_out.hpp"

namespace softrnic::tools {
namespace {

using base::StatsParse;
using base::StatsSnapshot;

// The process's start time (field 22 of /proc/PID/stat), 0 when it is gone.
uint64_t start_time_of(uint32_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = text.rfind(')');
    if (close == std::string::npos) return 0;
    int field = 2;
    size_t i = close + 1;
    for (; i < text.size() && field < 22; ++i)
        if (text[i] == ' ') ++field;
    return std::strtoull(text.c_str() + i, nullptr, 10);
}

std::string command_of(uint32_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
}

enum class Found : uint8_t { Ok, Missing, Stale, Unreadable };

Found read_process(uint32_t pid, StatsSnapshot &out, std::string &why) {
    char path[64];
    base::stats_path(pid, path, sizeof path);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        why = std::strerror(errno);
        return errno == ENOENT ? Found::Missing : Found::Unreadable;
    }
    struct stat st {};
    void *p = MAP_FAILED;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
        why = "cannot map it";
        return Found::Unreadable;
    }
    const auto bytes =
        std::span(static_cast<const std::byte *>(p), static_cast<size_t>(st.st_size));
    const StatsParse r = base::parse_stats(bytes, out);
    ::munmap(p, static_cast<size_t>(st.st_size));
    if (r != StatsParse::Ok) {
        // A process that died while it made its file or folded a block into it leaves one
        // that never parses: the pid its name carries decides that it is stale.
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            why = "its process is gone";
            return Found::Stale;
        }
        why = r == StatsParse::Busy ? "busy" : "not a softrnic counters file";
        return Found::Unreadable;
    }
    // A pid reused by another process, or a process that died without removing its file.
    if (out.pid != pid || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ||
        start_time_of(pid) != out.start_time) {
        why = "its process is gone";
        return Found::Stale;
    }
    return Found::Ok;
}

std::vector<uint32_t> every_process() {
    std::vector<uint32_t> pids;
    DIR *d = ::opendir("/dev/shm");
    if (!d) return pids;
    constexpr std::string_view kPrefix = "softrnic-stats.";
    while (dirent *e = ::readdir(d)) {
        std::string_view name = e->d_name;
        if (!name.starts_with(kPrefix)) continue;
        char *end = nullptr;
        unsigned long v = std::strtoul(e->d_name + kPrefix.size(), &end, 10);
        if (end && *end == '\0' && v > 0 && v < (1ul << 31))
            pids.push_back(static_cast<uint32_t>(v));
    }
    ::closedir(d);
    std::sort(pids.begin(), pids.end());
    return pids;
}

}  // namespace

int stats(int argc, char **argv) {
    bool json = false;
    std::vector<uint32_t> pids;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        char *end = nullptr;
        unsigned long v = std::strtoul(argv[i], &end, 10);
        if (a == "--json") {
            json = true;
        } else if (!a.empty() && end && *end == '\0' && v > 0 && v < (1ul << 31)) {
            pids.push_back(static_cast<uint32_t>(v));
        } else {
            std::fprintf(stderr,
                         "softrnic stats: '%s' is neither a process id nor --json\n"
                         "usage: softrnic stats [PID...] [--json]\n",
                         a.c_str());
            return 2;
        }
    }
    const bool all = pids.empty();
    if (all) pids = every_process();
    int status = 0;
    std::string out = "{\"processes\":[";
    bool first = true;
    for (uint32_t pid : pids) {
        StatsSnapshot snap;
        std::string why;
        const Found f = read_process(pid, snap, why);
        if (f == Found::Stale) {
            char path[64];
            base::stats_path(pid, path, sizeof path);
            ::unlink(path);  // best effort: another user's file stays
        }
        if (f != Found::Ok) {
            // Listing everything, files we may not read or whose process is gone are not
            // errors; a process asked for by id is.
            if (!all) {
                std::fprintf(stderr, "softrnic stats: process %u: %s\n", pid,
                             f == Found::Missing ? "no counters (not using softrnic, or "
                                                   "SOFTRNIC_STATS=0)"
                                                 : why.c_str());
                status = 1;
            }
            continue;
        }
        const std::string command = command_of(pid);
        if (json) {
            out += std::string(first ? "" : ",") + "{\"pid\":" + std::to_string(pid) +
                   ",\"command\":" + json_string(command) +
                   ",\"threads_uncounted\":" + std::to_string(snap.threads_uncounted) +
                   ",\"counters\":{";
            for (size_t i = 0; i < snap.counters.size(); ++i)
                out += std::string(i ? "," : "") + json_string(snap.counters[i].first) + ":" +
                       std::to_string(snap.counters[i].second);
            out += "}}";
        } else {
            std::printf("%sprocess %u (%s)\n", first ? "" : "\n", pid, command.c_str());
            for (const auto &[name, value] : snap.counters)
                if (value)
                    std::printf("  %-24s %llu\n", name.c_str(),
                                static_cast<unsigned long long>(value));
            if (snap.threads_uncounted)
                std::printf("  (%llu threads found no counter block: their counts are missing)\n",
                            static_cast<unsigned long long>(snap.threads_uncounted));
        }
        first = false;
    }
    if (json)
        std::printf("%s]}\n", out.c_str());
    else if (first && all)
        std::printf("no process is using softrnic (or each runs with SOFTRNIC_STATS=0)\n");
    return status;
}

}  // namespace softrnic::tools
