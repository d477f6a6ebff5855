// The reference engine: DeepSpeed's training-step semantics on real LibTorch autograd.
// backward(loss) scales by 1/GAS; step() is called after every backward and acts only at the
// accumulation boundary (every GAS-th call): clip by global norm, optimizer step, zero grads.
// With fp16 or bf16 the model computes in that dtype and the optimizer updates float32 master
// weights of the parameters this rank owns: fp16 scales the loss, and a boundary whose
// gradients overflowed skips its step (loss_scaler.h).
// Across ranks, a ZeroStrategy (zero_strategy.h) holds the model states as the plan's ZeRO stage
// says; the same code runs on CPU and CUDA.
#pragma once
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/distributed/communicator.h"
#include "harness/engine/loss_scaler.h"
#include "harness/engine/model_states.h"
#include "harness/engine/optimizer.h"
#include "harness/engine/zero_strategy.h"
#include "harness/scenario/plan.h"
#include "models/zoo_model.h"

namespace trainrepro {

// The name this engine goes by where results say what trained them (`--engine`'s default).
inline constexpr const char* kReferenceEngine = "reference";

struct EngineCounters {
  int64_t micro_steps = 0;    // step() calls, as DeepSpeed's engine.micro_steps
  int64_t global_steps = 0;   // optimizer steps taken through the engine
  int64_t skipped_steps = 0;  // overflow skips (fp16 loss scaling; always 0 in fp32)
  int64_t bypass_steps = 0;   // optimizer steps the user's loop took around the engine
};

// What one optimizer step used and produced, whoever triggered it.
struct OptimizerStepEvent {
  // The whole model, for the first `observed_steps` optimizer steps only (empty after): the
  // gradients as accumulated and averaged, before clipping; the parameters after the step.
  std::vector<at::Tensor> gradients;
  std::vector<at::Tensor> parameters;
  double gradient_norm = 0.0;  // before clipping
  bool through_engine = true;
  ModelStateBytes model_states;  // held by this rank at the last boundary, measured
  int64_t ring_bytes = 0;  // handed to collectives by this rank's engine since the previous step
                           // ((N-1)/N of each buffer: the ring model)
  // Mixed precision: the gradients overflowed and the step was skipped (parameters unchanged);
  // the loss scale the window's gradients carried; what DeepSpeed logs about it.
  bool skipped = false;
  double loss_scale = 1.0;
  std::string log;
  // The scale the gradients were divided by before the update (0 when skipped or fp32): the
  // loss scale, or on a step where the scale grew, DeepSpeed's new one.
  double unscaled_by = 0.0;
  // The learning rate the update used, and the scheduler's last_batch_iteration then (-1: as
  // built; no scheduler: -1 and the optimizer's lr).
  double lr = 0.0;
  int64_t scheduler_iteration = -1;
};

class ReferenceEngine {
 public:
  // `communicator` (may be null for one rank) joins the data-parallel ranks.
  ReferenceEngine(std::shared_ptr<ZooModel> model, const Plan& plan,
                  Communicator* communicator = nullptr);

  // DeepSpeed's engine.backward: the loss is divided by gradient_accumulation_steps (unless
  // `scale_wrt_gas` is false, as the Hugging Face Trainer passes it), then the gradients are
  // reduced across ranks where the ZeRO stage says (at the boundary at stages 0 and 1, after
  // every micro-step at 2 and 3).
  void backward(const at::Tensor& loss, bool scale_wrt_gas = true);
  // DeepSpeed's engine.step: acts at the boundary, then counts the micro-step.
  void step();
  // runtime/engine.py is_gradient_accumulation_boundary: the flag the caller set, once one was
  // set; otherwise the micro-step counter against gradient_accumulation_steps.
  bool is_gradient_accumulation_boundary() const;
  // runtime/engine.py set_gradient_accumulation_boundary: from now on the caller decides the
  // boundary (accelerate 1.8.0+ under the Trainer sets it before every backward). DeepSpeed
  // asserts managed accumulation here; resolve_plan refuses that combination before training.
  void set_gradient_accumulation_boundary(bool is_boundary);
  // runtime/engine.py no_sync() (0.16.0+): while inside, backward() reduces nothing across ranks,
  // the boundary's backward included. DeepSpeed refuses it at stages 2-3 and breaks at stage 1
  // when the boundary falls inside; resolve_plan refuses both before training, so only stage 0
  // gets here.
  void set_inside_no_sync(bool inside) { inside_no_sync_ = inside; }

