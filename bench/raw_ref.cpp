// Raw references for bench/compare.sh, outside softrnic entirely (no library, no RNICPI):
//
//   raw_ref shm-pingpong [--iters N] [--trials T] [--pin]
//       two processes (fork) bounce a counter through two cache lines of a shared
//       anonymous mapping, each busy-polling the other's line. One-way = round trip / 2,
//       timed over blocks of N round trips (a clock read per message would cost as much
//       as the message); prints the median and p99 over the T blocks.
//   raw_ref memcpy [--size N] [--seconds S] [--trials T]
//       one thread copies N bytes between two cache-resident buffers back to back;
//       median GB/s (1e9) over T trials.
//   raw_ref cma [--size N] [--seconds S] [--trials T]
//       process_vm_writev of N bytes into a forked child's buffer, back to back: the single
//       copy softrnic's shm transport makes per large RDMA Read (Writes pull the same way
//       with process_vm_readv); median GB/s (1e9) over T trials.
//
// Output: one JSON object per line, e.g.
//   {"name":"raw_shm_pingpong","size":8,"lat_kind":"one-way","lat_p50_us":0.071,...}
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double pct(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    size_t k = std::min(v.size() - 1, static_cast<size_t>(p * double(v.size() - 1) + 0.5));
    return v[k];
}

void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

struct alignas(128) Line {
    std::atomic<uint64_t> v{0};
};
struct Shared {
    Line ping, pong;
};

int shm_pingpong(uint64_t iters, int trials, bool dopin) {
    void *m =
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    auto *sh = new (m) Shared;
    const uint64_t warm = 10000;
    const uint64_t total = warm + iters * static_cast<uint64_t>(trials);
    pid_t child = fork();
    if (child < 0) {
        std::perror("fork");
        return 1;
    }
    if (child == 0) {
        if (dopin) pin(1);
        for (uint64_t i = 1; i <= total; ++i) {
            while (sh->ping.v.load(std::memory_order_acquire) != i) {
            }
            sh->pong.v.store(i, std::memory_order_release);
        }
        _exit(0);
    }
    if (dopin) pin(0);
    uint64_t i = 1;
    auto round = [&] {
        sh->ping.v.store(i, std::memory_order_release);
        while (sh->pong.v.load(std::memory_order_acquire) != i) {
        }
        ++i;
    };
    for (uint64_t k = 0; k < warm; ++k)
        round();
    std::vector<double> us;
    for (int t = 0; t < trials; ++t) {
        auto t0 = Clock::now();
        for (uint64_t k = 0; k < iters; ++k)
            round();
        double s = std::chrono::duration<double>(Clock::now() - t0).count();
        us.push_back(s / static_cast<double>(iters) / 2 * 1e6);
    }
    int st = 0;
    waitpid(child, &st, 0);
    std::printf(
        "{\"name\":\"raw_shm_pingpong\",\"size\":8,\"lat_kind\":\"one-way\","
        "\"lat_p50_us\":%.4f,\"lat_p99_us\":%.4f,\"lat_min_us\":%.4f,\"blocks\":%d,"
        "\"iters_per_block\":%llu}\n",
        median(us), pct(us, 0.99), *std::min_element(us.begin(), us.end()), trials,
        static_cast<unsigned long long>(iters));
    munmap(m, sizeof(Shared));
    return 0;
}

int memcpy_bw(size_t n, double secs, int trials) {
    auto alloc = [](size_t len) {
        void *p = std::aligned_alloc(4096, (len + 4095) / 4096 * 4096);
        if (!p) throw std::bad_alloc();
        return std::unique_ptr<unsigned char, decltype(&std::free)>(static_cast<unsigned char *>(p),
                                                                    &std::free);
    };
    auto src = alloc(n), dst = alloc(n);
    std::memset(src.get(), 1, n);
    std::memset(dst.get(), 2, n);
    std::vector<double> gbps;
    for (int t = 0; t < trials; ++t) {
        uint64_t it = 0;
        auto t0 = Clock::now();
        double s = 0;
        do {
            for (int k = 0; k < 8; ++k) {
                std::memcpy(dst.get(), src.get(), n);
                asm volatile("" : : "r"(dst.get()) : "memory");
                ++it;
            }
            s = std::chrono::duration<double>(Clock::now() - t0).count();
        } while (s < secs);
        gbps.push_back(static_cast<double>(n) * static_cast<double>(it) / s / 1e9);
    }
    std::printf(
        "{\"name\":\"raw_memcpy\",\"size\":%zu,\"bw_gbps\":%.4f,\"bw_gbps_min\":%.4f,"
        "\"bw_gbps_max\":%.4f,\"trials\":%d}\n",
        n, median(gbps), *std::min_element(gbps.begin(), gbps.end()),
        *std::max_element(gbps.begin(), gbps.end()), trials);
    return 0;
}

