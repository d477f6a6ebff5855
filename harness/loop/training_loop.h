// The user's training loop, as the scenario describes it: the correct DeepSpeed loop by
// default, or with the habits that break accumulation (zeroing inside the window, scaling the
// loss twice, stepping the optimizer around the engine, per-micro-batch token averages).
#pragma once
#include "harness/distributed/communicator.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Evaluation batches come from far beyond any training sample, so they never overlap.
constexpr int64_t kEvaluationFirstSample = int64_t{1} << 20;
int64_t evaluation_first_sample(int64_t evaluation_index, int64_t batch_in_evaluation,
                                int64_t batches_per_evaluation, int64_t micro_batch);

// Runs until `loop.steps` optimizer steps have happened, feeding micro-batch m the samples
// [m * MB, (m + 1) * MB), sampling memory throughout. Gradients and parameters are recorded for
// the first `recorded_steps` optimizer steps. Throws std::runtime_error if the loop never steps
// that often.
struct LoopOptions {
  int64_t recorded_steps = 0;
  // Data-parallel ranks: rank r of W takes the r-th micro-batch of every W consecutive ones, so
  // W ranks x MB x GAS cover exactly the samples of one golden batch.
  Communicator* communicator = nullptr;
};

Trace run_training_loop(const ModelSpec& model, const DataSpec& data, const LoopSpec& loop,
                        const Plan& plan, const LoopOptions& options);

}  // namespace trainrepro
