// `softrnic bench --transport loopback`: both QPs in this process, connected by the
// in-process loopback transport, which completes every operation inside the post. Latency
// is one operation from post to its completion(s) polled; bandwidth runs back to back.
// Each row is read against a plain memcpy of the same size, timed the same way in the same
// run (the copy every loopback transfer must make).
#include <cstring>

#include "bench/bench.hpp"
#include "bench/report.hpp"
#include "loopback_session.hpp"

namespace softrnic::bench {

using tools::AlignedBuffer;
using tools::LoopbackSession;

namespace {

double memcpy_gbps(size_t size, uint64_t iters) {
    AlignedBuffer a(std::max<size_t>(size, 1)), b(std::max<size_t>(size, 1));
    std::memset(a.data, 0x5A, a.size);
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < iters; ++i) {
        std::memcpy(b.data, a.data, size);
        asm volatile("" : : "r"(b.data) : "memory");
    }
    double secs = seconds_since(t0);
    return static_cast<double>(size) * static_cast<double>(iters) / secs / 1e9;
}

Measurement measure(Op op, size_t size, uint64_t iters) {
    LoopbackSession s("bench", std::max<size_t>(size, 64));
    ri_err_data_t err = 0;
    ri_data_seg_t ls{}, rs{};
    ls.addr.vaddr = reinterpret_cast<uintptr_t>(s.a.buf->data);
    ls.tag.ltag = s.a.ltag;
    ls.len = static_cast<uint32_t>(size);
    rs.addr.vaddr = reinterpret_cast<uintptr_t>(s.b.buf->data);
    rs.tag.ltag = s.b.ltag;
    rs.len = static_cast<uint32_t>(size);
    const uint64_t to = reinterpret_cast<uintptr_t>(s.b.buf->data);
    using tools::check;
    using tools::poll_one;
    auto one = [&](uint64_t id) {
        switch (op) {
            case Op::Send:
                check(ri_qp_post_recv(s.b.rnic, s.b.qp, static_cast<ri_wr_flags_t>(0), id, &rs, 1,
                                      &err),
                      "post_recv");
                check(ri_qp_post_send(s.a.rnic, s.a.qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id,
                                      &ls, 0, 1, 0, &err),
                      "post_send");
                poll_one(s.a.rnic, s.a.cq);
                poll_one(s.b.rnic, s.b.cq);
                break;
            case Op::Write:
                check(ri_qp_post_rdma_write(s.a.rnic, s.a.qp, RI_WR_TYPE_RDMA_WRITE,
                                            RI_WR_SIGNALED_FLAG, id, &ls, to, s.b.rtag, 1, 0, &err),
                      "post_rdma_write");
                poll_one(s.a.rnic, s.a.cq);
                break;
            default:
                check(ri_qp_post_rdma_read(s.a.rnic, s.a.qp, RI_WR_TYPE_RDMA_READ,
                                           RI_WR_SIGNALED_FLAG, id, &ls, to, 1, s.b.rtag, &err),
                      "post_rdma_read");
                poll_one(s.a.rnic, s.a.cq);
                break;
        }
    };
    for (uint64_t i = 0; i < std::min<uint64_t>(iters / 10 + 1, 1000); ++i)
        one(i);  // warm up
    // Latency: each operation timed on its own, post to polled completion.
    uint64_t lat_iters = std::min<uint64_t>(iters, 20000);
    std::vector<double> lat;
    lat.reserve(lat_iters);
    for (uint64_t i = 0; i < lat_iters; ++i) {
        auto t0 = Clock::now();
        one(i);
        lat.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    // Throughput: back to back.
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < iters; ++i)
        one(i);
    double secs = seconds_since(t0);
    Measurement m;
    m.has_lat = m.has_bw = true;
    m.mean_us = mean(lat);
    m.p50_us = percentile(lat, 0.5);
    m.p99_us = percentile(lat, 0.99);
    m.gbps = static_cast<double>(size) * static_cast<double>(iters) / secs / 1e9;
    m.mops = static_cast<double>(iters) / secs / 1e6;
    m.lat_iters = lat_iters;
    m.bw_iters = iters;
    return m;
}

const char *label(Op op) {
    switch (op) {
        case Op::Send:
            return "send/recv";
        case Op::Write:
            return "RDMA write";
        default:
            return "RDMA read";
    }
}

}  // namespace

int run_loopback(const Options &o) {
    const unsigned rounds = o.rounds ? o.rounds : 1;
    Report rep;
    rep.transport = "loopback";
    rep.describe = "loopback (in-process transport, two RNIC instances)";
    rep.where = "one process";
    rep.rounds = rounds;
    rep.sizing = o.iters ? std::to_string(o.iters) + " operations per measurement"
                         : "operations per measurement by size (200000 / 20000 / 2000)";
    for (Op op : o.ops)
        for (size_t size : o.sizes) {
            Row row;
            row.name = op_name(op);
            row.label = label(op);
            row.size = size;
            row.lat_kind = "post-to-completion";
            rep.rows.push_back(row);
        }
    Progress progress(rounds * rep.rows.size(), o.progress);
    for (unsigned r = 0; r < rounds; ++r) {
        size_t i = 0;
        for (Op op : o.ops)
            for (size_t size : o.sizes) {
                progress.step(std::string(op_name(op)) + " " + format_size(size));
                uint64_t iters = o.iters ? o.iters : default_iters(size);
                Row &row = rep.rows[i++];
                row.rounds.push_back(measure(op, size, iters));
                row.memcpy_gbps.push_back(memcpy_gbps(size, iters));
            }
    }
    progress.finish();
    rep.notes = {
        "latency: one operation from post to its completion polled (send: both completions);",
        "         bandwidth: back to back, one at a time (loopback completes inside the post).",
        "ratio:   softrnic bandwidth / memcpy of the same size, measured in the same run.",
        "GB/s = 1e9 bytes/s; Mmsg/s = million operations/s."};
    if (o.json)
        print_json(rep);
    else
        print_table(rep);
    return 0;
}

}  // namespace softrnic::bench
