// `trainrepro perf compare BASELINE CURRENT`: per benchmark and figure the ratio, the Mann–Whitney
// p-value and Cliff's delta; a suspected regression (past the loose screen, or already
// significant and at least the minimum effect), or with --rerun-all every benchmark, is judged
// again on a rerun of both builds taking turns on one CPU (confirm_regression.h), and only a
// regression called on that rerun is reported, exit code 4.
#include <cstdio>
#include <iostream>
#include <set>

#include "harness/cli/commands.h"
#include "harness/perf/benchmark_json.h"
#include "harness/perf/confirm_regression.h"
#include "harness/perf/perf_compare.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

void print_rows(const PerfComparison& comparison, bool everything) {
  std::printf("%-44s %-24s %12s %12s %8s %9s %7s  %s\n", "benchmark", "figure", "baseline",
              "current", "ratio", "p", "delta", "call");
  for (const FigureComparison& row : comparison.rows) {
    if (!everything && row.call != ChangeCall::regression) continue;
    std::printf("%-44s %-24s %12.6g %12.6g %8.4f %9.2g %+7.2f  %s%s\n", row.benchmark.c_str(),
                row.figure.c_str(), row.baseline_median, row.current_median, row.ratio,
                row.p_value, row.cliffs_delta, change_call_name(row.call),
                row.judged ? "" : " (information)");
  }
  std::fflush(stdout);
}

// With n and m repetitions the rank test's two-sided p is at least 2 / C(n + m, n) (complete
// separation): fewer than 5 a side can never reach p < 0.01, so a real regression would read as
// "unchanged". Said once per benchmark.
void warn_about_too_few_repetitions(const PerfComparison& comparison, double alpha) {
  std::set<std::string> warned;
  for (const FigureComparison& row : comparison.rows) {
    if (!row.judged || row.baseline_count == 0 || warned.count(row.benchmark)) continue;
    double arrangements = 1.0;  // C(n + m, n), built up factor by factor
    const size_t n = row.baseline_count;
    const size_t m = row.current_count;
    for (size_t k = 1; k <= n; ++k) arrangements = arrangements * static_cast<double>(m + k) / k;
    const double smallest = std::min(1.0, 2.0 / arrangements);
    if (smallest < alpha) continue;
    warned.insert(row.benchmark);
    std::printf("warning: %s: %zu and %zu repetitions can never reach p < %g (the smallest "
                "possible p is %.2g); measure more repetitions\n",
                row.benchmark.c_str(), n, m, alpha, smallest);
  }
}

// The rows called `call`, or with `or_suspected` also the suspected ones.
std::vector<const FigureComparison*> rows_called(const PerfComparison& comparison,
                                                 bool or_suspected) {
  std::vector<const FigureComparison*> found;
  for (const FigureComparison& row : comparison.rows) {
    if (row.call == ChangeCall::regression ||
        (or_suspected && row.call == ChangeCall::suspected)) {
      found.push_back(&row);
    }
  }
  return found;
}

}  // namespace

