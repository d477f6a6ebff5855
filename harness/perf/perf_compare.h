// Compares two perf runs figure by figure: the ratio of medians (current / baseline), the
// Mann–Whitney U test's two-sided p-value over the repetitions, and Cliff's delta as the effect
// size. A regression is called only when the change is both significant (p < alpha) and at
// least the minimum effect in the worse direction. Two runs taken in two processes differ by
// more than their repetitions say (measured here: the judged step of the same build moves 4-7 %
// from process to process, 1-2 % between two copies in one process), so one comparison only
// *suspects*: `perf compare` confirms a suspicion by rerunning both builds in many alternating
// processes (confirm_regression.h) and calls the regression on those alone.
#pragma once
#include <string>
#include <vector>

#include "harness/perf/perf_run.h"

namespace trainrepro {

struct CompareOptions {
  double alpha = 0.01;
  double min_effect = 0.05;  // 5 %: smaller changes are never called, however significant
  // What earns a rerun: worse by at least half the minimum effect with p < screen_alpha. Loose
  // on purpose: a suspicion costs a rerun, never a verdict, and a strict screen would let the
  // process-to-process spread hide a real 10 % regression in one of several comparisons.
  double screen_alpha = 0.05;
};

// `suspected`: worse, past the screen but not the call; rerun to decide.
enum class ChangeCall { unchanged, suspected, regression, improvement, not_comparable };

struct FigureComparison {
  std::string benchmark;
  std::string figure;  // "step_time" is the step over the calibration kernel's time
  bool judged = true;  // false: shown for information (raw times, rates), never called
  double baseline_median = 0.0;
  double current_median = 0.0;
  double ratio = 1.0;  // current / baseline
  double p_value = 1.0;
  double cliffs_delta = 0.0;  // of current over baseline
  size_t baseline_count = 0;
  size_t current_count = 0;
  ChangeCall call = ChangeCall::unchanged;
};

struct PerfComparison {
  std::vector<FigureComparison> rows;
  std::vector<std::string> only_in_baseline;
  std::vector<std::string> only_in_current;
  // The machine's noise in each run: the coefficient of variation of its calibration (how much
  // the machine's speed moved between repetitions)...
  double baseline_noise = 0.0;
  double current_noise = 0.0;
  // ...and what is left of it in the judged step time (step / calibration): the median over
  // benchmarks of its coefficient of variation. Regressions well above this are detectable.
  double baseline_judged_noise = 0.0;
  double current_judged_noise = 0.0;
};

PerfComparison compare_perf_runs(const PerfRun& baseline, const PerfRun& current,
                                 const CompareOptions& options);

// The coefficient of variation (stddev / mean) of every calibration time in the run.
double calibration_noise(const PerfRun& run);
double judged_step_noise(const PerfRun& run);

const char* change_call_name(ChangeCall call);

}  // namespace trainrepro
