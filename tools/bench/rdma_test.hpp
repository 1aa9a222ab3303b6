// softrnic measurements between two processes, through RNICPI only: one QP per test,
// connected by whatever Connector the transport provides (connector.hpp).
//
// What each phase does (the client times it; "server" is the responder process):
//   send  Lat  ping-pong: post a send, busy-poll the CQ (ri_cq_poll) for the reply's
//              receive completion; the server does the same. One-way = round trip / 2.
//         Bw   a window of sends in flight; the server reposts each receive at once and
//              returns a credit message every `window` receives (iWARP has no RNR retry:
//              a send without a posted receive is fatal); ends when all are consumed.
//   write Lat  ping-pong of RDMA Writes, like perftest's ib_write_lat: each side
//              busy-polls the last byte of its receive buffer (and its CQ) for the peer's
//              write. One-way = round trip / 2.
//         Bw   a window of RDMA Writes in flight, then a 1-byte RDMA Read that orders
//              after them: its completion proves every write was placed. Server passive.
//   read  Lat  one RDMA Read at a time, busy-polling the CQ: a round trip (not halved).
//         Bw   a window of RDMA Reads in flight. Server passive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/common.hpp"
#include "bench/connector.hpp"
#include "bench/session.hpp"
#include "rnicpi/rnicpi.h"

namespace softrnic::tools {
struct AlignedBuffer;
}

namespace softrnic::bench {

// One software RNIC instance for the process, open, with a PD.
class Rnic {
  public:
    explicit Rnic(const std::string &name);
    ~Rnic();
    Rnic(const Rnic &) = delete;
    Rnic &operator=(const Rnic &) = delete;

    ri_vp_handle_t vp = nullptr;
    ri_rnic_handle_t rnic = nullptr;
    ri_pd_handle_t pd = nullptr;

  private:
    void close();
};

// Connection set-up runs (--connections): `n` QPs created up front on one CQ, each moved to
// RTS on a link as its connection is established; no data moves. Destroying the set
// destroys the QPs (their streams close).
class QpSet {
  public:
    QpSet(Rnic &rnic, size_t n);
    ~QpSet();
    QpSet(const QpSet &) = delete;
    QpSet &operator=(const QpSet &) = delete;

    // The private data each side sends (dtestcm's 48 bytes) and the check of the peer's.
    static std::vector<uint8_t> private_data(bool server);
    static bool peer_data_ok(const std::vector<uint8_t> &peer, bool peer_is_server);
    // QP `i` takes `link` (ri_qp_modify to RTS).
    void start(size_t i, Link link);
    size_t size() const { return qps_.size(); }

  private:
    void close();
    Rnic &r_;
    ri_cq_handle_t cq_ = nullptr;
    std::vector<ri_qp_handle_t> qps_;
};

class RdmaSession final : public Session {
  public:
    RdmaSession(Rnic &rnic, Op op, size_t size, unsigned window, WaitPolicy wait, bool server,
                const AbortCheck *abort);
    ~RdmaSession() override;

    // Private data for the connection request/reply: this side's buffer (VA, STag).
    std::vector<uint8_t> private_data() const;
    // Moves the QP to RTS on `link` and records the peer's buffer from its private data.
    void start(Link link);

    PhaseResult run(Phase phase, uint64_t n) override;
    bool has(Phase) const override { return true; }
    bool passive(Phase phase) const override;

  private:
    void close();
    struct Wc {
        uint64_t id;
        uint32_t len;
    };
    // Polls up to `max` completions into `out`; throws on a failed one.
    unsigned poll(Wc *out, unsigned max);
    // Polls until every posted send-queue work request has completed.
    void drain_sq(Spinner &spin);
    void post_send(uint64_t id, size_t off, size_t len);
    void post_recv(uint64_t id, size_t off, size_t len);
    void post_write(uint64_t id, size_t off, size_t len, size_t remote_off);
    void post_read(uint64_t id, size_t off, size_t len, size_t remote_off);
    uint8_t next_flag() { return static_cast<uint8_t>(flag_seq_++ % 255 + 1); }

    PhaseResult send_lat(uint64_t n);
    PhaseResult send_bw(uint64_t n);
    PhaseResult write_lat(uint64_t n);
    PhaseResult one_sided_bw(uint64_t n, bool write);
    PhaseResult read_lat(uint64_t n);

    Rnic &r_;
    Op op_;
    size_t size_;
    unsigned window_;
    WaitPolicy wait_;
    bool server_;
    const AbortCheck *abort_;
    size_t slot_;     // size rounded up: send area at 0, receive area at slot_
    size_t ctrl_;     // small control area after both
    uint32_t rq_;     // receives kept posted
    uint32_t group_;  // server: receives per credit message (send Bw)
    uint64_t flag_seq_ = 0;
    uint64_t sq_outstanding_ = 0;  // signalled send-queue WRs not yet polled
    uint64_t peer_va_ = 0;
    uint32_t peer_rtag_ = 0;
    ri_cq_handle_t cq_ = nullptr;
    ri_qp_handle_t qp_ = nullptr;
    ri_mr_handle_t mr_ = nullptr;
    ri_ltag_t ltag_ = 0;
    ri_rtag_t rtag_ = 0;
    std::unique_ptr<tools::AlignedBuffer> buf_;
};

}  // namespace softrnic::bench
