#include "bench/report.hpp"

#include "json_out.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace softrnic::bench {

namespace {

template <class F>
Spread over_rounds(const std::vector<Measurement> &ms, F f) {
    std::vector<double> v;
    v.reserve(ms.size());
    for (const Measurement &m : ms)
        v.push_back(f(m));
    return spread(v);
}

using softrnic::tools::json_escape;

// JSON has no NaN/Inf; a figure that could not be computed is null.
std::string num(double v, int prec = 4) {
    if (!std::isfinite(v)) return "null";
    char b[64];
    std::snprintf(b, sizeof b, "%.*g", prec + 2, v);
    return b;
}

}  // namespace

Spread Row::p50() const {
    return over_rounds(rounds, [](const Measurement &m) { return m.p50_us; });
}
Spread Row::p99() const {
    return over_rounds(rounds, [](const Measurement &m) { return m.p99_us; });
}
Spread Row::mean() const {
    return over_rounds(rounds, [](const Measurement &m) { return m.mean_us; });
}
Spread Row::gbps() const {
    return over_rounds(rounds, [](const Measurement &m) { return m.gbps; });
}
Spread Row::mops() const {
    return over_rounds(rounds, [](const Measurement &m) { return m.mops; });
}
Spread Row::memcpy() const {
    return spread(memcpy_gbps);
}
uint64_t Row::lat_iters() const {
    return static_cast<uint64_t>(
        over_rounds(rounds, [](const Measurement &m) { return double(m.lat_iters); }).med);
}
uint64_t Row::bw_iters() const {
    return static_cast<uint64_t>(
        over_rounds(rounds, [](const Measurement &m) { return double(m.bw_iters); }).med);
}

void print_table(const Report &r) {
    std::printf("%s: %s, %s\n", r.tool.c_str(), r.describe.c_str(), r.where.c_str());
    std::printf("%u round%s%s; %s", r.rounds, r.rounds == 1 ? "" : "s",
                r.rounds > 1 ? " (medians over rounds)" : "", r.sizing.c_str());
    if (r.window) std::printf("; bandwidth window %u operations", r.window);
    std::printf("\n\n");
    bool loop = false;
    for (const Row &row : r.rows)
        loop = loop || !row.memcpy_gbps.empty();
    std::printf("%-18s %9s  %-18s %10s %10s %9s %9s", "operation", "bytes", "latency", "p50 us",
                "p99 us", "GB/s", "Mmsg/s");
    if (loop) std::printf(" %11s %7s", "memcpy GB/s", "ratio");
    std::printf("\n");
    bool refs_header = false;
    for (const Row &row : r.rows) {
        if (row.reference && !refs_header) {
            std::printf("references:\n");
            refs_header = true;
        }
        std::printf("%-18s %9zu  %-18s", row.label.c_str(), row.size,
                    row.has_lat() ? row.lat_kind.c_str() : "-");
        if (row.has_lat())
            std::printf(" %10.3f %10.3f", row.p50().med, row.p99().med);
        else
            std::printf(" %10s %10s", "-", "-");
        if (row.has_bw() && row.no_bytes)
            std::printf(" %9s %9.4f", "-", row.mops().med);
        else if (row.has_bw())
            std::printf(" %9.3f %9.4f", row.gbps().med, row.mops().med);
        else
            std::printf(" %9s %9s", "-", "-");
        if (!row.memcpy_gbps.empty()) {
            double m = row.memcpy().med;
            std::printf(" %11.3f %7.3f", m, m > 0 ? row.gbps().med / m : 0.0);
        }
        std::printf("\n");
    }
    if (!r.ratios.empty()) {
        std::printf("\nratios (median of the per-round ratios, [min-max]; A and B alternate):\n");
        for (const Ratio &q : r.ratios) {
            std::printf("  %-15s = %s", (q.name + " ratio").c_str(), q.definition.c_str());
            if (q.value) {
                std::printf(" = %.3f [%.3f-%.3f]", q.value->med, q.value->min, q.value->max);
                bool ok = q.at_most ? q.value->med <= q.target : q.value->med >= q.target;
                std::printf("  (target %s %.2f: %s)\n", q.at_most ? "<=" : ">=", q.target,
                            ok ? "met" : "not met");
            } else {
                std::printf(" = n/a (not measured in this run)\n");
            }
        }
    }
    if (!r.notes.empty()) {
        std::printf("\n");
        for (const std::string &n : r.notes)
            std::printf("%s\n", n.c_str());
    }
}

