// Command-line and child-process helpers shared by `softrnic bench` (tools/softrnic.cpp,
// tools/bench/twoproc.cpp) and bench/dat_bench.cpp.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace softrnic::bench {

// A non-negative decimal that fits 64 bits, nothing else around it.
inline bool parse_u64(const std::string &v, uint64_t &out) {
    if (v.empty() || v[0] == '-') return false;
    char *end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (!end || *end || errno) return false;
    out = n;
    return true;
}

// "a,b,c" -> {"a", "b", "c"} (empty items kept: the caller rejects them).
inline std::vector<std::string> split_list(const std::string &v) {
    std::vector<std::string> out;
    size_t p = 0;
    for (;;) {
        size_t q = v.find(',', p);
        out.push_back(v.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (q == std::string::npos) break;
        p = q + 1;
    }
    return out;
}

// Waits for child `pid` to exit, killing it after `grace`; sets pid to -1. True when it
// exited with status 0.
inline bool reap_child(pid_t &pid, std::chrono::milliseconds grace) {
    if (pid <= 0) return true;
    auto deadline = std::chrono::steady_clock::now() + grace;
    int st = 0;
    for (;;) {
        pid_t r = ::waitpid(pid, &st, WNOHANG);
        if (r == pid) break;
        if (r < 0) {
            pid = -1;
            return false;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            pid = -1;
            return false;
        }
        ::usleep(10000);
    }
    pid = -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace softrnic::bench
