// CPU time the rest of the machine used while a local benchmark run was going on: busy
// time in /proc/stat (user, nice, system) minus this process and its waited-for children
// (the server). A busy-poll benchmark on 2 vCPUs is only worth reading when that is near
// zero. Shared by `softrnic bench` (twoproc.cpp) and bench/dat_bench.cpp.
#pragma once

#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "bench/common.hpp"

namespace softrnic::bench {

class ForeignLoad {
  public:
    ForeignLoad() : busy0_(machine_busy()), own0_(own_cpu()), t0_(Clock::now()) {}
    // Average number of CPUs the rest of the machine kept busy.
    double cpus() const {
        double wall = seconds_since(t0_);
        if (wall <= 0 || busy0_ < 0) return 0;
        double other = (machine_busy() - busy0_) - (own_cpu() - own0_);
        return std::max(0.0, other / wall);
    }

  private:
    static double machine_busy() {
        FILE *f = std::fopen("/proc/stat", "r");
        if (!f) return -1;
        unsigned long long user = 0, nice = 0, sys = 0;
        int n = std::fscanf(f, "cpu %llu %llu %llu", &user, &nice, &sys);
        std::fclose(f);
        long hz = ::sysconf(_SC_CLK_TCK);
        if (n != 3 || hz <= 0) return -1;
        return static_cast<double>(user + nice + sys) / static_cast<double>(hz);
    }
    static double own_cpu() {
        auto secs = [](const timeval &t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
        rusage self{}, kids{};
        ::getrusage(RUSAGE_SELF, &self);
        ::getrusage(RUSAGE_CHILDREN, &kids);
        return secs(self.ru_utime) + secs(self.ru_stime) + secs(kids.ru_utime) +
               secs(kids.ru_stime);
    }
    double busy0_, own0_;
    Clock::time_point t0_;
};

}  // namespace softrnic::bench
