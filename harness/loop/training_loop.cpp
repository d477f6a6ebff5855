#include "harness/loop/training_loop.h"

#include <chrono>
#include <map>
#include <stdexcept>

#include <ATen/ATen.h>

#include "models/sample_source.h"

namespace trainrepro {
namespace {

at::ScalarType scalar_type_of(EngineDtype dtype) {
  return dtype == EngineDtype::float64 ? at::kDouble : at::kFloat;
}

at::Device device_of(Device device) {
  return device == Device::cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
}

std::vector<at::Tensor> float64_cpu_copies(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> copies;
  copies.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) {
    copies.push_back(tensor.detach().to(at::kCPU, at::kDouble, /*non_blocking=*/false,
                                        /*copy=*/true));
  }
  return copies;
}

// The user's loss for one micro-batch, before the engine's 1/GAS. With whole-batch
// normalisation the token losses are divided by the tokens of the whole window (times GAS, so
// that the engine's 1/GAS leaves sum/window_items): what Hugging Face's num_items_in_batch
// fix does. For sample data both normalisations coincide.
at::Tensor user_loss(const at::Tensor& loss_sum, int64_t micro_items, int64_t window_items,
                     const LoopSpec& loop, int64_t gas) {
  at::Tensor loss = loop.token_normalisation == TokenNormalisation::whole_batch
                        ? loss_sum * (static_cast<double>(gas) / static_cast<double>(window_items))
                        : loss_sum / static_cast<double>(micro_items);
  if (loop.loss_scaling == LossScalingHabit::twice) loss = loss / static_cast<double>(gas);
  return loss;
}

}  // namespace

Trace run_training_loop(const ModelSpec& model_spec, const DataSpec& data, const LoopSpec& loop,
                        const Plan& plan) {
  const auto start = std::chrono::steady_clock::now();
  const at::ScalarType dtype = scalar_type_of(plan.dtype);
  const at::Device device = device_of(plan.device);
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  const int64_t micro_batch = plan.batch.micro_batch_per_gpu;

  std::shared_ptr<ZooModel> model = build_model(model_spec, dtype, device);
  ReferenceEngine engine(model, plan);
  SampleSource source(data);

  Trace trace;
  trace.parameter_names = engine.parameter_names();
  trace.initial_parameters = float64_cpu_copies(engine.parameters());

  double window_loss_sum = 0.0;
  int64_t window_items_seen = 0;
  engine.on_optimizer_step = [&](const OptimizerStepEvent& event) {
    OptimizerStepRecord record;
    record.micro_step = event.micro_step;
    record.loss = window_items_seen > 0 ? window_loss_sum / window_items_seen : 0.0;
    record.gradient_norm = event.gradient_norm;
    record.through_engine = event.through_engine;
    record.gradients = float64_cpu_copies(*event.gradients);
    record.parameters = float64_cpu_copies(*event.parameters);
    trace.steps.push_back(std::move(record));
    window_loss_sum = 0.0;
    window_items_seen = 0;
  };

  std::map<int64_t, int64_t> items_of_window;  // window index → items, computed once
  // Stepping once per window reaches the boundary only every GAS² micro-batches.
  const int64_t micro_step_limit = loop.steps * gas * gas + gas;
  for (int64_t m = 0; static_cast<int64_t>(trace.steps.size()) < loop.steps; ++m) {
    if (m >= micro_step_limit) {
      throw std::runtime_error("the training loop took " + std::to_string(m) +
                               " micro-steps without reaching " + std::to_string(loop.steps) +
                               " optimizer steps");
    }
    const Batch batch = source.samples(m * micro_batch, (m + 1) * micro_batch, dtype, device);
    const int64_t window = m / gas;
    if (!items_of_window.count(window)) {
      items_of_window[window] =
          source.samples(window * gas * micro_batch, (window + 1) * gas * micro_batch, dtype,
                         at::kCPU)
              .items;
    }

    if (loop.zero_grad == ZeroGradHabit::every_micro_step) engine.zero_grad();
    const at::Tensor loss_sum = model->loss_sum(batch);
    const at::Tensor loss = user_loss(loss_sum, batch.items, items_of_window[window], loop, gas);
    if (loop.loss_scaling == LossScalingHabit::none) {
      loss.backward();
    } else {
      engine.backward(loss);
    }
    const double summed = loss_sum.item<double>();
    trace.micro_steps.push_back({summed / static_cast<double>(batch.items), batch.items});
    window_loss_sum += summed;
    window_items_seen += batch.items;

    const bool window_ends = (m + 1) % gas == 0;
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
  }
  trace.counters = engine.counters();
  trace.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return trace;
}

}  // namespace trainrepro
