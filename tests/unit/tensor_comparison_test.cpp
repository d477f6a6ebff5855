// Tensor comparison: shapes must agree exactly (no broadcasting), and non-finite values are
// equal only to themselves.
#include <gtest/gtest.h>

#include <limits>

#include <ATen/ATen.h>

#include "harness/golden/tensor_comparison.h"

namespace trainrepro {
namespace {

const Tolerance kTolerance{1e-7, 1e-7};
const double kInf = std::numeric_limits<double>::infinity();

TensorComparison compare(const at::Tensor& actual, const at::Tensor& expected) {
  return compare_tensors("t", actual, expected, kTolerance);
}

TEST(TensorComparison, DifferentShapesNeverMatchEvenWhenTheyWouldBroadcast) {
  const TensorComparison row = compare(at::ones({1, 4}, at::kDouble), at::ones({4}, at::kDouble));
  EXPECT_FALSE(row.within_tolerance);
  EXPECT_EQ(row.shape_mismatch, "shape [1,4] vs golden [4]");
  EXPECT_FALSE(
      compare(at::ones({4, 2}, at::kDouble), at::ones({2, 4}, at::kDouble)).within_tolerance);
}

TEST(TensorComparison, SameInfinityMatchesOtherNonFiniteValuesDoNot) {
  const at::Tensor golden = at::tensor({kInf, -kInf, 1.0}, at::kDouble);
  EXPECT_TRUE(compare(golden.clone(), golden).within_tolerance);
  // An infinite golden used to allow an infinite error: a finite run value must not match it.
  const TensorComparison finite = compare(at::tensor({5.0, -kInf, 1.0}, at::kDouble), golden);
  EXPECT_FALSE(finite.within_tolerance);
  EXPECT_EQ(finite.mismatched, 1);
  EXPECT_EQ(finite.worst_index, std::vector<int64_t>{0});
  EXPECT_FALSE(compare(at::tensor({-kInf, -kInf, 1.0}, at::kDouble), golden).within_tolerance);
  EXPECT_FALSE(compare(at::tensor({kInf, -kInf, kInf}, at::kDouble), golden).within_tolerance);
  const at::Tensor nan = at::tensor({std::nan(""), 2.0}, at::kDouble);
  EXPECT_TRUE(compare(nan.clone(), nan).within_tolerance);
  EXPECT_FALSE(compare(at::tensor({kInf, 2.0}, at::kDouble), nan).within_tolerance);
}

}  // namespace
}  // namespace trainrepro
