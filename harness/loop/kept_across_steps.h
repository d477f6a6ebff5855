// What the user's loop keeps across steps (KeepHabit): the Python list it appends to every
// micro-step, the floats it logs, and after each optimizer step the gathered parameters some
// loops hold until the next one. The memory verdicts judge exactly what this keeps alive.
#pragma once
#include <vector>

#include <ATen/Tensor.h>

#include "harness/scenario/scenario.h"

namespace trainrepro {

class ReferenceEngine;

struct KeptAcrossSteps {
  std::vector<at::Tensor> tensors;
  std::vector<double> values;
  std::vector<at::Tensor> gathered;  // the last optimizer step's gathered parameters

  // After each backward, from the micro-step's loss and the model's outputs.
  void keep(KeepHabit habit, const at::Tensor& loss, const at::Tensor& outputs);
  // After an optimizer step: the habits that gather the whole model (a collective, so every
  // rank does it). The gathered tensors replace the previous step's.
  void keep_after_step(KeepHabit habit, ReferenceEngine& engine);
};

}  // namespace trainrepro