void print_json(const Report &r) {
    std::printf("{\"tool\":\"%s\",\"version\":2,\"transport\":\"%s\",", json_escape(r.tool).c_str(),
                json_escape(r.transport).c_str());
    std::printf("\"describe\":\"%s\",\"where\":\"%s\",\"rounds\":%u,\"window\":%u,",
                json_escape(r.describe).c_str(), json_escape(r.where).c_str(), r.rounds, r.window);
    std::printf("\"sizing\":\"%s\",", json_escape(r.sizing).c_str());
    if (r.foreign_cpus >= 0) std::printf("\"foreign_cpus\":%s,", num(r.foreign_cpus).c_str());
    std::printf("\"warnings\":[");
    for (size_t i = 0; i < r.warnings.size(); ++i)
        std::printf("%s\"%s\"", i ? "," : "", json_escape(r.warnings[i]).c_str());
    std::printf("],");
    auto row_json = [](const Row &row) {
        std::string s = "{\"" + std::string(row.reference ? "name" : "op") + "\":\"" +
                        json_escape(row.name) + "\",\"size\":" + std::to_string(row.size);
        if (row.has_lat()) {
            Spread p50 = row.p50(), p99 = row.p99();
            s += ",\"lat_kind\":\"" + json_escape(row.lat_kind) +
                 "\",\"lat_p50_us\":" + num(p50.med) + ",\"lat_p99_us\":" + num(p99.med) +
                 ",\"lat_mean_us\":" + num(row.mean().med) + ",\"lat_p50_us_min\":" + num(p50.min) +
                 ",\"lat_p50_us_max\":" + num(p50.max) +
                 ",\"lat_iters\":" + std::to_string(row.lat_iters());
        }
        if (row.has_bw() && row.no_bytes) {
            s += ",\"rate_mops\":" + num(row.mops().med) +
                 ",\"bw_iters\":" + std::to_string(row.bw_iters());
        } else if (row.has_bw()) {
            Spread g = row.gbps();
            s += ",\"bw_gbps\":" + num(g.med) + ",\"bw_gbps_min\":" + num(g.min) +
                 ",\"bw_gbps_max\":" + num(g.max) + ",\"rate_mops\":" + num(row.mops().med) +
                 ",\"bw_iters\":" + std::to_string(row.bw_iters());
        }
        if (!row.memcpy_gbps.empty()) s += ",\"memcpy_gbps\":" + num(row.memcpy().med);
        return s + "}";
    };
    std::printf("\"results\":[");
    bool first = true;
    for (const Row &row : r.rows) {
        if (row.reference) continue;
        std::printf("%s%s", first ? "" : ",", row_json(row).c_str());
        first = false;
    }
    std::printf("],\"references\":[");
    first = true;
    for (const Row &row : r.rows) {
        if (!row.reference) continue;
        std::printf("%s%s", first ? "" : ",", row_json(row).c_str());
        first = false;
    }
    std::printf("],\"ratios\":{");
    first = true;
    for (const Ratio &q : r.ratios) {
        std::printf(
            "%s\"%s\":{\"definition\":\"%s\",\"value\":%s,\"min\":%s,\"max\":%s,"
            "\"%s\":%s}",
            first ? "" : ",", json_escape(q.name).c_str(), json_escape(q.definition).c_str(),
            q.value ? num(q.value->med).c_str() : "null",
            q.value ? num(q.value->min).c_str() : "null",
            q.value ? num(q.value->max).c_str() : "null", q.at_most ? "target_max" : "target_min",
            num(q.target).c_str());
        first = false;
    }
    std::printf("}}\n");
}

// ---------------------------------------------------------------------------- Progress

Progress::Progress(size_t total, bool enabled)
    : total_(total), enabled_(enabled && ::isatty(STDERR_FILENO)), start_(Clock::now()) {}

void Progress::finish() {
    if (drawn_) std::fprintf(stderr, "\r%*s\r", 72, "");
    drawn_ = false;
    enabled_ = false;
}

void Progress::step(const std::string &what) {
    what_ = what;
    if (!enabled_) return;
    if (!drawn_ && seconds_since(start_) < 1.0) {
        ++done_;
        return;
    }
    draw();
    ++done_;
}

void Progress::draw() {
    constexpr int kWidth = 24;
    int fill = total_ ? static_cast<int>(kWidth * done_ / total_) : 0;
    std::string bar(static_cast<size_t>(fill), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r[%s] %zu/%zu %-32.32s", bar.c_str(), done_, total_, what_.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace softrnic::bench
