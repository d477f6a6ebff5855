// The reference engine: DeepSpeed's training-step semantics on real LibTorch autograd.
// backward(loss) scales by 1/GAS; step() is called after every backward and acts only at the
// accumulation boundary (every GAS-th call): clip by global norm, optimizer step, zero grads.
// Single rank for now; the same code runs on CPU and CUDA.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/distributed/communicator.h"
#include "harness/engine/optimizer.h"
#include "harness/scenario/plan.h"
#include "models/zoo_model.h"

namespace trainrepro {

struct EngineCounters {
  int64_t micro_steps = 0;    // step() calls, as DeepSpeed's engine.micro_steps
  int64_t global_steps = 0;   // optimizer steps taken through the engine
  int64_t skipped_steps = 0;  // overflow skips (fp16 loss scaling; always 0 in fp32)
  int64_t bypass_steps = 0;   // optimizer steps the user's loop took around the engine
};

// What one optimizer step used and produced, whoever triggered it.
struct OptimizerStepEvent {
  int64_t micro_step = 0;                    // micro-steps (backwards) seen when it happened
  const std::vector<at::Tensor>* gradients;  // as accumulated, before clipping
  const std::vector<at::Tensor>* parameters;
  double gradient_norm = 0.0;  // before clipping
  bool through_engine = true;
};

class ReferenceEngine {
 public:
  // `communicator` (may be null for one rank) averages gradients across data-parallel ranks.
  ReferenceEngine(std::shared_ptr<ZooModel> model, const Plan& plan,
                  Communicator* communicator = nullptr);

  // DeepSpeed's engine.backward: the loss is divided by gradient_accumulation_steps, and at the
  // accumulation boundary the gradients are averaged across ranks (ZeRO stage 0).
  void backward(const at::Tensor& loss);
  // DeepSpeed's engine.step: acts at the boundary, then counts the micro-step.
  void step();
  bool is_gradient_accumulation_boundary() const;

  // What a user's loop can do around the engine (the faults live in the loop, not here).
  void optimizer_step_bypassing_engine();
  void zero_grad();

  const EngineCounters& counters() const { return counters_; }
  const std::vector<std::string>& parameter_names() const { return parameter_names_; }
  const std::vector<at::Tensor>& parameters() const { return parameters_; }
  ZooModel& model() { return *model_; }

  // Called after every optimizer step, before gradients are zeroed. The tensors it sees are
  // live; copy what you keep.
  std::function<void(const OptimizerStepEvent&)> on_optimizer_step;

 private:
  void take_optimizer_step(bool through_engine);
  void average_gradients_across_ranks();

  std::shared_ptr<ZooModel> model_;
  Plan plan_;
  Optimizer optimizer_;
  Communicator* communicator_;
  std::vector<std::string> parameter_names_;
  std::vector<at::Tensor> parameters_;
  EngineCounters counters_;
  int64_t backwards_ = 0;
};

}  // namespace trainrepro
