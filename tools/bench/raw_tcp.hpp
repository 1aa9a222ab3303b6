// The raw TCP references softrnic's TCP figures are read against, measured by the same
// client/server pair over its own TCP connection:
//   ping-pong (Lat): TCP_NODELAY, both sides busy-poll recv(MSG_DONTWAIT) until the whole
//                    message is in, then send it back; one-way = round trip / 2.
//   stream (Bw):     the client send()s n messages on a blocking socket and waits for the
//                    server's 1-byte acknowledgement after it read them all.
#pragma once

#include "bench/net.hpp"
#include "bench/session.hpp"

namespace softrnic::bench {

class RawTcpSession final : public Session {
  public:
    RawTcpSession(Fd sock, bool pingpong, size_t size, bool server, const AbortCheck *abort);
    PhaseResult run(Phase phase, uint64_t n) override;
    bool has(Phase phase) const override { return (phase == Phase::Lat) == pingpong_; }

  private:
    PhaseResult pingpong(uint64_t n);
    PhaseResult stream(uint64_t n);
    void spin_recv(unsigned char *p, size_t len, Spinner &spin);

    Fd sock_;
    bool pingpong_;
    size_t size_;
    bool server_;
    const AbortCheck *abort_;
    std::vector<unsigned char> buf_;
};

}  // namespace softrnic::bench
