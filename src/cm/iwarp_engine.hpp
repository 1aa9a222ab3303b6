// The iWARP protocol engine of the connection manager (internal to src/cm/): the MPA v2
// Request/Reply exchange (RFC 5044 7.1) with the Enhanced IRD/ORD block, the RFC 6581
// ready-to-receive (RTR) of peer-to-peer mode, and on the shm rendezvous the hello that
// follows MPA; it ends by adopting the stream into the TCP or shm transport. The protocol
// choices are listed in connection_manager.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "cm/cm_core.hpp"

namespace softrnic::cm::detail {

class IwarpEngine final : public ProtocolEngine {
  public:
    explicit IwarpEngine(ManagerCore &core) : core_(core) {}

    bool valid(const ConnParams &p) const override;
    std::unique_ptr<Conn> new_initiator(const ConnParams &p, bool over_shm) override;
    std::unique_ptr<Conn> new_responder(bool over_shm) override;
    void on_ready(Conn &c, uint32_t events) override;
    void on_deadline(Conn &c) override;
    CmStatus accept(Conn &c, const ConnParams &p) override;
    CmStatus reject(Conn &c, std::span<const uint8_t> private_data) override;
    void hand_over(ri_llp_stream_handle_t llp, LlpTransport t, uint64_t key) override;

  private:
    ManagerCore &core_;
};

}  // namespace softrnic::cm::detail
