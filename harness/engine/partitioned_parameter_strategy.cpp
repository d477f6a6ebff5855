// ZeRO stage 3: each parameter is partitioned on its own, padded to the world size, and rank r
// keeps only its shard of it (plus a shard of its gradient and optimizer state). The strategy
// is the model's parameter gate: before a unit's forward it all-gathers that unit's parameters
// and swaps them into the parameter tensors (set_data, as DeepSpeed assigns param.data); after
// the forward it releases them, and a hook on the unit's output gathers them again just before
// the unit's backward runs. That hook also releases the unit gathered before it: backward runs
// units in reverse, and autograd runs gradient accumulation into .grad ahead of all other ready
// work, so the previous unit is finished with its parameters by then. After the backward the
// fresh gradients are reduce-scattered in one collective into the gradient shards and the last
// unit is released.
//
// Parameters of at most `param_persistence_threshold` elements (DeepSpeed's
// stage3_param_persistence_threshold, 1e5 by default: parameter_offload.py
// mark_persistent_parameters, frozen ones included) are persistent: gathered by the first forward
// that needs them and never released by the gate, so they stay whole on every rank; the step
// partitions them with the rest and gathers them all again right after it (stage3.py
// _post_step). They keep their shard, gradient shard and optimizer state like any parameter.
//
// A layer must not let autograd keep a view of a weight for backward (torch's linear saves
// weight.t()): the view would keep the released storage alive until backward. The zoo's linear
// layers save the weight itself while a gate is set (models/linear_saving_weight.h), as
// DeepSpeed's own linear function does.
#include <chrono>
#include <map>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "harness/engine/rank_collectives.h"
#include "harness/engine/zero_layout.h"
#include "harness/engine/zero_strategy.h"

namespace trainrepro {
namespace {

class PartitionedParameterStrategy final : public ZeroStrategy, public ParameterGate {
 public:
  // `parameters` are the trainable ones; `frozen` are partitioned and gathered the same way
  // (DeepSpeed's stage 3 partitions every parameter) but have no gradient or optimizer state.
  // `group_of`: each trainable parameter's optimizer param group (empty: one group).
  // `accumulate_in_fp32`: the gradient shards are float32 (stage3.py's grad_accum_dtype).
  PartitionedParameterStrategy(ZooModel& model, std::vector<at::Tensor> parameters,
                               const std::vector<at::Tensor>& frozen,
                               const std::vector<int64_t>& group_of, Communicator* communicator,
                               bool accumulate_in_fp32, int64_t param_persistence_threshold)
      : model_(model),
        parameters_(std::move(parameters)),
        trainable_count_(parameters_.size()),
        communicator_(communicator) {
    c10::NoGradGuard no_grad;
    parameters_.insert(parameters_.end(), frozen.begin(), frozen.end());
    const int64_t ranks = world_size_of(communicator_);
    const int64_t rank = rank_of(communicator_);
    std::vector<int64_t> shard_numels;
    for (size_t i = 0; i < parameters_.size(); ++i) {
      at::Tensor& parameter = parameters_[i];
      index_of_[parameter.unsafeGetTensorImpl()] = i;
      shapes_.push_back(parameter.sizes().vec());
      persistent_.push_back(persistent_at_stage_3(parameter.numel(), param_persistence_threshold));
      if (persistent_.back()) persistent_indices_.push_back(i);
      const int64_t padded = padded_to_world(parameter.numel(), ranks);
      const int64_t shard = padded / ranks;
      at::Tensor flat = at::zeros({padded}, parameter.options().requires_grad(false));
      flat.narrow(0, 0, parameter.numel()).copy_(parameter.reshape({-1}));
      parameter_shards_.push_back(flat.narrow(0, rank * shard, shard).clone());
      shard_numels.push_back(shard);
      if (i < trainable_count_) padded_numel_ += padded;
    }
    lay_out_trainable_shards_flat(shard_numels, group_of, accumulate_in_fp32);
    empty_ = at::empty({0}, parameters_.front().options().requires_grad(false));
    // Every parameter starts partitioned, the persistent ones too: the first forward gathers them.
    release(all_indices(), /*persistent_too=*/true);
    model_.set_parameter_gate(this);
  }

