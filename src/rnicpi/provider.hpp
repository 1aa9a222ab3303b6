// Internal glue between the ops tables (*_ops.cpp) and the host services (host_services.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "rnicpi/rnicpi.h"

namespace softrnic::engine {
class Device;
class Qp;
struct RnicHandle;
}  // namespace softrnic::engine

namespace softrnic::rnicpi {

const ri_ops_t *consumer_serialised_ops();
const ri_ops_t *provider_serialised_ops();

void register_rnic(engine::RnicHandle *r);
void unregister_rnic(engine::RnicHandle *r);

// ri_rnic_query's caller-sized buffer protocol (L2217-2292): the checks every instance
// shares, then its transport's layout (iWARP here, InfiniBand in ib_query.cpp).
ri_api_return_t fill_rnic_attr(engine::Device &d, uint32_t flags, ri_rnic_attr_t *attrs,
                               uint_t *attr_size);
// The same for an InfiniBand instance; `flags` and `attr_size` are checked already.
ri_api_return_t fill_ib_rnic_attr(engine::Device &d, uint32_t flags, ri_rnic_attr_t *attrs,
                                  uint_t *attr_size);
// The transport-independent attributes (limits, vendor) every instance reports alike.
void fill_common_rnic_attr(engine::Device &d, ri_rnic_attr_t &a);
std::string diag_rnic(engine::Device &d, bool dump);
std::string diag_qp(engine::Qp &qp);

}  // namespace softrnic::rnicpi
