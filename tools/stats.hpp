// `softrnic stats`: the counters of running processes that use softrnic.
#pragma once

namespace softrnic::tools {

// argv[1] is "stats"; options from argv[2]. Returns the exit status.
int stats(int argc, char **argv);

}  // namespace softrnic::tools
