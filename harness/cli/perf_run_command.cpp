// `trainrepro perf run PATH… --out FILE`: measures every scenario with a "performance" section
// (repetitions interleaved, each after a calibration kernel), prints each benchmark's medians and
// the fitted scaling exponents, and writes the run as Google Benchmark JSON.
#include <ATen/Parallel.h>
#include <fcntl.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <thread>

#include "harness/cli/commands.h"
#include "harness/cli/engine_option.h"
#include "harness/cli/scenario_discovery.h"
#include "harness/distributed/mpi_session.h"
#include "harness/engine/runtime_info.h"
#include "harness/files/sha256.h"
#include "harness/json/printable.h"
#include "harness/perf/benchmark_json.h"
#include "harness/perf/cpu_pinning.h"
#include "harness/perf/engine_ratio.h"
#include "harness/perf/figure_values.h"
#include "harness/perf/mann_whitney.h"
#include "harness/perf/perf_runner.h"
#include "harness/perf/turn_taking.h"
#include "harness/pipeline/engine_perf.h"
#include "harness/scenario/settings_acting_outside_the_run.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

// A DeepSpeed repetition (start Python, import DeepSpeed, initialize, train) that takes longer
// is killed: a hung worker, as a multi-rank repetition's 30 minutes.
constexpr int kDeepSpeedTimeoutSeconds = 30 * 60;

PerfContext context_of(const PerfRunArgs& args) {
  PerfContext context;
  context.date = args.provenance.started_at;
  context.host_name = args.provenance.host;
  context.machine = args.machine.empty() ? args.provenance.host : args.machine;
  context.commit = args.provenance.git_commit;
  context.trainrepro_version = args.provenance.trainrepro_version;
  context.torch_version = args.provenance.torch_version;
  std::error_code error;
  context.executable = std::filesystem::read_symlink("/proc/self/exe", error).string();
  if (!context.executable.empty()) {
    try {
      context.executable_sha256 = sha256_of_file(context.executable);
    } catch (const std::runtime_error&) {
      context.executable_sha256.clear();  // then a confirmation cannot tell a rebuild apart
    }
  }
  context.working_directory = std::filesystem::current_path(error).string();
  context.scenario_paths = args.paths;
  context.engines = args.engines;
  context.filter = args.filter;
  context.planted_slowdown = args.planted_slowdown;
  context.num_cpus = static_cast<int>(std::thread::hardware_concurrency());
  context.threads = at::get_num_threads();
  return context;
}

// "4183", "6.42", "0.0518": whole numbers from 100 up, three significant digits below (a large
// model on a CPU trains a fraction of a sample per second).
std::string rate_text(double rate) {
  char text[32];
  if (rate >= 100.0) {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(rate));
  } else {
    std::snprintf(text, sizeof text, "%.3g", rate);
  }
  return text;
}

// "mlp-adamw  1.912 ms/step (±2.1 %)  4183 samples/s  peak tensors 61.2 KiB"
void print_benchmark(const PerfBenchmark& benchmark) {
  const std::vector<double> times = figure_values(benchmark, PerfFigure::step_time);
  const std::vector<double> normalised = normalised_step_times(benchmark);
  if (times.empty()) return;
  const double median = median_of(times);
  double spread = 0.0;
  for (double time : times) spread = std::max(spread, std::abs(time - median) / median);
  char line[256];
  std::snprintf(line, sizeof line,
                "%-48s %9.3f ms/step (max deviation %4.1f %%), %.3f "
                "calibration units",
                benchmark.name.c_str(), median * 1e3, spread * 100.0, median_of(normalised));
  std::cout << line;
  const std::vector<double> samples = figure_values(benchmark, PerfFigure::samples_per_second);
  if (!samples.empty()) std::cout << ", " << rate_text(median_of(samples)) << " samples/s";
  const std::vector<double> tokens = figure_values(benchmark, PerfFigure::tokens_per_second);
  if (!tokens.empty()) std::cout << ", " << rate_text(median_of(tokens)) << " tokens/s";
  const std::vector<double> peak = figure_values(benchmark, PerfFigure::peak_tensor_bytes);
  if (!peak.empty())
    std::cout << ", peak tensors " << static_cast<int64_t>(median_of(peak)) << " B";
  const std::vector<double> mfu = figure_values(benchmark, PerfFigure::mfu);
  if (!mfu.empty()) std::cout << ", MFU " << median_of(mfu) * 100.0 << " %";
  std::cout << "\n";
}

}  // namespace

