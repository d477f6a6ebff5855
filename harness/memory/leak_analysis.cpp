#include "harness/memory/leak_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace trainrepro {

double theil_sen_slope(const std::vector<double>& y) {
  std::vector<double> slopes;
  slopes.reserve(y.size() * y.size() / 2);
  for (size_t i = 0; i < y.size(); ++i) {
    for (size_t j = i + 1; j < y.size(); ++j) {
      slopes.push_back((y[j] - y[i]) / static_cast<double>(j - i));
    }
  }
  if (slopes.empty()) return 0.0;
  const size_t middle = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + middle, slopes.end());
  double median = slopes[middle];
  if (slopes.size() % 2 == 0) {
    median = (median + *std::max_element(slopes.begin(), slopes.begin() + middle)) / 2.0;
  }
  return median;
}

GrowthTrend growth_trend(const std::vector<double>& y, int64_t window) {
  GrowthTrend trend;
  if (y.empty()) return trend;
  trend.bytes_per_step = theil_sen_slope(y);
  trend.first = y.front();
  trend.last = y.back();
  trend.grows_in_every_window = true;
  for (int64_t end = static_cast<int64_t>(y.size()) - 1; end - (window - 1) >= 0; end -= window) {
    ++trend.windows;
    if (!(y[end] > y[end - (window - 1)])) trend.grows_in_every_window = false;
  }
  if (trend.windows == 0) trend.grows_in_every_window = false;
  return trend;
}

SurvivorCount count_survivors_by_step(const std::vector<LiveAllocation>& live, int64_t first_step,
                                      int64_t last_step, int64_t window) {
  SurvivorCount count;
  const int64_t steps = std::max<int64_t>(0, last_step - first_step);
  count.allocations_by_step.assign(static_cast<size_t>(steps), 0);
  int64_t allocations = 0, bytes = 0;
  for (const LiveAllocation& allocation : live) {
    if (allocation.birth_step < first_step || allocation.birth_step >= last_step) continue;
    ++count.allocations_by_step[allocation.birth_step - first_step];
    ++allocations;
    bytes += allocation.bytes;
  }
  if (steps == 0) return count;
  count.allocations_per_step = static_cast<double>(allocations) / steps;
  count.bytes_per_step = static_cast<double>(bytes) / steps;
  count.in_every_window = true;
  for (int64_t end = steps; end - window >= 0; end -= window) {
    ++count.windows;
    const auto begin = count.allocations_by_step.begin();
    const bool any = std::any_of(begin + (end - window), begin + end,
                                 [](int64_t survivors) { return survivors > 0; });
    if (!any) count.in_every_window = false;
  }
  if (count.windows == 0) count.in_every_window = false;
  return count;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = std::fabs(bytes);
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0 || value >= 100.0) {
    std::snprintf(text, sizeof text, "%s%.0f %s", bytes < 0 ? "-" : "", value, units[unit]);
  } else {
    std::snprintf(text, sizeof text, "%s%.1f %s", bytes < 0 ? "-" : "", value, units[unit]);
  }
  return text;
}

std::string describe_surviving_allocations(const std::vector<LiveAllocation>& live,
                                           int64_t first_step, int64_t last_step) {
  std::map<int64_t, std::vector<int64_t>> sizes_by_step;
  int64_t total_bytes = 0, total_count = 0;
  for (const LiveAllocation& allocation : live) {
    if (allocation.birth_step < first_step || allocation.birth_step >= last_step) continue;
    sizes_by_step[allocation.birth_step].push_back(allocation.bytes);
    total_bytes += allocation.bytes;
    ++total_count;
  }
  if (sizes_by_step.empty()) {
    return "no tensor allocation made in steps " + std::to_string(first_step) + "…" +
           std::to_string(last_step - 1) + " is still alive";
  }
  // The pattern most steps share: the multiset of sizes each step leaves behind.
  std::map<std::vector<int64_t>, int64_t> steps_with_pattern;
  for (auto& [step, sizes] : sizes_by_step) {
    std::sort(sizes.rbegin(), sizes.rend());
    ++steps_with_pattern[sizes];
  }
  const auto common =
      std::max_element(steps_with_pattern.begin(), steps_with_pattern.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  std::map<int64_t, int64_t, std::greater<int64_t>> count_by_size;
  for (int64_t size : common->first) ++count_by_size[size];
  std::string groups;
  for (const auto& [size, count] : count_by_size) {
    groups += (groups.empty() ? "" : ", ") + std::to_string(count) + " × " + format_bytes(size);
  }
  const std::string born = ", born in steps " + std::to_string(sizes_by_step.begin()->first) + "…" +
                           std::to_string(sizes_by_step.rbegin()->first);
  const int64_t per_step = static_cast<int64_t>(common->first.size());
  std::string text = common->second == static_cast<int64_t>(sizes_by_step.size())
                         ? "each step leaves "
                         : std::to_string(common->second) + " of " +
                               std::to_string(sizes_by_step.size()) + " steps leave ";
  text += std::to_string(per_step) + (per_step == 1 ? " allocation" : " allocations") + " alive (" +
          groups + ")" + born + "; " + std::to_string(total_count) + " allocations, " +
          format_bytes(static_cast<double>(total_bytes)) + " in all";
  return text;
}

}  // namespace trainrepro
