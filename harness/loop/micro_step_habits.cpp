#include "harness/loop/micro_step_habits.h"

#include <ATen/ATen.h>

#include "harness/engine/reference_engine.h"

namespace trainrepro {

at::Tensor user_loss(const at::Tensor& loss_sum, int64_t micro_items, double window_items,
                     const LoopSpec& loop, int64_t gas) {
  at::Tensor loss = loop.token_normalisation == TokenNormalisation::whole_batch
                        ? loss_sum * (static_cast<double>(gas) / window_items)
                        : loss_sum / static_cast<double>(micro_items);
  if (loop.loss_scaling == LossScalingHabit::twice) loss = loss / static_cast<double>(gas);
  return loss;
}

void backward_as_the_loop_does(ReferenceEngine& engine, const at::Tensor& loss,
                               const LoopSpec& loop, const Plan& plan, bool window_starts) {
  // `with engine.no_sync():` around the backward where the loop turns the sync off.
  engine.set_inside_no_sync(!syncs_gradients(loop.gradient_sync, window_starts));
  if (loop.loss_scaling == LossScalingHabit::none && !plan.direct_backward_through_engine) {
    loss.backward();
  } else {
    engine.backward(loss);
  }
  engine.set_inside_no_sync(false);
}

void step_as_the_loop_does(ReferenceEngine& engine, const LoopSpec& loop, bool window_ends) {
  switch (loop.stepping) {
    case SteppingHabit::every_micro_step:
      if (loop.zero_grad == ZeroGradHabit::never) {
        if (window_ends) engine.optimizer_step_bypassing_engine();
      } else {
        engine.step();
      }
      break;
    case SteppingHabit::once_per_window:
      if (window_ends) engine.step();
      break;
    case SteppingHabit::optimizer_every_micro_step:
      engine.optimizer_step_bypassing_engine();
      engine.zero_grad();
      break;
  }
  if (loop.lr_scheduler_step == LrSchedulerStepping::every_micro_step) {
    engine.step_lr_scheduler_from_loop();
  }
}

}  // namespace trainrepro
