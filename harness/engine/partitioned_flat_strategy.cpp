// ZeRO stages 1 and 2. Parameters live in one flat buffer padded to the world size (each
// parameter is a view into it), so rank r's shard is the contiguous range
// [r·S, (r+1)·S) and the optimizer updates that range in place; an all-gather after the step
// makes every rank's buffer whole again.
//   stage 1: gradients accumulate in a flat buffer too (each .grad is a view); at the boundary
//            it is reduce-scattered and the rank's range of it holds the averaged shard.
//   stage 2: after every micro-step the fresh gradients are reduce-scattered and added to a
//            shard-sized accumulator (float32 with accumulate_in_fp32, in the model's dtype
//            otherwise), and the full gradients are released.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/engine/rank_collectives.h"
#include "harness/engine/zero_layout.h"
#include "harness/engine/zero_strategy.h"

namespace trainrepro {
namespace {

std::vector<at::Tensor> split_like(const at::Tensor& flat, const FlatLayout& layout,
                                   const std::vector<at::Tensor>& like) {
  std::vector<at::Tensor> pieces;
  for (size_t i = 0; i < like.size(); ++i) {
    pieces.push_back(flat.narrow(0, layout.offsets[i], layout.numels[i]).view_as(like[i]));
  }
  return pieces;
}

class PartitionedFlatStrategy final : public ZeroStrategy {
 public:
  PartitionedFlatStrategy(std::vector<at::Tensor> parameters, Communicator* communicator,
                          bool partition_gradients, bool accumulate_in_fp32)
      : parameters_(std::move(parameters)),
        communicator_(communicator),
        partition_gradients_(partition_gradients),
        layout_(flat_layout(parameters_, world_size_of(communicator))) {
    c10::NoGradGuard no_grad;
    const at::TensorOptions options = parameters_.front().options().requires_grad(false);
    flat_parameters_ = flatten_padded(parameters_, layout_, options);
    const std::vector<at::Tensor> views = split_like(flat_parameters_, layout_, parameters_);
    for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].set_data(views[i]);
    parameter_shard_ = own_range(flat_parameters_);
    if (partition_gradients_) {
      gradient_shard_ = at::zeros({layout_.shard_numel},
                                  accumulate_in_fp32 ? options.dtype(at::kFloat) : options);
    } else {
      flat_gradients_ = at::zeros({layout_.padded_numel}, options);
      gradient_shard_ = own_range(flat_gradients_);
      attach_flat_gradients();
    }
  }

  void after_backward(bool boundary) override {
    c10::NoGradGuard no_grad;
    if (!partition_gradients_) {
      // With one rank the buffer already is the averaged shard.
      if (!boundary || world_size_of(communicator_) == 1) return;
      // Reduce from a copy: the result lands in this rank's range of the same buffer.
      gradient_shard_.copy_(reduce_scatter_average(communicator_, flat_gradients_));
      return;
    }
    std::vector<at::Tensor> gradients;
    for (const at::Tensor& parameter : parameters_) gradients.push_back(parameter.grad());
    const at::Tensor flat = flatten_padded(gradients, layout_, flat_parameters_.options());
    // The reduction runs in the model's dtype; its result is added in the shard's.
    gradient_shard_.add_(
        reduce_scatter_average(communicator_, flat).to(gradient_shard_.scalar_type()));
    release_parameter_gradients();
  }

  std::vector<at::Tensor> owned_parameters() override { return {parameter_shard_}; }
  std::vector<at::Tensor> owned_gradients() override { return {gradient_shard_}; }
  bool gradients_partitioned() const override { return world_size_of(communicator_) > 1; }

  void after_update() override {
    if (world_size_of(communicator_) == 1) return;  // the shard is the whole buffer
    c10::NoGradGuard no_grad;
    flat_parameters_.copy_(all_gather(communicator_, parameter_shard_));
  }

  void zero_grad() override {
    c10::NoGradGuard no_grad;
    if (partition_gradients_) {
      gradient_shard_.zero_();
      release_parameter_gradients();
    } else {
      flat_gradients_.zero_();
      attach_flat_gradients();  // in case the user's loop set some to None
    }
  }
  void clear_parameter_gradients() override {
    c10::NoGradGuard no_grad;
    if (partition_gradients_) {
      release_parameter_gradients();  // the shard accumulator keeps the window's sum
    } else {
      zero_grad();  // stage 1: the parameters' .grad views are the accumulator
    }
  }

  ModelStateBytes held_bytes() const override {
    ModelStateBytes bytes;
    bytes.parameters = storage_bytes(parameters_);
    std::vector<at::Tensor> gradients{gradient_shard_};
    for (const at::Tensor& parameter : parameters_) gradients.push_back(parameter.grad());
    bytes.gradients = storage_bytes(gradients);
    return bytes;
  }
  int64_t padded_numel() const override { return layout_.padded_numel; }

  std::vector<at::Tensor> full_gradients() override {
    const at::Tensor flat = all_gather(communicator_, gradient_shard_);
    return split_like(flat, layout_, parameters_);
  }
  std::vector<at::Tensor> full_parameters() override {
    std::vector<at::Tensor> whole;
    for (const at::Tensor& parameter : parameters_) whole.push_back(parameter.detach());
    return whole;
  }

 private:
  at::Tensor own_range(const at::Tensor& flat) const {
    return flat.narrow(0, layout_.shard_offset(rank_of(communicator_)), layout_.shard_numel);
  }

  // Autograd adds into an existing .grad in place, so views keep accumulating into the buffer.
  void attach_flat_gradients() {
    const std::vector<at::Tensor> views = split_like(flat_gradients_, layout_, parameters_);
    for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].mutable_grad() = views[i];
  }

  void release_parameter_gradients() {
    for (at::Tensor& parameter : parameters_) {
      if (parameter.grad().defined()) parameter.mutable_grad().reset();
    }
  }

  std::vector<at::Tensor> parameters_;
  Communicator* communicator_;
  bool partition_gradients_;
  FlatLayout layout_;
  at::Tensor flat_parameters_;
  at::Tensor parameter_shard_;  // view of this rank's range of flat_parameters_
  at::Tensor flat_gradients_;   // stage 1 only
  at::Tensor gradient_shard_;   // stage 1: view of flat_gradients_; stage 2: own accumulator
};

}  // namespace

std::unique_ptr<ZeroStrategy> make_partitioned_flat_strategy(std::vector<at::Tensor> parameters,
                                                             Communicator* communicator,
                                                             bool partition_gradients,
                                                             bool accumulate_in_fp32) {
  return std::make_unique<PartitionedFlatStrategy>(std::move(parameters), communicator,
                                                   partition_gradients, accumulate_in_fp32);
}

}  // namespace trainrepro
