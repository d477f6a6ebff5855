#include "harness/engine/zero_strategy.h"

#include <stdexcept>
#include <string>

namespace trainrepro {

std::unique_ptr<ZeroStrategy> make_zero_strategy(int64_t zero_stage, ZooModel& model,
                                                 std::vector<at::Tensor> parameters,
                                                 Communicator* communicator,
                                                 const std::vector<int64_t>& group_of,
                                                 bool accumulate_in_fp32,
                                                 int64_t param_persistence_threshold) {
  switch (zero_stage) {
    case 0:
      return make_data_parallel_strategy(std::move(parameters), communicator);
    case 1:
    case 2:
      if (!group_of.empty()) {
        return make_grouped_flat_strategy(std::move(parameters), group_of, communicator,
                                          /*partition_gradients=*/zero_stage == 2,
                                          accumulate_in_fp32);
      }
      return make_partitioned_flat_strategy(std::move(parameters), communicator,
                                            /*partition_gradients=*/zero_stage == 2,
                                            accumulate_in_fp32);
    case 3:
      return make_partitioned_parameter_strategy(model, std::move(parameters), communicator,
                                                  group_of, accumulate_in_fp32,
                                                  param_persistence_threshold);
    default:
      throw std::invalid_argument("engine: ZeRO stage " + std::to_string(zero_stage) +
                                  " does not exist (0 to 3)");
  }
}

}  // namespace trainrepro
