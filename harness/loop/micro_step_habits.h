// What the user's loop does in one micro-step around the engine, habit by habit: the loss it
// computes (token normalisation, dividing by GAS itself), which backward it calls (inside
// no_sync() or not), and how it steps (engine.step() every micro-step or once per window,
// optimizer.step() around the engine).
#pragma once
#include <cstdint>

#include <ATen/Tensor.h>

#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

class ReferenceEngine;

// The user's loss for one micro-batch, before the engine's 1/GAS. With whole-batch
// normalisation the token losses are divided by the tokens of the whole window (times GAS, so
// that the engine's 1/GAS leaves sum/window_items): what Hugging Face's num_items_in_batch
// fix does. For sample data both normalisations coincide.
at::Tensor user_loss(const at::Tensor& loss_sum, int64_t micro_items, double window_items,
                     const LoopSpec& loop, int64_t gas);

// engine.backward(loss), or the loop's own loss.backward(): plain autograd, unless the release
// hooks the engine's forward outputs (then it scales and reduces as engine.backward does; at
// stage 0 such a loop was refused before training).
// Inside engine.no_sync() where `gradient_sync` turns the sync off for this backward
// (`window_starts`: the first backward of the loop's window).
void backward_as_the_loop_does(ReferenceEngine& engine, const at::Tensor& loss,
                               const LoopSpec& loop, const Plan& plan, bool window_starts);

// What the loop calls after each backward; `window_ends` after GAS backwards.
void step_as_the_loop_does(ReferenceEngine& engine, const LoopSpec& loop, bool window_ends);

}  // namespace trainrepro
