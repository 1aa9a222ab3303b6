// The shm rendezvous as the connection manager uses it (internal to src/cm/): a listener
// also binds an abstract Unix stream socket named after its (family, address, port)
// (transport/shm/shm.hpp), and connect() to a peer on this host and in this network
// namespace reaches it. The set-up protocol then runs over that socket exactly as over
// TCP, followed by the shm hello (iwarp_engine.cpp).
#pragma once

#include <sys/socket.h>

#include "cm/cm_core.hpp"

namespace softrnic::cm::detail {

// Binds and listens on the rendezvous of a listener bound to `bound`. Best effort: an
// invalid Fd when the name is taken (another listener on the same address and port, e.g.
// SO_REUSEPORT), which leaves that listener reachable over TCP only.
Fd bind_rendezvous(const Address &bound, int backlog);

// Connects to the rendezvous of `addr`: the listener bound to exactly that address, else
// (when the address is one of ours) a wildcard listener on the port. Returns a connected
// Unix socket run by our user, or -1 with `err` (ECONNREFUSED: nobody there, EACCES:
// another user's listener).
int connect_rendezvous(const sockaddr *addr, int &err);

// Whether a socket accepted on a rendezvous comes from our own user (abstract sockets
// have no permissions: this is what keeps other users out).
bool admit_rendezvous(int fd);

// A listener's address as the ConnectRequest of an shm connection reports the peer: the
// same family, the listener's address (loopback for a wildcard listener), port 0 (the
// initiator has no TCP port).
Address rendezvous_peer_address(const Address &listener);

}  // namespace softrnic::cm::detail
