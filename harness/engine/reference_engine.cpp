#include "harness/engine/reference_engine.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/engine/gradient_clipping.h"
#include "harness/engine/rank_collectives.h"
#include "harness/engine/zero_layout.h"

namespace trainrepro {

ReferenceEngine::ReferenceEngine(std::shared_ptr<ZooModel> model, const Plan& plan,
                                 Communicator* communicator)
    : model_(std::move(model)),
      plan_(plan),
      optimizer_(plan.optimizer),
      communicator_(communicator),
      mixed_precision_(plan.precision != Precision::fp32),
      loss_scaler_(plan) {
  for (const auto& [name, parameter] : model_->trainable_named_parameters()) {
    parameter_names_.push_back(name);
    parameters_.push_back(parameter);
  }
  frozen_parameters_ = model_->frozen_parameters();
  if (plan.optimizer.decay_skips_bias_and_norm) {
    // The Trainer's groups: [decayed weights, the rest with weight decay 0].
    for (bool without_decay : model_->parameters_without_decay()) {
      parameter_groups_.push_back(without_decay ? 1 : 0);
    }
    group_weight_decays_ = {plan.optimizer.weight_decay, 0.0};
    // One lr, but two groups the scheduler writes into (which differ before DeepSpeed 0.19.0).
    group_lrs_ = {plan.optimizer.lr, plan.optimizer.lr};
  } else if (!plan.optimizer.parameter_groups.empty()) {
    // The script's own groups, resolved by name when the scenario was read.
    std::map<std::string, int64_t> group_of_name;
    for (size_t g = 0; g < plan.optimizer.parameter_groups.size(); ++g) {
      for (const std::string& name : plan.optimizer.parameter_groups[g].names) {
        group_of_name[name] = static_cast<int64_t>(g);
      }
      group_weight_decays_.push_back(plan.optimizer.parameter_groups[g].weight_decay);
      group_lrs_.push_back(plan.optimizer.parameter_groups[g].lr);
    }
    for (const std::string& name : parameter_names_) {
      const auto found = group_of_name.find(name);
      if (found == group_of_name.end()) {
        throw std::logic_error("parameter \"" + name + "\" is in no parameter group");
      }
      parameter_groups_.push_back(found->second);
    }
  }
  strategy_ = make_zero_strategy(plan.zero_stage, *model_, parameters_, communicator_,
                                 parameter_groups_, strategy_accumulates_in_fp32(),
                                 plan.zero3_param_persistence_threshold);
  if (!parameter_groups_.empty()) {
    optimizer_.set_weight_decays(owned_group_values(group_weight_decays_));
  }
  if (!group_lrs_.empty()) optimizer_.set_lrs(owned_group_values(group_lrs_), group_lrs_.front());
  if (mixed_precision_) {
    // DeepSpeed's masters are the low-precision weights copied to float32 (fused_optimizer.py,
    // bf16_optimizer.py, stage_1_and_2.py): the model was cast first, so they start rounded.
    c10::NoGradGuard no_grad;
    for (const at::Tensor& owned : strategy_->owned_parameters()) {
      master_parameters_.push_back(owned.detach().to(at::kFloat, /*non_blocking=*/false,
                                                     /*copy=*/true));
    }
    if (plan.mixed.optimizer_steps_at_initialization) {
      // FP16_Optimizer's initialize_optimizer_states: one step of the wrapped optimizer with
      // zero gradients, on the masters only (the model's weights are copied from them at the
      // first real step).
      std::vector<at::Tensor> zeros;
      for (const at::Tensor& master : master_parameters_) zeros.push_back(at::zeros_like(master));
      optimizer_.step(master_parameters_, zeros);
    }
  }
}

std::vector<double> ReferenceEngine::owned_group_values(const std::vector<double>& per_group) const {
  const auto value_of_group = [&](int64_t group) {
    return per_group.at(static_cast<size_t>(group));
  };
  std::vector<double> values;
  if (plan_.zero_stage >= 1) {
    // One flat tensor per non-empty group, in group order (make_zero_strategy).
    for (const std::vector<size_t>& positions :
         positions_by_group(parameter_groups_, parameters_.size())) {
      values.push_back(value_of_group(parameter_groups_[positions.front()]));
    }
  } else {
    for (int64_t group : parameter_groups_) values.push_back(value_of_group(group));
  }
  return values;
}

void ReferenceEngine::backward(const at::Tensor& loss, bool scale_wrt_gas) {
  const double gas =
      scale_wrt_gas ? static_cast<double>(plan_.batch.gradient_accumulation_steps) : 1.0;
  if (mixed_precision_ && !loss_scales_to_follow.empty()) {
    const size_t step = std::min<size_t>(static_cast<size_t>(optimizer_steps_so_far()),
                                         loss_scales_to_follow.size() - 1);
    loss_scaler_.set_scale(loss_scales_to_follow[step]);
  }
  if (mixed_precision_) {
    // engine.backward divides by GAS; the fp16 wrapper then backpropagates loss.float() * scale.
    ((loss / gas).to(at::kFloat) * loss_scaler_.scale()).backward();
  } else {
    (loss / gas).backward();
  }
  // DeepSpeed reduces gradients inside backward(): at the boundary micro-step (stages 0-1) or
  // after every micro-step (stages 2-3); inside no_sync() not at all (engine.py backward skips
  // allreduce_gradients, so a boundary's gradients stay each rank's own).
  const bool boundary = is_gradient_accumulation_boundary();
  if (plan_.mixed.accumulate_in_fp32 && mixed_precision_ && !strategy_accumulates_in_fp32()) {
    accumulate_in_fp32(boundary);
  }
  if (!inside_no_sync_) timed_partition_work([&] { strategy_->after_backward(boundary); });
  if (boundary) {
    held_at_boundary_ = strategy_->held_bytes();
    // Stages 0-2 leave frozen parameters whole on every rank, outside the strategy; stage 3's
    // strategy partitions and counts them.
    if (plan_.zero_stage < 3) held_at_boundary_.parameters += storage_bytes(frozen_parameters_);
    held_at_boundary_.optimizer_states =
        optimizer_.state_bytes() + storage_bytes(master_parameters_);
    held_at_boundary_.gradients += storage_bytes(fp32_gradients_);
  }
}

void ReferenceEngine::accumulate_in_fp32(bool boundary) {
  c10::NoGradGuard no_grad;
  if (fp32_gradients_.empty()) fp32_gradients_.resize(parameters_.size());
  for (size_t i = 0; i < parameters_.size(); ++i) {
    at::Tensor gradient = parameters_[i].grad();
    if (!gradient.defined()) continue;
    if (!fp32_gradients_[i].defined()) fp32_gradients_[i] = at::zeros_like(gradient, at::kFloat);
    fp32_gradients_[i].add_(gradient.to(at::kFloat));
    if (boundary) {
      // The window's float32 sum, rounded once into the model's dtype for the reduction
      // (DeepSpeed reduces the float32 sum itself: one rounding of the sum differs).
      gradient.copy_(fp32_gradients_[i]);
      fp32_gradients_[i].zero_();
    } else {
      gradient.zero_();
    }
  }
}

bool ReferenceEngine::is_gradient_accumulation_boundary() const {
  // Unmanaged accumulation (DeepSpeed 0.19.4+): every step() is a boundary, so the gradients
  // each backward leaves are reduced and stepped on at once.
  if (!plan_.managed_gradient_accumulation) return true;
  if (explicit_boundary_) return *explicit_boundary_;
  return (counters_.micro_steps + 1) % plan_.batch.gradient_accumulation_steps == 0;
}

void ReferenceEngine::set_gradient_accumulation_boundary(bool is_boundary) {
  if (!plan_.managed_gradient_accumulation) {
    throw std::logic_error(
        "set_gradient_accumulation_boundary with managed_gradient_accumulation false: DeepSpeed "
        "asserts, and resolve_plan refuses the scenario");
  }
  explicit_boundary_ = is_boundary;
}

void ReferenceEngine::step() {
  if (is_gradient_accumulation_boundary()) {
    take_optimizer_step(/*through_engine=*/true);
    zero_grad();
    ++counters_.global_steps;
  }
  ++counters_.micro_steps;
}

void ReferenceEngine::optimizer_step_bypassing_engine() {
  take_optimizer_step(/*through_engine=*/false);
  ++counters_.bypass_steps;
}

void ReferenceEngine::clip_model_gradients(double max_norm) {
  std::vector<at::Tensor> gradients;
  for (const at::Tensor& parameter : parameters_) gradients.push_back(parameter.grad());
  clip_to_norm(gradients, std::sqrt(sum_of_squares(gradients)), max_norm);
}

void ReferenceEngine::zero_grad() {
  timed_partition_work([&] { strategy_->zero_grad(); });
}

void ReferenceEngine::zero_grad_called_by_the_loop() {
  timed_partition_work([&] { strategy_->clear_parameter_gradients(); });
}

template <typename Work>
void ReferenceEngine::timed_partition_work(Work&& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  partition_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <typename Gather>
auto ReferenceEngine::outside_engine_traffic(Gather&& gather) {
  const int64_t before = communicator_ ? communicator_->ring_bytes() : 0;
  auto result = gather();
  if (communicator_) observation_bytes_ += communicator_->ring_bytes() - before;
  return result;
}

std::vector<at::Tensor> ReferenceEngine::gather_full_parameters() {
  return outside_engine_traffic([&] { return strategy_->full_parameters(); });
}

std::vector<at::Tensor> ReferenceEngine::gather_parameters_as_the_loop_does() {
  return outside_engine_traffic([&] { return strategy_->gathered_by_the_loop(); });
}

int64_t ReferenceEngine::engine_ring_bytes() const {
  return communicator_ ? communicator_->ring_bytes() - observation_bytes_ : 0;
}

double ReferenceEngine::gradient_norm() {
  double squared = sum_of_squares(strategy_->owned_gradients());
  if (strategy_->gradients_partitioned()) {
    squared = sum_across_ranks(communicator_, squared, parameters_.front().device());
  }
  return std::sqrt(squared);
}

void ReferenceEngine::take_mixed_precision_step(bool through_engine, OptimizerStepEvent& event) {
  c10::NoGradGuard no_grad;
  const std::vector<at::Tensor> owned = strategy_->owned_gradients();
  std::vector<at::Tensor> gradients;  // float32, still scaled
  gradients.reserve(owned.size());
  // The non-finite count stays a tensor until every gradient is counted: one read (one device
  // sync on CUDA) per boundary, not one per tensor.
  at::Tensor non_finite_count;
  for (const at::Tensor& gradient : owned) {
    gradients.push_back(gradient.defined() ? gradient.to(at::kFloat) : gradient);
    if (plan_.mixed.check_overflow && gradient.defined()) {
      const at::Tensor count = gradients.back().isfinite().logical_not().sum();
      non_finite_count = non_finite_count.defined() ? non_finite_count.add(count) : count;
    }
  }
  double non_finite =
      non_finite_count.defined() ? static_cast<double>(non_finite_count.item<int64_t>()) : 0.0;
  const bool partitioned = strategy_->gradients_partitioned();
  const at::Device device = parameters_.front().device();
  if (plan_.mixed.check_overflow && partitioned) {
    non_finite = sum_across_ranks(communicator_, non_finite, device);
  }
  double scaled_norm = 0.0;
  if (non_finite == 0.0) {
    double squared = sum_of_squares(gradients);
    if (partitioned) squared = sum_across_ranks(communicator_, squared, device);
    scaled_norm = std::sqrt(squared);
  }
  // A non-finite norm counts as an overflow too (is_invalid_grad_norm).
  const bool overflow =
      plan_.mixed.check_overflow && (non_finite > 0.0 || !std::isfinite(scaled_norm));
  // DeepSpeed updates the scale before it unscales: on a step where the scale grows, the
  // gradients are divided by the new scale (fused_optimizer.py step, stage_1_and_2.py step).
  const double scale_of_these_gradients = loss_scaler_.scale();
  event.log = loss_scaler_.update(overflow);
  event.skipped = overflow;
  if (overflow) {
    event.gradient_norm = std::numeric_limits<double>::infinity();
    ++counters_.skipped_steps;
    return;
  }
  const double scale = plan_.mixed.unscales_with_updated_scale ? loss_scaler_.scale()
                                                                : scale_of_these_gradients;
  event.unscaled_by = scale;
  double combined = scale;
  event.gradient_norm = scaled_norm / scale;
  if (plan_.gradient_clipping > 0.0) {
    const double clip = (scaled_norm / scale + 1e-6) / plan_.gradient_clipping;
    if (clip > 1.0) combined = clip * scale;
  }
  for (at::Tensor& gradient : gradients) {
    if (gradient.defined()) gradient.div_(combined);
  }
  apply_lr_schedule(event);
  optimizer_.step(master_parameters_, gradients);
  const std::vector<at::Tensor> parameters = strategy_->owned_parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    at::Tensor(parameters[i]).copy_(master_parameters_[i]);
  }
  if (plan_.lr_schedule && through_engine) ++scheduler_iteration_;
}

void ReferenceEngine::take_optimizer_step(bool through_engine) {
  const int64_t steps_so_far = optimizer_steps_so_far();
  const bool observed = on_optimizer_step && steps_so_far < observed_steps;
  OptimizerStepEvent event;
  // The observer sees the gradients as accumulated, before clipping changes them; gathering
  // and copying cost time, so only for the observed steps. With fp16 they are unscaled.
  if (observed) {
    event.gradients = outside_engine_traffic([&] { return strategy_->full_gradients(); });
    if (mixed_precision_) {
      for (at::Tensor& gradient : event.gradients) {
        if (gradient.defined()) gradient = gradient.to(at::kFloat).div_(loss_scaler_.scale());
      }
    }
  }
  event.loss_scale = loss_scaler_.scale();
  event.lr = optimizer_.lr();  // a skipped step keeps the rate last written
  event.scheduler_iteration = scheduler_iteration_;
  const bool follows_a_skip = steps_so_far < static_cast<int64_t>(skips_to_follow.size()) &&
                              skips_to_follow[static_cast<size_t>(steps_so_far)];
  if (follows_a_skip) {
    // As an overflowed window: nothing applied, nothing advanced but the skip count.
    event.skipped = true;
    event.gradient_norm = std::numeric_limits<double>::infinity();
    event.log = "skipped as the judged run skipped this window";
    ++counters_.skipped_steps;
    if (mixed_precision_) loss_scaler_.update(/*overflow=*/true);
  } else if (mixed_precision_) {
    // The fp16/bf16 wrappers clip inside their step(), so a step around the engine clips too.
    take_mixed_precision_step(through_engine, event);
  } else {
    take_full_precision_step(through_engine, event);
  }
  timed_partition_work([&] { strategy_->after_update(); });
  event.ring_bytes = engine_ring_bytes() - bytes_at_last_step_;
  bytes_at_last_step_ = engine_ring_bytes();
  if (!on_optimizer_step) return;
  if (observed) event.parameters = gather_full_parameters();
  event.through_engine = through_engine;
  event.model_states = held_at_boundary_;
  on_optimizer_step(event);
}

void ReferenceEngine::take_full_precision_step(bool through_engine, OptimizerStepEvent& event) {
  // The user's own optimizer.step() does not clip; only the engine's boundary does. The norm
  // costs a pass over every gradient, so it is computed only when clipping or observed.
  if (through_engine && plan_.gradient_clipping > 0.0) {
    event.gradient_norm = gradient_norm();
    clip_to_norm(strategy_->owned_gradients(), event.gradient_norm, plan_.gradient_clipping);
  } else if (on_optimizer_step) {
    event.gradient_norm = outside_engine_traffic([&] { return gradient_norm(); });
  }
  // The rate the scheduler last wrote: a step around the engine uses it too, but only the
  // engine's own steps advance the scheduler (engine.py _take_model_step).
  apply_lr_schedule(event);
  optimizer_.step(strategy_->owned_parameters(), strategy_->owned_gradients());
  if (plan_.lr_schedule && through_engine) ++scheduler_iteration_;
}

void ReferenceEngine::apply_lr_schedule(OptimizerStepEvent& event) {
  if (!group_lrs_.empty()) {
    // Each group's rate from its own lr (which the scheduler may ignore: lr_schedule.h).
    std::vector<double> rates;
    for (double group_lr : group_lrs_) {
      // Before DeepSpeed 0.19.0 WarmupCosineLR's construction rate reaches the first group only.
      const bool keeps_own_lr = plan_.lr_schedule && !rates.empty() && scheduler_iteration_ < 0 &&
                                plan_.lr_schedule->construction_rate_first_group_only;
      rates.push_back(plan_.lr_schedule && !keeps_own_lr
                          ? scheduled_lr(*plan_.lr_schedule, scheduler_iteration_, group_lr)
                          : group_lr);
    }
    optimizer_.set_lrs(owned_group_values(rates), rates.front());
  } else if (plan_.lr_schedule) {
    optimizer_.set_lr(scheduled_lr(*plan_.lr_schedule, scheduler_iteration_, plan_.optimizer.lr));
  }
  if (plan_.lr_schedule) {
    if (auto betas = scheduled_betas(*plan_.lr_schedule, scheduler_iteration_)) {
      optimizer_.set_betas(betas->beta1, betas->beta2);
    }
  }
  event.lr = optimizer_.lr();  // the first param group's, as DeepSpeed's get_lr()[0]
  event.scheduler_iteration = scheduler_iteration_;
}

void ReferenceEngine::step_lr_scheduler_from_loop() {
  if (plan_.lr_schedule) ++scheduler_iteration_;
}

}  // namespace trainrepro
