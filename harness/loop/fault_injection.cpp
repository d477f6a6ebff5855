#include "harness/loop/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace trainrepro {
namespace {

// A fault that can never fire (a step 0, a typo) would let a test pass without testing
// anything, so a malformed value is an error naming the variable.
bool fault_due(const char* variable, int64_t rank, int64_t step) {
  const char* value = std::getenv(variable);
  if (value == nullptr) return false;
  long long fault_rank = -1, fault_step = -1;
  char rest = '\0';
  if (std::sscanf(value, "%lld:%lld%c", &fault_rank, &fault_step, &rest) != 2 || fault_rank < 0 ||
      fault_step < 1) {
    throw std::runtime_error(std::string(variable) + "=\"" + value +
                             "\": expected RANK:STEP with RANK >= 0 and STEP >= 1 (the fault "
                             "fires after that many optimizer steps)");
  }
  return fault_rank == rank && fault_step == step;
}

}  // namespace

void inject_faults_after_step(int64_t rank, int64_t optimizer_steps_done) {
  if (fault_due("TRAINREPRO_FAULT_KILL_RANK", rank, optimizer_steps_done)) ::raise(SIGKILL);
  if (fault_due("TRAINREPRO_FAULT_HANG_RANK", rank, optimizer_steps_done)) {
    while (true) ::pause();
  }
}

}  // namespace trainrepro
