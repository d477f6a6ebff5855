#include "harness/loop/training_loop.h"

#include <chrono>
#include <optional>
#include <stdexcept>

#include <ATen/ATen.h>

#include "harness/engine/reference_engine.h"
#include "harness/engine/runtime_info.h"
#include "harness/loop/evaluation_pass.h"
#include "harness/loop/fault_injection.h"
#include "harness/loop/kept_across_steps.h"
#include "harness/loop/micro_step_habits.h"
#include "harness/loop/trainer_micro_step.h"
#include "harness/memory/autograd_graph.h"
#include "harness/memory/counting_cpu_allocator.h"
#include "harness/memory/cpu_memory_snapshot.h"
#include "harness/memory/cuda_memory.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

// The dtype the model computes in, and its data comes in: fp16 or bf16 under mixed precision
// (DeepSpeed casts the model; the user's loop feeds it inputs of that dtype).
at::ScalarType compute_dtype_of(const Plan& plan) {
  switch (plan.precision) {
    case Precision::fp16:
      return at::kHalf;
    case Precision::bf16:
      return at::kBFloat16;
    default:
      return plan.dtype == EngineDtype::float64 ? at::kDouble : at::kFloat;
  }
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

// The frozen parameters as built (float64 CPU copies, with their names), read before the engine
// exists: at ZeRO stage 3 it releases parameters between units.
struct FrozenParameters {
  std::vector<std::string> names;
  std::vector<at::Tensor> values;
};

FrozenParameters frozen_parameters_of(const ZooModel& model) {
  FrozenParameters frozen;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad()) frozen.names.push_back(item.key());
  }
  frozen.values = float64_cpu_copies(model.frozen_parameters());
  return frozen;
}

// The model, built after allocations are stamped as born at step 0, so its tensors are never
// taken for survivors of an earlier scenario's steps.
std::shared_ptr<ZooModel> build_model_at_step_zero(const ModelSpec& spec, at::ScalarType dtype,
                                                   at::Device device) {
  CountingCpuAllocator::set_current_step(0);
  return build_model(spec, dtype, device);
}

// One run of the user's loop: the engine, the data, what the loop keeps, and the Trace it fills.
class TrainingLoop {
 public:
  TrainingLoop(const ModelSpec& model_spec, const DataSpec& data, const LoopSpec& loop,
               const Plan& plan, const LoopOptions& options)
      : loop_(loop),
        plan_(plan),
        communicator_(options.communicator),
        ranks_(communicator_ ? communicator_->world_size() : 1),
        rank_(communicator_ ? communicator_->rank() : 0),
        dtype_(compute_dtype_of(plan)),
        device_(device_of(plan.device)),
        gas_(micro_batches_per_window(plan)),
        // Stepping once per window reaches the boundary only every GAS² micro-batches.
        micro_step_limit_(loop.steps * gas_ * gas_ + gas_),
        probe_(plan.device, 2 * micro_step_limit_ + 4 * loop.steps + 8),
        model_(build_model_at_step_zero(model_spec, dtype_, device_)),
        frozen_(frozen_parameters_of(*model_)),
        engine_(model_, plan, communicator_),
        source_(data),
        samples_{plan.batch.micro_batch_per_gpu, ranks_},
        memory_snapshots_(options.memory_snapshots),
        time_steps_(options.time_steps),
        planted_step_slowdown_(options.planted_step_slowdown),
        between_steps_(options.between_steps) {
    model_->set_activation_checkpointing(loop.activation_checkpointing);
    if (loop.evaluation) {
      evaluation_.emplace(*loop.evaluation, *model_, source_, samples_, dtype_, device_);
    }
    trace_.tensor_bookkeeping_bytes = MemoryProbe::measure_tensor_bookkeeping_bytes();
    engine_.observed_steps = options.recorded_steps;
    engine_.skips_to_follow = options.skips_to_follow;
    engine_.loss_scales_to_follow = options.loss_scales_to_follow;
    trace_.parameter_names = engine_.parameter_names();
    trace_.parameter_groups = engine_.parameter_groups();
    trace_.frozen_parameter_names = frozen_.names;
    trace_.frozen_parameters = frozen_.values;
    trace_.initial_parameters = float64_cpu_copies(engine_.gather_full_parameters());
    for (const at::Tensor& parameter : trace_.initial_parameters) {
      trace_.parameter_numel += parameter.numel();
    }
    trace_.micro_steps.reserve(static_cast<size_t>(micro_step_limit_));
    trace_.steps.reserve(static_cast<size_t>(loop.steps));
    engine_.on_optimizer_step = [this](const OptimizerStepEvent& event) { record_step(event); };
  }

