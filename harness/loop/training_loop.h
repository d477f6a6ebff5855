// The user's training loop, as the scenario describes it: the correct DeepSpeed loop by
// default, or with the habits that break accumulation (zeroing inside the window, scaling the
// loss twice, stepping the optimizer around the engine, per-micro-batch token averages).
#pragma once
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Runs until `loop.steps` optimizer steps have happened, feeding micro-batch m the samples
// [m * MB, (m + 1) * MB). Throws std::runtime_error if the loop never steps that often.
Trace run_training_loop(const ModelSpec& model, const DataSpec& data, const LoopSpec& loop,
                        const Plan& plan);

}  // namespace trainrepro
