// How one rank holds and updates the model states at a ZeRO stage. The engine keeps DeepSpeed's
// schedule (1/GAS, boundary, clip, step, zero); a strategy decides where gradients are reduced,
// which part of the parameters and optimizer state this rank owns, and how the full model is
// put back together:
//   stage 0  data parallel: full everything, gradients all-reduced at the boundary
//   stage 1  optimizer states partitioned: gradients reduce-scattered at the boundary into one
//            flat, padded buffer; each rank updates its shard; parameters all-gathered
//   stage 2  gradients partitioned too: reduce-scattered after every micro-step into the
//            rank's shard, the full gradients released
//   stage 3  parameters partitioned too, per parameter: gathered per unit before its forward
//            and before its backward, released after each
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/distributed/communicator.h"
#include "harness/engine/model_states.h"
#include "models/zoo_model.h"

namespace trainrepro {

class ZeroStrategy {
 public:
  virtual ~ZeroStrategy() = default;

  // After loss.backward() of a micro-step through the engine; `boundary` ends the window.
  virtual void after_backward(bool boundary) = 0;
  // What this rank's optimizer updates, and the matching gradients (averaged across ranks,
  // valid at the boundary). Positions stay fixed for the optimizer's state.
  virtual std::vector<at::Tensor> owned_parameters() = 0;
  virtual std::vector<at::Tensor> owned_gradients() = 0;
  // Whether owned_gradients() is only this rank's part (a norm then needs every rank's part).
  virtual bool gradients_partitioned() const = 0;
  // After the optimizer updated the owned parameters: put the full parameters back together
  // where the stage keeps them whole.
  virtual void after_update() = 0;
  // The engine's own zeroing after the optimizer step: every gradient the stage holds.
  virtual void zero_grad() = 0;
  // What DeepSpeed's engine.zero_grad() does when the loop calls it inside a window: the
  // parameters' .grad cleared. Where .grad is the window's accumulator (stages 0 and 1) the
  // micro-batches so far are lost; where each micro-step's gradient has already been moved into
  // the stage's partitions (2 and 3) the window's sum survives. Measured with DeepSpeed 0.19.8,
  // 2 ranks, GAS 2: zeroed_inside_window at ZeRO 1, the golden's gradients at ZeRO 2 and 3.
  virtual void clear_parameter_gradients() = 0;

  // Parameters and gradients this rank holds right now, from the storages behind them.
  virtual ModelStateBytes held_bytes() const = 0;
  // The element count the stage partitions, after padding (Ψ for stage 0).
  virtual int64_t padded_numel() const = 0;

  // The whole model, shaped like the parameters, for comparison with the golden (a collective
  // when partitioned; call on every rank). Gradients are fresh copies of the averaged ones of the
  // current window; parameters are the live tensors where the stage keeps them whole (0-2) and
  // freshly gathered ones at stage 3.
  virtual std::vector<at::Tensor> full_gradients() = 0;
  virtual std::vector<at::Tensor> full_parameters() = 0;
  // The whole parameters as the loop's GatheredParameters context hands them out, with what
  // leaving it does to the stage's own (stage 3 releases every one, persistent ones too).
  virtual std::vector<at::Tensor> gathered_by_the_loop() { return full_parameters(); }

  // Seconds spent gathering and releasing parameters around units (stage 3), collectives
  // included: work inside the model's forward and backward that the engine cannot time.
  double gate_seconds() const { return gate_seconds_; }

 protected:
  double gate_seconds_ = 0.0;
};

// `parameters` are the model's trainable ones, in named_parameters() order: stages 0-2 leave
// frozen parameters alone (DeepSpeed flattens only trainable ones), stage 3 partitions the
// model's frozen parameters too and installs itself as the model's parameter gate.
// `communicator` may be null for one rank.
// `group_of`: each parameter's optimizer param group (empty: one group). Stages 1-3 hand the
// optimizer one flat tensor per non-empty group, in group order (stages 1-2 flatten and pad each
// group apart; stage 3 puts the rank's shards of the group's parameters side by side).
// `accumulate_in_fp32`: stages 2-3 add each micro-step's reduced low-precision gradients into a
// float32 shard (data_types.grad_accum_dtype fp32, as stage_1_and_2.py's compact partition
// buffer and stage3.py do); stages 0-1 leave float32 accumulation to the engine
// (BF16_Optimizer's buffers).
// `param_persistence_threshold`: at stage 3, parameters of at most this many elements stay whole
// on every rank (zero_optimization.stage3_param_persistence_threshold); 0 partitions them all.
std::unique_ptr<ZeroStrategy> make_zero_strategy(int64_t zero_stage, ZooModel& model,
                                                 std::vector<at::Tensor> parameters,
                                                 Communicator* communicator,
                                                 const std::vector<int64_t>& group_of,
                                                 bool accumulate_in_fp32,
                                                 int64_t param_persistence_threshold);

std::unique_ptr<ZeroStrategy> make_data_parallel_strategy(std::vector<at::Tensor> parameters,
                                                          Communicator* communicator);
std::unique_ptr<ZeroStrategy> make_partitioned_flat_strategy(std::vector<at::Tensor> parameters,
                                                             Communicator* communicator,
                                                             bool partition_gradients,
                                                             bool accumulate_in_fp32 = false);
std::unique_ptr<ZeroStrategy> make_grouped_flat_strategy(std::vector<at::Tensor> parameters,
                                                         const std::vector<int64_t>& group_of,
                                                         Communicator* communicator,
                                                         bool partition_gradients,
                                                         bool accumulate_in_fp32 = false);
std::unique_ptr<ZeroStrategy> make_partitioned_parameter_strategy(
    ZooModel& model, std::vector<at::Tensor> parameters, Communicator* communicator,
    const std::vector<int64_t>& group_of, bool accumulate_in_fp32,
    int64_t param_persistence_threshold);

}  // namespace trainrepro
