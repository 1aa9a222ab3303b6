// The base building blocks (src/base/) the engine names without their namespace.
#pragma once

#include "base/slot_queue.hpp"
#include "base/sync.hpp"

namespace softrnic::engine {

using base::cpu_relax;
using base::Gate;
using base::GateGuard;
using base::GateScope;
using base::kCacheLine;
using base::mono_ns;
using base::relax;
using base::round_up_pow2;
using base::ScopedGate;
using base::SlotQueue;

}  // namespace softrnic::engine
