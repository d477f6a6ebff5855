// `trainrepro bisect SCENARIO --engine deepspeed --good A --bad B`: which DeepSpeed release first
// changed a scenario's outcome. Every probe installs its release into the cache (once) and runs
// the scenario on it exactly as `run --engine deepspeed==RELEASE` would; each probe's verdict is
// printed as it ends, then `first bad: …; last good: …`. A release that cannot run (refused up
// front, an install that fails, a release that does not import) is skipped, and said so.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <tuple>

#include "harness/cli/commands.h"
#include "harness/distributed/mpi_session.h"
#include "harness/engine/runtime_info.h"
#include "harness/files/environment_values.h"
#include "harness/files/install_locations.h"
#include "harness/json/printable.h"
#include "harness/pipeline/release_bisection.h"
#include "harness/pipeline/run_scenario.h"
#include "harness/scenario/settings_acting_outside_the_run.h"
#include "harness/worker/managed_release.h"
#include "harness/worker/worker_sets.h"

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

const ScenarioResult& result_of(const ReleaseBisection& bisection, const std::string& release) {
  for (const ReleaseProbe& done : bisection.probes) {
    if (done.release == release && gave_outcome(done.result)) return done.result;
  }
  throw std::logic_error("bisect: no outcome recorded for deepspeed " + release);
}

std::string joined(const std::vector<std::string>& releases) {
  std::string text;
  for (const std::string& release : releases) text += (text.empty() ? "" : ", ") + release;
  return text;
}

// The line of a reason that names the cause: the last exception line ("ImportError: cannot import
// name …"), which pip's and the installer's closing lines follow; else the first line.
std::string cause_line(const std::string& reason) {
  std::string cause;
  size_t start = 0;
  while (start < reason.size()) {
    const size_t end = std::min(reason.find('\n', start), reason.size());
    const std::string line = reason.substr(start, end - start);
    if (line.find("Error: ") != std::string::npos) cause = line;
    start = end + 1;
  }
  if (cause.empty()) cause = reason.substr(0, reason.find('\n'));
  const size_t text = cause.find_first_not_of(' ');
  return first_line(text == std::string::npos ? "" : cause.substr(text), 200);
}

// "0.14.0 (ValueError: CPU_Accelerator requires …); 0.14.1 (…)": each skipped release with the
// line of its reason that names the cause.
std::string releases_and_reasons(const ReleaseBisection& bisection) {
  std::string text;
  for (const ReleaseProbe& probe : bisection.probes) {
    if (gave_outcome(probe.result)) continue;
    text += (text.empty() ? "" : "; ") + probe.release + " (" +
            cause_line(probe.result.verdict.found) + ")";
  }
  return text;
}

std::string probe_line(const ReleaseProbe& probe) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f s", probe.result.seconds);
  // A release that gave no outcome is skipped, not an error of the search: said as such, with
  // the seconds its install or import took.
  const std::string outcome =
      gave_outcome(probe.result) ? bisection_outcome(probe.result) : "skipped";
  std::string line = "  deepspeed " + probe.release + "  " + outcome + " (" + seconds + ")";
  if (!gave_outcome(probe.result)) {
    line += ", could not run:" + indented_reason(probe.result.verdict.found);
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
  // Each probe trains on a worker set, as `run` does: its ranks forked from one coordinator that
  // imported the release once, not each importing it (a four-rank set's first job took 12.7 s
  // forked against 18.2 s). The set is ended after its probe: a set serves one Python, and the
  // next probe is another release.
  WorkerSets worker_sets;
  options.worker_sets = &worker_sets;
  auto probe = [&](const std::string& release) {
    const auto probe_start = std::chrono::steady_clock::now();
    try {
      options.engine =
          worker_training_engine(managed_deepspeed_python(release, args.rank_timeout_seconds));
    } catch (const std::runtime_error& error) {  // the release or the Python: no outcome
      ScenarioResult failed = attempt.failure;
      failed.name = attempt.scenario->name;
      failed.verdict.outcome = Outcome::error;
      failed.verdict.error_source = ErrorSource::infrastructure;
      failed.verdict.found = error.what();
      failed.seconds = seconds_since(probe_start);
      return failed;
    }
    ScenarioResult result = run_loaded_scenario(*attempt.scenario, options);
    worker_sets.close_all();
    return result;
  };
  auto print = [](const ReleaseProbe& done) {
    std::cout << probe_line(done) << "\n" << std::flush;
  };
  const ReleaseBisection bisection = bisect_releases(releases, probe, print);

  const std::string minutes = std::to_string(static_cast<int>(seconds_since(start) / 60.0 + 0.5));
  const std::string summary = std::to_string(bisection.probes.size()) + " probes of " +
                              std::to_string(releases.size()) + " releases in " + minutes + " min";
  if (!bisection.skipped.empty()) {
    std::cout << "could not run (skipped): " << releases_and_reasons(bisection) << "\n";
  }
  if (!bisection.good_end || !bisection.bad_end) {
    std::cout << "bisect: "
              << (bisection.good_end ? "only deepspeed " + *bisection.good_end
                                     : std::string("no release"))
              << " of the range could run: nothing to compare; " << summary << "\n";
    return kExitInfrastructure;
  }
  // An end that could not run was replaced by the nearest release inside the range.
  for (const auto& [asked, used, which] : {std::tuple{args.good, *bisection.good_end, "good"},
                                           std::tuple{args.bad, *bisection.bad_end, "bad"}}) {
    if (asked != used) {
      std::cout << "deepspeed " << used << " stands for the " << which << " end (" << asked
                << " could not run)\n";
    }
  }
  if (!bisection.first_bad) {
    std::cout << "no change: deepspeed " << *bisection.good_end << " and " << *bisection.bad_end
              << " both " << bisection_outcome(result_of(bisection, *bisection.good_end)) << "; "
              << summary << "\n";
    return kExitExpectationNotMet;
  }
  const ScenarioResult& first_bad = result_of(bisection, *bisection.first_bad);
  const std::string bad_outcome =
      bisection_outcome(first_bad) + ": " + first_line(first_bad.verdict.found);
  // Skipped releases between the two: the change came in one of them (each older than the
  // answer, whichever way the search ran) or in the answer itself.
  const std::string unless =
      bisection.undecided.empty()
          ? ""
          : ", or an earlier release that could not run: " + joined(bisection.undecided);
  if (release_older(args.bad, args.good)) {  // searched newest first: the fix
    std::cout << "fixed in: " << *bisection.last_good << unless
              << "; last bad: " << *bisection.first_bad << " (" << bad_outcome << ")\n";
  } else {
    std::cout << "first bad: " << *bisection.first_bad << unless << " (" << bad_outcome
              << "); last good: " << *bisection.last_good << "\n";
  }
  std::cout << summary << "\n";
  return kExitOk;
}

}  // namespace trainrepro
