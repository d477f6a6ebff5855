#include "harness/perf/confirm_regression.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include "harness/distributed/rank_work_folder.h"
#include "harness/files/sha256.h"
#include "harness/perf/benchmark_json.h"
#include "harness/perf/cpu_pinning.h"
#include "harness/perf/turn_taking.h"

namespace trainrepro {
namespace {

// The scenario names whose benchmarks are suspected (a sweep point reruns its whole sweep), as
// a `--filter` expression matching exactly those names.
std::string filter_for(const PerfRun& run, const std::vector<std::string>& benchmarks) {
  std::set<std::string> scenarios;
  for (const PerfBenchmark& benchmark : run.benchmarks) {
    for (const std::string& name : benchmarks) {
      if (benchmark.name == name) {
        scenarios.insert(benchmark.sweep_of.empty() ? benchmark.name : benchmark.sweep_of);
      }
    }
  }
  std::string filter = "^(";
  bool first = true;
  for (const std::string& scenario : scenarios) {
    if (!first) filter += "|";
    first = false;
    for (char c : scenario) {
      if (c == '.') filter += '\\';
      filter += c;
    }
  }
  return filter + ")$";
}

// The build a run names: the override, else its recorded executable, checked unchanged.
std::string build_of(const PerfRun& run, const std::string& override_path, const char* which,
                     std::string& problem) {
  if (!override_path.empty()) return override_path;
  const std::string& path = run.context.executable;
  if (path.empty()) {
    problem = std::string("the ") + which + " run names no executable (not from `perf run`?); "
              "give --" + which + "-build";
    return "";
  }
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    problem = std::string("the ") + which + " build " + path + " is gone; keep it or give --" +
              which + "-build";
    return "";
  }
  if (!run.context.executable_sha256.empty() &&
      sha256_of_file(path) != run.context.executable_sha256) {
    problem = std::string("the ") + which + " build " + path + " was rebuilt since it measured "
              "(its sha256 differs); give --" + which + "-build with the build that measured";
    return "";
  }
  return path;
}

// One build's `perf run` of the suspected scenarios as a worker taking turns.
std::unique_ptr<TurnWorker> start_worker(const std::string& executable, const PerfRun& recorded,
                                         const std::string& filter, int repetitions, int cpu,
                                         const std::string& out) {
  return std::make_unique<TurnWorker>(
      rerun_arguments(executable, recorded, filter, repetitions, cpu, out),
      recorded.context.working_directory, out + ".log");
}

}  // namespace

std::vector<std::string> rerun_arguments(const std::string& executable, const PerfRun& recorded,
                                         const std::string& filter, int repetitions, int cpu,
                                         const std::string& out) {
  std::vector<std::string> arguments = {executable, "perf", "run"};
  for (const std::string& path : recorded.context.scenario_paths) arguments.push_back(path);
  arguments.insert(arguments.end(), {"--filter", filter, "--repetitions",
                                     std::to_string(repetitions), "--out", out, "--take-turns",
                                     "--pin-cpu", std::to_string(cpu)});
  // A suspected DeepSpeed or FSDP2 twin is measured again on the engine that measured it.
  for (const std::string& engine : recorded.context.engines) {
    arguments.insert(arguments.end(), {"--engine", engine});
  }
  if (recorded.context.planted_slowdown > 0.0) {
    arguments.push_back("--plant-slowdown");
    arguments.push_back(std::to_string(recorded.context.planted_slowdown));
  }
  return arguments;
}

Confirmation rerun_interleaved(const PerfRun& baseline, const PerfRun& current,
                               const std::vector<std::string>& benchmarks,
                               const ConfirmationOptions& options) {
  Confirmation confirmation;
  const std::string old_build =
      build_of(baseline, options.baseline_build, "baseline", confirmation.not_possible);
  if (!confirmation.not_possible.empty()) return confirmation;
  const std::string new_build =
      build_of(current, options.current_build, "current", confirmation.not_possible);
  if (!confirmation.not_possible.empty()) return confirmation;

  const std::string folder = create_rank_work_folder();
  const std::string filter = filter_for(current, benchmarks);
  const std::string old_out = folder + "/baseline.json";
  const std::string new_out = folder + "/current.json";
  try {
    // One CPU for both (cpu_pinning.h).
    const int cpu = options.cpu >= 0 ? options.cpu : last_allowed_cpu();
    confirmation.cpu = cpu;
    std::unique_ptr<TurnWorker> old_worker =
        start_worker(old_build, baseline, filter, options.repetitions, cpu, old_out);
    std::unique_ptr<TurnWorker> new_worker =
        start_worker(new_build, current, filter, options.repetitions, cpu, new_out);
    // Both started and idle before the first turn: one's start-up never runs beside the
    // other's measurements.
    TurnWorker* stopped = !old_worker->wait_until_ready()   ? old_worker.get()
                          : !new_worker->wait_until_ready() ? new_worker.get()
                                                            : nullptr;
    for (int round = 0; round < options.repetitions && !stopped; ++round) {
      if (options.progress && round % 10 == 0) {
        options.progress("confirming: rounds " + std::to_string(round + 1) + "-" +
                         std::to_string(std::min(round + 10, options.repetitions)) + " of " +
                         std::to_string(options.repetitions) + ", the two builds in turns");
      }
      // A B, B A, A B, …: neither build always follows the other.
      TurnWorker* first = round % 2 == 0 ? old_worker.get() : new_worker.get();
      TurnWorker* second = round % 2 == 0 ? new_worker.get() : old_worker.get();
      if (!first->take_turn()) stopped = first;
      else if (!second->take_turn()) stopped = second;
    }
    if (stopped) {
      // Its own failure, not the other's end of turns, is what went wrong.
      confirmation.not_possible = stopped->finish();
      if (confirmation.not_possible.empty()) {
        confirmation.not_possible =
            "a build stopped taking turns before its last round and exited without an error";
      }
    } else {
      // One at a time: each waits for the end of its turns, so neither exits mid-measurement.
      confirmation.not_possible = old_worker->finish();
      if (confirmation.not_possible.empty()) confirmation.not_possible = new_worker->finish();
    }
    if (confirmation.not_possible.empty()) {
      confirmation.baseline = read_perf_run(old_out);
      confirmation.current = read_perf_run(new_out);
    }
  } catch (const PerfFormatError& error) {
    confirmation.not_possible = error.what();
  } catch (const std::runtime_error& error) {
    confirmation.not_possible = error.what();
  }
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  return confirmation;
}

}  // namespace trainrepro
