#include "models/zoo_model.h"

#include <unordered_set>

namespace trainrepro {

std::vector<bool> ZooModel::recomputed_parameters() {
  std::unordered_set<const c10::TensorImpl*> recomputed;
  for (const torch::nn::Module* unit : checkpointed_units_) {
    for (const at::Tensor& parameter : unit->parameters(/*recurse=*/true)) {
      recomputed.insert(parameter.unsafeGetTensorImpl());
    }
  }
  std::vector<bool> result;
  for (const at::Tensor& parameter : parameters(/*recurse=*/true)) {
    result.push_back(recomputed.count(parameter.unsafeGetTensorImpl()) > 0);
  }
  return result;
}

}  // namespace trainrepro
