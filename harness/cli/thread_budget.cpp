#include "harness/cli/thread_budget.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <ATen/Parallel.h>

namespace trainrepro {
namespace {

// A positive integer from the environment, or 0 when the variable is unset.
int positive_from_environment(const char* variable) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > 4096) {
    throw std::invalid_argument(std::string(variable) + ": expected a positive integer, found \"" +
                                text + "\"");
  }
  return static_cast<int>(value);
}

}  // namespace

int launcher_world_size() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* text = std::getenv(variable)) {
      const int size = std::atoi(text);
      if (size > 0) return size;
    }
  }
  return 1;
}

int choose_intra_op_threads() {
  if (const int chosen = positive_from_environment("TRAINREPRO_THREADS")) return chosen;
  return 1;
}

void cap_torch_threads() {
  const int threads = choose_intra_op_threads();
  at::set_num_threads(threads);
  // The inter-op pool only serves parallel autograd on several devices; one thread is enough.
  at::set_num_interop_threads(1);
}

}  // namespace trainrepro
