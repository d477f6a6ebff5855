#include "harness/loop/training_loop.h"

#include <chrono>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/loop/fault_injection.h"
#include "harness/memory/cuda_memory.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

at::ScalarType scalar_type_of(EngineDtype dtype) {
  return dtype == EngineDtype::float64 ? at::kDouble : at::kFloat;
}

at::Device device_of(Device device) {
  // The current CUDA device: with several ranks, each has made its own GPU current.
  return device == Device::cuda ? at::Device(at::kCUDA) : at::Device(at::kCPU);
}

// The harness's own copies, for the golden comparison: never counted as the training's memory.
std::vector<at::Tensor> float64_cpu_copies(const std::vector<at::Tensor>& tensors) {
  CountingCpuAllocator::HarnessScope harness;
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
at::Tensor user_loss(const at::Tensor& loss_sum, int64_t micro_items, double window_items,
                     const LoopSpec& loop, int64_t gas) {
  at::Tensor loss = loop.token_normalisation == TokenNormalisation::whole_batch
                        ? loss_sum * (static_cast<double>(gas) / window_items)
                        : loss_sum / static_cast<double>(micro_items);
  if (loop.loss_scaling == LossScalingHabit::twice) loss = loss / static_cast<double>(gas);
  return loss;
}

// What the user's loop keeps across steps: the list it appends to, and the floats.
struct KeptAcrossSteps {
  std::vector<at::Tensor> tensors;
  std::vector<double> values;

  void keep(KeepHabit habit, const at::Tensor& loss, const at::Tensor& outputs) {
    switch (habit) {
      case KeepHabit::nothing:
        break;
      case KeepHabit::loss_item:
        values.push_back(loss.item<double>());
        break;
      case KeepHabit::loss_with_graph:
        tensors.push_back(loss);
        break;
      case KeepHabit::loss_detached:
        tensors.push_back(loss.detach());
        break;
      case KeepHabit::loss_on_cpu:
        tensors.push_back(loss.detach().to(at::kCPU));
        break;
      case KeepHabit::outputs_with_graph:
        tensors.push_back(outputs);
        break;
      case KeepHabit::outputs_detached:
        tensors.push_back(outputs.detach());
        break;
      case KeepHabit::outputs_on_cpu:
        tensors.push_back(outputs.detach().to(at::kCPU));
        break;
      case KeepHabit::gathered_parameters:
      case KeepHabit::gathered_parameter_norms:
        break;  // once per optimizer step: keep_after_step
    }
  }

  // After an optimizer step: the habits that gather the whole model (a collective, so every
  // rank does it). The gathered tensors replace the previous step's.
  void keep_after_step(KeepHabit habit, ReferenceEngine& engine) {
    if (habit == KeepHabit::gathered_parameters) {
      gathered = engine.gather_full_parameters();
    } else if (habit == KeepHabit::gathered_parameter_norms) {
      for (const at::Tensor& parameter : engine.gather_full_parameters()) {
        values.push_back(parameter.norm().item<double>());
      }
    }
  }

  std::vector<at::Tensor> gathered;
};

// The user's evaluation pass. Its running loss lives as long as the loop, like a Python
// variable summed over the whole training run.
class Evaluation {
 public:
  Evaluation(const EvaluationSpec& spec, ZooModel& model, const SampleSource& source,
             const SampleAssignment& samples, at::ScalarType dtype, at::Device device)
      : spec_(spec),
        model_(model),
        source_(source),
        samples_(samples),
        dtype_(dtype),
        device_(device) {}

  bool due(int64_t optimizer_steps_done) const {
    return optimizer_steps_done > 0 && optimizer_steps_done % spec_.every == 0;
  }

  // Returns the rise of device tensor memory during the pass, measured from its start.
  int64_t run(MemoryProbe& probe) {
    const int64_t before = probe.device_tensor_bytes();
    probe.reset_peak();
    {
      std::optional<c10::NoGradGuard> no_grad;
      if (spec_.no_grad) no_grad.emplace();
      for (int64_t b = 0; b < spec_.batches; ++b) {
        const at::Tensor loss = batch_loss(b);
        if (spec_.backward) loss.backward();
        if (spec_.sum_as_tensor) {
          running_loss_ = running_loss_.defined() ? running_loss_ + loss : loss;
        } else {
          running_value_ += loss.item<double>();
        }
      }
    }
    ++evaluations_;
    return probe.device_peak_bytes() - before;
  }

  // The same first batch under no_grad: the scale an evaluation's peak is judged against.
  int64_t reference_peak_under_no_grad(MemoryProbe& probe) {
    c10::NoGradGuard no_grad;
    const int64_t before = probe.device_tensor_bytes();
    probe.reset_peak();
    { const at::Tensor loss = batch_loss(0); }
    return probe.device_peak_bytes() - before;
  }

 private:
  at::Tensor batch_loss(int64_t b) {
    const SampleRange range = samples_.evaluation_batch(evaluations_, b, spec_.batches);
    const Batch batch = source_.samples(range.begin, range.end, dtype_, device_);
    return model_.loss_sum(batch) / static_cast<double>(batch.items);
  }

  EvaluationSpec spec_;
  ZooModel& model_;
  const SampleSource& source_;
  SampleAssignment samples_;
  at::ScalarType dtype_;
  at::Device device_;
  int64_t evaluations_ = 0;
  at::Tensor running_loss_;
  double running_value_ = 0.0;
};

// What the user's loop calls after each backward.
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
}

}  // namespace

