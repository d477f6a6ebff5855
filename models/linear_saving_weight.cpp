#include "models/linear_saving_weight.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace trainrepro {
namespace {

class LinearSavingWeight : public torch::autograd::Function<LinearSavingWeight> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& input,
                            const at::Tensor& weight, const at::Tensor& bias) {
    // A leaf saved as itself: backward reads whatever data the parameter holds then.
    context->save_for_backward({input, weight, bias});
    return at::linear(input, weight, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list outputs) {
    const torch::autograd::variable_list saved = context->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& bias = saved[2];
    const at::Tensor& gradient = outputs[0];
    const int64_t in = weight.size(1), out = weight.size(0);
    const at::Tensor flat_gradient = gradient.reshape({-1, out});
    at::Tensor grad_input, grad_weight, grad_bias;
    if (context->needs_input_grad(0)) grad_input = gradient.matmul(weight);
    if (context->needs_input_grad(1)) {
      grad_weight = flat_gradient.t().mm(input.reshape({-1, in}));
    }
    if (bias.defined() && context->needs_input_grad(2)) grad_bias = flat_gradient.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

}  // namespace

at::Tensor linear_saving_weight(const at::Tensor& input, const at::Tensor& weight,
                                const at::Tensor& bias) {
  return LinearSavingWeight::apply(input, weight, bias);
}

at::Tensor apply_linear(torch::nn::LinearImpl& layer, const at::Tensor& input,
                        bool for_partitioned_parameters) {
  if (!for_partitioned_parameters) return layer.forward(input);
  return linear_saving_weight(input, layer.weight, layer.bias);
}

}  // namespace trainrepro