  // What a user's loop can do around the engine (the faults live in the loop, not here).
  void optimizer_step_bypassing_engine();
  // torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) on the model's .grad, as a
  // loop calls it (the norm of what autograd accumulated: scaled under fp16).
  void clip_model_gradients(double max_norm);
  // The engine's own zeroing at the boundary: every gradient the ZeRO stage holds.
  void zero_grad();
  // engine.zero_grad() called by the loop inside a window: the parameters' .grad only
  // (ZeroStrategy::clear_parameter_gradients says what that loses at each stage).
  void zero_grad_called_by_the_loop();
  // The loop's own lr_scheduler.step() on the scheduler DeepSpeed built from the config (the
  // engine steps it too, at every boundary it steps the optimizer).
  void step_lr_scheduler_from_loop();

  const EngineCounters& counters() const { return counters_; }
  // The trainable parameters (requires_grad), as the user hands them to deepspeed.initialize:
  // frozen ones are neither reduced, partitioned for the optimizer, nor updated.
  const std::vector<std::string>& parameter_names() const { return parameter_names_; }
  // The model's parameter tensors (released between units at ZeRO stage 3).
  const std::vector<at::Tensor>& parameters() const { return parameters_; }
  // Each trainable parameter's optimizer param group (empty when there is one group).
  const std::vector<int64_t>& parameter_groups() const { return parameter_groups_; }
  ZooModel& model() { return *model_; }
  int64_t zero_stage() const { return plan_.zero_stage; }
  // The element count the ZeRO stage partitions, after padding.
  int64_t padded_numel() const { return strategy_->padded_numel(); }

  // The whole current parameters, gathered where partitioned (a collective: every rank calls
  // it). Traffic for it is not counted as the engine's. At stage 3 these are fresh tensors:
  // whoever keeps them keeps the unpartitioned model alive.
  std::vector<at::Tensor> gather_full_parameters();
  // What a loop's `with deepspeed.zero.GatheredParameters(params): …` hands it, and leaves
  // behind: at stage 3 leaving the context partitions every parameter it gathered, the
  // persistent ones too (partition_parameters.py _exit), so a kept tensor is a whole storage
  // the engine no longer holds, and the next forward gathers the persistent ones again. As
  // gather_full_parameters elsewhere.
  std::vector<at::Tensor> gather_parameters_as_the_loop_does();
  // Bytes this rank's engine has sent, without the gathers made for observation.
  int64_t engine_ring_bytes() const;
  // Seconds spent in the ZeRO stage's own work: reducing, partitioning, gathering and
  // releasing (collectives included; see Communicator::collective_seconds for those alone).
  double partition_seconds() const { return partition_seconds_ + strategy_->gate_seconds(); }

  // Optimizer steps for which events carry the whole gradients and parameters (gathering them
  // costs a collective at ZeRO stages 1-3). Must be the same on every rank.
  int64_t observed_steps = INT64_MAX;

  // Called after every optimizer step, before gradients are zeroed. The tensors it sees are
  // live; copy what you keep.
  std::function<void(const OptimizerStepEvent&)> on_optimizer_step;
  // Another run's skips to repeat, by optimizer step (engine and bypass steps counted
  // together): a step marked true is skipped as DeepSpeed skips an overflowed window (no update,
  // the LR scheduler and the optimizer's step count stay) whatever this run's own gradients.
  // The golden and the precision twin follow an fp16 run's loss-scale calibration with it, so
  // that the updates the run applied are compared with updates made from the same windows.
  std::vector<bool> skips_to_follow;
  // Another run's loss scale per optimizer step, used instead of this engine's own dynamic
  // scale (the precision twin rounds at the scales the run used). Empty: the engine's own.
  std::vector<double> loss_scales_to_follow;

