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

// The document with the swept number replaced: integral values stay integers, since most swept
// keys (layers, gradient_accumulation_steps, world_size) are read as integers.
nlohmann::json with_sweep_value(const nlohmann::json& document, const std::string& pointer,
                                double value) {
  nlohmann::json changed = document;
  const nlohmann::json::json_pointer where(pointer);
  if (value == std::floor(value) && std::abs(value) < 9e15) {
    changed[where] = static_cast<int64_t>(value);
  } else {
    changed[where] = value;
  }
  return changed;
}

struct PlannedPoint {
  Scenario scenario;
  nlohmann::json document;
  std::string sweep_pointer;
  double sweep_value = 0.0;
};

}  // namespace

bool runs_on_ranks(int64_t world_size, const std::string& sweep_pointer) {
  return world_size > 1 || sweep_pointer == "/world_size";
}

bool PlannedBenchmark::runs_on_ranks() const {
  return trainrepro::runs_on_ranks(plan.batch.world_size, sweep_pointer);
}

PerfPlan plan_perf_run(const std::vector<std::string>& files, const PerfPlanOptions& options) {
  PerfPlan plan;
  for (const std::string& file : files) {
    std::vector<PlannedPoint> points;
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
          nlohmann::json changed = with_sweep_value(document, scaling->pointer, value);
          Scenario point = load_scenario_document(
              changed, file + " (with " + scaling->pointer + " = " + value_text(value) + ")");
          point.performance = scenario.performance;
          points.push_back({std::move(point), std::move(changed), scaling->pointer, value});
        }
      } else {
        points.push_back({std::move(scenario), document, "", 0.0});
      }
    } catch (const ScenarioError& error) {
      throw PerfInputError(error.what());
    }

    // A file this machine cannot measure is skipped whole: a sweep measured at some of its
    // points only would fit an exponent nobody asked for.
    const size_t measured_before = plan.benchmarks.size();
    for (PlannedPoint& point : points) {
      Scenario& scenario = point.scenario;
      const DeviceChoice choice = options.device_override.value_or(scenario.device);
      const bool wants_cuda = choice == DeviceChoice::cuda ||
                              (choice == DeviceChoice::auto_detect && options.cuda_available);
      const bool ranks = runs_on_ranks(scenario.world_size, point.sweep_pointer);
      std::string skip;
      if (wants_cuda && !options.cuda_available) {
        skip = "it runs on CUDA and LibTorch finds no usable GPU here";
      } else if (ranks && !options.mpirun_available) {
        skip = "it runs " + std::to_string(scenario.world_size) +
               " rank(s) and mpirun is not on the PATH";
      } else if (wants_cuda && scenario.world_size > options.cuda_devices) {
        skip = "it runs " + std::to_string(scenario.world_size) + " ranks on CUDA, one per GPU, "
               "and LibTorch finds " + std::to_string(options.cuda_devices);
      }
      if (!skip.empty()) {
        const auto first = static_cast<std::ptrdiff_t>(measured_before);
        plan.benchmarks.erase(plan.benchmarks.begin() + first, plan.benchmarks.end());
        plan.skipped.push_back(scenario.file + ": skipped, " + skip);
        break;
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
      if (performance.loop != PerfLoop::harness && ranks) {
        throw PerfInputError(scenario.file + ":/performance/loop: the \"" +
                             spelling_of(performance.loop, perf_loop_spellings()) +
                             "\" loop trains one rank; several ranks (/world_size " +
                             std::to_string(scenario.world_size) +
                             ") are measured with the harness's loop only");
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
      if (!point.sweep_pointer.empty()) {
        benchmark.name +=
            "/" + last_token(point.sweep_pointer) + ":" + value_text(point.sweep_value);
      }
      benchmark.plan = std::get<Plan>(resolution);
      benchmark.sweep_pointer = point.sweep_pointer;
      benchmark.sweep_value = point.sweep_value;
      benchmark.document = std::move(point.document);
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
