// Finds the commits where a figure (step time, peak memory, throughput) moved to a new level, in
// its history of one entry per commit. Each commit's repetitions are compared with the previous
// commit's by a Mann–Whitney test, so a change must be both significant against the run-to-run
// noise and large enough to matter, and it must last: a lone slow commit is not a change.
#pragma once
#include <cstddef>
#include <vector>

namespace trainrepro {

struct ChangePoint {
  size_t index = 0;      // first entry of the new level
  double ratio = 1.0;    // median(after) / median(before)
  double p_value = 1.0;  // of the Mann–Whitney test between before and after
};

// `history`: one entry per commit in time order, each holding that commit's repetitions.
//
// The rule. "before" is the latest entry judged to be at the current level, normally entry i-1.
// Entry i (i >= 1) starts a new level when
//   1. the Mann–Whitney test of before's values against entry i's has p < alpha, and
//   2. |median(i) / median(before) - 1| >= min_effect, and
//   3. the shift lasts: when entry i+1 exists, its median lies on the same side of before's
//      median by at least min_effect / 2 (the newest entry, with nothing after it, is reported
//      on 1 and 2 alone and may be withdrawn once the next commit is measured).
// An entry that passes 1 and 2 but not 3 is an outlier: it is no change point, and it does not
// become "before" either, so the return to the old level on the next commit is no change point
// (comparing with the outlier would make the return look like a step). Every other entry
// becomes "before" for the next one.
//
// Ratios need positive levels: throws std::invalid_argument when an entry is empty or its median
// is not positive, when alpha is not in (0, 1], or when min_effect is negative.
std::vector<ChangePoint> detect_change_points(const std::vector<std::vector<double>>& history,
                                              double alpha, double min_effect);

}  // namespace trainrepro
