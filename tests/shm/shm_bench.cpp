// Two-process shm measurement (not a test; run a release build on an idle machine):
//
//   shm_bench [trials=7] [pingpong_iters=200000] [write_ops=4000]
//
// forks before creating anything (so no thread crosses the fork), then measures,
// interleaved trial by trial (the VM's shared-memory latency is bimodal, baselines.md):
//   - 8-byte send/recv ping-pong over shm, both sides busy-polling their CQs (one-way =
//     round trip / 2), against a raw cache-line flag ping-pong on a shared mapping;
//   - 1 MiB RDMA Write bandwidth with W in flight (the target pulls with CMA), against raw
//     process_vm_writev of 1 MiB into the same target buffers.
#include <sys/mman.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstdio>

#include "shm_util.hpp"

using namespace st;

namespace {

constexpr size_t kRegion = 16 << 20;
constexpr size_t kChunk = 1 << 20;

double now_s() {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Info {
    uint64_t va;
    uint32_t rtag;
    uint32_t pad;
};

// Shared flag lines for the raw ping-pong (separate cache lines).
struct Flags {
    alignas(64) std::atomic<uint64_t> ping{0};
    alignas(64) std::atomic<uint64_t> pong{0};
    alignas(64) std::atomic<uint64_t> cmd{0};  // raw ping-pong iterations requested
};

bool poll_fast(Rnic &r, Cq *c, ri_rc_wc_t &out) {
    ri_wc_t wc;
    uint_t n = 1;
    if (poll_raw(r, c, &wc, &n) == RI_RET_SUCCESS && n == 1) {
        out = wc.rc_wc;
        return true;
    }
    return false;
}

int child_main(int ctl_w, Flags *flags) {
    Buf region(kRegion), rx(4096);
    Rnic r("bench-child");
    QpOpts o;
    o.sq = 1024;
    o.rq = 1024;
    Qp *q = r.new_qp(o);
    Mr *mreg = r.reg(region, kAllRemote), *mrx = r.reg(rx, kLocalRW);
    Info info{region.va(), mreg->rtag, 0};
    cm::ConnParams reply;
    reply.private_data.assign(reinterpret_cast<uint8_t *>(&info),
                              reinterpret_cast<uint8_t *>(&info) + sizeof info);
    Slot<cm::Established> est;
    cm::ConnectionManager *mp = nullptr;
    cm::Options opt;
    opt.transport = cm::Transport::Shm;
    cm::ConnectionManager mgr(
        [&](cm::Event &e) {
            if (auto *req = std::get_if<cm::ConnectRequest>(&e)) mp->accept(req->id, reply);
            if (auto *x = std::get_if<cm::Established>(&e)) est.set(std::move(*x));
        },
        opt);
    mp = &mgr;
    cm::Address l = loopback4();
    auto lid = mgr.listen(l.get(), l.len, 4);
    uint16_t port = port_of(mgr.local_address(lid.value).value);
    if (::write(ctl_w, &port, sizeof port) != sizeof port) return 1;
    auto e = est.wait();
    if (!e) return 2;
    for (int i = 0; i < 64; ++i) {
        ri_data_seg_t s = sge(rx.data(), 64, mrx->ltag);
        post_recv(q, i, &s, 1);
    }
    if (to_rts(q, e->llp) != RI_RET_SUCCESS) return 3;
    ri_data_seg_t echo = sge(rx.data() + 2048, 8, mrx->ltag);
    for (;;) {
        ri_rc_wc_t wc;
        if (uint64_t n = flags->cmd.load(std::memory_order_acquire)) {
            // Raw flag ping-pong: answer n pings.
            for (uint64_t i = 1; i <= n; ++i) {
                while (flags->ping.load(std::memory_order_acquire) != i) {
                }
                flags->pong.store(i, std::memory_order_release);
            }
            // Only cmd: resetting pong here raced with the parent's wait for the last pong
            // (it could miss it and spin for ever); the parent resets the words itself.
            flags->cmd.store(0, std::memory_order_release);
        }
        if (poll_fast(r, q->rcq, wc)) {
            if (wc.bytes_transferred == 0) return 0;
            ri_data_seg_t s = sge(rx.data(), 64, mrx->ltag);
            post_recv(q, 0, &s, 1);
            post_send(q, RI_WR_TYPE_SEND, kSig, 0, &echo, 1);
        }
        while (poll_fast(r, q->scq, wc)) {
        }
    }
}

int parent_main(int ctl_r, pid_t child, Flags *flags, int trials, long iters, long wops) {
    uint16_t port = 0;
    if (::read(ctl_r, &port, sizeof port) != sizeof port) return 1;
    Buf src(kChunk), rx(4096), msg(64);
    Rnic r("bench-parent");
    QpOpts o;
    o.sq = 1024;
    o.rq = 1024;
    Qp *q = r.new_qp(o);
    src.fill(1);
    msg.fill(2);
    Mr *ms = r.reg(src, kLocalRW), *mrx = r.reg(rx, kLocalRW), *mm = r.reg(msg, kLocalRW);
    Slot<cm::Established> est;
    cm::Options opt;
    opt.transport = cm::Transport::Shm;
    cm::ConnectionManager mgr(
        [&](cm::Event &e) {
            if (auto *x = std::get_if<cm::Established>(&e)) est.set(std::move(*x));
        },
        opt);
    cm::Address dst = loopback4(port);
    mgr.connect(dst.get(), dst.len, {});
    auto e = est.wait();
    if (!e) return 2;
    Info info;
    std::memcpy(&info, e->private_data.data(), sizeof info);
    if (to_rts(q, e->llp) != RI_RET_SUCCESS) return 3;
    std::printf("shm connection: CMA %s\n", e->shm_cma ? "yes" : "no");

    ri_data_seg_t ping = sge(msg.data(), 8, mm->ltag);
    ri_data_seg_t rs = sge(rx.data(), 64, mrx->ltag);
    auto rdma_pingpong = [&](long n) {
        double t0 = now_s();
        for (long i = 0; i < n; ++i) {
            post_recv(q, 0, &rs, 1);
            post_send(q, RI_WR_TYPE_SEND, kSig, 0, &ping, 1);
            ri_rc_wc_t wc;
            while (!poll_fast(r, q->rcq, wc)) {
            }
            while (poll_fast(r, q->scq, wc)) {
            }
        }
        return (now_s() - t0) / n / 2 * 1e6;
    };
    auto raw_pingpong = [&](long n) {
        flags->cmd.store(static_cast<uint64_t>(n), std::memory_order_release);
        double t0 = now_s();
        for (long i = 1; i <= n; ++i) {
            flags->ping.store(static_cast<uint64_t>(i), std::memory_order_release);
            while (flags->pong.load(std::memory_order_acquire) != static_cast<uint64_t>(i)) {
            }
        }
        double us = (now_s() - t0) / n / 2 * 1e6;
        while (flags->cmd.load(std::memory_order_acquire) != 0) {
        }
        flags->ping.store(0, std::memory_order_relaxed);  // the child no longer reads them
        flags->pong.store(0, std::memory_order_relaxed);
        return us;
    };
    auto write_bw = [&](long n, int window) {
        long posted = 0, done = 0;
        double t0 = now_s();
        while (done < n) {
            while (posted < n && posted - done < window) {
                ri_data_seg_t s = sge(src.data(), kChunk, ms->ltag);
                post_write(q, kSig, posted, &s, 1, info.va + (posted % 16) * kChunk, info.rtag);
                ++posted;
            }
            ri_rc_wc_t wc;
            while (poll_fast(r, q->scq, wc)) {
                if (wc.op_status != RI_WC_STATUS_SUCCESS) {
                    std::printf("write failed: %d\n", wc.op_status);
                    return 0.0;
                }
                ++done;
            }
        }
        return double(n) * kChunk / (now_s() - t0) / 1e9;
    };
    auto raw_cma = [&](long n) {
        double t0 = now_s();
        for (long i = 0; i < n; ++i) {
            iovec l{src.data(), kChunk};
            iovec rr{reinterpret_cast<void *>(info.va + (i % 16) * kChunk), kChunk};
            if (::process_vm_writev(child, &l, 1, &rr, 1, 0) != static_cast<ssize_t>(kChunk))
                return 0.0;
        }
        return double(n) * kChunk / (now_s() - t0) / 1e9;
    };

    rdma_pingpong(iters / 10);  // warm-up
    raw_pingpong(iters / 10);
    std::vector<double> pp, raw;
    for (int t = 0; t < trials; ++t) {
        pp.push_back(rdma_pingpong(iters));
        raw.push_back(raw_pingpong(iters));
        std::printf("trial %d: shm send/recv 8 B one-way %.3f us | raw flag ping-pong %.3f us\n", t,
                    pp.back(), raw.back());
    }
    std::printf(
        "8 B one-way latency: shm send/recv median %.3f us (min %.3f) | raw flag median %.3f us "
        "(min %.3f) | ratio median %.2fx\n",
        median(pp), *std::min_element(pp.begin(), pp.end()), median(raw),
        *std::min_element(raw.begin(), raw.end()), median(pp) / median(raw));
    write_bw(wops / 10, 16);
    raw_cma(wops / 10);
    for (int window : {16, 32, 64}) {
        std::vector<double> bw, cma;
        for (int t = 0; t < trials; ++t) {
            bw.push_back(write_bw(wops, window));
            cma.push_back(raw_cma(wops));
        }
        std::printf(
            "1 MiB RDMA Write, %d in flight: median %.2f GB/s (max %.2f) | raw process_vm_writev "
            "1 MiB median %.2f GB/s (max %.2f)\n",
            window, median(bw), *std::max_element(bw.begin(), bw.end()), median(cma),
            *std::max_element(cma.begin(), cma.end()));
    }
    // Bye.
    post_send(q, RI_WR_TYPE_SEND, kSig, 0, &ping, 0);
    ri_rc_wc_t wc;
    auto end = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < end && !poll_fast(r, q->scq, wc)) {
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    int trials = argc > 1 ? std::atoi(argv[1]) : 7;
    long iters = argc > 2 ? std::atol(argv[2]) : 200000;
    long wops = argc > 3 ? std::atol(argv[3]) : 4000;
    auto *flags = static_cast<Flags *>(
        ::mmap(nullptr, sizeof(Flags), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    new (flags) Flags;
    int p[2];
    if (::pipe(p) != 0) return 1;
    pid_t c = ::fork();  // before any thread exists
    if (c == 0) {
        ::close(p[0]);
        ::_exit(child_main(p[1], flags));
    }
    ::close(p[1]);
    int rc = parent_main(p[0], c, flags, trials, iters, wops);
    int st = 0;
    auto end = Clock::now() + std::chrono::seconds(10);
    while (::waitpid(c, &st, WNOHANG) == 0 && Clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(c, SIGKILL);
    ::waitpid(c, &st, 0);
    return rc;
}
