// The statistics behind performance tracking: the Mann–Whitney test, the power-law fit of how a
// figure scales, and change-point detection over a commit history. The expected p-values were
// produced by scipy 1.17.1, not by this code: scipy.stats.mannwhitneyu(a, b,
// alternative='two-sided', method=..., use_continuity=True), as named at each check.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "harness/perf/change_points.h"
#include "harness/perf/mann_whitney.h"
#include "harness/perf/scaling_fit.h"

namespace trainrepro {
namespace {

TEST(PerfStatistics, ExactPValueOfDisjointSamples) {
  // scipy method='exact': statistic 0.0, pvalue 0.007936507936507936 (= 2/252).
  const MannWhitneyResult r = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.p_value, 2.0 / 252.0, 1e-15);
  EXPECT_DOUBLE_EQ(r.cliffs_delta, 1.0);  // every b is larger

  // Swapping the samples mirrors U and the effect, not the two-sided p.
  const MannWhitneyResult swapped = mann_whitney_u({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(swapped.u, 25.0);
  EXPECT_NEAR(swapped.p_value, 2.0 / 252.0, 1e-15);
  EXPECT_DOUBLE_EQ(swapped.cliffs_delta, -1.0);
}

TEST(PerfStatistics, ExactPValueOfOverlappingSamples) {
  // scipy method='exact': statistic 6.0, pvalue 0.03496503496503496.
  const MannWhitneyResult r =
      mann_whitney_u({1.1, 2.3, 3.7, 4.2, 5.9, 6.4}, {3.1, 4.8, 6.9, 7.2, 8.5, 9.0, 10.2});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 6.0);
  EXPECT_NEAR(r.p_value, 0.03496503496503496, 1e-13);
  // 36 pairs with b larger, 6 with a larger, of 42.
  EXPECT_NEAR(r.cliffs_delta, 30.0 / 42.0, 1e-15);
}

TEST(PerfStatistics, ExactPValueWithOneLongSample) {
  // 3 x 100 = 300 pairs, no ties: still exact. scipy method='exact': statistic 153.0,
  // pvalue 0.9632402417854575.
  std::vector<double> b;
  for (int i = 0; i < 100; ++i) b.push_back(i);
  const MannWhitneyResult r = mann_whitney_u({10.5, 50.5, 90.5}, b);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 153.0);
  EXPECT_NEAR(r.p_value, 0.9632402417854575, 1e-12);
  EXPECT_NEAR(r.cliffs_delta, -0.02, 1e-15);
}

TEST(PerfStatistics, TiesUseTheNormalApproximation) {
  // Small, but tied: scipy method='asymptotic': statistic 4.5, pvalue 0.06414661873440437.
  const MannWhitneyResult r = mann_whitney_u({1, 2, 2, 3, 4}, {2, 3, 5, 6, 6, 7});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 4.5);
  EXPECT_NEAR(r.p_value, 0.06414661873440437, 1e-12);
  EXPECT_NEAR(r.cliffs_delta, 0.7, 1e-15);
}

TEST(PerfStatistics, LargeTiedSamplesMatchScipyAsymptotic) {
  // a[i] = (7 i) mod 11 for i < 30, b[j] = (5 j) mod 13 + 1 for j < 35: many ties.
  // scipy method='asymptotic': statistic 383.5, pvalue 0.06273208909797802.
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) a.push_back((i * 7) % 11);
  for (int j = 0; j < 35; ++j) b.push_back((j * 5) % 13 + 1);
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 383.5);
  EXPECT_NEAR(r.p_value, 0.06273208909797802, 1e-12);
  EXPECT_NEAR(r.cliffs_delta, 0.2695238095238095, 1e-15);
}

TEST(PerfStatistics, IdenticalValuesGivePOne) {
  // scipy method='asymptotic' also gives statistic 10.0, pvalue 1.0 here.
  const MannWhitneyResult r = mann_whitney_u({2, 2, 2, 2}, {2, 2, 2, 2, 2});
  EXPECT_DOUBLE_EQ(r.u, 10.0);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_DOUBLE_EQ(r.cliffs_delta, 0.0);
  // Distinct values, U at the centre of its distribution (2 of 4 pairs): exact p = 1.
  const MannWhitneyResult same = mann_whitney_u({1, 4}, {2, 3});
  EXPECT_TRUE(same.exact);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
}

TEST(PerfStatistics, MannWhitneyRejectsEmptySamples) {
  EXPECT_THROW(mann_whitney_u({}, {1.0}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1.0}, {}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1.0, NAN}, {2.0}), std::invalid_argument);
  try {
    mann_whitney_u({1.0}, {});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("sample b is empty"), std::string::npos)
        << error.what();
  }
}

