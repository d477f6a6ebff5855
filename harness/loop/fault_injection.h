// Fault injection for the harness's own tests of multi-rank failure handling: a rank that dies
// or hangs mid-run must end the whole run with a clear error, never a hang. Driven by
// environment variables so production runs are untouched unless a test sets them:
//   TRAINREPRO_FAULT_KILL_RANK=R:S  rank R kills itself (SIGKILL) after optimizer step S
//   TRAINREPRO_FAULT_HANG_RANK=R:S  rank R stops responding after optimizer step S
#pragma once
#include <cstdint>

namespace trainrepro {

void inject_faults_after_step(int64_t rank, int64_t optimizer_steps_done);

}  // namespace trainrepro
