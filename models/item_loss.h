// The summed per-item loss every model shares, chosen by the batch's kind: cross entropy per
// sample (class ids), mean squared error over outputs per sample (regression), cross entropy per
// counted target token (token data). Callers divide by the items they normalise over.
#pragma once
#include <ATen/Tensor.h>

#include "models/batch.h"

namespace trainrepro {

at::Tensor summed_item_loss(const at::Tensor& outputs, const Batch& batch);

}  // namespace trainrepro
