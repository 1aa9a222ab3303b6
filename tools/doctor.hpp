// `softrnic doctor`: what this machine lacks for softrnic, each with its fix.
#pragma once

namespace softrnic::tools {

// argv[1] is "doctor"; options from argv[2]. Returns the exit status: 0 when nothing softrnic
// needs is missing, 1 when a check failed, 2 for a bad option.
int doctor(int argc, char **argv);

}  // namespace softrnic::tools