  ~PartitionedParameterStrategy() override { model_.set_parameter_gate(nullptr); }

  // ParameterGate
  void before_forward(torch::nn::Module& unit) override { gather(indices_of(unit)); }
  void after_forward(torch::nn::Module& unit, const at::Tensor& output) override {
    const std::vector<size_t> indices = indices_of(unit);
    release(indices);
    if (output.requires_grad()) {
      // Fires when the gradient of the unit's output is ready, i.e. before the unit's backward.
      output.register_hook([this, indices](const at::Tensor&) {
        release(gathered_for_backward_);
        gather(indices);
        gathered_for_backward_ = indices;
      });
    }
  }

  void after_backward(bool /*boundary*/) override {
    c10::NoGradGuard no_grad;
    // One reduce-scatter for every parameter: row r of `chunks` is what rank r owns of each.
    const int64_t ranks = world_size_of(communicator_);
    std::vector<at::Tensor> columns;
    for (size_t i = 0; i < trainable_count_; ++i) {
      const int64_t shard = gradient_shards_[i].numel();
      // Reduced in the model's dtype (the parameter's); added in the shard's.
      at::Tensor padded = at::zeros({shard * ranks}, parameter_shards_[i].options());
      const at::Tensor gradient = parameters_[i].grad();
      if (gradient.defined()) padded.narrow(0, 0, gradient.numel()).copy_(gradient.reshape({-1}));
      columns.push_back(padded.view({ranks, shard}));
    }
    const at::Tensor reduced =
        reduce_scatter_average(communicator_, at::cat(columns, 1).reshape({-1}));
    int64_t offset = 0;
    for (size_t i = 0; i < trainable_count_; ++i) {
      const int64_t shard = gradient_shards_[i].numel();
      gradient_shards_[i].add_(
          reduced.narrow(0, offset, shard).to(gradient_shards_[i].scalar_type()));
      offset += shard;
      if (parameters_[i].grad().defined()) parameters_[i].mutable_grad().reset();
    }
    release(all_indices());
    gathered_for_backward_.clear();
  }

  std::vector<at::Tensor> owned_parameters() override { return flat_parameter_shards_; }
  std::vector<at::Tensor> owned_gradients() override { return flat_gradient_shards_; }
  bool gradients_partitioned() const override { return world_size_of(communicator_) > 1; }
  // The persistent parameters are gathered again from their updated shards (_post_step); the
  // rest stay partitioned until the next forward.
  void after_update() override {
    if (persistent_indices_.empty()) return;
    release(persistent_indices_, /*persistent_too=*/true);
    gather(persistent_indices_);
  }
  void zero_grad() override {
    c10::NoGradGuard no_grad;
    for (at::Tensor& shard : gradient_shards_) shard.zero_();
    clear_parameter_gradients();
  }
  void clear_parameter_gradients() override {  // the gradient shards keep the window's sum
    for (at::Tensor& parameter : parameters_) {
      if (parameter.grad().defined()) parameter.mutable_grad().reset();
    }
  }

  ModelStateBytes held_bytes() const override {
    ModelStateBytes bytes;
    std::vector<at::Tensor> parameters = parameter_shards_;
    parameters.insert(parameters.end(), parameters_.begin(), parameters_.end());
    bytes.parameters = storage_bytes(parameters);
    std::vector<at::Tensor> gradients = gradient_shards_;
    for (const at::Tensor& parameter : parameters_) gradients.push_back(parameter.grad());
    bytes.gradients = storage_bytes(gradients);
    return bytes;
  }
  int64_t padded_numel() const override { return padded_numel_; }

