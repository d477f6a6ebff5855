// ZeRO stages 1 and 2 with several optimizer parameter groups: DeepSpeed flattens and pads each
// group on its own (stage_1_and_2.py keeps one flat buffer per param group), so each rank owns
// one shard of every group, and the optimizer sees one tensor per group. Each group is held by its
// own partitioned flat strategy; this one forwards to them and puts their answers back in the
// model's parameter order.
#include "harness/engine/zero_layout.h"
#include "harness/engine/zero_strategy.h"

namespace trainrepro {
namespace {

class GroupedStrategy final : public ZeroStrategy {
 public:
  // `members[g]`: the positions (in the model's trainable-parameter order) group g holds.
  GroupedStrategy(std::vector<std::unique_ptr<ZeroStrategy>> groups,
                  std::vector<std::vector<size_t>> members, size_t parameter_count)
      : groups_(std::move(groups)), members_(std::move(members)), count_(parameter_count) {}

  void after_backward(bool boundary) override {
    for (auto& group : groups_) group->after_backward(boundary);
  }
  std::vector<at::Tensor> owned_parameters() override {
    return concatenated([](ZeroStrategy& group) { return group.owned_parameters(); });
  }
  std::vector<at::Tensor> owned_gradients() override {
    return concatenated([](ZeroStrategy& group) { return group.owned_gradients(); });
  }
  bool gradients_partitioned() const override { return groups_.front()->gradients_partitioned(); }
  void after_update() override {
    for (auto& group : groups_) group->after_update();
  }
  void zero_grad() override {
    for (auto& group : groups_) group->zero_grad();
  }
  void clear_parameter_gradients() override {
    for (auto& group : groups_) group->clear_parameter_gradients();
  }
  ModelStateBytes held_bytes() const override {
    ModelStateBytes total;
    for (const auto& group : groups_) {
      const ModelStateBytes bytes = group->held_bytes();
      total.parameters += bytes.parameters;
      total.gradients += bytes.gradients;
      total.optimizer_states += bytes.optimizer_states;
    }
    return total;
  }
  int64_t padded_numel() const override {
    int64_t numel = 0;
    for (const auto& group : groups_) numel += group->padded_numel();
    return numel;
  }
  std::vector<at::Tensor> full_gradients() override {
    return in_model_order([](ZeroStrategy& group) { return group.full_gradients(); });
  }
  std::vector<at::Tensor> full_parameters() override {
    return in_model_order([](ZeroStrategy& group) { return group.full_parameters(); });
  }

 private:
  template <typename Part>
  std::vector<at::Tensor> concatenated(Part&& part) {
    std::vector<at::Tensor> all;
    for (auto& group : groups_) {
      std::vector<at::Tensor> tensors = part(*group);
      all.insert(all.end(), tensors.begin(), tensors.end());
    }
    return all;
  }

  template <typename Whole>
  std::vector<at::Tensor> in_model_order(Whole&& whole) {
    std::vector<at::Tensor> ordered(count_);
    for (size_t g = 0; g < groups_.size(); ++g) {
      const std::vector<at::Tensor> tensors = whole(*groups_[g]);
      for (size_t k = 0; k < tensors.size(); ++k) ordered[members_[g][k]] = tensors[k];
    }
    return ordered;
  }

  std::vector<std::unique_ptr<ZeroStrategy>> groups_;
  std::vector<std::vector<size_t>> members_;
  size_t count_;
};

}  // namespace

std::unique_ptr<ZeroStrategy> make_grouped_flat_strategy(std::vector<at::Tensor> parameters,
                                                         const std::vector<int64_t>& group_of,
                                                         Communicator* communicator,
                                                         bool partition_gradients,
                                                         bool accumulate_in_fp32) {
  std::vector<std::vector<size_t>> members = positions_by_group(group_of, parameters.size());
  std::vector<std::unique_ptr<ZeroStrategy>> groups;
  for (const std::vector<size_t>& positions : members) {
    std::vector<at::Tensor> held;
    for (size_t i : positions) held.push_back(parameters[i]);
    groups.push_back(
        make_partitioned_flat_strategy(std::move(held), communicator, partition_gradients,
                                       accumulate_in_fp32));
  }
  return std::make_unique<GroupedStrategy>(std::move(groups), std::move(members),
                                           parameters.size());
}

}  // namespace trainrepro
