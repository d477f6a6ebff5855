// The user's training loop, as the scenario describes it: the correct DeepSpeed loop by
// default, or with the habits that break accumulation (zeroing inside the window, scaling the
// loss twice, stepping the optimizer around the engine, per-micro-batch token averages).
#pragma once
#include <functional>
#include <vector>

#include "harness/distributed/communicator.h"
#include "harness/loop/sample_assignment.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Runs until `loop.steps` optimizer steps have happened, feeding each rank the samples
// SampleAssignment gives it, sampling memory throughout. Gradients and parameters are recorded for
// the first `recorded_steps` optimizer steps. Throws std::runtime_error if the loop never steps
// that often.
struct LoopOptions {
  int64_t recorded_steps = 0;
  Communicator* communicator = nullptr;  // data-parallel ranks; none for one rank
  // PyTorch memory snapshots halfway and at the end (for the report); a performance measurement
  // turns them off, since pickling every live allocation would land inside a measured step.
  bool memory_snapshots = true;
  // Step times exact to the device: on CUDA each boundary waits for the GPU before its time is
  // taken (`perf run`). Off, the times are the host's view only.
  bool time_steps = false;
  // `perf run --plant-slowdown`: each optimizer step is stretched by this fraction of its own
  // time (a busy wait at the boundary), a regression of known size for proving `perf compare`.
  double planted_step_slowdown = 0.0;
  // Called at every optimizer step's boundary, after its time is taken and outside any step's
  // time (`perf run` times a calibration chunk there, paired with the step before it).
  std::function<void()> between_steps;
  // Another run's skipped windows and loss scales, repeated by the engine (the golden and the
  // precision twin of an fp16 run: ReferenceEngine::skips_to_follow, loss_scales_to_follow).
  std::vector<bool> skips_to_follow;
  std::vector<double> loss_scales_to_follow;
};

Trace run_training_loop(const ModelSpec& model, const DataSpec& data, const LoopSpec& loop,
                        const Plan& plan, const LoopOptions& options);

}  // namespace trainrepro
