#include "harness/verdict/judge_zero.h"

#include <cmath>

#include "harness/engine/zero_layout.h"
#include "harness/memory/leak_analysis.h"

namespace trainrepro {
namespace {

int64_t element_bytes(EngineDtype dtype) { return dtype == EngineDtype::float64 ? 8 : 4; }

// Optimizer state buffers per parameter element: Adam's two moments, SGD's momentum.
int64_t optimizer_buffers(const OptimizerConfig& optimizer) {
  if (optimizer.kind == OptimizerKind::sgd) return optimizer.momentum != 0.0 ? 1 : 0;
  return 2;
}

// The fewest tensor bytes at any boundary: what every step leaves alive. Kept gathered parameters
// are there after every step (replaced, not added to); a leak is smallest after the first step,
// so a leak that outgrows the model by the end is not taken for gathered parameters kept.
int64_t fewest_tensor_bytes_at_a_boundary(const Plan& plan, const Trace& trace) {
  int64_t fewest = -1;
  for (const MemorySample& sample : trace.memory) {
    if (sample.point != SamplePoint::boundary) continue;
    const int64_t bytes =
        plan.device == Device::cuda ? sample.cuda_allocated_bytes : sample.cpu_tensor_bytes;
    if (fewest < 0 || bytes < fewest) fewest = bytes;
  }
  return fewest;
}

int64_t bytes_alive_at_end(const Trace& trace) {
  int64_t bytes = 0;
  for (const LiveAllocation& allocation : trace.live_at_end) bytes += allocation.bytes;
  return bytes;
}

int64_t sum_of(const std::vector<int64_t>& numels) {
  int64_t sum = 0;
  for (int64_t numel : numels) sum += numel;
  return sum;
}

// Stage 3's parameters split by persistence (persistent_at_stage_3); at stages 0-2 none is.
struct PersistenceSplit {
  std::vector<int64_t> persistent;
  std::vector<int64_t> partitioned;
};
PersistenceSplit split_by_persistence(const Plan& plan, const std::vector<int64_t>& numels) {
  PersistenceSplit split;
  for (int64_t numel : numels) {
    const bool persistent = plan.zero_stage >= 3 &&
                            persistent_at_stage_3(numel, plan.zero3_param_persistence_threshold);
    (persistent ? split.persistent : split.partitioned).push_back(numel);
  }
  return split;
}

double ratio(int64_t measured, int64_t expected) {
  return expected == 0 ? (measured == 0 ? 1.0 : INFINITY)
                       : static_cast<double>(measured) / static_cast<double>(expected);
}

std::string states_text(const ModelStateBytes& bytes) {
  return format_bytes(bytes.total()) + " (parameters " + format_bytes(bytes.parameters) +
         ", gradients " + format_bytes(bytes.gradients) + ", optimizer states " +
         format_bytes(bytes.optimizer_states) + ")";
}

std::string stage_text(const ZeroJudgement& judgement) {
  return "ZeRO stage " + std::to_string(judgement.zero_stage) + " on " +
         std::to_string(judgement.world_size) + " rank" + (judgement.world_size > 1 ? "s" : "");
}

void add(ZeroJudgement& judgement, DiagnosisKind kind, std::string explanation) {
  judgement.diagnoses.push_back(kind);
  judgement.explanations.push_back(std::move(explanation));
}

// Why the engine's figures say nothing about the engine when the loop does not drive it as
// DeepSpeed's own loop does (engine.backward, then engine.step() after every backward); empty
// when it does. Then a memory or traffic difference is the loop's doing, not the engine's.
std::string loop_drives_engine_otherwise(const Scenario& scenario, const Plan& plan) {
  const LoopSpec& loop = scenario.loop;
  if (loop.stepping == SteppingHabit::once_per_window) {
    return "the loop calls engine.step() once per window, so the engine's boundary comes every "
           "GAS² micro-batches and its traffic per step grows accordingly";
  }
  if (loop.stepping == SteppingHabit::optimizer_every_micro_step ||
      loop.zero_grad == ZeroGradHabit::never) {
    return "the loop steps the optimizer itself and never calls engine.step(), so the engine "
           "never reaches its boundary";
  }
  if (loop.zero_grad == ZeroGradHabit::every_micro_step) {
    return "the loop zeroes gradients inside the accumulation window";
  }
  if (!plan.managed_gradient_accumulation) {
    return "managed_gradient_accumulation is false, so every engine.step() is a boundary";
  }
  if (boundary_unsynced(loop.gradient_sync, plan.batch.gradient_accumulation_steps)) {
    return "the loop runs backwards inside engine.no_sync(), which turns the engine's "
           "reduction off";
  }
  return "";
}

std::string gathered_parameters_explanation(const std::string& holder, int64_t held_bytes,
                                            const std::string& states, int64_t beyond_states,
                                            int64_t full_parameter_bytes) {
  return "rank 0 holds at least " + format_bytes(held_bytes) + " of tensors " + holder + ": " +
         states + "; the other " + format_bytes(beyond_states) +
         " are about the whole model's parameters (" + format_bytes(full_parameter_bytes) +
         "): the loop keeps gathered full parameters alive between steps, so every rank holds "
         "the unpartitioned model. Fix: keep what you need from them (norms, values) and drop "
         "the tensors before the GatheredParameters context ends (or those full_tensor() "
         "returned)";
}

// A worker engine (DeepSpeed, FSDP2) measures no model states, but its census counts every CPU
// storage alive when the loop ends and the storages the engine's own objects reach: what lives
// beyond the engine's is the loop's. Kept gathered parameters are about the whole model (on
// DeepSpeed the persistent ones too: leaving GatheredParameters partitions them, so what the
// loop kept is storage the engine no longer holds).
void judge_gathered_parameters_on_worker(const Plan& plan, const Trace& trace,
                                         ZeroJudgement& judgement) {
  if (plan.zero_stage != 3 || plan.batch.world_size < 2 || trace.engine_tensor_bytes_at_end < 0) {
    return;
  }
  // The parameters as the engine hands them out (the trace says): the model's dtype unless the
  // engine trains them in another (DeepSpeed under bf16; FSDP2 keeps the model's dtype).
  const int64_t element = trace.gathered_parameter_element_bytes > 0
                              ? trace.gathered_parameter_element_bytes
                              : element_bytes(plan.dtype);
  const int64_t full_parameter_bytes = trace.parameter_numel * element;
  // The engine's objects are counted once, at the end; the census's samples say what lived at
  // every boundary. What the loop keeps is alive at the end too, when the census has waited
  // for other threads to free what they hold: a collective's buffer that torch's gloo thread
  // had yet to free at every boundary census (the machine loaded) is not, and the whole
  // model's worth of it made FSDP2 judge a correct scenario gathered_parameters_kept.
  int64_t alive = fewest_tensor_bytes_at_a_boundary(plan, trace);
  if (!trace.live_at_end.empty()) alive = std::min(alive, bytes_alive_at_end(trace));
  const int64_t beyond_engine = alive - trace.engine_tensor_bytes_at_end;
  if (alive >= 0 && full_parameter_bytes > 0 && beyond_engine >= full_parameter_bytes * 3 / 4) {
    add(judgement, DiagnosisKind::gathered_parameters_kept,
        gathered_parameters_explanation(
            "after every optimizer step", alive,
            "the engine's own objects (module, optimizer, scheduler) reach " +
                format_bytes(trace.engine_tensor_bytes_at_end),
            beyond_engine, full_parameter_bytes));
  }
}

}  // namespace

ZeroJudgement judge_zero(const Scenario& scenario, const Plan& plan, const Trace& trace) {
  ZeroJudgement judgement;
  // Model states are measured inside engine.backward(); a loop that calls loss.backward()
  // itself never lets the engine see its boundary.
  const bool engine_driven = scenario.loop.loss_scaling != LossScalingHabit::none;
  // Until a step is taken the optimizer holds no state to measure: a run whose every step was
  // skipped on overflow, or that stopped at the minimum loss scale, is judged by its skips.
  const bool no_step_taken =
      trace.counters.skipped_steps >= static_cast<int64_t>(trace.steps.size());
  if (!trace.model_states_not_measured.empty() && !trace.steps.empty()) {
    judge_gathered_parameters_on_worker(plan, trace, judgement);
    return judgement;
  }
  if (trace.steps.empty() || !engine_driven || no_step_taken || !trace.stopped.empty() ||
      !trace.model_states_not_measured.empty() ||
      (plan.zero_stage == 0 && plan.batch.world_size == 1)) {
    return judgement;
  }
  judgement.judged = true;
  judgement.zero_stage = plan.zero_stage;
  judgement.world_size = plan.batch.world_size;
  // The micro-batches each optimizer step reduced: under the Hugging Face Trainer with the
  // explicit boundary, its window, whatever GAS DeepSpeed resolved.
  judgement.gradient_accumulation_steps = accumulation_window(plan);
  judgement.parameter_numel = trace.parameter_numel;
  // Padding from the shapes, not from the engine's own count, so the formula is independent.
  // Stages 1-2 pad each optimizer param group's flat buffer apart.
  judgement.partitioned_numel = 0;
  for (const std::vector<size_t>& positions :
       positions_by_group(trace.parameter_groups, trace.initial_parameters.size())) {
    std::vector<int64_t> numels;
    for (size_t i : positions) numels.push_back(trace.initial_parameters[i].numel());
    judgement.partitioned_numel +=
        padded_numel_from_shapes(plan.zero_stage, plan.batch.world_size, numels);
  }
  const int64_t element = element_bytes(plan.dtype);
  judgement.bytes_per_parameter = {element, element, element * optimizer_buffers(plan.optimizer)};
  if (plan.precision != Precision::fp32) {
    // Mixed precision (the paper's 2 + 2 + K with K = 12 for Adam): fp16/bf16 parameters and
    // gradients, float32 master weights beside the float32 optimizer states, and float32
    // accumulation buffers where the gradients accumulate in float32: beside the bf16
    // gradients at stages 0-1 (BF16_Optimizer), instead of them at stages 2-3 (the reduced
    // gradients go straight into a float32 shard).
    const int64_t gradient_bytes =
        !plan.mixed.accumulate_in_fp32 ? 2 : (plan.zero_stage >= 2 ? 4 : 2 + 4);
    judgement.bytes_per_parameter = {2, gradient_bytes, 4 + 4 * optimizer_buffers(plan.optimizer)};
  }

  const OptimizerStepRecord& last = trace.steps.back();
  judgement.measured = last.model_states;
  judgement.expected =
      expected_model_states(plan.zero_stage, plan.batch.world_size, judgement.partitioned_numel,
                            judgement.bytes_per_parameter);
  // Frozen parameters: whole on every rank at stages 0-2, each partitioned at stage 3 (padded
  // like any parameter there); no gradient, no optimizer state.
  const int64_t frozen_numel = padded_numel_from_shapes(
      plan.zero_stage >= 3 ? 3 : 0, plan.batch.world_size, trace.frozen_parameter_numels);
  judgement.expected.parameters +=
      judgement.bytes_per_parameter.parameters * frozen_numel /
      (plan.zero_stage >= 3 ? plan.batch.world_size : 1);
  // Stage 3 keeps its persistent parameters whole on every rank too, beside their shards.
  std::vector<int64_t> trainable_numels;
  for (const at::Tensor& parameter : trace.initial_parameters) {
    trainable_numels.push_back(parameter.numel());
  }
  const PersistenceSplit trainable = split_by_persistence(plan, trainable_numels);
  const PersistenceSplit frozen = split_by_persistence(plan, trace.frozen_parameter_numels);
  // A loop reading the whole parameters after each step (GatheredParameters) partitions them
  // all when its context ends, the persistent ones too.
  const bool loop_gathers = scenario.loop.keep == KeepHabit::gathered_parameters ||
                            scenario.loop.keep == KeepHabit::gathered_parameter_norms;
  judgement.expected.parameters += judgement.bytes_per_parameter.parameters *
                                   (sum_of(trainable.persistent) + sum_of(frozen.persistent));
  judgement.expected_paper = expected_model_states(
      plan.zero_stage, plan.batch.world_size, trace.parameter_numel, judgement.bytes_per_parameter);
  judgement.model_states_ratio = ratio(judgement.measured.total(), judgement.expected.total());
  judgement.not_judged_reason = loop_drives_engine_otherwise(scenario, plan);
  const bool figures_judged = judgement.not_judged_reason.empty();
  if (figures_judged && std::abs(judgement.model_states_ratio - 1.0) > kZeroFormulaTolerance) {
    add(judgement, DiagnosisKind::model_states_differ_from_zero,
        "rank 0 holds " + states_text(judgement.measured) + " of model states at the boundary; " +
            stage_text(judgement) + " should hold " + states_text(judgement.expected) + " for " +
            std::to_string(judgement.partitioned_numel) + " parameter elements after padding (" +
            std::to_string(judgement.model_states_ratio) +
            "x, more than 5% off): the engine does not partition as the stage says");
  }

  judgement.ring_bytes_per_step = last.ring_bytes;
  // Where gradients are partitioned (stage 1 and up, several ranks), the squared norm is summed
  // across ranks (for clipping, and always under mixed precision, unless the step overflowed),
  // and fp16 sums the overflow count first: DeepSpeed all-reduces both too.
  int64_t scalar_reductions = 0;
  if (plan.zero_stage >= 1 && plan.batch.world_size > 1) {
    if (plan.precision != Precision::fp32) {
      scalar_reductions = (plan.mixed.check_overflow ? 1 : 0) + (last.skipped ? 0 : 1);
    } else if (plan.gradient_clipping > 0.0 && last.through_engine) {
      scalar_reductions = 1;
    }
  }
  // Gathered bytes after padding, of the parameters stage 3 partitions (the persistent ones are
  // gathered once per step, apart).
  const auto gathered_bytes = [&](const std::vector<int64_t>& numels) {
    return padded_numel_from_shapes(plan.zero_stage, plan.batch.world_size,
                                    split_by_persistence(plan, numels).partitioned) *
           judgement.bytes_per_parameter.parameters;
  };
  const auto padded_bytes = [&](const std::vector<int64_t>& numels) {
    return padded_numel_from_shapes(plan.zero_stage, plan.batch.world_size, numels) *
           judgement.bytes_per_parameter.parameters;
  };
  judgement.expected_ring_bytes_per_step = expected_ring_bytes_per_step(
      plan.zero_stage, plan.batch.world_size, accumulation_window(plan),
      judgement.partitioned_numel * judgement.bytes_per_parameter.parameters,
      gathered_bytes(trace.recomputed_parameter_numels),
      {gathered_bytes(trace.frozen_parameter_numels),
       gathered_bytes(trace.frozen_backward_parameter_numels)},
      scalar_reductions,
      {padded_bytes(trainable.persistent), padded_bytes(frozen.persistent),
       loop_gathers ? padded_bytes(trainable.persistent) : 0});
  judgement.traffic_ratio =
      ratio(judgement.ring_bytes_per_step, judgement.expected_ring_bytes_per_step);
  judgement.traffic_judged = figures_judged && !scenario.loop.evaluation.has_value();
  if (judgement.traffic_judged && std::abs(judgement.traffic_ratio - 1.0) > kZeroFormulaTolerance) {
    add(judgement, DiagnosisKind::traffic_differs_from_zero,
        "rank 0 handed " + format_bytes(judgement.ring_bytes_per_step) +
            " to collectives in the last optimizer step (ring model: (N-1)/N of each buffer); " +
            stage_text(judgement) + " with GAS " +
            std::to_string(accumulation_window(plan)) + " should hand them " +
            format_bytes(judgement.expected_ring_bytes_per_step) + " (" +
            std::to_string(judgement.traffic_ratio) + "x, more than 5% off)");
  }

  for (auto sample = trace.memory.rbegin(); sample != trace.memory.rend(); ++sample) {
    if (sample->point != SamplePoint::boundary) continue;
    judgement.tensor_bytes_at_boundary =
        plan.device == Device::cuda ? sample->cuda_allocated_bytes : sample->cpu_tensor_bytes;
    break;
  }
  judgement.harness_tensor_bytes = last.harness_tensor_bytes;
  // At stage 3 a rank should hold about a 1/N share of the parameters; tensors beyond its
  // model states the size of the whole model mean someone keeps gathered parameters alive.
  // A loop's GatheredParameters partitions every parameter it gathered when it ends, the
  // persistent ones too, until the next forward: at the boundary sample, after the loop's
  // gather, the engine holds none of them whole.
  const int64_t full_parameter_bytes = trace.parameter_numel * element;
  const int64_t held_after_the_loop =
      judgement.expected.total() -
      (loop_gathers ? judgement.bytes_per_parameter.parameters * sum_of(trainable.persistent) : 0);
  // The samples never count the harness's own copies (the allocator keeps them apart).
  const int64_t fewest = fewest_tensor_bytes_at_a_boundary(plan, trace);
  const int64_t beyond_states = fewest - held_after_the_loop;
  if (plan.zero_stage == 3 && plan.batch.world_size > 1 && fewest >= 0 &&
      beyond_states >= full_parameter_bytes * 3 / 4) {
    add(judgement, DiagnosisKind::gathered_parameters_kept,
        gathered_parameters_explanation(
            "after every optimizer step", fewest,
            std::string("its ZeRO stage 3 model states") +
                (loop_gathers ? " (every parameter partitioned again as the loop's "
                                "GatheredParameters ended)"
                              : "") +
                " are " + format_bytes(held_after_the_loop),
            beyond_states, full_parameter_bytes));
  }
  return judgement;
}

}  // namespace trainrepro
