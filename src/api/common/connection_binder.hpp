// Binds an established connection to a QP: the last step of every connection a face sets
// up through the connection manager (src/cm). The manager hands the face the connection's
// LLP stream; the face either gives it to a QP, which moves to RTS on it, or gives it back.
// Either way the stream has exactly one owner from here on: a stream neither bound nor
// released would keep its descriptors (and, over shm, its two mapped segments) open for
// good, and the peer a connection nobody closes.
#pragma once

#include <rnicpi/rnicpi.h>

#include <cstdint>

#include "cm/connection_manager.hpp"

namespace softrnic::api {

// The RDMA Read credits the face configured its QP with.
struct ReadCredits {
    uint32_t outgoing = 0;  // RDMA Reads this QP may have outstanding (ORD)
    uint32_t incoming = 0;  // RDMA Reads it accepts outstanding from the peer (IRD)
};

// Moves `qp` to RTS on the stream `est` hands over, with the credits both sides allow: no
// more outgoing Reads than the peer accepts, room for at least the Reads the peer will send.
// On any failure (a null `qp` included) the stream is released, so the connection ends and
// the peer sees it close. The caller serialises the calls on `qp` (RNICPI L1316-1363).
ri_api_return_t bind_established(ri_rnic_handle_t rnic, ri_qp_handle_t qp,
                                 const cm::Established &est, ReadCredits local);

// Gives back the stream of a connection no QP will take (its consumer went away while it
// was set up), whatever its transport.
void release_established(const cm::Established &est);

}  // namespace softrnic::api
