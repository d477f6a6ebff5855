// Compares a run's tensor with the golden's, elementwise: |a - b| <= atol + rtol * |b| (plus an
// optional per-element allowance), same shapes only (no broadcasting); NaN equals NaN and
// +-Inf equals the same infinity, any other non-finite value is a mismatch. Reports the numbers a
// person needs to judge: max abs and rel error, worst index, norm ratio, cosine similarity, % of
// tolerance used.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/scenario/scenario.h"

namespace trainrepro {

struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

// torch.testing.assert_close's defaults for the engine's dtype.
Tolerance default_tolerance(EngineDtype dtype);

struct TensorComparison {
  std::string name;
  bool within_tolerance = true;
  int64_t elements = 0;
  int64_t mismatched = 0;  // elements outside tolerance (NaN disagreement included)
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;        // |a - b| / |b| at elements where b != 0
  std::vector<int64_t> worst_index;  // where |a - b| / tolerance is largest
  double worst_actual = 0.0;
  double worst_expected = 0.0;
  double tolerance_used = 0.0;  // max over elements of |a - b| / allowed (1.0 = at the limit)
  double norm_ratio = 1.0;      // ||a|| / ||b||
  double cosine = 1.0;          // <a, b> / (||a|| ||b||)
  std::string shape_mismatch;   // "shape [4,16] vs golden [16,4]"; empty when shapes agree
  // Judged against a precision twin (compare_with_twin): the run's and the twin's RMS error
  // against the golden. twin_rms_error < 0 when judged by tolerance.
  double rms_error = 0.0;
  double twin_rms_error = -1.0;
  // Shown for information only: another comparison decides (a low-precision model is judged
  // whole; its tensors' own figures follow it). Never counted by the verdict.
  bool informational = false;
};

// `allowance`, when defined, is added elementwise to the allowed error (same shape as expected).
TensorComparison compare_tensors(const std::string& name, const at::Tensor& actual,
                                 const at::Tensor& expected, const Tolerance& tolerance,
                                 const at::Tensor& allowance = at::Tensor());

// Low precision judged as PyTorch judges it (torch._dynamo.utils same() with an fp64 reference):
// `actual` passes when its RMS error against `expected` (the float64 golden) is at most
// factor x the RMS error of `twin` (the same steps, unaccumulated, in the same precision) plus
// `floor`. tolerance_used is the RMS error over that limit; `mismatched` counts the elements
// whose error exceeds factor x the twin's at that element plus the floor (for information).
TensorComparison compare_with_twin(const std::string& name, const at::Tensor& actual,
                                   const at::Tensor& twin, const at::Tensor& expected,
                                   double factor, double floor);

// A low-precision model judged whole (all its elements as one vector) against the twin: a
// tensor of a few elements has too few roundings for an RMS to mean anything on its own. The
// first comparison is the whole model's and decides; each tensor's follows for information.
std::vector<TensorComparison> compare_model_with_twin(const std::vector<std::string>& names,
                                                      const std::vector<at::Tensor>& run,
                                                      const std::vector<at::Tensor>& twin,
                                                      const std::vector<at::Tensor>& golden,
                                                      double factor, double floor);

}  // namespace trainrepro
