// One micro-batch of the Hugging Face Trainer's own loop under DeepSpeed, after the forward:
// transformers 5.24.0 Trainer.training_step (the loss divided by the Trainer's window, then
// accelerator.backward(loss, scale_wrt_gas=False)) and accelerate's
// DeepSpeedEngineWrapper.backward (the boundary handed to DeepSpeed and engine.step() at the
// window's end from 1.8.0; engine.step() after every backward before). Rules and citations:
// harness/scenario/hf_trainer_release.h.
#pragma once
#include <ATen/Tensor.h>

#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

class ReferenceEngine;

// accelerator.backward as the Trainer calls it. `loss` is the loop's loss before any division
// by the window (micro_step_habits.h user_loss with the Trainer's window as GAS); `sync` is the
// Trainer's do_sync_step: the window's last micro-batch. plan.trainer must be set.
void backward_as_the_trainer_does(ReferenceEngine& engine, const at::Tensor& loss,
                                  const LoopSpec& loop, const Plan& plan, bool sync);

// The engine.step() inside accelerate's wrapper, right after that backward.
void step_as_the_trainer_does(ReferenceEngine& engine, const Plan& plan, bool sync);

}  // namespace trainrepro
