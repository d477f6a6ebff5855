#include "harness/loop/trainer_micro_step.h"

#include <ATen/ATen.h>

#include "harness/engine/reference_engine.h"
#include "harness/loop/micro_step_habits.h"

namespace trainrepro {

void backward_as_the_trainer_does(ReferenceEngine& engine, const at::Tensor& loss,
                                  const LoopSpec& loop, const Plan& plan, bool sync) {
  const TrainerLoopSpec& trainer = *plan.trainer;
  // accelerate (1.8.0+) DeepSpeedEngineWrapper.backward: the GradientState's sync_gradients,
  // which the Trainer set for this micro-batch, becomes DeepSpeed's boundary before backward.
  if (trainer.explicit_boundary) engine.set_gradient_accumulation_boundary(sync);
  if (loop.loss_scaling == LossScalingHabit::none) {
    // A Trainer release whose loss reached backward undivided (4.46.0-4.46.1 multiplied it by
    // GAS before accelerate's division), modelled as the loop's own loss.backward().
    // (loop.gradient_sync is refused with hf_trainer: window_starts changes nothing here.)
    backward_as_the_loop_does(engine, loss, loop, plan, /*window_starts=*/true);
  } else {
    // Trainer.training_step: loss / current_gradient_accumulation_steps (or the token sum over
    // num_items_in_batch, which user_loss already gives times the window), then DeepSpeed's
    // engine.backward with scale_wrt_gas=False: no second division by DeepSpeed's GAS.
    engine.backward(loss / static_cast<double>(trainer.gradient_accumulation_steps),
                    /*scale_wrt_gas=*/false);
  }
}

void step_as_the_trainer_does(ReferenceEngine& engine, const Plan& plan, bool sync) {
  // engine.step() only when syncing (1.8.0+); after every backward before, where DeepSpeed's
  // micro-step counter decides whether it steps.
  if (sync || !plan.trainer->explicit_boundary) engine.step();
}

}  // namespace trainrepro
