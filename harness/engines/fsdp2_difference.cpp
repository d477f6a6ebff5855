#include "harness/engines/fsdp2_difference.h"

namespace trainrepro {

std::optional<std::string> fsdp2_difference(const Scenario& scenario, const Verdict& verdict) {
  const LoopSpec& loop = scenario.loop;
  // DeepSpeed 0.18.3+ hooks engine(x)'s outputs so that loss.backward() is scaled by 1/GAS as
  // engine.backward(loss) is; FSDP2 has no engine between the loop and autograd.
  if (verdict.outcome == Outcome::failed && loop.loss_scaling == LossScalingHabit::none) {
    return "on FSDP2 this loop is the bug: nothing but the loop divides the loss by "
           "gradient_accumulation_steps, and loss.backward() of the undivided loss accumulates "
           "GAS times the gradient (DeepSpeed 0.18.3+ scales a loss.backward() after engine(x) "
           "at ZeRO 1-3 as engine.backward(loss) would, so there the same loop is right)";
  }
  // torch 2.11, _fsdp_param.py / _fsdp_param_group.py: with gradient sync off, backward leaves
  // the gradients in the unsharded parameters; only a synced backward reduce-scatters them into
  // the sharded .grad the optimizer steps on. DeepSpeed's no_sync() leaves each rank's own
  // gradient in .grad instead, and steps on it.
  if (verdict.outcome == Outcome::failed && turns_sync_off(loop.gradient_sync)) {
    return "on FSDP2 the same sync switch loses gradients instead of leaving them unreduced: "
           "while set_requires_gradient_sync is False the gradients stay in FSDP2's unsharded "
           "parameters, out of the optimizer's reach, until a synced backward reduce-scatters "
           "them (DeepSpeed's no_sync() leaves each rank's own gradient in .grad and steps on "
           "it, which one rank cannot tell from the average). What FSDP2 did: " +
           verdict.diagnosis;
  }
  if (verdict.outcome != Outcome::not_reproduced) return std::nullopt;
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
  // DeepSpeed 0.19.8, runtime/fp16/fused_optimizer.py (initialize_optimizer_states): ZeRO 0's
  // FP16_Optimizer, which also carries bf16 accumulated in bf16, steps once when it is built.
  if (scenario.expect.diagnosis == DiagnosisKind::optimizer_stepped_at_initialization) {
    return "on FSDP2 nothing steps the optimizer before the first window: the torch optimizer "
           "starts at step 0 (DeepSpeed's FP16_Optimizer at ZeRO 0 steps it once with zero "
           "gradients when it is built)";
  }
  return std::nullopt;
}

}  // namespace trainrepro
