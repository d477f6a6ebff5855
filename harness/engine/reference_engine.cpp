#include "harness/engine/reference_engine.h"

#include <chrono>
#include <cmath>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/engine/gradient_clipping.h"
#include "harness/engine/rank_collectives.h"

namespace trainrepro {

ReferenceEngine::ReferenceEngine(std::shared_ptr<ZooModel> model, const Plan& plan,
                                 Communicator* communicator)
    : model_(std::move(model)),
      plan_(plan),
      optimizer_(plan.optimizer),
      communicator_(communicator) {
  for (const auto& item : model_->named_parameters(/*recurse=*/true)) {
    parameter_names_.push_back(item.key());
    parameters_.push_back(item.value());
  }
  strategy_ = make_zero_strategy(plan.zero_stage, *model_, parameters_, communicator_);
}

void ReferenceEngine::backward(const at::Tensor& loss) {
  (loss / static_cast<double>(plan_.batch.gradient_accumulation_steps)).backward();
  // DeepSpeed reduces gradients inside backward(): at the boundary micro-step (stages 0-1) or
  // after every micro-step (stages 2-3).
  const bool boundary = is_gradient_accumulation_boundary();
  timed_partition_work([&] { strategy_->after_backward(boundary); });
  if (boundary) {
    held_at_boundary_ = strategy_->held_bytes();
    held_at_boundary_.optimizer_states = optimizer_.state_bytes();
  }
}

bool ReferenceEngine::is_gradient_accumulation_boundary() const {
  // Unmanaged accumulation (DeepSpeed 0.19.4+): every step() is a boundary, so the gradients
  // each backward leaves are reduced and stepped on at once.
  if (!plan_.managed_gradient_accumulation) return true;
  return (counters_.micro_steps + 1) % plan_.batch.gradient_accumulation_steps == 0;
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

void ReferenceEngine::zero_grad() {
  timed_partition_work([&] { strategy_->zero_grad(); });
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

void ReferenceEngine::take_optimizer_step(bool through_engine) {
  const int64_t steps_so_far = counters_.global_steps + counters_.bypass_steps;
  const bool observed = on_optimizer_step && steps_so_far < observed_steps;
  OptimizerStepEvent event;
  // The observer sees the gradients as accumulated, before clipping changes them; gathering
  // and copying cost time, so only for the observed steps.
  if (observed) {
    event.gradients = outside_engine_traffic([&] { return strategy_->full_gradients(); });
  }
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
  if (plan_.lr_schedule) {
    optimizer_.set_lr(scheduled_lr(*plan_.lr_schedule, scheduler_iteration_, plan_.optimizer.lr));
  }
  optimizer_.step(strategy_->owned_parameters(), strategy_->owned_gradients());
  if (plan_.lr_schedule && through_engine) ++scheduler_iteration_;
  timed_partition_work([&] { strategy_->after_update(); });
  event.ring_bytes = engine_ring_bytes() - bytes_at_last_step_;
  bytes_at_last_step_ = engine_ring_bytes();
  if (!on_optimizer_step) return;
  if (observed) event.parameters = gather_full_parameters();
  event.through_engine = through_engine;
  event.model_states = held_at_boundary_;
  on_optimizer_step(event);
}

}  // namespace trainrepro