 private:
  void take_optimizer_step(bool through_engine);
  // The optimizer update of fp16/bf16 training, on the master weights; fills the event's
  // norm, skip and log.
  void take_mixed_precision_step(bool through_engine, OptimizerStepEvent& event);
  void take_full_precision_step(bool through_engine, OptimizerStepEvent& event);
  // Optimizer steps taken so far, through the engine or around it: the index of the next one.
  int64_t optimizer_steps_so_far() const {
    return counters_.global_steps + counters_.bypass_steps;
  }
  // BF16_Optimizer's float32 accumulation: each micro-step's gradient is added to a float32
  // buffer; at the boundary the sum goes back into .grad for the reduction.
  void accumulate_in_fp32(bool boundary);
  // Stages 2-3 reduce after every micro-step and add the result into float32 gradient shards
  // (stage_1_and_2.py's compact partition buffer, stage3.py): the strategy accumulates.
  bool strategy_accumulates_in_fp32() const {
    return plan_.mixed.accumulate_in_fp32 && plan_.precision != Precision::fp32 &&
           plan_.zero_stage >= 2;
  }
  double gradient_norm();
  // A value per param group spread to each tensor the optimizer updates (owned_parameters()
  // positions): the groups' weight decays, or their learning rates.
  std::vector<double> owned_group_values(const std::vector<double>& per_group) const;
  // Writes the scheduler's rate (and OneCycle's betas) for its current iteration into the
  // optimizer, as DeepSpeed's schedulers write the param groups; records them in the event.
  void apply_lr_schedule(OptimizerStepEvent& event);
  // Runs `gather` without counting its traffic as the engine's.
  template <typename Gather>
  auto outside_engine_traffic(Gather&& gather);
  // Runs `work` of the strategy and adds its time to partition_seconds().
  template <typename Work>
  void timed_partition_work(Work&& work);

  std::shared_ptr<ZooModel> model_;
  Plan plan_;
  Optimizer optimizer_;
  Communicator* communicator_;
  std::vector<std::string> parameter_names_;
  std::vector<at::Tensor> parameters_;
  std::vector<at::Tensor> frozen_parameters_;  // requires_grad false: never reduced or updated
  // Per trainable parameter, its optimizer param group (empty: one group): the Trainer's
  // (0 decayed, 1 not) or the script's own, in the scenario's order.
  std::vector<int64_t> parameter_groups_;
  std::vector<double> group_weight_decays_;  // per group index of parameter_groups_
  std::vector<double> group_lrs_;  // the script's groups' own lrs (empty: the optimizer's)
  std::unique_ptr<ZeroStrategy> strategy_;  // after model_: it may hold a gate on the model
  EngineCounters counters_;
  ModelStateBytes held_at_boundary_;
  int64_t observation_bytes_ = 0;
  int64_t bytes_at_last_step_ = 0;
  double partition_seconds_ = 0.0;
  // The config's LR scheduler: its last_batch_iteration, -1 until the engine first steps it.
  int64_t scheduler_iteration_ = -1;
  // set_gradient_accumulation_boundary's flag: none until the caller sets one (DeepSpeed's
  // _is_gradient_accumulation_boundary = None).
  std::optional<bool> explicit_boundary_;
  bool inside_no_sync_ = false;
  bool mixed_precision_ = false;
  LossScaler loss_scaler_;
  std::vector<at::Tensor> master_parameters_;  // float32 copies of owned_parameters()
  std::vector<at::Tensor> fp32_gradients_;     // per parameter, with accumulate_in_fp32
};

}  // namespace trainrepro