int run_perf_run(const PerfRunArgs& args) {
  std::optional<std::regex> filter;
  try {
    filter = compile_scenario_filter(args.filter);
  } catch (const std::invalid_argument& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  const DiscoveredScenarios discovered = discover_scenarios(args.paths);
  for (const std::string& note : discovered.notes) std::cerr << note << "\n";
  for (const DiscoveryError& error : discovered.errors) std::cerr << error.message << "\n";
  if (!discovered.errors.empty()) return kExitBadInput;

  if (launched_by_mpi()) {
    std::cerr << "perf run: started by an MPI launcher (mpirun or srun); perf run starts the "
                 "ranks of a multi-rank benchmark itself: run it as one process\n";
    return kExitBadInput;
  }
  // Each other engine's Python is asked once, before anything is measured (as `run` does).
  std::vector<EnginePerfLoop> engines;
  std::set<std::string> engine_kinds;
  for (const std::string& text : args.engines) {
    EngineOption engine = read_engine_option(text, kDeepSpeedTimeoutSeconds);
    if (engine.exit_code != kExitOk) return engine.exit_code;
    if (!engine.deepspeed) continue;  // the reference engine is always measured
    if (!engine_kinds.insert(engine.deepspeed->versions.engine).second) {
      std::cerr << "perf run: --engine " << text << ": " << engine.deepspeed->versions.engine
                << " is given twice; give each engine once (one DeepSpeed release per run)\n";
      return kExitBadInput;
    }
    engines.emplace_back(std::move(*engine.deepspeed), kDeepSpeedTimeoutSeconds);
  }
  PerfPlanOptions plan_options;
  plan_options.device_override = args.device;
  plan_options.cuda_available = cuda_is_available();
  plan_options.cuda_devices = cuda_device_count();
  plan_options.mpirun_available = mpi_available();
  plan_options.repetitions = args.repetitions;
  PerfPlan plan;
  try {
    plan = plan_perf_run(discovered.files, plan_options);
  } catch (const PerfInputError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  if (filter) {
    std::vector<PlannedBenchmark> kept;
    for (PlannedBenchmark& benchmark : plan.benchmarks) {
      if (std::regex_search(benchmark.scenario.name, *filter) ||
          std::regex_search(benchmark.scenario.file, *filter)) {
        kept.push_back(std::move(benchmark));
      }
    }
    plan.benchmarks = std::move(kept);
  }
  for (const EnginePerfLoop& engine : engines) {
    for (const std::string& left_out : add_engine_twins(plan, engine.versions())) {
      std::cout << "not measured on " << engine.versions().engine << ": " << left_out << "\n";
    }
  }
  // A twin hands its scenario's config to the real DeepSpeed: refused as `run` refuses it.
  for (const PlannedBenchmark& twin : plan.benchmarks) {
    if (twin.engine.rfind("deepspeed ", 0) != 0) continue;
    if (auto refused =
            refuse_settings_acting_outside_the_run(twin.scenario, "perf run --engine deepspeed")) {
      std::cerr << printable(*refused) << "\n";
      return kExitBadInput;
    }
  }
  for (const std::string& skipped : plan.skipped) std::cout << skipped << "\n";
  if (plan.benchmarks.empty() && !plan.skipped.empty()) {
    std::cerr << "perf run: nothing to measure on this machine: " << plan.skipped.size()
              << " scenario file(s) skipped (above)\n";
    return kExitBadInput;
  }
  if (plan.benchmarks.empty()) {
    std::cerr << "perf run: nothing to measure: no scenario with a \"performance\" section"
              << (filter ? " matches --filter" : "") << " under the paths given ("
              << plan.without_performance_section << " scenario(s) without one)\n";
    return kExitBadInput;
  }

  PerfRunnerOptions options;
  // Chosen before this process is pinned: the ranks spread over every allowed CPU.
  options.rank_cpus = rank_cpu_order(allowed_cpus(), args.pin_cpu);
  for (const PlannedBenchmark& benchmark : plan.benchmarks) {
    const auto ranks = benchmark.plan.batch.world_size;
    if (!benchmark.engine.empty()) continue;  // an engine's worker starts its own ranks
    if (benchmark.runs_on_ranks() && ranks > static_cast<int64_t>(options.rank_cpus.size())) {
      std::cout << "note: " << benchmark.name << " runs " << ranks << " ranks on "
                << options.rank_cpus.size()
                << " CPU(s): they are not pinned and take turns "
                   "on the CPUs, so its times include waiting for one\n";
    }
  }
  if (args.pin_cpu) {
    try {
      pin_process_to_cpu(*args.pin_cpu);
    } catch (const std::runtime_error& error) {
      std::cerr << "perf run: --pin-cpu " << *args.pin_cpu << ": " << error.what() << "\n";
      return kExitBadInput;
    }
  }
  options.planted_slowdown = args.planted_slowdown;
  options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  if (!engines.empty()) {
    options.measure_on_engine = [&engines](const PlannedBenchmark& twin) -> PerfRepetition {
      for (EnginePerfLoop& engine : engines) {
        if (engine_label(engine.versions()) == twin.engine) return engine.measure(twin);
      }
      throw std::logic_error(twin.name + ": no engine " + twin.engine + " to measure it");
    };
  }
  TurnTaker turns;
  if (args.take_turns) {
    if (::fcntl(TurnTaker::kTurnInput, F_GETFD) < 0 || ::fcntl(TurnTaker::kTurnDone, F_GETFD) < 0) {
      std::cerr << "perf run: --take-turns needs file descriptors 3 and 4 open (it is how `perf "
                   "compare` runs two builds in turns; not for use by hand)\n";
      return kExitBadInput;
    }
    options.before_round = [&turns] { turns.wait_for_turn(); };
    options.after_round = [&turns] { turns.end_turn(); };
  }
  PerfRun run;
  try {
    run = measure_perf_plan(plan, options);
    if (args.take_turns) turns.wait_for_the_end();
  } catch (const std::exception& error) {
    std::cerr << error.what() << "\n";
    return kExitInfrastructure;
  }
  run.context = context_of(args);

  for (const PerfBenchmark& benchmark : run.benchmarks) print_benchmark(benchmark);
  bool scaling_met = true;
  for (const ScalingFitResult& fit : run.scaling) {
    char line[256];
    std::snprintf(line, sizeof line, "scaling %s: %s grows as %s^%.2f (r² %.3f)",
                  fit.scenario.c_str(), perf_figure_name(fit.figure), fit.pointer.c_str(),
                  fit.exponent, fit.r_squared);
    std::cout << line;
    if (fit.expected) {
      std::snprintf(line, sizeof line, "; expected %.2f to %.2f: %s", fit.expected->at_least,
                    fit.expected->at_most, fit.met() ? "met" : "MISSED");
      std::cout << line;
    }
    std::cout << "\n";
    scaling_met = scaling_met && fit.met();
  }
  for (const TargetResult& target : run.targets) {
    char line[320];
    std::snprintf(line, sizeof line, "target %s / %s = %.3f (at most %.3f): %s",
                  target.benchmark.c_str(), target.relative_to.c_str(), target.ratio,
                  target.at_most,
                  !target.above() ? "met"
                  : target.met()  ? "above it, within the noise (not missed)"
                                  : "MISSED");
    std::cout << line;
    if (target.above()) {
      std::snprintf(line, sizeof line, " (one-sided Mann-Whitney p %.2g, missed below %g)",
                    target.p_value, kTargetAlpha);
      std::cout << line;
    }
    std::cout << "\n";
    scaling_met = scaling_met && target.met();
  }
  for (const EngineStepRatio& ratio : engine_step_ratios(run)) {
    char line[640];
    std::snprintf(line, sizeof line,
                  "step-time ratio %s / %s: %.3f (%.3f in calibration units)",
                  ratio.numerator.c_str(), ratio.denominator.c_str(), ratio.ratio,
                  ratio.normalised_ratio);
    std::cout << line << "\n";
  }
  if (!args.output.empty()) {
    try {
      const std::filesystem::path parent = std::filesystem::path(args.output).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent);
      write_perf_run(args.output, run);
    } catch (const std::exception& error) {
      std::cerr << args.output << ": cannot write the perf run: " << error.what() << "\n";
      return kExitInfrastructure;
    }
    std::cout << "wrote " << args.output << "\n";
  }
  return scaling_met ? kExitOk : kExitExpectationNotMet;
}

}  // namespace trainrepro
