#include "transport/ib/rc_channel.hpp"

#include <mutex>
#include <shared_mutex>
#include <thread>

#include "transport/ib/datagram_fabric.hpp"
#include "transport/ib_port.hpp"
#include "transport/local_delivery.hpp"

namespace softrnic::transport::ib {

namespace {

class RcChannel final : public Channel {
  public:
    explicit RcChannel(const IbPathBinding &b) : b_(b), slid_(b.hca->lid(b.port)) {}

    // Arrivals reach the QP through its binding in the fabric (Hca::bind_datagram), whose
    // removal waits out the deliveries in progress: nothing to start or stop here.
    void attach(Endpoint *) override {}
    void detach() override {}

    OpResult submit(const OutboundOp &op) override {
        // RNR (IBA 1.2 ch. 9): the responder had no receive and is unchanged; the requester
        // tries again. In the process there is no timer source yet: the retries follow at
        // once, so one succeeds only when another thread posts the receive meanwhile.
        for (uint32_t rnr = 0;; ++rnr) {
            RxStatus st;
            {
                std::shared_lock fl(fabric::lock());
                Hca *to = nullptr;
                uint8_t to_port = 0;
                Endpoint *peer =
                    fabric::find(b_.hca->subnet(), b_.dlid, b_.remote_qpn, to, to_port);
                // Not paired: the responder says nothing (section 7.2, silence).
                if (!peer || !peer->rx_rc_accepts(slid_, b_.local_qpn, b_.pkey))
                    return {OpOutcome::Disconnected, RemoteFault::ConnectionLost};
                st = deliver_local(*peer, op);
            }
            if (st.ok) return {OpOutcome::Done, {}};
            if (st.fault != RemoteFault::NoReceiveBuffer || rnr >= b_.rnr_retry)
                return {OpOutcome::Terminated, st.fault, st.op};
            std::this_thread::yield();
        }
    }

    // IB has no Terminate: a responder fault is the NAK of the operation that met it, which
    // submit() returns; a QP leaving RTS tells its peer nothing (the peer hears silence).
    void terminate(const FaultReport &) override {}
    void close(CloseKind) override {}

  private:
    IbPathBinding b_;
    ri_lid_t slid_;
};

}  // namespace

std::unique_ptr<Channel> claim_path(const IbPathBinding &b) {
    if (!b.hca) return nullptr;
    return std::make_unique<RcChannel>(b);
}

}  // namespace softrnic::transport::ib
