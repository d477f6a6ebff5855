#include "harness/loop/evaluation_pass.h"

#include <optional>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace trainrepro {

EvaluationPass::EvaluationPass(const EvaluationSpec& spec, ZooModel& model,
                               const SampleSource& source, const SampleAssignment& samples,
                               at::ScalarType dtype, at::Device device)
    : spec_(spec),
      model_(model),
      source_(source),
      samples_(samples),
      dtype_(dtype),
      device_(device) {}

bool EvaluationPass::due(int64_t optimizer_steps_done) const {
  return optimizer_steps_done > 0 && optimizer_steps_done % spec_.every == 0;
}

int64_t EvaluationPass::run(MemoryProbe& probe) {
  const int64_t before = probe.device_tensor_bytes();
  probe.reset_peak();
  {
    std::optional<c10::NoGradGuard> no_grad;
    if (spec_.no_grad) no_grad.emplace();
    for (int64_t b = 0; b < spec_.batches; ++b) {
      const at::Tensor loss = batch_loss(b);
      if (spec_.backward) loss.backward();
      if (spec_.sum_as_tensor) {
        running_loss_ = running_loss_.defined() ? running_loss_ + loss : loss;
      } else {
        running_value_ += loss.item<double>();
      }
    }
  }
  ++evaluations_;
  return probe.device_peak_bytes() - before;
}

int64_t EvaluationPass::reference_peak_under_no_grad(MemoryProbe& probe) {
  c10::NoGradGuard no_grad;
  const int64_t before = probe.device_tensor_bytes();
  probe.reset_peak();
  { const at::Tensor loss = batch_loss(0); }
  return probe.device_peak_bytes() - before;
}

at::Tensor EvaluationPass::batch_loss(int64_t b) {
  const SampleRange range = samples_.evaluation_batch(evaluations_, b, spec_.batches);
  const Batch batch = source_.samples(range.begin, range.end, dtype_, device_);
  return model_.loss_sum(batch) / static_cast<double>(batch.items);
}

}  // namespace trainrepro
