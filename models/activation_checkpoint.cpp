// The recomputation is reentrant in both modes: backward of the checkpoint node runs a nested
// autograd backward through the recomputed block, as DeepSpeed's CheckpointFunction does. The
// modes differ only in what the node is a function of (see activation_checkpoint.h).
#include "models/activation_checkpoint.h"

#include <utility>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/custom_class.h>

namespace trainrepro {
namespace {

// The block travels to backward inside the autograd context, which stores only IValues.
struct BlockHolder : torch::CustomClassHolder {
  explicit BlockHolder(BlockForward forward) : forward(std::move(forward)) {}
  BlockForward forward;
};

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context,
                            c10::intrusive_ptr<BlockHolder> block, const at::Tensor& input,
                            bool input_is_placeholder) {
    context->saved_data["block"] = c10::IValue::make_capsule(block);
    context->saved_data["input_is_placeholder"] = input_is_placeholder;
    context->save_for_backward({input});
    // Function::forward already runs without grad: nothing inside the block is kept.
    return block->forward(input);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list output_grads) {
    const auto block =
        c10::static_intrusive_pointer_cast<BlockHolder>(context->saved_data["block"].toCapsule());
    // Edge 0 is the input (the block is no tensor); a placeholder's gradient goes nowhere.
    const bool input_needs_grad = context->needs_input_grad(0) &&
                                  !context->saved_data["input_is_placeholder"].toBool();
    at::Tensor input = context->get_saved_variables()[0].detach();
    if (input_needs_grad) input.requires_grad_(true);
    at::Tensor output;
    {
      at::AutoGradMode enable_grad(true);
      output = block->forward(input);
    }
    // Accumulates into the block's parameters' .grad (and runs their hooks), as a backward
    // without checkpointing would.
    if (output.requires_grad()) torch::autograd::backward({output}, {output_grads[0]});
    return {at::Tensor(), input_needs_grad ? input.grad() : at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor checkpointed(ActivationCheckpointing mode, BlockForward block, const at::Tensor& input) {
  // Non-reentrant: the node is recorded even for an input without history, through a detached
  // copy that requires grad and whose gradient goes nowhere, so the block's parameters are
  // reached. Reentrant: recorded only when the input itself requires grad.
  const bool placeholder = mode == ActivationCheckpointing::non_reentrant &&
                           at::GradMode::is_enabled() && !input.requires_grad() &&
                           input.is_floating_point();
  return CheckpointFunction::apply(c10::make_intrusive<BlockHolder>(std::move(block)),
                                   placeholder ? input.detach().requires_grad_(true) : input,
                                   placeholder);
}

}  // namespace trainrepro
