// The user's evaluation pass between optimizer steps, with its habits (no_grad or not, the
// running loss summed as a tensor, a stray backward). Its running loss lives as long as the
// loop, like a Python variable summed over the whole training run.
#pragma once
#include <cstdint>

#include <ATen/Tensor.h>

#include "harness/loop/sample_assignment.h"
#include "harness/memory/memory_probe.h"
#include "harness/scenario/scenario.h"
#include "models/sample_source.h"
#include "models/zoo_model.h"

namespace trainrepro {

class EvaluationPass {
 public:
  EvaluationPass(const EvaluationSpec& spec, ZooModel& model, const SampleSource& source,
                 const SampleAssignment& samples, at::ScalarType dtype, at::Device device);

  bool due(int64_t optimizer_steps_done) const;

  // Returns the rise of device tensor memory during the pass, measured from its start.
  int64_t run(MemoryProbe& probe);

  // The same first batch under no_grad: the scale an evaluation's peak is judged against.
  int64_t reference_peak_under_no_grad(MemoryProbe& probe);

  // The running loss summed as a tensor (undefined when summed as a number).
  const at::Tensor& running_loss() const { return running_loss_; }

 private:
  at::Tensor batch_loss(int64_t b);

  EvaluationSpec spec_;
  ZooModel& model_;
  const SampleSource& source_;
  SampleAssignment samples_;
  at::ScalarType dtype_;
  at::Device device_;
  int64_t evaluations_ = 0;
  at::Tensor running_loss_;
  double running_value_ = 0.0;
};

}  // namespace trainrepro
