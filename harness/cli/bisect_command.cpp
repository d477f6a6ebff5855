// `trainrepro bisect SCENARIO --engine deepspeed --good A --bad B`: which DeepSpeed release first
// changed a scenario's outcome. Every probe installs its release into the cache (once) and runs
// the scenario on it exactly as `run --engine deepspeed==RELEASE` would; each probe's verdict is
// printed as it ends, then `first bad: …; last good: …`.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/distributed/mpi_session.h"
#include "harness/json/printable.h"
#include "harness/engine/runtime_info.h"
#include "harness/files/environment_values.h"
#include "harness/files/install_locations.h"
#include "harness/json/printable.h"
#include "harness/pipeline/release_bisection.h"
#include "harness/pipeline/run_scenario.h"
#include "harness/scenario/settings_acting_outside_the_run.h"
#include "harness/worker/managed_release.h"

namespace trainrepro {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The first line of what was found, for one probe's line.
std::string first_line(const std::string& text, size_t at_most = 160) {
  std::string line = printable(text.substr(0, text.find('\n')));
  return line.size() > at_most ? line.substr(0, at_most - 3) + "..." : line;
}

// Why a probe gave no outcome (an install that failed, pip's own words), whole up to `at_most`
// bytes from its end, escaped, each line indented under the probe's line.
std::string indented_reason(const std::string& text, size_t at_most = 4000) {
  std::string shown = "\n";
  for (const char c : printable_output_tail(text, at_most)) {
    if (shown.back() == '\n') shown += "      ";
    shown += c;
  }
  while (shown.back() == '\n' || shown.back() == ' ') shown.pop_back();
  return shown;
}

std::string probe_line(const ReleaseProbe& probe) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f s", probe.result.seconds);
  std::string line = "  deepspeed " + probe.release + "  " + bisection_outcome(probe.result) +
                     " (" + seconds + ")";
  if (probe.result.verdict.outcome == Outcome::error) {
    line += ":" + indented_reason(probe.result.verdict.found);
  } else if (probe.result.verdict.outcome != Outcome::passed) {
    line += ": " + first_line(probe.result.verdict.found);
  }
  return line;
}

}  // namespace

int run_bisect(const BisectArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  if (args.engine != "deepspeed") {
    std::cerr << "bisect: --engine must be deepspeed (the releases come from PyPI); found \""
              << args.engine << "\"\n";
    return kExitBadInput;
  }
  if (launched_by_mpi()) {
    std::cerr << "bisect starts one DeepSpeed process per rank itself; run it without mpirun or "
                 "srun\n";
    return kExitBadInput;
  }
  LoadAttempt attempt = try_load_scenario(args.scenario_file);
  if (!attempt.scenario) {
    std::cerr << "bisect: " << attempt.failure.verdict.found << "\n";
    return kExitBadInput;
  }
  // Refused before any release is listed or installed (run_loaded_scenario would refuse each
  // probe too, but as an error that stops the search with exit 3).
  if (auto refused = refuse_settings_acting_outside_the_run(*attempt.scenario, "bisect")) {
    std::cerr << "bisect: " << printable(*refused) << "\n";
    return kExitBadInput;
  }
  std::vector<std::string> releases;
  try {
    // What every probe needs, asked before the first one: a cache of the user's own and a
    // readable TRAINREPRO_OFFLINE.
    offline_requested();
    own_cache_directory();
    releases = deepspeed_releases_between(args.good, args.bad);
  } catch (const DeepSpeedReleaseError& error) {
    std::cerr << "bisect: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const EnvironmentValueError& error) {
    std::cerr << "bisect: " << error.what() << "\n";
    return kExitBadInput;
  } catch (const CacheFolderError& error) {
    std::cerr << "bisect: " << error.what() << "\n";
    return kExitInfrastructure;
  } catch (const DeepSpeedPythonError& error) {
    std::cerr << "bisect: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  std::cout << "bisect " << attempt.scenario->name << ": " << releases.size() << " releases from "
            << args.good << " (good) to " << args.bad << " (bad)"
            << (release_older(args.bad, args.good) ? ", newest first (looking for the fix)" : "")
            << "; the golden follows DeepSpeed " << attempt.scenario->deepspeed.release->version
            << "'s rules\n"
            << std::flush;

  RunOptions options;
  options.device_override = DeviceChoice::cpu;  // the worker trains on the CPU
  options.cuda_available = cuda_is_available();
  options.cuda_devices = cuda_device_count();
  options.golden_dir = args.golden_dir;
  options.rank_timeout_seconds = args.rank_timeout_seconds;
  std::optional<std::string> infrastructure;  // why a release could not be probed
  auto probe = [&](const std::string& release) {
    try {
      options.engine =
          worker_training_engine(managed_deepspeed_python(release, args.rank_timeout_seconds));
    } catch (const std::runtime_error& error) {  // the release or the Python: no outcome
      ScenarioResult failed = attempt.failure;
      failed.name = attempt.scenario->name;
      failed.verdict.outcome = Outcome::error;
      failed.verdict.error_source = ErrorSource::infrastructure;
      failed.verdict.found = error.what();
      return failed;
    }
    return run_loaded_scenario(*attempt.scenario, options);
  };
  auto print = [](const ReleaseProbe& done) {
    std::cout << probe_line(done) << "\n" << std::flush;
  };
  const ReleaseBisection bisection = bisect_releases(releases, probe, print);

  const std::string minutes = std::to_string(static_cast<int>(seconds_since(start) / 60.0 + 0.5));
  const std::string summary = std::to_string(bisection.probes.size()) + " probes of " +
                              std::to_string(releases.size()) + " releases in " + minutes + " min";
  if (bisection.stopped_at) {
    std::cout << "bisect stopped: deepspeed " << *bisection.stopped_at
              << " gave no outcome to compare (an error, above); " << summary << "\n";
    return kExitInfrastructure;
  }
  if (!bisection.first_bad) {
    std::cout << "no change: deepspeed " << args.good << " and " << args.bad << " both "
              << bisection_outcome(bisection.probes.front().result) << "; " << summary << "\n";
    return kExitExpectationNotMet;
  }
  const ScenarioResult* first_bad = nullptr;
  for (const ReleaseProbe& done : bisection.probes) {
    if (done.release == *bisection.first_bad) first_bad = &done.result;
  }
  const std::string bad_outcome =
      bisection_outcome(*first_bad) + ": " + first_line(first_bad->verdict.found);
  if (release_older(args.bad, args.good)) {  // searched newest first: the fix
    std::cout << "fixed in: " << *bisection.last_good << "; last bad: " << *bisection.first_bad
              << " (" << bad_outcome << ")\n";
  } else {
    std::cout << "first bad: " << *bisection.first_bad << " (" << bad_outcome
              << "); last good: " << *bisection.last_good << "\n";
  }
  std::cout << summary << "\n";
  return kExitOk;
}

}  // namespace trainrepro
