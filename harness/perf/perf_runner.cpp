#include "harness/perf/perf_runner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <c10/util/Exception.h>

#include "harness/perf/calibration_kernel.h"
#include "harness/perf/figure_values.h"
#include "harness/perf/mann_whitney.h"
#include "harness/perf/measure_on_ranks.h"
#include "harness/perf/measure_repetition.h"
#include "harness/perf/python_eager_loop.h"
#include "harness/perf/reference_loops.h"
#include "harness/perf/scaling_fit.h"

namespace trainrepro {
namespace {

PerfBenchmark describe(const PlannedBenchmark& planned) {
  PerfBenchmark benchmark;
  benchmark.name = planned.name;
  benchmark.scenario_file = planned.scenario.file;
  benchmark.device = device_name(planned.plan.device);
  benchmark.world_size = planned.plan.batch.world_size;
  benchmark.measured_steps = planned.scenario.performance->measured_steps;
  const PerformanceSpec& performance = *planned.scenario.performance;
  benchmark.measure = performance.measure;
  benchmark.loop = spelling_of(performance.loop, perf_loop_spellings());
  // The other loops time steps only: no probes, so no memory figures.
  if (benchmark.measure.empty() && performance.loop != PerfLoop::harness) {
    benchmark.measure = {PerfFigure::step_time, PerfFigure::samples_per_second,
                         PerfFigure::tokens_per_second};
  }
  if (!planned.engine.empty()) {  // an engine's worker times steps only: no memory figures
    benchmark.loop = planned.engine.substr(0, planned.engine.find(' '));  // deepspeed, fsdp2
    benchmark.twin_of = planned.twin_of;
    benchmark.measure = {PerfFigure::step_time, PerfFigure::samples_per_second,
                         PerfFigure::tokens_per_second};
  }
  if (!planned.sweep_pointer.empty()) {
    benchmark.sweep_of = planned.scenario.name;
    benchmark.sweep_pointer = planned.sweep_pointer;
    benchmark.sweep_value = planned.sweep_value;
  }
  return benchmark;
}

// The median time of a calibration chunk, over several timed in a row.
double time_calibration_chunks(Device device) {
  CalibrationChunk chunk(device);
  std::vector<double> times;
  for (int i = 0; i < 15; ++i) times.push_back(chunk.time());
  return median_of(times);
}

// One repetition of the benchmark's loop.
PerfRepetition measure_one(const PlannedBenchmark& planned, const PerfRunnerOptions& options) {
  if (!planned.engine.empty()) {
    if (!options.measure_on_engine) {
      throw std::logic_error(planned.name + ": an engine's twin without a way to measure it");
    }
    return options.measure_on_engine(planned);
  }
  switch (planned.scenario.performance->loop) {
    case PerfLoop::harness:
      if (planned.runs_on_ranks()) {
        return measure_on_ranks(planned, options.planted_slowdown, options.rank_cpus);
      }
      return measure_repetition(planned.scenario, planned.plan, options.planted_slowdown);
    case PerfLoop::python_eager:
      return measure_python_eager_loop(planned.scenario, planned.plan);
    case PerfLoop::engine:
    case PerfLoop::engine_with_probes:
    case PerfLoop::hand_written:
      break;
  }
  return measure_reference_loop(planned.scenario, planned.plan, planned.scenario.performance->loop);
}

// Each benchmark's target ratio to another of this run, when both were measured.
std::vector<TargetResult> check_targets(const PerfPlan& plan, const PerfRun& run) {
  std::vector<TargetResult> results;
  for (size_t i = 0; i < plan.benchmarks.size(); ++i) {
    const auto& target = plan.benchmarks[i].scenario.performance->target;
    if (!target) continue;
    for (const PerfBenchmark& other : run.benchmarks) {
      if (other.name != target->benchmark || other.repetitions.empty()) continue;
      const std::vector<double> mine = normalised_step_times(run.benchmarks[i]);
      const std::vector<double> theirs = normalised_step_times(other);
      std::vector<double> allowed = theirs;
      for (double& value : allowed) value *= target->at_most;
      const double ratio = median_of(mine) / median_of(theirs);
      // One-sided: half the two-sided p when the difference is in the direction tested.
      const MannWhitneyResult test = mann_whitney_u(allowed, mine);
      const double p = ratio > target->at_most ? test.p_value / 2.0 : 1.0;
      results.push_back({run.benchmarks[i].name, other.name, ratio, target->at_most, p});
    }
  }
  return results;
}

}  // namespace

PerfRun measure_perf_plan(const PerfPlan& plan, const PerfRunnerOptions& options) {
  PerfRun run;
  int64_t rounds = 0;
  int64_t total = 0;
  for (const PlannedBenchmark& planned : plan.benchmarks) {
    run.benchmarks.push_back(describe(planned));
    rounds = std::max(rounds, planned.scenario.performance->repetitions);
    total += planned.scenario.performance->repetitions;
  }
  const size_t count = plan.benchmarks.size();
  int64_t done = 0;
  for (int64_t round = 0; round < rounds; ++round) {
    if (options.before_round) options.before_round();
    for (size_t k = 0; k < count; ++k) {
      // Rotating the order: no benchmark always runs first (a cold cache) or last.
      const size_t index = (k + static_cast<size_t>(round)) % count;
      const PlannedBenchmark& planned = plan.benchmarks[index];
      if (round >= planned.scenario.performance->repetitions) continue;
      PerfRepetition repetition;
      try {
        // The Python loops (eager PyTorch, DeepSpeed, FSDP2) run in another process: their
        // calibration is the median of chunks timed just before them, in the same units as the
        // others', which pair a chunk with every step themselves.
        const bool python =
            planned.scenario.performance->loop == PerfLoop::python_eager || !planned.engine.empty();
        const double calibration = python ? time_calibration_chunks(planned.plan.device) : 0.0;
        repetition = measure_one(planned, options);
        if (python) repetition.calibration_seconds = calibration;
      } catch (const c10::Error& error) {
        throw std::runtime_error(planned.scenario.file +
                                 ": training failed: " + error.what_without_backtrace());
      } catch (const std::exception& error) {
        throw std::runtime_error(planned.scenario.file + ": training failed: " + error.what());
      }
      run.benchmarks[index].repetitions.push_back(repetition);
      ++done;
      if (options.progress) {
        char line[64];
        std::snprintf(line, sizeof line, ": %.3f ms/step", repetition.step_seconds * 1e3);
        options.progress("[" + std::to_string(done) + "/" + std::to_string(total) + "] " +
                         planned.name + line);
      }
    }
    if (options.after_round) options.after_round();
  }
  run.scaling = fit_scaling(plan, run);
  run.targets = check_targets(plan, run);
  return run;
}

std::vector<ScalingFitResult> fit_scaling(const PerfPlan& plan, const PerfRun& run) {
  // The points of each swept scenario, in the order measured.
  std::map<std::string, std::vector<size_t>> sweeps;
  std::vector<std::string> order;
  for (size_t i = 0; i < run.benchmarks.size(); ++i) {
    const std::string& scenario = run.benchmarks[i].sweep_of;
    if (scenario.empty()) continue;
    if (!sweeps.count(scenario)) order.push_back(scenario);
    sweeps[scenario].push_back(i);
  }
  std::vector<ScalingFitResult> fits;
  for (const std::string& scenario : order) {
    const std::vector<size_t>& points = sweeps[scenario];
    const ScalingSpec& spec = *plan.benchmarks[points.front()].scenario.performance->scaling;
    std::vector<PerfFigure> figures = {PerfFigure::step_time, PerfFigure::peak_tensor_bytes};
    for (const ExponentExpectation& expected : spec.expect) {
      if (std::find(figures.begin(), figures.end(), expected.figure) == figures.end()) {
        figures.push_back(expected.figure);
      }
    }
    for (PerfFigure figure : figures) {
      std::vector<double> x;
      std::vector<double> y;
      for (size_t index : points) {
        const std::vector<double> values = figure_values(run.benchmarks[index], figure);
        if (values.empty()) continue;
        x.push_back(run.benchmarks[index].sweep_value);
        y.push_back(median_of(values));
      }
      ScalingFitResult fit;
      fit.scenario = scenario;
      fit.pointer = spec.pointer;
      fit.figure = figure;
      for (const ExponentExpectation& expected : spec.expect) {
        if (expected.figure == figure) fit.expected = expected;
      }
      if (x.size() < 2) continue;  // the figure does not apply on this device
      try {
        const PowerLawFit power = fit_power_law(x, y);
        fit.exponent = power.exponent;
        fit.r_squared = power.r_squared;
      } catch (const std::invalid_argument& error) {
        throw std::runtime_error(scenario + ": cannot fit " + perf_figure_name(figure) +
                                 " against " + spec.pointer + ": " + error.what());
      }
      fits.push_back(fit);
    }
  }
  return fits;
}

}  // namespace trainrepro