int cma_bw(size_t n, double secs, int trials) {
    size_t len = (n + 4095) / 4096 * 4096;
    auto *src = static_cast<unsigned char *>(std::aligned_alloc(4096, len));
    auto *dst = static_cast<unsigned char *>(std::aligned_alloc(4096, len));
    if (!src || !dst) return 1;
    std::memset(src, 1, n);
    std::memset(dst, 2, n);
    // The child's copy of `dst` sits at the same address; it lives until the pipe closes.
    int hold[2];
    if (::pipe(hold) != 0) return 1;
    pid_t child = ::fork();
    if (child < 0) return 1;
    if (child == 0) {
        ::close(hold[1]);
        char b;
        while (::read(hold[0], &b, 1) < 0) {
        }
        ::_exit(0);
    }
    ::close(hold[0]);
    iovec l{src, n}, r{dst, n};
    int rc = 0;
    std::vector<double> gbps;
    for (int w = 0; w < 4 && rc == 0; ++w)  // first writes break the child's copy-on-write
        if (::process_vm_writev(child, &l, 1, &r, 1, 0) != static_cast<ssize_t>(n)) rc = 1;
    for (int t = 0; t < trials && rc == 0; ++t) {
        uint64_t it = 0;
        auto t0 = Clock::now();
        double s = 0;
        do {
            for (int k = 0; k < 8; ++k, ++it)
                if (::process_vm_writev(child, &l, 1, &r, 1, 0) != static_cast<ssize_t>(n)) rc = 1;
            s = std::chrono::duration<double>(Clock::now() - t0).count();
        } while (s < secs && rc == 0);
        gbps.push_back(static_cast<double>(n) * static_cast<double>(it) / s / 1e9);
    }
    ::close(hold[1]);
    ::waitpid(child, nullptr, 0);
    std::free(src);
    std::free(dst);
    if (rc != 0) {
        std::perror("raw_ref: process_vm_writev");
        return 1;
    }
    std::printf(
        "{\"name\":\"raw_cma_write\",\"size\":%zu,\"bw_gbps\":%.4f,\"bw_gbps_min\":%.4f,"
        "\"bw_gbps_max\":%.4f,\"trials\":%d}\n",
        n, median(gbps), *std::min_element(gbps.begin(), gbps.end()),
        *std::max_element(gbps.begin(), gbps.end()), trials);
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: raw_ref shm-pingpong [--iters N] [--trials T] [--pin]\n"
                 "       raw_ref memcpy [--size N] [--seconds S] [--trials T]\n"
                 "       raw_ref cma [--size N] [--seconds S] [--trials T]\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    std::string cmd = argv[1];
    uint64_t iters = 200000;
    int trials = 7;
    bool dopin = false;
    size_t size = size_t{1} << 20;
    double secs = 0.1;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "raw_ref: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--iters")
            iters = std::strtoull(val(), nullptr, 10);
        else if (a == "--trials")
            trials = std::atoi(val());
        else if (a == "--pin")
            dopin = true;
        else if (a == "--size")
            size = std::strtoull(val(), nullptr, 10);
        else if (a == "--seconds")
            secs = std::strtod(val(), nullptr);
        else
            return usage();
    }
    if (iters == 0 || trials <= 0 || trials > 1000 || size == 0 || !(secs > 0)) return usage();
    if (cmd == "shm-pingpong") return shm_pingpong(iters, trials, dopin);
    if (cmd == "memcpy") return memcpy_bw(size, secs, trials);
    if (cmd == "cma") return cma_bw(size, secs, trials);
    return usage();
}
