#include "harness/scenario/memory_judging_steps.h"

#include <algorithm>

namespace trainrepro {

int64_t memory_judging_window(const MemorySpec& memory,
                              const std::optional<EvaluationSpec>& evaluation) {
  const int64_t period = evaluation ? evaluation->every : 1;
  return std::max(memory.window, period + 1);
}

int64_t steps_to_judge_memory(const MemorySpec& memory,
                              const std::optional<EvaluationSpec>& evaluation) {
  return memory.warmup_steps +
         boundaries_to_judge_memory(memory_judging_window(memory, evaluation));
}

}  // namespace trainrepro
