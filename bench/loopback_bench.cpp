// Micro-benchmarks of the RNICPI fast path on the loopback transport: the cost of posting a
// work request and polling its completion, per WR, in CPU time. A raw memcpy of the same
// payload runs in the same binary as the reference the figures are read against.
#include <benchmark/benchmark.h>

#include <cstring>

#include "loopback_session.hpp"

using softrnic::tools::LoopbackSession;
using softrnic::tools::poll_one;

namespace {

// Post a receive on B, a signalled send on A, poll both completions: one full message.
void BM_SendRecv(benchmark::State &state) {
    const size_t size = static_cast<size_t>(state.range(0));
    LoopbackSession s("bench-sr", std::max<size_t>(size, 64));
    ri_err_data_t err = 0;
    ri_data_seg_t rs{}, ss{};
    rs.addr.vaddr = reinterpret_cast<uintptr_t>(s.b.buf->data);
    rs.tag.ltag = s.b.ltag;
    rs.len = static_cast<uint32_t>(size);
    ss.addr.vaddr = reinterpret_cast<uintptr_t>(s.a.buf->data);
    ss.tag.ltag = s.a.ltag;
    ss.len = static_cast<uint32_t>(size);
    uint64_t id = 0;
    for (auto _ : state) {
        ri_qp_post_recv(s.b.rnic, s.b.qp, static_cast<ri_wr_flags_t>(0), id, &rs, 1, &err);
        ri_qp_post_send(s.a.rnic, s.a.qp, RI_WR_TYPE_SEND, RI_WR_SIGNALED_FLAG, id, &ss, 0, 1, 0,
                        &err);
        ri_rc_wc_t w1 = poll_one(s.a.rnic, s.a.cq);
        ri_rc_wc_t w2 = poll_one(s.b.rnic, s.b.cq);
        benchmark::DoNotOptimize(w1);
        benchmark::DoNotOptimize(w2);
        ++id;
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
BENCHMARK(BM_SendRecv)->Arg(8)->Arg(4096)->Arg(65536);

void BM_RdmaWrite(benchmark::State &state) {
    const size_t size = static_cast<size_t>(state.range(0));
    LoopbackSession s("bench-wr", size);
    ri_err_data_t err = 0;
    ri_data_seg_t ss{};
    ss.addr.vaddr = reinterpret_cast<uintptr_t>(s.a.buf->data);
    ss.tag.ltag = s.a.ltag;
    ss.len = static_cast<uint32_t>(size);
    uint64_t to = reinterpret_cast<uintptr_t>(s.b.buf->data);
    for (auto _ : state) {
        ri_qp_post_rdma_write(s.a.rnic, s.a.qp, RI_WR_TYPE_RDMA_WRITE, RI_WR_SIGNALED_FLAG, 1, &ss,
                              to, s.b.rtag, 1, 0, &err);
        benchmark::DoNotOptimize(poll_one(s.a.rnic, s.a.cq));
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
BENCHMARK(BM_RdmaWrite)->Arg(8)->Arg(4096)->Arg(1 << 20);

void BM_RdmaRead(benchmark::State &state) {
    const size_t size = static_cast<size_t>(state.range(0));
    LoopbackSession s("bench-rd", size);
    ri_err_data_t err = 0;
    ri_data_seg_t ss{};
    ss.addr.vaddr = reinterpret_cast<uintptr_t>(s.a.buf->data);
    ss.tag.ltag = s.a.ltag;
    ss.len = static_cast<uint32_t>(size);
    uint64_t to = reinterpret_cast<uintptr_t>(s.b.buf->data);
    for (auto _ : state) {
        ri_qp_post_rdma_read(s.a.rnic, s.a.qp, RI_WR_TYPE_RDMA_READ, RI_WR_SIGNALED_FLAG, 1, &ss,
                             to, 1, s.b.rtag, &err);
        benchmark::DoNotOptimize(poll_one(s.a.rnic, s.a.cq));
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
BENCHMARK(BM_RdmaRead)->Arg(8)->Arg(4096)->Arg(1 << 20);

// Reference: the copy every transfer above has to make, nothing else.
void BM_Memcpy(benchmark::State &state) {
    const size_t size = static_cast<size_t>(state.range(0));
    softrnic::tools::AlignedBuffer a(size), b(size);
    for (auto _ : state) {
        std::memcpy(b.data, a.data, size);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
BENCHMARK(BM_Memcpy)->Arg(8)->Arg(4096)->Arg(65536)->Arg(1 << 20);

}  // namespace

BENCHMARK_MAIN();
