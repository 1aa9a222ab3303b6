// In-process loopback transport: two QPs of this process (same or different RNIC
// instances) connected directly. Every operation runs to completion inside the poster's
// call: the initiator's thread performs the responder's checks and the copy, single-copy
// from the source SGEs into the target memory.
#pragma once

#include "rnicpi/rnicpi.h"

namespace softrnic::transport::loopback {

// Nothing to do: pairs go to the LLP registry when made (kept for callers).
void ensure_registered();

ri_api_return_t make_pair(ri_llp_stream_handle_t &a, ri_llp_stream_handle_t &b);
ri_api_return_t close_unclaimed(ri_llp_stream_handle_t h);

}  // namespace softrnic::transport::loopback
