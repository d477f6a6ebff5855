// The "mlp" model of the zoo: Linear layers with an activation between them, trained on
// classification (cross entropy) or regression (mean squared error) data.
#pragma once
#include <torch/nn/modules/container/modulelist.h>

#include "models/model_zoo.h"
#include "models/zoo_model.h"

namespace trainrepro {

class MlpModel : public ZooModel {
 public:
  explicit MlpModel(const MlpOptions& options);
  // (N, dims.front()) -> (N, dims.back())
  at::Tensor forward(const at::Tensor& inputs);
  at::Tensor outputs(const Batch& batch) override { return forward(batch.inputs); }
  // The task follows the targets' dtype: integral class ids mean classification.
  at::Tensor loss_sum_of(const at::Tensor& outputs, const Batch& batch) override;

 private:
  Activation activation_;
  torch::nn::ModuleList layers_;
};

}  // namespace trainrepro
