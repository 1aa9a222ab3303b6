// The `softrnic` command: information about the software RNIC and a perftest-like benchmark
// of its transports. This version drives the in-process loopback transport; the TCP/iWARP
// and shared-memory transports join the same table when they land.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loopback_session.hpp"

using namespace softrnic::tools;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::vector<size_t> sizes{8, 64, 4096, 65536, 1 << 20};
    uint64_t iters = 0;  // 0: per-size default
    bool json = false;
    std::string transport = "auto";
};

struct Row {
    const char *op;
    size_t size;
    double p50_us, p99_us, gbps, mops;
    double ref_gbps;  // a plain memcpy of the same size, measured in the same run
};

// The copy every loopback transfer must make, timed the same way: the reference the
// softrnic figures are read against (a ratio, not an absolute number, survives a noisy
// 2-vCPU machine).
double memcpy_gbps(size_t size, uint64_t iters) {
    AlignedBuffer a(std::max<size_t>(size, 1)), b(std::max<size_t>(size, 1));
    std::memset(a.data, 0x5A, a.size);
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < iters; ++i) {
        std::memcpy(b.data, a.data, size);
        asm volatile("" : : "r"(b.data) : "memory");
    }
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    return static_cast<double>(size) * static_cast<double>(iters) / secs / 1e9;
}

void usage() {
    std::puts(
        "usage: softrnic <command> [options]\n"
        "commands:\n"
        "  bench   measure send/recv, RDMA write and RDMA read (latency p50/p99,\n"
        "          bandwidth, message rate) over the chosen transport\n"
        "  info    print the RNIC attributes reported by ri_rnic_query\n"
        "options (bench):\n"
        "  --size N[,N...]   message sizes in bytes (default 8,64,4096,65536,1048576)\n"
        "  --iters N         iterations per measurement (default: by size)\n"
        "  --transport T     auto|loopback (tcp and shm: not built yet)\n"
        "  --json            machine-readable output");
}

uint64_t default_iters(size_t size) {
    if (size >= (1u << 20)) return 2000;
    if (size >= 65536) return 20000;
    return 200000;
}

double percentile(std::vector<double> &v, double p) {
    if (v.empty()) return 0;
    size_t k = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v[k];
}

