// A connected QP pair on the loopback transport, set up through RNICPI only: what the
// `softrnic` command and the micro-benchmarks drive. Not a test fixture (tests have their
// own, with assertions); this one reports failures as exceptions to its caller.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rnicpi/rnicpi.h"
#include "softrnic/softrnic.h"

namespace softrnic::tools {

inline void check(ri_api_return_t r, const char *what) {
    if (r != RI_RET_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed: " + std::to_string(r));
}

struct AlignedBuffer {
    explicit AlignedBuffer(size_t n) : size(n ? n : 1) {
        data = static_cast<unsigned char *>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096));
        if (!data) throw std::bad_alloc();
        std::memset(data, 0, size);
    }
    ~AlignedBuffer() { std::free(data); }
    AlignedBuffer(const AlignedBuffer &) = delete;
    AlignedBuffer &operator=(const AlignedBuffer &) = delete;
    unsigned char *data;
    size_t size;
};

// Two RNIC instances ("a" and "b"), one QP each, connected by a loopback LLP pair, with one
// registered buffer per side of `buf_size` bytes.
class LoopbackSession {
  public:
    struct Side {
        ri_vp_handle_t vp = nullptr;
        ri_rnic_handle_t rnic = nullptr;
        ri_pd_handle_t pd = nullptr;
        ri_cq_handle_t cq = nullptr;
        ri_qp_handle_t qp = nullptr;
        ri_mr_handle_t mr = nullptr;
        ri_ltag_t ltag = 0;
        ri_rtag_t rtag = 0;
        std::unique_ptr<AlignedBuffer> buf;
    };

    LoopbackSession(const std::string &tag, size_t buf_size, uint32_t depth = 256) {
        open(a, tag + "-a", buf_size, depth);
        open(b, tag + "-b", buf_size, depth);
        ri_llp_stream_handle_t la = 0, lb = 0;
        check(softrnic_loopback_pair(&la, &lb), "softrnic_loopback_pair");
        to_rts(a, la);
        to_rts(b, lb);
    }

    ~LoopbackSession() {
        close(b);
        close(a);
    }

    LoopbackSession(const LoopbackSession &) = delete;
    LoopbackSession &operator=(const LoopbackSession &) = delete;

    Side a, b;

  private:
    static void open(Side &s, const std::string &name, size_t buf_size, uint32_t depth) {
        ri_err_data_t err = 0;
        check(softrnic_vp_create(name.c_str(), &s.vp), "softrnic_vp_create");
        check(ri_rnic_open(s.vp, RI_PHYS_PAGE_LIST_MODE, nullptr, &err), "ri_rnic_open");
        check(ri_rnic_get_hdl(s.vp, RI_CONSUMER_LOCATION_KERNEL, &s.rnic, nullptr, nullptr, &err),
              "ri_rnic_get_hdl");
        check(ri_pd_alloc(s.rnic, &s.pd, nullptr, nullptr, &err), "ri_pd_alloc");
        ri_cq_attr_t ca{};
        ca.num_cqe = depth * 2;
        check(ri_cq_create(s.rnic, &ca, &s.cq, nullptr, nullptr, &err), "ri_cq_create");
        ri_qp_attr_t qa{};
        qa.scq.scq_handle = s.cq;
        qa.rcq.rcq_handle = s.cq;
        qa.pd = s.pd;
        qa.sq_size = depth;
        qa.rq_size = depth;
        qa.sq_max_sges = 1;
        qa.sq_max_sges_rdmaw = 1;
        qa.rq_max_sges = 1;
        qa.enable_rdma_read = 1;
        qa.enable_rdma_write = 1;
        qa.max_rdma_read_outgoing = 16;
        qa.max_rdma_read_incoming = 16;
        check(ri_qp_create(s.rnic, &qa, &s.qp, nullptr, nullptr, &err), "ri_qp_create");
        s.buf = std::make_unique<AlignedBuffer>(buf_size);
        ri_mr_reg_attr_t ma{};
        ma.va = reinterpret_cast<uintptr_t>(s.buf->data);
        ma.length = s.buf->size;
        ma.mem_attr = static_cast<ri_mem_attr_t>(RI_MEM_FLAGS_LOCAL | RI_MEM_FLAGS_REMOTE);
        ma.pd = s.pd;
        check(ri_mr_reg(s.rnic, &ma, &s.mr, &s.ltag, &s.rtag, nullptr, nullptr, &err), "ri_mr_reg");
    }

    static void to_rts(Side &s, ri_llp_stream_handle_t llp) {
        ri_err_data_t err = 0;
        ri_qp_attr_t qa{};
        qa.state = RI_QP_STATE_READY_TO_SEND;
        qa.qp_xport.qp_iwarp.llp_stream_handle = llp;
        check(ri_qp_modify(s.rnic, s.qp,
                           static_cast<ri_qp_attr_mask_t>(RI_QP_ATTR_NEXT_STATE |
                                                          RI_QP_ATTR_LLQ_STREAM_HANDLE),
                           &qa, &err),
              "ri_qp_modify(RTS)");
    }

    static void close(Side &s) {
        ri_err_data_t err = 0;
        if (!s.vp) return;
        if (s.qp) ri_qp_destroy(s.rnic, s.qp, &err);
        if (s.mr) ri_mr_dereg(s.rnic, s.mr, &err);
        if (s.cq) ri_cq_destroy(s.rnic, s.cq, &err);
        if (s.pd) ri_pd_dealloc(s.rnic, s.pd, &err);
        if (s.rnic) ri_rnic_free_hdl(s.vp, s.rnic, &err);
        ri_rnic_close(s.vp, &err);
        softrnic_vp_destroy(s.vp);
    }
};

// Polls until one completion arrives and returns it. Loopback completes every WR inside
// the post, so a completion that is not there after many polls never will be.
inline ri_rc_wc_t poll_one(ri_rnic_handle_t rnic, ri_cq_handle_t cq) {
    ri_wc_t wc;
    ri_err_data_t err = 0;
    for (int tries = 0; tries < 1000000; ++tries) {
        uint_t n = 1;
        ri_api_return_t r = ri_cq_poll(rnic, cq, &wc, &n, &err);
        if (r == RI_RET_SUCCESS) {
            if (wc.rc_wc.op_status != RI_WC_STATUS_SUCCESS)
                throw std::runtime_error("work completion failed: status " +
                                         std::to_string(wc.rc_wc.op_status));
            return wc.rc_wc;
        }
        if (r != RI_RET_CQ_EMPTY) check(r, "ri_cq_poll");
    }
    throw std::runtime_error("no completion arrived");
}

}  // namespace softrnic::tools
