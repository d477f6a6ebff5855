#include "harness/verdict/golden_staleness.h"

#include <algorithm>
#include <cstdio>

#include <ATen/ATen.h>

#include "harness/golden/golden_store.h"
#include "models/sample_source.h"

namespace trainrepro {
namespace {

// Samples compared: enough to catch a changed generator, few enough to cost nothing.
constexpr int64_t kSamplesCompared = 16;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// Largest elementwise difference, or -1 when the shapes differ.
double largest_difference(const at::Tensor& a, const at::Tensor& b) {
  if (!a.sizes().equals(b.sizes())) return -1.0;
  if (a.numel() == 0) return 0.0;
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

std::string stale(const Scenario& scenario, const std::string& what) {
  return scenario.file + ": golden is stale: " + what +
         "; regenerate it with: " + regenerate_command(scenario);
}

}  // namespace

std::optional<std::string> find_stale_golden(const Scenario& scenario, const Trace& trace,
                                             const Golden& golden) {
  if (trace.parameter_names != golden.parameter_names) {
    return stale(scenario,
                 "the model's parameters are not the golden's (names or order "
                 "changed: the run has " +
                     std::to_string(trace.parameter_names.size()) + ", the golden " +
                     std::to_string(golden.parameter_names.size()) + ")");
  }
  // A float32 run starts from the golden's float64 weights rounded to float32; fp16 and bf16
  // runs from them rounded to 11 and 8 significant bits (twice the unit roundoff allowed).
  double tolerance = scenario.dtype == EngineDtype::float64 ? 1e-12 : 1e-6;
  if (scenario.deepspeed.fp16_enabled) tolerance = 1e-3;
  if (scenario.deepspeed.bf16_enabled) tolerance = 8e-3;
  for (size_t i = 0; i < golden.parameter_names.size(); ++i) {
    const at::Tensor& expected = golden.initial_parameters[i];
    const double difference = largest_difference(trace.initial_parameters[i], expected);
    const double scale =
        std::max(1.0, expected.numel() ? expected.abs().max().item<double>() : 0.0);
    if (difference < 0.0 || difference > tolerance * scale) {
      return stale(scenario, "the run's initial " + golden.parameter_names[i] +
                                 (difference < 0.0 ? " has another shape than the golden's"
                                                   : " differs from the golden's by up to " +
                                                         number(difference)) +
                                 " (the model's initialisation changed since it was written)");
    }
  }
  const int64_t samples = std::min<int64_t>(kSamplesCompared, golden.data.samples);
  const Batch run = SampleSource(scenario.data).samples(0, samples, at::kDouble, at::kCPU);
  const auto first = [&](const at::Tensor& tensor) { return tensor.slice(0, 0, samples); };
  // Float64 samples computed with a matrix product (the regression teacher's targets) round
  // differently on another CPU (AVX2 and AVX-512 kernels sum in other orders): a golden written
  // on one machine must not read as stale on another. A changed generator differs by far more.
  const auto differ = [](const at::Tensor& run_tensor, const at::Tensor& golden_tensor) {
    const double difference = largest_difference(run_tensor, golden_tensor);
    const double scale = std::max(
        1.0, golden_tensor.numel() ? golden_tensor.abs().max().item<double>() : 0.0);
    return difference < 0.0 || difference > 1e-12 * scale;
  };
  const bool inputs_differ = differ(run.inputs, first(golden.data.inputs));
  const bool targets_differ = differ(run.targets, first(golden.data.targets));
  const bool mask_differs = run.mask.defined() != golden.data.mask.defined() ||
                            (run.mask.defined() && !run.mask.equal(first(golden.data.mask)));
  if (inputs_differ || targets_differ || mask_differs) {
    return stale(scenario, "the data generator's first " + std::to_string(samples) +
                               " samples are not the golden's (" +
                               (inputs_differ    ? "inputs"
                                : targets_differ ? "targets"
                                                 : "mask") +
                               " differ: the generator changed since it was written)");
  }
  return std::nullopt;
}

}  // namespace trainrepro
