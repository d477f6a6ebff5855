// `trainrepro run PATH…`: every scenario found, one after the other; a scenario that does not
// load is reported as an error and the run goes on with the others.
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "harness/cli/commands.h"
#include "harness/cli/engine_option.h"
#include "harness/cli/run_progress.h"
#include "harness/cli/scenario_discovery.h"
#include "harness/cli/thread_budget.h"
#include "harness/distributed/mpi_session.h"
#include "harness/engine/runtime_info.h"
#include "harness/pipeline/run_scenario.h"
#include "harness/report/console_reporter.h"
#include "harness/report/junit_reporter.h"
#include "harness/report/results_json.h"
#include "harness/worker/worker_sets.h"

namespace trainrepro {
namespace {

bool matches(const std::optional<std::regex>& filter, const std::string& text) {
  return !filter || std::regex_search(text, *filter);
}

}  // namespace

int run_scenarios(const RunArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::regex> filter;
  try {
    filter = compile_scenario_filter(args.filter);
  } catch (const std::invalid_argument& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }

  // The real DeepSpeed's Python is asked once, before anything is written.
  const EngineOption engine = read_engine_option(args.engine, args.rank_timeout_seconds);
  if (engine.exit_code != kExitOk) return engine.exit_code;

  const DiscoveredScenarios discovered = discover_scenarios(args.paths);
  for (const std::string& note : discovered.notes) std::cerr << note << "\n";

  // Started by mpirun or srun (`mpirun -np 2 trainrepro run …`): every rank runs the scenarios
  // of that world size together (the others are skipped), and only rank 0 reports.
  const bool reporting_rank = rank_from_launcher_environment() == 0;
  std::ostringstream quiet;
  std::vector<std::unique_ptr<Reporter>> reporters;
  reporters.push_back(std::make_unique<ConsoleReporter>(reporting_rank ? std::cout : quiet));
  if (!args.results_dir.empty() && reporting_rank) {
    reporters.push_back(
        std::make_unique<ResultsDirectoryReporter>(args.results_dir, args.provenance));
  }
  if (!args.junit_file.empty() && reporting_rank) {
    reporters.push_back(std::make_unique<JunitReporter>(args.junit_file, args.provenance));
  }

  RunOptions options;
  options.device_override = args.device;
  options.cuda_available = cuda_is_available();
  options.cuda_devices = cuda_device_count();
  options.golden_dir = args.golden_dir;
  options.rank_timeout_seconds = args.rank_timeout_seconds;
  options.launcher_world_size = launcher_world_size();
  options.allow_large = args.allow_large;
  options.engine = training_engine_for(engine.deepspeed);
  // Declared after the reporters, so it ends first: every set is stopped before this returns.
  WorkerSets worker_sets;
  if (engine.deepspeed && !args.fresh_workers) {  // a Python worker: DeepSpeed's or FSDP2's
    options.worker_sets = &worker_sets;
  } else if (!engine.deepspeed && (args.serve_workers || args.fresh_workers)) {
    std::cerr << (args.serve_workers ? "--serve-workers" : "--fresh-workers")
              << ": ignored: the reference engine starts no worker\n";
  }

  std::vector<ScenarioResult> results;
  // Reports one result to every reporter; false when a results file cannot be written.
  auto report = [&](ScenarioResult result) {
    try {
      for (auto& reporter : reporters) reporter->report_scenario(result);
    } catch (const std::exception& error) {
      std::cerr << "cannot write results: " << error.what() << "\n";
      return false;
    }
    results.push_back(std::move(result));
    return true;
  };
  // A path that could not be read is that entry's error; the others run.
  for (const DiscoveryError& error : discovered.errors) {
    ScenarioResult result;
    result.file = error.path;
    result.verdict.outcome = Outcome::error;
    result.verdict.error_source = ErrorSource::scenario;
    result.verdict.found = error.message;
    if (!report(std::move(result))) return kExitInfrastructure;
  }

  // Every file is loaded first (quick), so the progress knows how many will run.
  std::vector<LoadAttempt> selected;
  std::map<std::string, std::string> file_of_name;  // names must be unique: they name files
  for (const std::string& file : discovered.files) {
    LoadAttempt attempt = try_load_scenario(file);
    if (!attempt.scenario) {
      if (matches(filter, file)) selected.push_back(std::move(attempt));
      continue;
    }
    const Scenario& scenario = *attempt.scenario;
    if (!matches(filter, scenario.name) && !matches(filter, file)) continue;
    auto [it, inserted] = file_of_name.emplace(scenario.name, file);
    if (!inserted) {
      attempt.failure.verdict.outcome = Outcome::error;
      attempt.failure.verdict.error_source = ErrorSource::scenario;
      attempt.failure.verdict.found = file + ":/name: the name \"" + scenario.name +
                                      "\" is already used by " + it->second +
                                      "; names must be unique (they name the results files)";
      attempt.scenario.reset();
    }
    selected.push_back(std::move(attempt));
  }

  RunProgress progress(std::cerr, static_cast<int64_t>(selected.size()),
                       reporting_rank && RunProgress::stderr_is_live_terminal());
  for (size_t i = 0; i < selected.size(); ++i) {
    LoadAttempt& attempt = selected[i];
    progress.starting(static_cast<int64_t>(i),
                      attempt.scenario ? attempt.scenario->name : attempt.failure.file);
    ScenarioResult result = attempt.scenario ? run_loaded_scenario(*attempt.scenario, options)
                                             : std::move(attempt.failure);
    progress.finished();
    if (!report(std::move(result))) return kExitInfrastructure;
  }

  if (options.worker_sets != nullptr) std::cerr << worker_sets.summary() << "\n";
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (results.empty()) {
    std::cerr << "no scenario matched"
              << (args.filter.empty() ? "" : " --filter \"" + args.filter + "\"") << "\n";
    return kExitBadInput;
  }
  try {
    for (auto& reporter : reporters) reporter->report_summary(results, seconds);
  } catch (const std::exception& error) {
    std::cerr << "cannot write the run's summary: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  return exit_code_of(results);
}

}  // namespace trainrepro
