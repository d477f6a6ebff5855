#include "harness/verdict/habit_visibility.h"

namespace trainrepro {
namespace {

std::string beyond(const Scenario& scenario, const std::string& pointer, const std::string& habit,
                   int64_t first_affected_step) {
  const int64_t compared = scenario.golden.steps;
  return scenario.file + ":" + pointer + ": " + habit + " first changes optimizer step " +
         std::to_string(first_affected_step) + ", but only steps 0…" +
         std::to_string(compared - 1) + " are compared with the golden, so it cannot show; set " +
         "golden.steps to at least " + std::to_string(first_affected_step + 1);
}

}  // namespace

std::vector<std::string> habits_beyond_compared_steps(const Scenario& scenario) {
  std::vector<std::string> warnings;
  const LoopSpec& loop = scenario.loop;
  const int64_t compared = scenario.golden.steps;
  // The evaluation after step k leaves its gradients in step k's successor (0-based index k).
  if (loop.evaluation && loop.evaluation->backward && loop.evaluation->every >= compared) {
    warnings.push_back(beyond(scenario, "/loop/evaluation/every",
                              "an evaluation calling backward() every " +
                                  std::to_string(loop.evaluation->every) + " steps",
                              loop.evaluation->every));
  }
  // Gradients never zeroed pile up from the second step on.
  if (loop.zero_grad == ZeroGradHabit::never && compared < 2) {
    warnings.push_back(beyond(scenario, "/loop/zero_grad", "never zeroing gradients", 1));
  }
  return warnings;
}

}  // namespace trainrepro
