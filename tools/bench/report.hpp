// Results of `softrnic bench`: one Row per (operation, size) or reference, one
// Measurement per round, aggregated as medians over rounds; printed as a table or JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/common.hpp"

namespace softrnic::bench {

struct Measurement {
    bool has_lat = false, has_bw = false;
    double p50_us = 0, p99_us = 0, mean_us = 0;
    double gbps = 0, mops = 0;
    uint64_t lat_iters = 0, bw_iters = 0;
};

struct Row {
    std::string name;   // JSON op/reference name: send, write, read, raw_tcp_pingpong...
    std::string label;  // table label
    size_t size = 0;
    std::string lat_kind;  // one-way, round-trip, post-to-completion
    bool reference = false;
    bool no_bytes = false;  // a rate of events that move no data (connect): no GB/s
    std::vector<Measurement> rounds;
    std::vector<double> memcpy_gbps;  // loopback: the memcpy of the same size, per round

    // Medians over rounds.
    Spread p50() const;
    Spread p99() const;
    Spread mean() const;
    Spread gbps() const;
    Spread mops() const;
    Spread memcpy() const;
    uint64_t lat_iters() const;
    uint64_t bw_iters() const;
    bool has_lat() const { return !rounds.empty() && rounds.front().has_lat; }
    bool has_bw() const { return !rounds.empty() && rounds.front().has_bw; }
};

struct Ratio {
    std::string name;             // latency, bandwidth
    std::string definition;       // printed as is
    std::optional<Spread> value;  // median of the per-round ratios; empty: not measured
    double target = 0;
    bool at_most = true;  // target is an upper bound (latency) or a lower bound (bandwidth)
};

struct Report {
    std::string transport;  // tcp, loopback
    std::string describe;   // transport description for the header
    std::string where;      // "client and server processes on 127.0.0.1", ...
    unsigned rounds = 1;
    unsigned window = 0;
    std::string sizing;  // how iteration counts were chosen
    std::vector<Row> rows;
    std::vector<Ratio> ratios;
    std::vector<std::string> notes;
    std::vector<std::string> warnings;  // also in JSON ("warnings")
    double foreign_cpus = -1;           // CPUs other processes kept busy (-1: not measured)
    // JSON "tool" and the table's title: bench/dat_bench.cpp reports through here too.
    std::string tool = "softrnic bench";
};

void print_table(const Report &r);
void print_json(const Report &r);

// A one-line progress bar on stderr, drawn only when stderr is a terminal and the run has
// already taken more than a second (short runs never show it).
class Progress {
  public:
    Progress(size_t total, bool enabled);
    ~Progress() { finish(); }
    void step(const std::string &what);
    void finish();  // erases the bar (before the results are printed)

  private:
    void draw();
    size_t total_, done_ = 0;
    bool enabled_, drawn_ = false;
    Clock::time_point start_;
    std::string what_;
};

}  // namespace softrnic::bench
