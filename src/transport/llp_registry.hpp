// The one table of LLP stream handles that a transport issued and no QP has claimed yet
// (RNICPI L1720-1781). Each entry owns what its connection holds until then (a socket,
// mapped segments, a deferred handshake message); claiming turns it into a Channel,
// releasing it closes everything it holds. One table for every transport, so that whoever
// gives a connection up (the connection manager, a face) needs no transport's private API.
#pragma once

#include <cstdint>
#include <memory>

#include "rnicpi/rnicpi.h"
#include "transport/transport.hpp"

namespace softrnic::transport::llp {

// One issued, unclaimed connection. Destroying it releases what it holds.
class UnclaimedStream {
  public:
    virtual ~UnclaimedStream() = default;
    // Turns the connection into a channel on `progress` (the claiming RNIC's); nullptr when
    // that fails. Called once, after the entry left the table; the entry is destroyed
    // afterwards, so whatever the channel keeps must be moved out of it.
    virtual std::unique_ptr<Channel> claim(ri_llp_stream_handle_t h, ProgressEngine &progress) = 0;
    // Sends the handshake message the transport deferred until the consumer has seen the
    // connection (shm hello, MPA Reply), if `key` names this hand-over. Called under the
    // table's lock, so the entry cannot be claimed or released meanwhile.
    virtual bool send_deferred(ri_llp_stream_handle_t h, uint64_t key) {
        (void)h, (void)key;
        return false;
    }
};

// Publishes `s` under `h`; the table owns it until it is claimed or released. False (and
// `s` is destroyed) when `h` is already in the table.
bool publish(ri_llp_stream_handle_t h, std::unique_ptr<UnclaimedStream> s);
// Removes the entry of `h` and returns it (nullptr when unknown or claimed, or when `pred`
// is given and says no).
std::unique_ptr<UnclaimedStream> take(ri_llp_stream_handle_t h,
                                      bool (*pred)(const UnclaimedStream &) = nullptr);
// Sends the deferred handshake message of `h` (UnclaimedStream::send_deferred).
bool send_deferred(ri_llp_stream_handle_t h, uint64_t key);
// Closes an issued handle no QP claimed: everything it holds is released and the peer
// sees the connection end. False when unknown or already claimed.
bool release(ri_llp_stream_handle_t h);
bool is_unclaimed(ri_llp_stream_handle_t h);

}  // namespace softrnic::transport::llp
