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
};

// `allowance`, when defined, is added elementwise to the allowed error (same shape as expected).
TensorComparison compare_tensors(const std::string& name, const at::Tensor& actual,
                                 const at::Tensor& expected, const Tolerance& tolerance,
                                 const at::Tensor& allowance = at::Tensor());

}  // namespace trainrepro
