// How many processes the kernel's out-of-memory killer has ended so far, where this process can
// read it: its memory cgroup's count (cgroup v2 memory.events, v1 memory.oom_control), else the
// machine's (/proc/vmstat, Linux 4.13+). Compared before and after a launch, it tells a rank
// the OOM killer ended (SIGKILL) from one killed by someone else.
#pragma once
#include <cstdint>

namespace trainrepro {

// -1 when no count can be read.
int64_t oom_kill_count();

}  // namespace trainrepro