int run_perf_compare(const PerfCompareArgs& args) {
  PerfRun baseline;
  PerfRun current;
  try {
    baseline = read_perf_run(args.baseline);
    current = read_perf_run(args.current);
  } catch (const PerfFormatError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  const CompareOptions options{args.alpha, args.min_effect, args.screen_alpha};
  const PerfComparison comparison = compare_perf_runs(baseline, current, options);
  std::cout << "baseline " << args.baseline << " (" << baseline.context.commit << ", "
            << baseline.context.date << ")\ncurrent  " << args.current << " ("
            << current.context.commit << ", " << current.context.date << ")\n";
  std::printf("machine noise: the calibration varies by %.1f %% (baseline) and %.1f %% (current) "
              "between repetitions; the judged step time (step / calibration) by %.1f %% and "
              "%.1f %%; a regression is called when p < %g and the change is at least %.1f %%, "
              "suspected (and rerun) from p < %g and %.1f %%\n",
              comparison.baseline_noise * 100.0, comparison.current_noise * 100.0,
              comparison.baseline_judged_noise * 100.0, comparison.current_judged_noise * 100.0,
              args.alpha, args.min_effect * 100.0, args.screen_alpha,
              args.min_effect * 50.0);
  if (std::max(comparison.baseline_judged_noise, comparison.current_judged_noise) >
      args.min_effect) {
    std::cout << "warning: the judged step time varied more than the minimum effect between "
                 "repetitions; regressions near the minimum may go undetected\n";
  }
  for (const std::string& name : comparison.only_in_baseline) {
    std::cout << "only in the baseline (not compared): " << name << "\n";
  }
  for (const std::string& name : comparison.only_in_current) {
    std::cout << "only in the current run (not compared): " << name << "\n";
  }
  print_rows(comparison, true);
  warn_about_too_few_repetitions(comparison, args.alpha);
  if (!args.confirm) {
    const size_t called = rows_called(comparison, false).size();
    if (called == 0) {
      std::cout << "no regression (not rerun: --no-confirm)\n";
      return kExitOk;
    }
    std::cout << called << " regression(s), not confirmed (--no-confirm)\n";
    return kExitConfirmedRegression;
  }
  // What is rerun: every benchmark (--rerun-all), else the suspected ones.
  const std::vector<const FigureComparison*> suspected = rows_called(comparison, true);
  std::set<std::string> names;
  for (const FigureComparison* row : suspected) names.insert(row->benchmark);
  if (args.rerun_all) {
    for (const FigureComparison& row : comparison.rows) names.insert(row.benchmark);
    std::cout << "rerunning all " << names.size() << " benchmark(s) with both builds in turns ("
              << args.confirm_repetitions << " rounds each); the verdict is the rerun's\n";
  } else if (suspected.empty()) {
    std::cout << "no regression\n";
    return kExitOk;
  } else {
    std::cout << suspected.size() << " suspected regression(s); confirming by rerunning both "
              << "builds in turns (" << args.confirm_repetitions << " rounds each)\n";
  }
  ConfirmationOptions confirm;
  confirm.repetitions = args.confirm_repetitions;
  confirm.baseline_build = args.baseline_build;
  confirm.current_build = args.current_build;
  confirm.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const Confirmation rerun = rerun_interleaved(
      baseline, current, std::vector<std::string>(names.begin(), names.end()), confirm);
  if (!rerun.not_possible.empty()) {
    std::cout << "cannot confirm: " << rerun.not_possible << "\n";
    return kExitInfrastructure;
  }
  const PerfComparison again = compare_perf_runs(rerun.baseline, rerun.current, options);
  std::printf("rerun in turns on CPU %d: the judged step time varied by %.1f %% (baseline) and "
              "%.1f %% (current) between repetitions\n",
              rerun.cpu, again.baseline_judged_noise * 100.0, again.current_judged_noise * 100.0);
  print_rows(again, true);
  warn_about_too_few_repetitions(again, args.alpha);
  int confirmed = 0;
  if (args.rerun_all) {
    for (const FigureComparison* row : rows_called(again, false)) {
      std::cout << "CONFIRMED regression: " << row->benchmark << " " << row->figure << "\n";
      ++confirmed;
    }
  } else {
    for (const FigureComparison* row : suspected) {
      bool still = false;
      for (const FigureComparison& repeat : again.rows) {
        if (repeat.benchmark == row->benchmark && repeat.figure == row->figure &&
            repeat.call == ChangeCall::regression) {
          still = true;
        }
      }
      std::cout << (still ? "CONFIRMED regression: " : "not confirmed (noise): ")
                << row->benchmark << " " << row->figure << "\n";
      confirmed += still;
    }
  }
  if (confirmed == 0) {
    std::cout << "no confirmed regression\n";
    return kExitOk;
  }
  std::cout << confirmed << " confirmed regression(s)\n";
  return kExitConfirmedRegression;
}

}  // namespace trainrepro
