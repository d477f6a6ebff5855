#include "harness/perf/measure_repetition.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <variant>

#include "harness/engine/rank_collectives.h"
#include "harness/loop/training_loop.h"
#include "harness/perf/calibration_kernel.h"
#include "harness/perf/gpu_peak_flops.h"
#include "harness/perf/mann_whitney.h"
#include "models/model_size.h"

namespace trainrepro {
namespace {

// Model FLOPs of one sample: 6 per parameter per token (forward 2, backward 4; Kaplan et al.),
// attention's own products and activation recomputation left out, as MFU conventionally does.
double model_flops_per_sample(const Scenario& scenario) {
  const double parameters = static_cast<double>(parameter_count(scenario.model.options));
  return 6.0 * parameters * static_cast<double>(tokens_per_sample(scenario.data.options));
}

}  // namespace

PerfRepetition measure_repetition(const Scenario& scenario, const Plan& plan,
                                  double planted_slowdown, Communicator* communicator) {
  const PerformanceSpec& spec = *scenario.performance;
  LoopSpec loop = scenario.loop;
  loop.steps = spec.warmup_steps + spec.measured_steps;
  LoopOptions options;
  options.memory_snapshots = false;
  options.time_steps = true;
  options.planted_step_slowdown = planted_slowdown;
  options.communicator = communicator;
  // A calibration chunk after every step, outside the steps' times: step i is judged against
  // the chunk timed right after it (calibration_kernel.h).
  CalibrationChunk chunk(plan.device);
  std::vector<double> chunk_times;
  options.between_steps = [&] { chunk_times.push_back(chunk.time()); };
  const Trace trace =
      run_training_loop(scenario.model, scenario.data, loop, plan, options);
  if (static_cast<int64_t>(trace.steps.size()) < loop.steps) {
    throw std::runtime_error("the training stopped after " + std::to_string(trace.steps.size()) +
                             " of " + std::to_string(loop.steps) + " optimizer steps: " +
                             trace.stopped);
  }

  // The measured steps are the last `measured_steps`; they start at the warm-up's last boundary.
  const OptimizerStepRecord* before =
      spec.warmup_steps > 0 ? &trace.steps[static_cast<size_t>(spec.warmup_steps - 1)] : nullptr;
  const OptimizerStepRecord& last = trace.steps.back();
  const auto measured = static_cast<double>(spec.measured_steps);
  // Each measured step's own time, from the previous step's end (after its calibration chunk)
  // to its own; the repetition's figure is their median: a burst of a neighbour's load on a
  // shared machine lengthens a few steps, a regression every one of them.
  std::vector<double> step_times;
  std::vector<double> paired_ratios;
  double cpu = 0.0;
  for (size_t i = static_cast<size_t>(spec.warmup_steps); i < trace.steps.size(); ++i) {
    const OptimizerStepRecord* previous = i > 0 ? &trace.steps[i - 1] : nullptr;
    step_times.push_back(trace.steps[i].wall_seconds -
                         (previous ? previous->resumed_wall_seconds : 0.0));
    cpu += trace.steps[i].cpu_seconds - (previous ? previous->resumed_cpu_seconds : 0.0);
    paired_ratios.push_back(step_times.back() / chunk_times.at(i));
  }

  PerfRepetition repetition;
  repetition.step_seconds = median_of(step_times);
  repetition.cpu_step_seconds = cpu / measured;
  // Stored so that step / calibration is the median of the paired ratios (perf_run.h).
  repetition.calibration_seconds = repetition.step_seconds / median_of(paired_ratios);
  // Micro-batches run in the measured steps (a loop stepping once per window runs more of them
  // per optimizer step), and the target tokens in them; rates are per median step, over every
  // rank (each rank runs as many micro-batches; their token counts differ).
  const int64_t first_micro = before ? before->micro_step : 0;
  const int64_t micro_batches = last.micro_step - first_micro;
  const double ranks = static_cast<double>(plan.batch.world_size);
  const double samples_per_step =
      static_cast<double>(micro_batches * plan.batch.micro_batch_per_gpu) * ranks / measured;
  repetition.samples_per_second = samples_per_step / repetition.step_seconds;
  if (holds_token_data(scenario.data.options)) {
    int64_t tokens = 0;
    for (int64_t m = first_micro; m < last.micro_step; ++m) {
      tokens += trace.micro_steps[static_cast<size_t>(m)].items;
    }
    double all_tokens = static_cast<double>(tokens);
    all_tokens = sum_across_ranks(communicator, all_tokens,
                                  plan.device == Device::cuda ? at::kCUDA : at::kCPU);
    repetition.tokens_per_second = all_tokens / measured / repetition.step_seconds;
  }

  const bool cuda = plan.device == Device::cuda;
  for (const MemorySample& sample : trace.memory) {
    repetition.peak_tensor_bytes =
        std::max(repetition.peak_tensor_bytes,
                 cuda ? sample.cuda_peak_allocated_bytes : sample.cpu_tensor_peak_bytes);
    repetition.peak_host_bytes = std::max(repetition.peak_host_bytes, sample.host_heap_bytes);
    if (cuda) {
      repetition.peak_cuda_reserved_bytes =
          std::max(repetition.peak_cuda_reserved_bytes.value_or(0), sample.cuda_reserved_bytes);
    }
  }
  if (cuda) {
    if (auto peak = gpu_peak_flops(current_cuda_device_name(), plan.precision)) {
      repetition.mfu =
          model_flops_per_sample(scenario) * repetition.samples_per_second / (*peak * ranks);
    }
  }
  return repetition;
}

}  // namespace trainrepro
