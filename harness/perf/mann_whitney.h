// The Mann–Whitney U test: do two sets of repetitions of one figure (say, step times before and
// after a commit) come from the same distribution? Rank-based, so it needs no assumption of
// normality and one slow repetition cannot dominate it, which suits timing noise.
#pragma once
#include <vector>

namespace trainrepro {

struct MannWhitneyResult {
  double u = 0.0;        // U of the first sample (count of pairs where a > b, ties count 1/2)
  double p_value = 1.0;  // two-sided
  bool exact = false;    // exact distribution used (no ties, n1*n2 small) or normal approximation
  // Effect size: the probability that a value of `b` exceeds one of `a` minus the reverse
  // (Cliff's delta of b over a, in [-1, 1]); positive when b tends to be larger.
  double cliffs_delta = 0.0;
};

// Two-sided. Without ties and with n1*n2 <= 400 the p-value comes from the exact null
// distribution of U; otherwise from the normal approximation with the tie-corrected variance and
// a continuity correction of 0.5 (scipy.stats.mannwhitneyu, method='asymptotic',
// use_continuity=True). When every value is the same, p = 1.
// Throws std::invalid_argument when a sample is empty or holds a NaN.
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// The median (the mean of the two middle values for an even count).
// Throws std::invalid_argument when `values` is empty or holds a NaN.
double median_of(std::vector<double> values);

}  // namespace trainrepro
