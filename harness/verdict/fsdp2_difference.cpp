#include "harness/verdict/fsdp2_difference.h"

namespace trainrepro {

std::optional<std::string> fsdp2_difference(const Scenario& scenario, const Verdict& verdict) {
  if (verdict.outcome != Outcome::not_reproduced) return std::nullopt;
  const LoopSpec& loop = scenario.loop;
  // torch 2.11, torch/distributed/fsdp/_fully_shard/_fsdp_param.py: while gradient sync is off,
  // backward accumulates into the unsharded parameters' .grad, which are not the parameters the
  // optimizer holds; the window's last micro-step reduce-scatters them into the sharded .grad.
  if (loop.zero_grad == ZeroGradHabit::every_micro_step) {
    return "on FSDP2 this habit loses nothing: with set_requires_gradient_sync(False) inside the "
           "window, backward accumulates into FSDP2's unsharded parameters, not into the sharded "
           ".grad the optimizer holds, and optimizer.zero_grad() clears only those; the window's "
           "last micro-step reduce-scatters the whole window (DeepSpeed's zero_grad() at ZeRO 0-1 "
           "clears the accumulated gradients themselves)";
  }
  // DeepSpeed's engine.step() counts micro-steps and steps the optimizer at its own boundary;
  // an FSDP2 loop has no such counter.
  if (loop.stepping == SteppingHabit::once_per_window) {
    return "on FSDP2 this is the correct loop: the loop itself decides when the optimizer steps, "
           "and stepping once per window of gradient_accumulation_steps micro-steps is that "
           "(DeepSpeed's engine.step() counts micro-steps itself, so calling it once per window "
           "moves its boundary to every GAS² micro-batches)";
  }
  return std::nullopt;
}

}  // namespace trainrepro