  std::vector<at::Tensor> full_gradients() override {
    return whole_from_shards(gradient_shards_, trainable_indices());
  }
  // Leaving GatheredParameters partitions every parameter it gathered, the persistent ones
  // included: what the loop kept of those is then a storage the engine no longer holds, and the
  // next forward gathers them again.
  std::vector<at::Tensor> gathered_by_the_loop() override {
    std::vector<at::Tensor> whole = full_parameters();
    release(trainable_indices(), /*persistent_too=*/true);
    return whole;
  }

  // A persistent parameter is whole from its first forward on: as inside
  // deepspeed.zero.GatheredParameters, it is handed out as it is (no copy, no collective); the
  // rest are gathered afresh.
  std::vector<at::Tensor> full_parameters() override {
    const auto whole_already = [&](size_t i) {
      return persistent_[i] && parameters_[i].numel() == numel_of(i);
    };
    std::vector<size_t> missing;
    for (size_t i : trainable_indices()) {
      if (!whole_already(i)) missing.push_back(i);
    }
    std::vector<at::Tensor> gathered;
    if (!missing.empty()) gathered = whole_from_shards(parameter_shards_, missing);
    std::vector<at::Tensor> whole;
    size_t next = 0;
    for (size_t i : trainable_indices()) {
      whole.push_back(whole_already(i) ? parameters_[i].detach() : gathered[next++]);
    }
    return whole;
  }

 private:
  // DeepSpeed's stage 3 hands the optimizer one flat float32 partition per param group (per
  // sub group of sub_group_size elements, 1e9 by default: one for models this size), each rank's
  // shards side by side (stage3.py _optimizer_step). The trainable shards become views into
  // such a buffer per group, so the optimizer updates them in place, and Lamb's trust ratio is
  // taken over the whole buffer as FusedLamb takes it there.
  void lay_out_trainable_shards_flat(const std::vector<int64_t>& shard_numels,
                                     const std::vector<int64_t>& group_of,
                                     bool accumulate_in_fp32) {
    gradient_shards_.resize(trainable_count_);
    for (const std::vector<size_t>& positions : positions_by_group(group_of, trainable_count_)) {
      int64_t numel = 0;
      for (size_t i : positions) numel += shard_numels[i];
      const at::TensorOptions options = parameter_shards_[positions.front()].options();
      at::Tensor flat_parameters = at::empty({numel}, options);
      at::Tensor flat_gradients =
          at::zeros({numel}, accumulate_in_fp32 ? options.dtype(at::kFloat) : options);
      int64_t offset = 0;
      for (size_t i : positions) {
        at::Tensor view = flat_parameters.narrow(0, offset, shard_numels[i]);
        view.copy_(parameter_shards_[i]);
        parameter_shards_[i] = view;
        gradient_shards_[i] = flat_gradients.narrow(0, offset, shard_numels[i]);
        offset += shard_numels[i];
      }
      flat_parameter_shards_.push_back(flat_parameters);
      flat_gradient_shards_.push_back(flat_gradients);
    }
  }

  std::vector<size_t> first_indices(size_t count) const {
    std::vector<size_t> indices(count);
    for (size_t i = 0; i < count; ++i) indices[i] = i;
    return indices;
  }
  std::vector<size_t> all_indices() const { return first_indices(parameters_.size()); }
  std::vector<size_t> trainable_indices() const { return first_indices(trainable_count_); }

  std::vector<size_t> indices_of(torch::nn::Module& unit) const {
    std::vector<size_t> indices;
    for (const at::Tensor& parameter : unit.parameters(/*recurse=*/true)) {
      indices.push_back(index_of_.at(parameter.unsafeGetTensorImpl()));
    }
    return indices;
  }