  Trace run() {
    start_ = std::chrono::steady_clock::now();
    cpu_start_ = process_cpu_seconds();
    for (int64_t m = 0; steps_done() < loop_.steps; ++m) {
      if (m >= micro_step_limit_) {
        throw std::runtime_error("the training loop took " + std::to_string(m) +
                                 " micro-steps without reaching " + std::to_string(loop_.steps) +
                                 " optimizer steps");
      }
      const int64_t steps_before = steps_done();
      try {
        train_micro_batch(m);
      } catch (const LossScaleAtMinimum& error) {
        // DeepSpeed raises out of engine.step() and the user's run ends there.
        trace_.stopped = std::string(error.what()) + " (raised at micro-step " +
                         std::to_string(m) + ", after " + std::to_string(steps_done()) +
                         " optimizer steps)";
        break;
      }
      probe_.sample(SamplePoint::micro_step, m, steps_done());
      if (steps_done() != steps_before) after_optimizer_step(m);
    }
    if (loop_.evaluation && loop_.evaluation->no_grad) {
      trace_.evaluation_peak_bytes_no_grad = trace_.evaluation_peak_bytes;
    }
    trace_.counters = engine_.counters();
    const std::vector<bool> recomputed = model_->recomputed_parameters();
    for (size_t i = 0; i < recomputed.size(); ++i) {
      if (!recomputed[i]) continue;
      trace_.recomputed_parameter_numels.push_back(trace_.initial_parameters[i].numel());
    }
    const std::vector<at::Tensor> frozen = model_->frozen_parameters();
    const std::vector<bool> frozen_in_backward = model_->frozen_parameters_in_backward();
    for (size_t i = 0; i < frozen.size(); ++i) {
      const int64_t numel = frozen_.values[i].numel();
      trace_.frozen_parameter_numels.push_back(numel);
      if (frozen_in_backward[i]) trace_.frozen_backward_parameter_numels.push_back(numel);
    }
    trace_.memory = probe_.take_samples();
    trace_.live_at_end = CountingCpuAllocator::live_allocations();
    trace_.seconds = seconds_since_start();
    return std::move(trace_);
  }

 private:
  int64_t steps_done() const { return static_cast<int64_t>(trace_.steps.size()); }

