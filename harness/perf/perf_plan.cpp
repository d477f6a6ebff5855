#include "harness/perf/perf_plan.h"

#include <cmath>
#include <sstream>

#include "harness/json/printable.h"
#include "harness/perf/python_eager_loop.h"
#include "harness/json/scenario_error.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"

namespace trainrepro {
namespace {

// "1", "2.5": the value as it appears in a benchmark name.
std::string value_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// The last token of a JSON pointer: "/model/options/layers" → "layers".
std::string last_token(const std::string& pointer) {
  return pointer.substr(pointer.find_last_of('/') + 1);
}

// The scenario with the swept number replaced: integral values stay integers, since most swept
// keys (layers, gradient_accumulation_steps) are read as integers.
Scenario load_sweep_point(const nlohmann::json& document, const std::string& file,
                          const std::string& pointer, double value) {
  nlohmann::json changed = document;
  const nlohmann::json::json_pointer where(pointer);
  if (value == std::floor(value) && std::abs(value) < 9e15) {
    changed[where] = static_cast<int64_t>(value);
  } else {
    changed[where] = value;
  }
  return load_scenario_document(changed, file + " (with " + pointer + " = " + value_text(value) +
                                             ")");
}

}  // namespace

PerfPlan plan_perf_run(const std::vector<std::string>& files, const PerfPlanOptions& options) {
  PerfPlan plan;
  for (const std::string& file : files) {
    std::vector<std::pair<Scenario, std::pair<std::string, double>>> points;
    try {
      const nlohmann::json document = read_json_file(file);
      Scenario scenario = load_scenario_document(document, file);
      if (!scenario.performance) {
        ++plan.without_performance_section;
        continue;
      }
      if (options.repetitions) scenario.performance->repetitions = *options.repetitions;
      if (const auto& scaling = scenario.performance->scaling) {
        for (double value : scaling->values) {
          Scenario point = load_sweep_point(document, file, scaling->pointer, value);
          point.performance = scenario.performance;
          points.push_back({std::move(point), {scaling->pointer, value}});
        }
      } else {
        points.push_back({std::move(scenario), {"", 0.0}});
      }
    } catch (const ScenarioError& error) {
      throw PerfInputError(error.what());
    }

    for (auto& [scenario, sweep] : points) {
      const DeviceChoice choice = options.device_override.value_or(scenario.device);
      const bool wants_cuda = choice == DeviceChoice::cuda ||
                              (choice == DeviceChoice::auto_detect && options.cuda_available);
      if (wants_cuda && !options.cuda_available) {
        plan.skipped.push_back(scenario.file + ": skipped, it runs on CUDA and LibTorch finds no "
                               "usable GPU here");
        break;
      }
      if (scenario.world_size > 1) {
        throw PerfInputError(scenario.file + ":/world_size: perf run measures one rank, found " +
                             std::to_string(scenario.world_size) + " (several ranks are "
                             "measured by `scripts/bench`'s ZeRO suite for now)");
      }
      const PlanResolution resolution =
          resolve_plan(scenario, wants_cuda ? Device::cuda : Device::cpu);
      if (const auto* refused = std::get_if<ConfigError>(&resolution)) {
        throw PerfInputError(scenario.file + ": a performance scenario must train, but its "
                             "config is refused: " + refused->message);
      }
      const PerformanceSpec& performance = *scenario.performance;
      if (performance.loop == PerfLoop::python_eager) {
        if (auto why = python_eager_unsupported(scenario, std::get<Plan>(resolution))) {
          throw PerfInputError(scenario.file + ":/performance/loop: " + *why);
        }
      }
      if (performance.loop != PerfLoop::harness) {
        for (PerfFigure figure : performance.measure) {
          if (figure != PerfFigure::step_time && figure != PerfFigure::samples_per_second &&
              figure != PerfFigure::tokens_per_second) {
            throw PerfInputError(scenario.file + ":/performance/measure: \"" +
                                 perf_figure_name(figure) + "\" is measured by the harness's "
                                 "loop only (its memory probes); the \"" +
                                 spelling_of(performance.loop, perf_loop_spellings()) +
                                 "\" loop times steps");
          }
        }
      }
      PlannedBenchmark benchmark;
      benchmark.name = scenario.name;
      if (!sweep.first.empty()) {
        benchmark.name += "/" + last_token(sweep.first) + ":" + value_text(sweep.second);
      }
      benchmark.plan = std::get<Plan>(resolution);
      benchmark.sweep_pointer = sweep.first;
      benchmark.sweep_value = sweep.second;
      benchmark.scenario = std::move(scenario);
      for (const PlannedBenchmark& earlier : plan.benchmarks) {
        if (earlier.name == benchmark.name) {
          throw PerfInputError(benchmark.scenario.file + ":/name: \"" + benchmark.name +
                               "\" is also the name of " + earlier.scenario.file +
                               " (benchmarks are compared by name)");
        }
      }
      plan.benchmarks.push_back(std::move(benchmark));
    }
  }
  return plan;
}

}  // namespace trainrepro