  // One all-gather for the listed shards; whole tensors shaped like those parameters, in the
  // order of `indices`.
  std::vector<at::Tensor> whole_from_shards(const std::vector<at::Tensor>& shards,
                                            const std::vector<size_t>& indices) {
    c10::NoGradGuard no_grad;
    const int64_t ranks = world_size_of(communicator_);
    std::vector<at::Tensor> pieces;
    for (size_t i : indices) pieces.push_back(shards[i]);
    // Row r holds rank r's shard of every listed parameter, side by side.
    const at::Tensor gathered = all_gather(communicator_, at::cat(pieces)).view({ranks, -1});
    // Each parameter gets a storage of exactly its own size: a view into `gathered` (what
    // reshape returns for a one-element shard) would keep the whole buffer alive as long as the
    // parameter, and a persistent one lives until the next step. At most two copies: the ranks
    // whose shard lies wholly inside the parameter, then the padded one's head.
    std::vector<at::Tensor> whole;
    int64_t offset = 0;
    for (size_t i : indices) {
      const int64_t shard = shards[i].numel();
      const int64_t numel = numel_of(i);
      const int64_t full_rows = numel / shard;
      const int64_t tail = numel - full_rows * shard;
      at::Tensor parameter = at::empty({numel}, gathered.options());
      parameter.narrow(0, 0, full_rows * shard)
          .view({full_rows, shard})
          .copy_(gathered.narrow(0, 0, full_rows).narrow(1, offset, shard));
      if (tail > 0) {
        parameter.narrow(0, full_rows * shard, tail)
            .copy_(gathered[full_rows].narrow(0, offset, tail));
      }
      whole.push_back(parameter.view(shapes_[i]));
      offset += shard;
    }
    return whole;
  }

  int64_t numel_of(size_t i) const {
    int64_t numel = 1;
    for (int64_t size : shapes_[i]) numel *= size;
    return numel;
  }

  void gather(const std::vector<size_t>& indices) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<size_t> missing;
    for (size_t i : indices) {
      if (parameters_[i].numel() == 0) missing.push_back(i);
    }
    if (missing.empty()) return;
    const std::vector<at::Tensor> whole = whole_from_shards(parameter_shards_, missing);
    for (size_t k = 0; k < missing.size(); ++k) parameters_[missing[k]].set_data(whole[k]);
    gate_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // The gate never releases a persistent parameter; only the step does (persistent_too).
  void release(const std::vector<size_t>& indices, bool persistent_too = false) {
    for (size_t i : indices) {
      if (persistent_too || !persistent_[i]) parameters_[i].set_data(empty_);
    }
  }

  ZooModel& model_;
  std::vector<at::Tensor> parameters_;  // the trainable ones first, then the frozen
  size_t trainable_count_;
  Communicator* communicator_;
  std::map<const c10::TensorImpl*, size_t> index_of_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<bool> persistent_;  // whole on every rank between steps (see the top of the file)
  std::vector<size_t> persistent_indices_;  // the same, as the indices after_update gathers
  std::vector<at::Tensor> parameter_shards_;
  std::vector<at::Tensor> gradient_shards_;  // trainable parameters only
  // Per optimizer param group, this rank's trainable shards side by side (the shards above are
  // views into these): what the optimizer updates.
  std::vector<at::Tensor> flat_parameter_shards_;
  std::vector<at::Tensor> flat_gradient_shards_;
  at::Tensor empty_;
  int64_t padded_numel_ = 0;
  std::vector<size_t> gathered_for_backward_;  // the unit whose backward runs now
};

}  // namespace

std::unique_ptr<ZeroStrategy> make_partitioned_parameter_strategy(
    ZooModel& model, std::vector<at::Tensor> parameters, Communicator* communicator,
    const std::vector<int64_t>& group_of, bool accumulate_in_fp32,
    int64_t param_persistence_threshold) {
  return std::make_unique<PartitionedParameterStrategy>(
      model, std::move(parameters), model.frozen_parameters(), group_of, communicator,
      accumulate_in_fp32, param_persistence_threshold);
}

}  // namespace trainrepro
