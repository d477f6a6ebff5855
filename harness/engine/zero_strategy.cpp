#include "harness/engine/zero_strategy.h"

#include <stdexcept>
#include <string>

namespace trainrepro {

std::unique_ptr<ZeroStrategy> make_zero_strategy(int64_t zero_stage, ZooModel& model,
                                                 std::vector<at::Tensor> parameters,
                                                 Communicator* communicator) {
  switch (zero_stage) {
    case 0:
      return make_data_parallel_strategy(std::move(parameters), communicator);
    case 1:
      return make_partitioned_flat_strategy(std::move(parameters), communicator,
                                            /*partition_gradients=*/false);
    case 2:
      return make_partitioned_flat_strategy(std::move(parameters), communicator,
                                            /*partition_gradients=*/true);
    case 3:
      return make_partitioned_parameter_strategy(model, std::move(parameters), communicator);
    default:
      throw std::invalid_argument("engine: ZeRO stage " + std::to_string(zero_stage) +
                                  " does not exist (0 to 3)");
  }
}

}  // namespace trainrepro