  // One micro-batch, forward to step, in its own function scope: its batch, outputs and loss are
  // gone before memory is sampled, so samples show what the loop keeps, not what it is using.
  void train_micro_batch(int64_t m) {
    const SampleRange mine = samples_.micro_batch_of(m, rank_);
    const Batch batch = source_.samples(mine.begin, mine.end, dtype_, device_);
    if (m % gas_ == 0) window_items_ = items_per_rank_in_window(m, batch);

    if (loop_.zero_grad == ZeroGradHabit::every_micro_step) engine_.zero_grad_called_by_the_loop();
    const at::Tensor outputs = model_->outputs(batch);
    // Under mixed precision the loss is computed in float32 from the low-precision outputs, as
    // transformers' loss functions and torch.autocast do.
    const at::Tensor loss_sum = model_->loss_sum_of(
        plan_.precision == Precision::fp32 ? outputs : outputs.to(at::kFloat), batch);
    const at::Tensor loss = user_loss(loss_sum, batch.items, window_items_, loop_, gas_);
    const bool window_ends = (m + 1) % gas_ == 0;
    if (plan_.trainer) {
      backward_as_the_trainer_does(engine_, loss, loop_, plan_, window_ends);
    } else {
      backward_as_the_loop_does(engine_, loss, loop_, plan_, /*window_starts=*/m % gas_ == 0);
    }
    ++backwards_done_;
    const double summed = loss_sum.item<double>();
    trace_.micro_steps.push_back({summed / static_cast<double>(batch.items), batch.items});
    window_loss_sum_ += summed;
    window_items_seen_ += batch.items;
    kept_.keep(loop_.keep, loss, outputs);
    if (plan_.trainer) {
      step_as_the_trainer_does(engine_, plan_, window_ends);
      return;
    }
    if (loop_.clip_grad_norm > 0.0 && window_ends) {
      engine_.clip_model_gradients(loop_.clip_grad_norm);
    }
    step_as_the_loop_does(engine_, loop_, window_ends);
  }

  // Items of the window starting at micro-step `m` across every rank, divided by the ranks:
  // the engine averages the ranks' gradients where the loss should sum them.
  double items_per_rank_in_window(int64_t m, const Batch& batch) const {
    const SampleRange window = samples_.all_ranks(m, gas_);
    const int64_t global_items =
        batch.mask.defined() ? source_.samples(window.begin, window.end, dtype_, at::kCPU).items
                             : window.end - window.begin;
    return static_cast<double>(global_items) / static_cast<double>(ranks_);
  }

  // An optimizer step happened: sample the boundary, stamp later allocations with the new step,
  // then what the loop does between steps (keep gathered parameters, evaluate).
  void after_optimizer_step(int64_t m) {
    const int64_t steps = steps_done();
    stamp_step_boundary(trace_.steps.back());
    CountingCpuAllocator::set_current_step(steps);
    kept_.keep_after_step(loop_.keep, engine_);
    // Counted before sampling, so that its own temporaries are freed when the heap is read.
    const int64_t autograd_nodes = count_autograd_nodes(tensors_kept_across_steps());
    probe_.sample(SamplePoint::boundary, m, steps, autograd_nodes);
    if (communicator_) inject_faults_after_step(rank_, steps);
    // Halfway and at the end: two snapshots show what a leak left behind and that it grows.
    if (memory_snapshots_ && (steps == loop_.steps / 2 || steps == loop_.steps)) {
      trace_.memory_snapshots.push_back(
          {steps, plan_.device == Device::cuda
                      ? cuda_memory_snapshot_pickle()
                      : cpu_memory_snapshot_pickle(CountingCpuAllocator::live_allocations())});
    }
    if (evaluation_ && evaluation_->due(steps) && steps < loop_.steps) {
      if (!loop_.evaluation->no_grad && trace_.evaluation_peak_bytes_no_grad == 0) {
        trace_.evaluation_peak_bytes_no_grad = evaluation_->reference_peak_under_no_grad(probe_);
      }
      probe_.sample(SamplePoint::before_evaluation, m, steps);
      trace_.evaluation_peak_bytes =
          std::max(trace_.evaluation_peak_bytes, evaluation_->run(probe_));
      probe_.sample(SamplePoint::after_evaluation, m, steps);
    }
  }

  // What the user's loop holds from one step to the next: the kept list, the evaluation's
  // running loss.
  std::vector<at::Tensor> tensors_kept_across_steps() const {
    std::vector<at::Tensor> tensors = kept_.tensors;
    if (evaluation_) tensors.push_back(evaluation_->running_loss());
    return tensors;
  }

