// The optimizers of DeepSpeed's config, on plain tensors: SGD as torch.optim.SGD, Adam and
// AdamW as DeepSpeed's fused Adam (bias correction on; decoupled weight decay for AdamW, and for
// Adam unless adam_w_mode is false), Lamb as DeepSpeed's FusedLamb (CUDA-only in DeepSpeed). Written out rather than borrowed from torch::optim so that
// each update is visible here and state can later be partitioned across ranks (ZeRO).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/scenario/deepspeed_config.h"

namespace trainrepro {

class Optimizer {
 public:
  explicit Optimizer(const OptimizerConfig& config) : config_(config) {}

  // One update of every parameter from its .grad(); parameters without a gradient are skipped,
  // as torch.optim does. Runs without autograd recording.
  void step(const std::vector<at::Tensor>& parameters);
  // The same update with the gradients given beside the parameters (ZeRO shards have no
  // .grad of their own); an undefined gradient skips its parameter.
  void step(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients);

  int64_t steps_taken() const { return steps_taken_; }
  // The learning rate of the next steps (a scheduler writes it before each, as DeepSpeed's
  // schedulers write the param groups' "lr"): one for every position, or one per position of
  // the tensors step() is given (param groups with their own lr). lr() reports the first
  // group's, as DeepSpeed's get_lr()[0].
  void set_lr(double lr) {
    config_.lr = lr;
    lrs_.clear();
  }
  void set_lrs(std::vector<double> per_position, double first_group) {
    config_.lr = first_group;
    lrs_ = std::move(per_position);
  }
  double lr() const { return config_.lr; }
  // Adam's betas from the next step on (OneCycle cycles beta1 as its momentum).
  void set_betas(double beta1, double beta2) {
    config_.beta1 = beta1;
    config_.beta2 = beta2;
  }
  // Per position of the tensors step() is given, the weight decay of its parameter group (empty:
  // the config's weight_decay for every position).
  void set_weight_decays(std::vector<double> decays) { weight_decays_ = std::move(decays); }
  // Bytes of optimizer state held (momentum and variance buffers), for memory accounting.
  int64_t state_bytes() const;

 private:
  void sgd_update(at::Tensor& parameter, const at::Tensor& gradient, size_t index);
  void update_moments(const at::Tensor& parameter, const at::Tensor& gradient, size_t index);
  void adam_update(at::Tensor& parameter, const at::Tensor& gradient, size_t index);
  void lamb_update(at::Tensor& parameter, const at::Tensor& gradient, size_t index);

  double weight_decay_of(size_t index) const {
    return weight_decays_.empty() ? config_.weight_decay : weight_decays_.at(index);
  }
  double lr_of(size_t index) const { return lrs_.empty() ? config_.lr : lrs_.at(index); }

  OptimizerConfig config_;
  std::vector<double> weight_decays_;
  std::vector<double> lrs_;
  int64_t steps_taken_ = 0;
  std::vector<at::Tensor> first_moment_;   // SGD: momentum buffer; Adam: exp_avg
  std::vector<at::Tensor> second_moment_;  // Adam: exp_avg_sq
};

}  // namespace trainrepro
