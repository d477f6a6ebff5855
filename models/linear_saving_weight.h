// A linear layer whose autograd node saves the weight tensor itself rather than the transposed
// view torch's linear saves. Under ZeRO stage 3 the engine releases a unit's parameters after its
// forward (set_data to an empty tensor) and gathers them again before its backward; a saved view
// would keep the released weight's storage alive in between, and the rank would hold the whole
// model until backward. DeepSpeed swaps in its own linear function for the same reason.
#pragma once
#include <ATen/Tensor.h>
#include <torch/nn/modules/linear.h>

namespace trainrepro {

// input (…, in) @ weight (out, in)^T + bias (out): the same result as torch's linear.
at::Tensor linear_saving_weight(const at::Tensor& input, const at::Tensor& weight,
                                const at::Tensor& bias);

// The layer's forward, through linear_saving_weight when `for_partitioned_parameters`.
at::Tensor apply_linear(torch::nn::LinearImpl& layer, const at::Tensor& input,
                        bool for_partitioned_parameters);

}  // namespace trainrepro
