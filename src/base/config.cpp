#include "base/config.hpp"

#include <array>
#include <cstdlib>

namespace softrnic::base {

namespace {

// The meanings are what README's environment table says, shortened to a line or two.
constexpr std::array<softrnic_env_var_t, 14> kEnvVars{{
    {"SOFTRNIC_TRANSPORT", "auto",
     "transport of new connections: auto (shm to a peer on this host and netns, else TCP), "
     "shm (shm only), tcp (TCP only; listeners do not offer shm). Read when a connection "
     "manager is created."},
    {"SOFTRNIC_PROGRESS_SPIN_US", "20",
     "microseconds a progress thread keeps polling after a wake-up before it sleeps again "
     "(0: never spin). Read once."},
    {"SOFTRNIC_SHM_COPY_THREADS", "measured",
     "shm bulk copies of 256 KiB or more: 1 = one process_vm_readv/writev, 2 = always split "
     "with the copy helper thread; unset = time both and use the faster. Read once."},
    {"SOFTRNIC_SHM_DIRECT_WRITES", "1",
     "0: no placement of RDMA Writes by the initiator over shm (every write goes through "
     "the target's ring). Read once."},
    {"SOFTRNIC_SHM_CMA", "1",
     "0: shm without cross-memory attach; bulk data is copied through shared bounce "
     "buffers."},
    {"SOFTRNIC_GATE_FENCED", "0",
     "1: each gate entry fences its own store instead of relying on membarrier(2). Read "
     "when libsoftrnic loads."},
    {"SOFTRNIC_LOG", "warn",
     "log level: error, warn, info, debug or trace (an invalid value means warn, with a "
     "warning). One line per event on stderr: time, pid:tid, level, subsystem, message. "
     "Read once, at the first log point."},
    {"SOFTRNIC_LOG_SUBSYS", "all",
     "comma-separated subsystems to log: base, engine, rnicpi, transport, tcp, shm, cm, dat "
     "(or all). Read with SOFTRNIC_LOG."},
    {"SOFTRNIC_LOG_FILE", "(stderr)",
     "append log lines to this file instead of stderr; %p in the name is replaced by the "
     "process id. Read with SOFTRNIC_LOG."},
    {"SOFTRNIC_IB_SUBNET", "u<uid>",
     "InfiniBand subnet of new IB instances (letters, digits, '.', '_', '-'; at most 63): "
     "their LID space and part of their derived GUIDs. Read when an IB instance is created "
     "without a subnet in its configuration; an invalid value means the default, with a "
     "warning."},
    {"SOFTRNIC_IB_PORTS", "2",
     "ports of a new IB instance (1-4) created without a port count in its configuration. "
     "An invalid value means 2, with a warning."},
    {"SOFTRNIC_IB_MTU", "4096",
     "active MTU in bytes (256, 512, 1024, 2048 or 4096) of the ports of a new IB instance "
     "created without one in its configuration. An invalid value means 4096, with a "
     "warning."},
    {"SOFTRNIC_STATS", "1",
     "0: keep no counters file (/dev/shm/softrnic-stats.<pid>, read by softrnic stats). "
     "Read at the first count."},
    {"SOFTRNIC_TCP_TIMEOUT_MS", "10000",
     "bound in milliseconds (1000-3600000, or 0 for the kernel's own behaviour) within which a "
     "TCP/iWARP connection whose peer stopped answering (link down, host gone; no FIN or RST) "
     "breaks, idle (keepalive probes) or busy (TCP_USER_TIMEOUT). An invalid value means "
     "10000, with a warning. Read when a TCP connection is set up."},
}};

static_assert(static_cast<size_t>(EnvVar::TcpTimeoutMs) + 1 == kEnvVars.size(),
              "one entry per EnvVar, in its order");

}  // namespace

std::span<const softrnic_env_var_t> env_vars() {
    return kEnvVars;
}

const char *env_value(EnvVar v) {
    return std::getenv(kEnvVars[static_cast<size_t>(v)].name);
}

}  // namespace softrnic::base

// Exported by libsoftrnic.so (libsoftrnic.map); everything else is compiled hidden.
#pragma GCC visibility push(default)
extern "C" const softrnic_env_var_t *softrnic_env_var(unsigned index) {
    auto vars = softrnic::base::env_vars();
    return index < vars.size() ? &vars[index] : nullptr;
}
#pragma GCC visibility pop