// op: 0 send/recv, 1 RDMA write, 2 RDMA read.
Row measure(int op, size_t size, uint64_t iters) {
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
    auto one = [&](uint64_t id) {
        switch (op) {
            case 0:
                check(ri_qp_post_recv(s.b.rnic, s.b.qp, static_cast<ri_wr_flags_t>(0), id, &rs, 1,
                                      &err),
                      "post_recv");
                check(ri_qp_post_send(s.a.rnic, s.a.qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id,
                                      &ls, 0, 1, 0, &err),
                      "post_send");
                poll_one(s.a.rnic, s.a.cq);
                poll_one(s.b.rnic, s.b.cq);
                break;
            case 1:
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
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    Row r{op == 0   ? "send/recv"
          : op == 1 ? "rdma_write"
                    : "rdma_read",
          size,
          percentile(lat, 0.5),
          percentile(lat, 0.99),
          static_cast<double>(size) * static_cast<double>(iters) / secs / 1e9,
          static_cast<double>(iters) / secs / 1e6,
          memcpy_gbps(size, iters)};
    return r;
}

int bench(const Options &o) {
    if (o.transport != "auto" && o.transport != "loopback") {
        std::fprintf(stderr, "softrnic: transport '%s' is not built yet (see README status)\n",
                     o.transport.c_str());
        return 2;
    }
    std::vector<Row> rows;
    bool tty = isatty(fileno(stderr));
    size_t total = o.sizes.size() * 3, done = 0;
    for (int op = 0; op < 3; ++op) {
        for (size_t size : o.sizes) {
            if (tty && !o.json) std::fprintf(stderr, "\r[%zu/%zu] measuring...", done, total);
            rows.push_back(measure(op, size, o.iters ? o.iters : default_iters(size)));
            ++done;
        }
    }
    if (tty && !o.json) std::fprintf(stderr, "\r%*s\r", 40, "");
    if (o.json) {
        std::printf("{\"transport\":\"loopback\",\"results\":[");
        for (size_t i = 0; i < rows.size(); ++i) {
            const Row &r = rows[i];
            std::printf(
                "%s{\"op\":\"%s\",\"size\":%zu,\"lat_p50_us\":%.3f,\"lat_p99_us\":%.3f,"
                "\"bw_gbps\":%.3f,\"rate_mops\":%.3f,\"memcpy_gbps\":%.3f}",
                i ? "," : "", r.op, r.size, r.p50_us, r.p99_us, r.gbps, r.mops, r.ref_gbps);
        }
        std::printf("]}\n");
        return 0;
    }
    std::printf("softrnic bench: transport loopback (in-process, two RNIC instances)\n");
    std::printf("%-11s %9s %9s %9s %9s %9s %12s %9s\n", "op", "bytes", "p50 us", "p99 us", "GB/s",
                "Mmsg/s", "memcpy GB/s", "ratio");
    for (const Row &r : rows)
        std::printf("%-11s %9zu %9.3f %9.3f %9.3f %9.3f %12.3f %9.3f\n", r.op, r.size, r.p50_us,
                    r.p99_us, r.gbps, r.mops, r.ref_gbps, r.ref_gbps > 0 ? r.gbps / r.ref_gbps : 0);
    std::printf("ratio: softrnic bandwidth / memcpy of the same size in this run\n");
    return 0;
}

int info() {
    ri_vp_handle_t vp = nullptr;
    ri_err_data_t err = 0;
    check(softrnic_vp_create("info", &vp), "softrnic_vp_create");
    check(ri_rnic_open(vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), "ri_rnic_open");
    ri_rnic_handle_t rnic = nullptr;
    check(ri_rnic_get_hdl(vp, RI_CONSUMER_LOCATION_KERNEL, &rnic, nullptr, nullptr, &err),
          "ri_rnic_get_hdl");
    uint_t size = 0;
    ri_rnic_query(rnic, RI_QUERY_RNIC_PORT_INFO, nullptr, &size, &err);
    std::vector<unsigned char> buf(size);
    auto *a = reinterpret_cast<ri_rnic_attr_t *>(buf.data());
    check(ri_rnic_query(rnic, RI_QUERY_RNIC_PORT_INFO, a, &size, &err), "ri_rnic_query");
    std::printf("vendor info      %s\n", a->addl_vendor_info);
    std::printf("transport        iWARP (protocol version %u)\n",
                a->trans_attr.iwarp->protocol_version);
    std::printf("max qps          %u (wrs/qp %u, sges %u)\n", a->max_qps, a->max_wrs_qp,
                a->max_sgl_send_recvqp);
    std::printf("max cqs          %u (cqes/cq %u)\n", a->max_cqs, a->max_cqes_per_cq);
    std::printf("max srqs         %u (wrs/srq %u)\n", a->max_srq, a->max_wrs_srq);
    std::printf("max mrs / mws    %u / %u\n", a->max_mrs, a->max_mws);
    std::printf("ird / ord per qp %u / %u\n", a->max_ird_per_qp, a->max_ord_per_qp);
    std::printf("rnic flags       0x%x\n", static_cast<unsigned>(a->rnic_flags));
    if (a->trans_attr.iwarp->port_attrs)
        std::printf("port addresses   %u IPv4, %u IPv6\n",
                    a->trans_attr.iwarp->port_attrs->num_ipv4_addrs,
                    a->trans_attr.iwarp->port_attrs->num_ipv6_addrs);
    ri_rnic_free_hdl(vp, rnic, &err);
    ri_rnic_close(vp, &err);
    softrnic_vp_destroy(vp);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        usage();
        return 2;
    }
    std::string cmd = argv[1];
    Options o;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "softrnic: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--json") {
            o.json = true;
        } else if (a == "--size") {
            o.sizes.clear();
            std::string v = value();
            for (size_t p = 0; p < v.size();) {
                size_t q = v.find(',', p);
                std::string tok = v.substr(p, q == std::string::npos ? std::string::npos : q - p);
                char *end = nullptr;
                unsigned long long n = std::strtoull(tok.c_str(), &end, 10);
                if (!end || *end || n > (1ull << 30)) {
                    std::fprintf(stderr, "softrnic: bad size '%s'\n", tok.c_str());
                    return 2;
                }
                o.sizes.push_back(static_cast<size_t>(n));
                if (q == std::string::npos) break;
                p = q + 1;
            }
        } else if (a == "--iters") {
            char *end = nullptr;
            std::string v = value();
            o.iters = std::strtoull(v.c_str(), &end, 10);
            if (!end || *end || o.iters == 0) {
                std::fprintf(stderr, "softrnic: bad --iters '%s'\n", v.c_str());
                return 2;
            }
        } else if (a == "--transport") {
            o.transport = value();
        } else if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else {
            std::fprintf(stderr, "softrnic: unknown option '%s'\n", a.c_str());
            return 2;
        }
    }
    try {
        if (cmd == "bench") return bench(o);
        if (cmd == "info") return info();
        if (cmd == "-h" || cmd == "--help" || cmd == "help") {
            usage();
            return 0;
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "softrnic: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "softrnic: unknown command '%s'\n", cmd.c_str());
    usage();
    return 2;
}
