#include "harness/perf/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace trainrepro {
namespace {

// Above this many pairs the exact table grows as (n1*n2)^2 while the normal approximation is
// already good; 400 covers two samples of 20, more repetitions than a benchmark takes.
constexpr double kMaxExactPairs = 400.0;

// NaN breaks the strict ordering that sorting and ranking rely on, so it is refused up front.
void check_sample(const std::vector<double>& values, const char* name) {
  if (values.empty()) {
    throw std::invalid_argument(std::string("mann_whitney_u: sample ") + name + " is empty");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      throw std::invalid_argument(std::string("mann_whitney_u: sample ") + name + "[" +
                                  std::to_string(i) + "] is NaN");
    }
  }
}

// P(U <= u) and P(U >= u) under the null hypothesis, for samples of n1 and n2 distinct values.
// count[i][j][k]: how many orderings of i values of `a` and j of `b` give U = k. The largest
// value is either an `a` (it beats all j `b`s) or a `b` (it beats nothing of `a`), hence
// count[i][j][k] = count[i-1][j][k-j] + count[i][j-1][k]. The counts stay below C(n1+n2, n1)
// <= C(40, 20) ~ 1.4e11 for n1*n2 <= 400, exact in a double.
std::pair<double, double> exact_tails(size_t n1, size_t n2, size_t u) {
  std::vector<std::vector<std::vector<double>>> count(n1 + 1,
                                                      std::vector<std::vector<double>>(n2 + 1));
  for (size_t i = 0; i <= n1; ++i) {
    for (size_t j = 0; j <= n2; ++j) {
      std::vector<double>& here = count[i][j];
      here.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        here[0] = 1.0;
        continue;
      }
      const std::vector<double>& a_last = count[i - 1][j];
      const std::vector<double>& b_last = count[i][j - 1];
      for (size_t k = 0; k < a_last.size(); ++k) here[k + j] += a_last[k];
      for (size_t k = 0; k < b_last.size(); ++k) here[k] += b_last[k];
    }
  }
  const std::vector<double>& counts = count[n1][n2];
  double total = 0.0, at_most = 0.0, at_least = 0.0;
  for (size_t k = 0; k < counts.size(); ++k) {
    total += counts[k];
    if (k <= u) at_most += counts[k];
    if (k >= u) at_least += counts[k];
  }
  return {at_most / total, at_least / total};
}

}  // namespace

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  check_sample(a, "a");
  check_sample(b, "b");
  const size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;

  // Rank the pooled values, tied values sharing the mean of their ranks. Ranks are multiples of
  // 1/2, exact in a double, so U comes out exact too.
  std::vector<std::pair<double, bool>> pooled;  // value, from `a`
  pooled.reserve(n);
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0.0;
  double tie_term = 0.0;  // sum of t^3 - t over groups of t tied values, for the variance
  for (size_t start = 0; start < n;) {
    size_t end = start;
    while (end < n && pooled[end].first == pooled[start].first) ++end;
    const double t = static_cast<double>(end - start);
    const double mean_rank = (static_cast<double>(start + 1) + static_cast<double>(end)) / 2.0;
    for (size_t i = start; i < end; ++i) {
      if (pooled[i].second) rank_sum_a += mean_rank;
    }
    tie_term += t * t * t - t;
    start = end;
  }

  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2);
  const double pairs = d1 * d2;
  MannWhitneyResult result;
  result.u = rank_sum_a - d1 * (d1 + 1.0) / 2.0;
  // pairs - u counts the pairs where b > a (ties 1/2), so delta = ((pairs - u) - u) / pairs.
  result.cliffs_delta = (pairs - 2.0 * result.u) / pairs;

  if (tie_term == 0.0 && pairs <= kMaxExactPairs) {
    const auto [at_most, at_least] =
        exact_tails(n1, n2, static_cast<size_t>(std::llround(result.u)));
    result.exact = true;
    result.p_value = std::min(1.0, 2.0 * std::min(at_most, at_least));
    return result;
  }

  // Normal approximation, as scipy: U measured from the far side of the mean (the larger of
  // U1 and U2), moved 0.5 towards the mean for continuity.
  const double dn = static_cast<double>(n);
  const double mean = pairs / 2.0;
  const double variance = pairs / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0)));
  if (variance <= 0.0) {
    // Every value the same: nothing tells the samples apart.
    result.p_value = 1.0;
    return result;
  }
  const double u_far = std::max(result.u, pairs - result.u);
  const double z = (u_far - mean - 0.5) / std::sqrt(variance);
  // Two-sided: 2 * P(Z >= z), with P(Z >= z) = erfc(z / sqrt 2) / 2.
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

double median_of(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median_of: no values");
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) {
      throw std::invalid_argument("median_of: value " + std::to_string(i) + " is NaN");
    }
  }
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  if (values.size() % 2 == 1) return values[middle];
  return (values[middle - 1] + values[middle]) / 2.0;
}

}  // namespace trainrepro
