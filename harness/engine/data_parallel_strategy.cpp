// ZeRO stage 0: every rank holds everything; gradients accumulate in each trainable parameter's
// .grad and are averaged across ranks at the boundary, each in place (a flat bucket, as DeepSpeed uses,
// would cost two copies of the model per step here for the same bytes on the wire).
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/engine/rank_collectives.h"
#include "harness/engine/zero_strategy.h"

namespace trainrepro {
namespace {

class DataParallelStrategy final : public ZeroStrategy {
 public:
  DataParallelStrategy(std::vector<at::Tensor> parameters, Communicator* communicator)
      : parameters_(std::move(parameters)), communicator_(communicator) {}

  void after_backward(bool boundary) override {
    if (!boundary) return;
    c10::NoGradGuard no_grad;
    const bool reduce = world_size_of(communicator_) > 1;
    for (at::Tensor& parameter : parameters_) {
      // DeepSpeed's reduction gives every trainable parameter without a gradient a zero one,
      // on one rank too (engine.py _get_gradients_for_reduction): the optimizer then steps it
      // (weight decay still shrinks a weight that backward never reached).
      at::Tensor& gradient = parameter.mutable_grad();
      if (!gradient.defined()) gradient = at::zeros_like(parameter);
      if (!reduce) continue;
      if (!gradient.is_contiguous()) gradient = gradient.contiguous();
      average_across_ranks(communicator_, gradient);
    }
  }

  std::vector<at::Tensor> owned_parameters() override { return parameters_; }
  std::vector<at::Tensor> owned_gradients() override {
    std::vector<at::Tensor> gradients;
    for (const at::Tensor& parameter : parameters_) gradients.push_back(parameter.grad());
    return gradients;
  }
  bool gradients_partitioned() const override { return false; }
  void after_update() override {}
  void zero_grad() override {
    // Set to None, as torch's zero_grad(set_to_none=True) and DeepSpeed do.
    for (at::Tensor& parameter : parameters_) {
      if (parameter.grad().defined()) parameter.mutable_grad().reset();
    }
  }
  void clear_parameter_gradients() override { zero_grad(); }  // .grad is the accumulator

  ModelStateBytes held_bytes() const override {
    ModelStateBytes bytes;
    bytes.parameters = storage_bytes(parameters_);
    std::vector<at::Tensor> gradients;
    for (const at::Tensor& parameter : parameters_) gradients.push_back(parameter.grad());
    bytes.gradients = storage_bytes(gradients);
    return bytes;
  }
  int64_t padded_numel() const override {
    int64_t numel = 0;
    for (const at::Tensor& parameter : parameters_) numel += parameter.numel();
    return numel;
  }

  std::vector<at::Tensor> full_gradients() override {
    std::vector<at::Tensor> gradients;
    for (const at::Tensor& parameter : parameters_) {
      const at::Tensor gradient = parameter.grad();
      gradients.push_back(gradient.defined() ? gradient.detach().clone()
                                             : at::zeros_like(parameter));
    }
    return gradients;
  }
  std::vector<at::Tensor> full_parameters() override {
    std::vector<at::Tensor> copies;
    for (const at::Tensor& parameter : parameters_) copies.push_back(parameter.detach());
    return copies;
  }

 private:
  std::vector<at::Tensor> parameters_;
  Communicator* communicator_;
};

}  // namespace

std::unique_ptr<ZeroStrategy> make_data_parallel_strategy(std::vector<at::Tensor> parameters,
                                                          Communicator* communicator) {
  return std::make_unique<DataParallelStrategy>(std::move(parameters), communicator);
}

}  // namespace trainrepro
