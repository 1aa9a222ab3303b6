#include "cm/transport_policy.hpp"

#include <cstdlib>
#include <cstring>

#include "base/config.hpp"
#include "transport/shm/shm.hpp"

namespace softrnic::cm::detail {

Transport transport_from_env_value(const char *v) {
    if (!v) return Transport::Auto;
    if (std::strcmp(v, "shm") == 0) return Transport::Shm;
    if (std::strcmp(v, "tcp") == 0) return Transport::Tcp;
    return Transport::Auto;
}

TransportPolicy resolve_policy(const Options &opts, const char *transport_env, bool cma_env) {
    TransportPolicy p;
    p.mode =
        opts.transport == Transport::Env ? transport_from_env_value(transport_env) : opts.transport;
    p.shm_cma = opts.shm_cma && cma_env;
    return p;
}

TransportPolicy policy_from_env(const Options &opts) {
    return resolve_policy(opts, base::env_value(base::EnvVar::Transport),
                          transport::shm::cma_allowed_by_env());
}

}  // namespace softrnic::cm::detail
