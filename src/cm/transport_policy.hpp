// The connection manager's choice between the shared-memory transport and TCP.
//
// Options::transport names the choice; Transport::Env defers it to SOFTRNIC_TRANSPORT
// (auto|shm|tcp; unset or unknown: auto), read once when a manager is created. The result
// says what listen() offers and what connect() tries:
//   auto: listeners offer the shm rendezvous; connect() tries it, then falls back to TCP.
//   shm:  as auto, but a peer the rendezvous cannot reach is Unreachable (no TCP).
//   tcp:  no rendezvous on either side.
// Cross-memory attach on shm connections needs both Options::shm_cma and the shm
// transport's own SOFTRNIC_SHM_CMA switch.
#pragma once

#include "cm/connection_manager.hpp"

namespace softrnic::cm::detail {

struct TransportPolicy {
    Transport mode = Transport::Auto;  // never Env
    bool shm_cma = true;

    bool offers_shm() const { return mode != Transport::Tcp; }  // listen(): bind the rendezvous
    bool tries_shm() const { return mode != Transport::Tcp; }   // connect(): dial it first
    bool falls_back_to_tcp() const { return mode != Transport::Shm; }
};

// The value of SOFTRNIC_TRANSPORT (null: unset) as a choice.
Transport transport_from_env_value(const char *value);

// Pure: `transport_env` is SOFTRNIC_TRANSPORT's value (null: unset), `cma_env` whether the
// shm transport's environment allows CMA.
TransportPolicy resolve_policy(const Options &opts, const char *transport_env, bool cma_env);

// resolve_policy() with the process environment.
TransportPolicy policy_from_env(const Options &opts);

}  // namespace softrnic::cm::detail
