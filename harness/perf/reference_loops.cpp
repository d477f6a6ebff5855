#include "harness/perf/reference_loops.h"

#include <chrono>
#include <optional>

#include <ATen/ATen.h>
#include <torch/nn/utils/clip_grad.h>

#include "harness/engine/optimizer.h"
#include "harness/engine/reference_engine.h"
#include "harness/engine/runtime_info.h"
#include "harness/memory/counting_cpu_allocator.h"
#include "harness/memory/memory_probe.h"
#include "harness/perf/calibration_kernel.h"
#include "harness/perf/mann_whitney.h"
#include "models/model_size.h"
#include "models/sample_source.h"
#include "models/zoo_model.h"

namespace trainrepro {
namespace {


at::ScalarType dtype_of(const Plan& plan) {
  if (plan.precision == Precision::bf16) return at::kBFloat16;
  if (plan.precision == Precision::fp16) return at::kHalf;
  return plan.dtype == EngineDtype::float64 ? at::kDouble : at::kFloat;
}

}  // namespace

PerfRepetition measure_reference_loop(const Scenario& scenario, const Plan& plan, PerfLoop loop) {
  const PerformanceSpec& spec = *scenario.performance;
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  const int64_t micro = plan.batch.micro_batch_per_gpu;
  const at::Device device = plan.device == Device::cuda ? at::kCUDA : at::kCPU;
  const at::ScalarType dtype = dtype_of(plan);
  SampleSource source(scenario.data);
  std::vector<Batch> batches;
  int64_t tokens_per_step = 0;
  for (int64_t m = 0; m < gas; ++m) {
    batches.push_back(source.samples(m * micro, (m + 1) * micro, dtype, device));
    tokens_per_step += batches.back().items;
  }
  // The probe first: it installs the counting allocator before the model's tensors exist. Without
  // probes LibTorch's own allocator is put back, which an earlier harness-loop benchmark of this
  // process installed, so that these loops pay nothing of the probes.
  std::optional<MemoryProbe> probe;
  if (loop == PerfLoop::engine_with_probes) {
    probe.emplace(plan.device, 0);
  } else {
    CountingCpuAllocator::uninstall();
  }
  auto model = build_model(scenario.model, dtype, device);
  std::optional<ReferenceEngine> engine;
  std::vector<at::Tensor> parameters = model->parameters();
  Optimizer optimizer(plan.optimizer);
  if (loop != PerfLoop::hand_written) engine.emplace(model, plan);

  int64_t micro_step = 0;
  auto one_step = [&] {
    for (const Batch& batch : batches) {
      const at::Tensor loss = model->loss_sum(batch) / static_cast<double>(batch.items);
      if (engine) {
        engine->backward(loss);
        engine->step();
        if (probe) probe->sample(SamplePoint::micro_step, micro_step, 0);
      } else {
        (loss / static_cast<double>(gas)).backward();
      }
      ++micro_step;
    }
    if (probe) probe->sample(SamplePoint::boundary, micro_step, 0);
    if (!engine) {
      // What the config asks of every step, written as a LibTorch user would: the same global
      // norm clipping the engine does at the boundary.
      if (plan.gradient_clipping > 0.0) {
        torch::nn::utils::clip_grad_norm_(parameters, plan.gradient_clipping);
      }
      optimizer.step(parameters);
      for (at::Tensor& parameter : parameters) parameter.mutable_grad().reset();
    }
  };
  for (int64_t step = 0; step < spec.warmup_steps; ++step) one_step();
  // Each step timed on its own, a calibration chunk after it (measure_repetition.cpp says why);
  // the figure is their median.
  CalibrationChunk chunk(plan.device);
  std::vector<double> step_times;
  std::vector<double> paired_ratios;
  double cpu = 0.0;
  for (int64_t step = 0; step < spec.measured_steps; ++step) {
    if (plan.device == Device::cuda) synchronize_cuda();
    const double cpu_start = process_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    one_step();
    if (plan.device == Device::cuda) synchronize_cuda();
    step_times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    cpu += process_cpu_seconds() - cpu_start;
    paired_ratios.push_back(step_times.back() / chunk.time());
  }

  PerfRepetition repetition;
  const auto steps = static_cast<double>(spec.measured_steps);
  repetition.step_seconds = median_of(step_times);
  repetition.cpu_step_seconds = cpu / steps;
  repetition.calibration_seconds = repetition.step_seconds / median_of(paired_ratios);
  repetition.samples_per_second = static_cast<double>(gas * micro) / repetition.step_seconds;
  if (holds_token_data(scenario.data.options)) {
    repetition.tokens_per_second = static_cast<double>(tokens_per_step) / repetition.step_seconds;
  }
  return repetition;
}

}  // namespace trainrepro