  // When this step's boundary was reached. The planted slowdown (a busy wait, so it costs CPU
  // like real work and suffers the same contention) of this step's own work follows the
  // calibration chunk and so counts in the next step's time: measured here, a chunk timed right
  // after a busy wait ran up to 5 % slower and hid half of a planted 10 % on the GPT.
  // Only a timed run waits for the GPU here: `run` would gain a device synchronisation per step.
  void stamp_step_boundary(OptimizerStepRecord& record) {
    if (time_steps_ && plan_.device == Device::cuda) synchronize_cuda();
    const double now = seconds_since_start();
    const double own_work = now - work_resumed_at_;
    record.wall_seconds = now;
    record.cpu_seconds = process_cpu_seconds() - cpu_start_;
    if (between_steps_) between_steps_();
    record.resumed_wall_seconds = between_steps_ ? seconds_since_start() : record.wall_seconds;
    record.resumed_cpu_seconds =
        between_steps_ ? process_cpu_seconds() - cpu_start_ : record.cpu_seconds;
    work_resumed_at_ = record.resumed_wall_seconds;
    if (planted_step_slowdown_ > 0.0) {
      const double until = work_resumed_at_ + planted_step_slowdown_ * own_work;
      while (work_resumed_at_ < until) work_resumed_at_ = seconds_since_start();
    }
  }

  double seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  // Every optimizer step the engine reports, whoever triggered it, with its window's loss.
  void record_step(const OptimizerStepEvent& event) {
    OptimizerStepRecord record;
    record.skipped = event.skipped;
    record.loss_scale = event.loss_scale;
    record.log = event.log;
    record.lr = event.lr;
    record.unscaled_by = event.unscaled_by;
    record.scheduler_iteration = event.scheduler_iteration;
    record.micro_step = backwards_done_;
    record.loss = window_items_seen_ > 0 ? window_loss_sum_ / window_items_seen_ : 0.0;
    record.gradient_norm = event.gradient_norm;
    record.through_engine = event.through_engine;
    record.model_states = event.model_states;
    record.ring_bytes = event.ring_bytes;
    // The copies' tensor bytes are counted apart by the allocator; what they add to the host
    // heap (their TensorImpls, the vectors) is measured here and left out of the judged heap.
    const int64_t heap_before = probe_.host_heap_in_use();
    record.gradients = float64_cpu_copies(event.gradients);
    record.parameters = float64_cpu_copies(event.parameters);
    trace_.steps.push_back(std::move(record));
    probe_.exclude_from_host_heap(probe_.host_heap_in_use() - heap_before);
    trace_.steps.back().harness_tensor_bytes = CountingCpuAllocator::stats().harness_live_bytes;
    window_loss_sum_ = 0.0;
    window_items_seen_ = 0;
  }

  const LoopSpec& loop_;
  const Plan& plan_;
  Communicator* communicator_;
  const int64_t ranks_;
  const int64_t rank_;
  const at::ScalarType dtype_;
  const at::Device device_;
  const int64_t gas_;
  const int64_t micro_step_limit_;
  MemoryProbe probe_;
  std::shared_ptr<ZooModel> model_;
  const FrozenParameters frozen_;
  ReferenceEngine engine_;
  SampleSource source_;
  const SampleAssignment samples_;
  std::optional<EvaluationPass> evaluation_;
  KeptAcrossSteps kept_;
  Trace trace_;
  // Backwards the loop has run, through the engine or not: the engine counts only its own.
  int64_t backwards_done_ = 0;
  double window_loss_sum_ = 0.0;
  int64_t window_items_seen_ = 0;
  double window_items_ = 0.0;
  const bool memory_snapshots_;
  const bool time_steps_;
  const double planted_step_slowdown_;
  double work_resumed_at_ = 0.0;  // when the current step's own work began (after any plant)
  const std::function<void()> between_steps_;
  std::chrono::steady_clock::time_point start_;
  double cpu_start_ = 0.0;
};

}  // namespace

Trace run_training_loop(const ModelSpec& model_spec, const DataSpec& data, const LoopSpec& loop,
                        const Plan& plan, const LoopOptions& options) {
  return TrainingLoop(model_spec, data, loop, plan, options).run();
}

}  // namespace trainrepro