Trace run_training_loop(const ModelSpec& model_spec, const DataSpec& data, const LoopSpec& loop,
                        const Plan& plan, const LoopOptions& options) {
  const int64_t recorded_steps = options.recorded_steps;
  const int64_t ranks = options.communicator ? options.communicator->world_size() : 1;
  const int64_t rank = options.communicator ? options.communicator->rank() : 0;
  const auto start = std::chrono::steady_clock::now();
  const at::ScalarType dtype = scalar_type_of(plan.dtype);
  const at::Device device = device_of(plan.device);
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  const int64_t micro_batch = plan.batch.micro_batch_per_gpu;
  // Stepping once per window reaches the boundary only every GAS² micro-batches.
  const int64_t micro_step_limit = loop.steps * gas * gas + gas;

  MemoryProbe probe(plan.device, 2 * micro_step_limit + 4 * loop.steps + 8);
  CountingCpuAllocator::set_current_step(0);
  if (plan.device == Device::cuda) start_cuda_memory_history();

  std::shared_ptr<ZooModel> model = build_model(model_spec, dtype, device);
  ReferenceEngine engine(model, plan, options.communicator);
  SampleSource source(data);
  const SampleAssignment samples{micro_batch, ranks};
  std::optional<Evaluation> evaluation;
  if (loop.evaluation) {
    evaluation.emplace(*loop.evaluation, *model, source, samples, dtype, device);
  }
  KeptAcrossSteps kept;

  Trace trace;
  trace.tensor_bookkeeping_bytes = MemoryProbe::measure_tensor_bookkeeping_bytes();
  engine.observed_steps = recorded_steps;
  trace.parameter_names = engine.parameter_names();
  trace.initial_parameters = float64_cpu_copies(engine.gather_full_parameters());
  for (const at::Tensor& parameter : trace.initial_parameters) {
    trace.parameter_numel += parameter.numel();
  }
  trace.micro_steps.reserve(static_cast<size_t>(micro_step_limit));
  trace.steps.reserve(static_cast<size_t>(loop.steps));

  // Backwards the loop has run, through the engine or not: the engine counts only its own.
  int64_t backwards_done = 0;
  double window_loss_sum = 0.0;
  int64_t window_items_seen = 0;
  engine.on_optimizer_step = [&](const OptimizerStepEvent& event) {
    OptimizerStepRecord record;
    record.micro_step = backwards_done;
    record.loss = window_items_seen > 0 ? window_loss_sum / window_items_seen : 0.0;
    record.gradient_norm = event.gradient_norm;
    record.through_engine = event.through_engine;
    record.model_states = event.model_states;
    record.bytes_sent = event.bytes_sent;
    // The copies' tensor bytes are counted apart by the allocator; what they add to the host
    // heap (their TensorImpls, the vectors) is measured here and left out of the judged heap.
    const int64_t heap_before = probe.host_heap_in_use();
    record.gradients = float64_cpu_copies(event.gradients);
    record.parameters = float64_cpu_copies(event.parameters);
    trace.steps.push_back(std::move(record));
    probe.exclude_from_host_heap(probe.host_heap_in_use() - heap_before);
    trace.steps.back().harness_tensor_bytes = CountingCpuAllocator::stats().harness_live_bytes;
    window_loss_sum = 0.0;
    window_items_seen = 0;
  };

  double window_items = 0.0;
  for (int64_t m = 0; static_cast<int64_t>(trace.steps.size()) < loop.steps; ++m) {
    if (m >= micro_step_limit) {
      throw std::runtime_error("the training loop took " + std::to_string(m) +
                               " micro-steps without reaching " + std::to_string(loop.steps) +
                               " optimizer steps");
    }
    const int64_t steps_before = static_cast<int64_t>(trace.steps.size());
    // One micro-batch, forward to step, in its own scope: its batch, outputs and loss are gone
    // before memory is sampled, so samples show what the loop keeps, not what it is using.
    [&] {
      const SampleRange mine = samples.micro_batch_of(m, rank);
      const Batch batch = source.samples(mine.begin, mine.end, dtype, device);
      if (m % gas == 0) {
        // Items of the whole window across every rank; divided by the ranks, because the engine
        // averages the ranks' gradients where the loss should sum them.
        const SampleRange window = samples.all_ranks(m, gas);
        const int64_t global_items =
            batch.mask.defined() ? source.samples(window.begin, window.end, dtype, at::kCPU).items
                                 : window.end - window.begin;
        window_items = static_cast<double>(global_items) / static_cast<double>(ranks);
      }

      if (loop.zero_grad == ZeroGradHabit::every_micro_step) engine.zero_grad();
      const at::Tensor outputs = model->outputs(batch);
      const at::Tensor loss_sum = model->loss_sum_of(outputs, batch);
      const at::Tensor loss = user_loss(loss_sum, batch.items, window_items, loop, gas);
      // loss.backward() is plain autograd, unless the release hooks the engine's forward outputs
      // (then it scales and reduces as engine.backward does; at stage 0 it was refused earlier).
      if (loop.loss_scaling == LossScalingHabit::none && !plan.direct_backward_through_engine) {
        loss.backward();
      } else {
        engine.backward(loss);
      }
      ++backwards_done;
      const double summed = loss_sum.item<double>();
      trace.micro_steps.push_back({summed / static_cast<double>(batch.items), batch.items});
      window_loss_sum += summed;
      window_items_seen += batch.items;
      kept.keep(loop.keep, loss, outputs);
      step_as_the_loop_does(engine, loop, /*window_ends=*/(m + 1) % gas == 0);
    }();

    const int64_t steps_done = static_cast<int64_t>(trace.steps.size());
    probe.sample(SamplePoint::micro_step, m, steps_done);
    if (steps_done == steps_before) continue;

    // An optimizer step happened: sample the boundary, stamp later allocations with the new
    // step, then the user's evaluation if one is due.
    CountingCpuAllocator::set_current_step(steps_done);
    kept.keep_after_step(loop.keep, engine);
    probe.sample(SamplePoint::boundary, m, steps_done);
    if (options.communicator) inject_faults_after_step(rank, steps_done);
    if (plan.device == Device::cuda && (steps_done == loop.steps / 2 || steps_done == loop.steps)) {
      trace.cuda_snapshots.push_back({steps_done, cuda_memory_snapshot_pickle()});
    }
    if (evaluation && evaluation->due(steps_done) && steps_done < loop.steps) {
      if (!loop.evaluation->no_grad && trace.evaluation_peak_bytes_no_grad == 0) {
        trace.evaluation_peak_bytes_no_grad = evaluation->reference_peak_under_no_grad(probe);
      }
      probe.sample(SamplePoint::before_evaluation, m, steps_done);
      trace.evaluation_peak_bytes = std::max(trace.evaluation_peak_bytes, evaluation->run(probe));
      probe.sample(SamplePoint::after_evaluation, m, steps_done);
    }
  }
  if (loop.evaluation && loop.evaluation->no_grad) {
    trace.evaluation_peak_bytes_no_grad = trace.evaluation_peak_bytes;
  }
  trace.counters = engine.counters();
  trace.memory = probe.take_samples();
  trace.live_at_end = CountingCpuAllocator::live_allocations();
  trace.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return trace;
}

}  // namespace trainrepro
