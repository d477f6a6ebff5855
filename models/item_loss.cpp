#include "models/item_loss.h"

#include <ATen/ATen.h>

namespace trainrepro {

at::Tensor summed_item_loss(const at::Tensor& outputs, const Batch& batch) {
  if (batch.mask.defined()) {
    const at::Tensor log_probs = outputs.log_softmax(/*dim=*/-1);  // (N, S, V)
    const at::Tensor target_log_probs =
        log_probs.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1);  // (N, S)
    return -target_log_probs.masked_select(batch.mask).sum();
  }
  if (at::isIntegralType(batch.targets.scalar_type(), /*includeBool=*/false)) {
    return -outputs.log_softmax(/*dim=*/1).gather(1, batch.targets.unsqueeze(1)).sum();
  }
  return (outputs - batch.targets).square().mean(/*dim=*/1).sum();
}

}  // namespace trainrepro
