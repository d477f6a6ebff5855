#include "harness/loop/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace trainrepro {
namespace {

bool fault_due(const char* variable, int64_t rank, int64_t step) {
  const char* value = std::getenv(variable);
  long long fault_rank = -1, fault_step = -1;
  return value != nullptr && std::sscanf(value, "%lld:%lld", &fault_rank, &fault_step) == 2 &&
         fault_rank == rank && fault_step == step;
}

}  // namespace

void inject_faults_after_step(int64_t rank, int64_t optimizer_steps_done) {
  if (fault_due("TRAINREPRO_FAULT_KILL_RANK", rank, optimizer_steps_done)) ::raise(SIGKILL);
  if (fault_due("TRAINREPRO_FAULT_HANG_RANK", rank, optimizer_steps_done)) {
    while (true) ::pause();
  }
}

}  // namespace trainrepro
