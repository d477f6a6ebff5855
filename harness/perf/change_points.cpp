#include "harness/perf/change_points.h"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "harness/perf/mann_whitney.h"

namespace trainrepro {

std::vector<ChangePoint> detect_change_points(const std::vector<std::vector<double>>& history,
                                              double alpha, double min_effect) {
  if (!(alpha > 0.0 && alpha <= 1.0)) {
    std::ostringstream message;
    message << "detect_change_points: alpha = " << alpha << ", expected a value in (0, 1]";
    throw std::invalid_argument(message.str());
  }
  if (!(min_effect >= 0.0)) {
    std::ostringstream message;
    message << "detect_change_points: min_effect = " << min_effect << ", expected >= 0";
    throw std::invalid_argument(message.str());
  }

  std::vector<double> medians;
  medians.reserve(history.size());
  for (size_t i = 0; i < history.size(); ++i) {
    if (history[i].empty()) {
      throw std::invalid_argument("detect_change_points: entry " + std::to_string(i) +
                                  " has no values");
    }
    medians.push_back(median_of(history[i]));
    if (!(medians.back() > 0.0)) {
      std::ostringstream message;
      message << "detect_change_points: entry " << i << " has median " << medians.back()
              << "; changes are measured as ratios, so medians must be positive";
      throw std::invalid_argument(message.str());
    }
  }

  std::vector<ChangePoint> changes;
  size_t before = 0;  // the latest entry at the current level
  for (size_t i = 1; i < history.size(); ++i) {
    const double ratio = medians[i] / medians[before];
    const double p_value = mann_whitney_u(history[before], history[i]).p_value;
    if (!(p_value < alpha) || std::fabs(ratio - 1.0) < min_effect) {
      before = i;  // same level
      continue;
    }
    bool lasts = true;
    if (i + 1 < history.size()) {
      const double next_ratio = medians[i + 1] / medians[before];
      const double next_shift = ratio > 1.0 ? next_ratio - 1.0 : 1.0 - next_ratio;
      lasts = next_shift >= min_effect / 2.0;
    }
    if (lasts) {
      changes.push_back({i, ratio, p_value});
      before = i;
    }
    // Otherwise entry i is an outlier: `before` stays, and entry i+1 is compared with it.
  }
  return changes;
}

}  // namespace trainrepro
