#include "harness/golden/tensor_comparison.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/ATen.h>

namespace trainrepro {
namespace {

std::string shape_text(const at::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    text += (d ? "," : "") + std::to_string(tensor.size(d));
  }
  return text + "]";
}

}  // namespace

Tolerance default_tolerance(EngineDtype dtype) {
  return dtype == EngineDtype::float64 ? Tolerance{1e-7, 1e-7} : Tolerance{1.3e-6, 1e-5};
}

TensorComparison compare_tensors(const std::string& name, const at::Tensor& actual_in,
                                 const at::Tensor& expected_in, const Tolerance& tolerance,
                                 const at::Tensor& allowance) {
  const at::Tensor actual = actual_in.to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor expected = expected_in.to(at::kCPU, at::kDouble).contiguous();
  TensorComparison result;
  result.name = name;
  result.elements = expected.numel();
  // No broadcasting: a [4] against a [1, 4] (or a transposed weight) is a different tensor.
  if (!actual.sizes().equals(expected.sizes())) {
    result.shape_mismatch = "shape " + shape_text(actual) + " vs golden " + shape_text(expected);
    result.within_tolerance = false;
    result.mismatched = std::max(actual.numel(), expected.numel());
    result.tolerance_used = std::numeric_limits<double>::infinity();
    return result;
  }
  if (result.elements == 0) return result;

  // Non-finite values are equal only to the same value: NaN to NaN, +Inf to +Inf, -Inf to
  // -Inf. Arithmetic cannot say so (Inf - Inf is NaN, and an Inf golden allows Inf error).
  const at::Tensor actual_finite = actual.isfinite();
  const at::Tensor expected_finite = expected.isfinite();
  const at::Tensor both_nan = actual.isnan().logical_and(expected.isnan());
  const at::Tensor same_infinity = actual.isinf().logical_and(actual.eq(expected));
  const at::Tensor equal_non_finite = both_nan.logical_or(same_infinity);
  const at::Tensor non_finite_disagrees = actual_finite.logical_and(expected_finite)
                                              .logical_not()
                                              .logical_and(equal_non_finite.logical_not());
  const at::Tensor comparable = actual_finite.logical_and(expected_finite);

  at::Tensor error = (actual - expected).abs().masked_fill(comparable.logical_not(), 0.0);
  at::Tensor allowed = expected.abs()
                           .mul(tolerance.rtol)
                           .add(tolerance.atol)
                           .masked_fill(comparable.logical_not(), 1.0);
  if (allowance.defined()) allowed = allowed + allowance.to(at::kDouble);
  const at::Tensor outside = error.gt(allowed).logical_or(non_finite_disagrees);
  result.mismatched = outside.sum().item<int64_t>();
  result.within_tolerance = result.mismatched == 0;

  const at::Tensor finite_error = error.nan_to_num(0.0, 0.0, 0.0);
  result.max_abs_error = non_finite_disagrees.any().item<bool>()
                             ? std::numeric_limits<double>::infinity()
                             : finite_error.max().item<double>();
  const at::Tensor nonzero = expected.ne(0.0).logical_and(comparable);
  if (nonzero.any().item<bool>()) {
    result.max_rel_error = finite_error.masked_select(nonzero)
                               .div(expected.abs().masked_select(nonzero))
                               .max()
                               .item<double>();
  }
  // The worst element is the one that uses most of its allowed error; a non-finite
  // disagreement wins.
  at::Tensor used = finite_error.div(allowed.clamp_min(1e-300));
  used = used.masked_fill(non_finite_disagrees, std::numeric_limits<double>::infinity());
  const int64_t flat_worst = used.reshape({-1}).argmax().item<int64_t>();
  result.tolerance_used = used.reshape({-1})[flat_worst].item<double>();
  result.worst_actual = actual.reshape({-1})[flat_worst].item<double>();
  result.worst_expected = expected.reshape({-1})[flat_worst].item<double>();
  int64_t remainder = flat_worst;
  result.worst_index.assign(expected.dim(), 0);
  for (int64_t d = expected.dim() - 1; d >= 0; --d) {
    result.worst_index[d] = remainder % expected.size(d);
    remainder /= expected.size(d);
  }

  const double actual_norm = actual.nan_to_num(0.0).norm().item<double>();
  const double expected_norm = expected.nan_to_num(0.0).norm().item<double>();
  result.norm_ratio = expected_norm > 0.0  ? actual_norm / expected_norm
                      : actual_norm == 0.0 ? 1.0
                                           : std::numeric_limits<double>::infinity();
  const double dot = (actual.nan_to_num(0.0) * expected.nan_to_num(0.0)).sum().item<double>();
  result.cosine = actual_norm > 0.0 && expected_norm > 0.0 ? dot / (actual_norm * expected_norm)
                  : actual_norm == expected_norm           ? 1.0
                                                           : 0.0;
  return result;
}

TensorComparison compare_with_twin(const std::string& name, const at::Tensor& actual_in,
                                   const at::Tensor& twin_in, const at::Tensor& expected_in,
                                   double factor, double floor) {
  // The elementwise figures (worst element, norms, cosine) as for a zero tolerance.
  TensorComparison result = compare_tensors(name, actual_in, expected_in, Tolerance{0.0, 0.0});
  if (!result.shape_mismatch.empty() || result.elements == 0) return result;
  const at::Tensor actual = actual_in.to(at::kCPU, at::kDouble);
  const at::Tensor twin = twin_in.to(at::kCPU, at::kDouble);
  const at::Tensor expected = expected_in.to(at::kCPU, at::kDouble);
  const auto rms = [](const at::Tensor& difference) {
    return difference.square().mean().sqrt().item<double>();
  };
  result.rms_error = rms(actual - expected);
  result.twin_rms_error = twin.sizes().equals(expected.sizes())
                              ? rms(twin - expected)
                              : std::numeric_limits<double>::infinity();
  const double allowed = factor * result.twin_rms_error + floor;
  // NaN compares false: a non-finite run is never within.
  result.within_tolerance = result.rms_error <= allowed;
  result.tolerance_used = std::isfinite(result.rms_error)
                              ? result.rms_error / allowed
                              : std::numeric_limits<double>::infinity();
  if (twin.sizes().equals(expected.sizes())) {
    const at::Tensor element_allowed = (twin - expected).abs().mul(factor).add(floor);
    result.mismatched = (actual - expected)
                            .abs()
                            .gt(element_allowed)
                            .logical_or(actual.isfinite().logical_not())
                            .sum()
                            .item<int64_t>();
  }
  return result;
}

std::vector<TensorComparison> compare_model_with_twin(const std::vector<std::string>& names,
                                                      const std::vector<at::Tensor>& run,
                                                      const std::vector<at::Tensor>& twin,
                                                      const std::vector<at::Tensor>& golden,
                                                      double factor, double floor) {
  const auto flat = [](const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> pieces;
    for (const at::Tensor& tensor : tensors) pieces.push_back(tensor.to(at::kDouble).reshape({-1}));
    return at::cat(pieces);
  };
  std::vector<TensorComparison> comparisons = {
      compare_with_twin("whole model (" + std::to_string(names.size()) + " tensors)", flat(run),
                        flat(twin), flat(golden), factor, floor)};
  for (size_t i = 0; i < names.size(); ++i) {
    comparisons.push_back(compare_with_twin(names[i], run[i], twin[i], golden[i], factor, floor));
    comparisons.back().informational = true;
  }
  return comparisons;
}

}  // namespace trainrepro
