// Entry points of `softrnic bench`.
#pragma once

#include "bench/common.hpp"

namespace softrnic::bench {

// In-process loopback transport: two RNIC instances in this process.
int run_loopback(const Options &o);

// Two-process runs over a connecting transport (tcp today): the server side
// (--server), the client side (--connect), or both (spawns the server, then is its
// client).
int run_server(const Options &o);
int run_client(const Options &o);

}  // namespace softrnic::bench
