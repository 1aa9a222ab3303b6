// `softrnic info` and `softrnic info --env`, as text or JSON.
#pragma once

namespace softrnic::tools {

// The attributes of each kind of instance (an iWARP RNIC, an InfiniBand HCA with its ports).
int info(bool json);
// Every declared SOFTRNIC_* variable: default, value now, meaning.
int info_env(bool json);

}  // namespace softrnic::tools
