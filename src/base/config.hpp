// The declared configuration: every SOFTRNIC_* environment variable the stack reads, once,
// with its default and meaning (listed by `softrnic info --env` through softrnic_env_var).
// Code reads a variable through env_value(), never through getenv with a spelled-out name,
// so the table cannot fall behind the code (tests/layers checks that no other getenv of a
// SOFTRNIC_ name exists).
#pragma once

#include <cstdint>
#include <span>

#include "softrnic/softrnic.h"

namespace softrnic::base {

enum class EnvVar : uint8_t {
    Transport,
    ProgressSpinUs,
    ShmCopyThreads,
    ShmDirectWrites,
    ShmCma,
    GateFenced,
    Log,
    LogSubsys,
    LogFile,
    IbSubnet,
    IbPorts,
    IbMtu,
    Stats,
    TcpTimeoutMs,
};

// Indexed by EnvVar.
std::span<const softrnic_env_var_t> env_vars();

// The variable's value in the environment, or nullptr when it is unset.
const char *env_value(EnvVar v);

}  // namespace softrnic::base