TEST(PerfStatistics, Median) {
  EXPECT_DOUBLE_EQ(median_of({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of({7}), 7.0);
  EXPECT_THROW(median_of({}), std::invalid_argument);
}

TEST(PerfStatistics, PowerLawRecoversExponentAndCoefficient) {
  std::vector<double> x, y;
  for (double v : {1.0, 2.0, 4.0, 8.0, 16.0, 100.0}) {
    x.push_back(v);
    y.push_back(3.0 * v * v);
  }
  const PowerLawFit fit = fit_power_law(x, y);
  EXPECT_NEAR(fit.exponent, 2.0, 1e-12);
  EXPECT_NEAR(fit.coefficient, 3.0, 1e-12);
  EXPECT_NEAR(fit.r_squared, 1.0, 1e-12);

  // Noise lowers r² below 1 and leaves the exponent near the truth.
  const PowerLawFit noisy = fit_power_law({1, 2, 4, 8}, {1.1, 1.9, 4.3, 7.6});
  EXPECT_NEAR(noisy.exponent, 1.0, 0.05);
  EXPECT_LT(noisy.r_squared, 1.0);
  EXPECT_GT(noisy.r_squared, 0.99);
}

TEST(PerfStatistics, PowerLawRejectsBadInput) {
  EXPECT_THROW(fit_power_law({1, 2}, {1, 2, 3}), std::invalid_argument);     // sizes differ
  EXPECT_THROW(fit_power_law({1}, {1}), std::invalid_argument);              // one point
  EXPECT_THROW(fit_power_law({1, 0}, {1, 2}), std::invalid_argument);        // x = 0
  EXPECT_THROW(fit_power_law({1, 2}, {1, -2}), std::invalid_argument);       // y < 0
  EXPECT_THROW(fit_power_law({1, NAN}, {1, 2}), std::invalid_argument);      // x NaN
  EXPECT_THROW(fit_power_law({3, 3, 3}, {1, 2, 3}), std::invalid_argument);  // all x equal
  try {
    fit_power_law({1, 2, 3}, {1, -2, 3});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("y[1] = -2"), std::string::npos) << error.what();
  }
}

// Nine repetitions around `level`, spread ±4 % without noise, so they never tie.
std::vector<double> repetitions(double level) {
  std::vector<double> values;
  for (int k = -4; k <= 4; ++k) values.push_back(level * (1.0 + 0.01 * k));
  return values;
}

TEST(PerfStatistics, StepUpIsFoundAtItsFirstEntry) {
  const std::vector<std::vector<double>> history = {repetitions(1.0), repetitions(1.0),
                                                    repetitions(1.0), repetitions(1.2),
                                                    repetitions(1.2), repetitions(1.2)};
  const std::vector<ChangePoint> changes = detect_change_points(history, 0.01, 0.05);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 3u);
  EXPECT_NEAR(changes[0].ratio, 1.2, 1e-12);
  // Nine values all above nine others: exact p = 2 / C(18, 9) = 2 / 48620.
  EXPECT_NEAR(changes[0].p_value, 2.0 / 48620.0, 1e-15);
}

TEST(PerfStatistics, StepDownAndStepAsLastEntryAreFound) {
  const std::vector<ChangePoint> down = detect_change_points(
      {repetitions(2.0), repetitions(2.0), repetitions(1.5), repetitions(1.5)}, 0.01, 0.05);
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].index, 2u);
  EXPECT_NEAR(down[0].ratio, 0.75, 1e-12);

  // Nothing after it to confirm it: reported on significance and size alone.
  const std::vector<ChangePoint> last =
      detect_change_points({repetitions(1.0), repetitions(1.0), repetitions(1.3)}, 0.01, 0.05);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].index, 2u);
}

TEST(PerfStatistics, FlatHistoryHasNoChangePoints) {
  std::vector<std::vector<double>> history(8, repetitions(1.0));
  EXPECT_TRUE(detect_change_points(history, 0.01, 0.05).empty());
  // A significant but small shift (2 %) is below min_effect.
  history[5] = history[6] = history[7] = repetitions(1.02);
  EXPECT_TRUE(detect_change_points(history, 0.5, 0.05).empty());
  EXPECT_TRUE(detect_change_points({}, 0.01, 0.05).empty());
  EXPECT_TRUE(detect_change_points({repetitions(1.0)}, 0.01, 0.05).empty());
}

TEST(PerfStatistics, SingleCommitOutlierIsNoChangePoint) {
  // Neither the jump to 1.3 nor the return to 1.0 is a change.
  const std::vector<std::vector<double>> history = {
      repetitions(1.0), repetitions(1.0), repetitions(1.3), repetitions(1.0), repetitions(1.0)};
  EXPECT_TRUE(detect_change_points(history, 0.01, 0.05).empty());

  // An outlier followed by a real step down: the step is measured from the level before the
  // outlier.
  const std::vector<ChangePoint> changes = detect_change_points(
      {repetitions(1.0), repetitions(1.0), repetitions(1.3), repetitions(0.7), repetitions(0.7)},
      0.01, 0.05);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].index, 3u);
  EXPECT_NEAR(changes[0].ratio, 0.7, 1e-12);
}

TEST(PerfStatistics, ChangePointsRejectBadInput) {
  EXPECT_THROW(detect_change_points({repetitions(1.0), {}}, 0.01, 0.05), std::invalid_argument);
  EXPECT_THROW(detect_change_points({repetitions(1.0), {0.0, 0.0}}, 0.01, 0.05),
               std::invalid_argument);
  EXPECT_THROW(detect_change_points({repetitions(1.0)}, 0.0, 0.05), std::invalid_argument);
  EXPECT_THROW(detect_change_points({repetitions(1.0)}, 0.01, -0.1), std::invalid_argument);
}

}  // namespace
}  // namespace trainrepro
