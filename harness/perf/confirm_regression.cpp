#include "harness/perf/confirm_regression.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>

#include "harness/distributed/rank_work_folder.h"
#include "harness/files/sha256.h"
#include "harness/perf/benchmark_json.h"

extern char** environ;

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

// Runs one build's `perf run` on the suspected scenarios; "" on success, else why not.
std::string run_build(const std::string& executable, const PerfRun& recorded,
                      const std::string& filter, int repetitions, const std::string& out) {
  std::vector<std::string> arguments = {executable, "perf", "run"};
  for (const std::string& path : recorded.context.scenario_paths) arguments.push_back(path);
  arguments.insert(arguments.end(), {"--filter", filter, "--repetitions",
                                     std::to_string(repetitions), "--out", out});
  if (recorded.context.planted_slowdown > 0.0) {
    arguments.push_back("--plant-slowdown");
    arguments.push_back(std::to_string(recorded.context.planted_slowdown));
  }
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  const std::string log = out + ".log";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  if (!recorded.context.working_directory.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, recorded.context.working_directory.c_str());
  }
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(),
                                    environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return executable + ": cannot start: " + std::strerror(spawned);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // 0: measured; 1: measured, a scaling expectation missed (not what is confirmed here).
  const bool measured = WIFEXITED(status) && (WEXITSTATUS(status) <= 1);
  if (!measured) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return executable + " perf run failed (" +
           (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                              : std::string("killed by a signal")) +
           "):\n" + text.str();
  }
  return "";
}

// Appends `more`'s repetitions to the benchmarks of the same name in `pooled`.
void pool(PerfRun& pooled, const PerfRun& more) {
  if (pooled.benchmarks.empty()) {
    pooled = more;
    return;
  }
  std::map<std::string, PerfBenchmark*> by_name;
  for (PerfBenchmark& benchmark : pooled.benchmarks) by_name[benchmark.name] = &benchmark;
  for (const PerfBenchmark& benchmark : more.benchmarks) {
    auto found = by_name.find(benchmark.name);
    if (found == by_name.end()) continue;
    for (const PerfRepetition& repetition : benchmark.repetitions) {
      found->second->repetitions.push_back(repetition);
    }
  }
}

}  // namespace

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
  for (int round = 0; round < options.rounds && confirmation.not_possible.empty(); ++round) {
    for (const bool is_current : {false, true}) {
      const std::string out = folder + "/" + (is_current ? "b" : "a") + std::to_string(round) +
                              ".json";
      if (options.progress) {
        options.progress("confirming: round " + std::to_string(round + 1) + "/" +
                         std::to_string(options.rounds) + ", " +
                         (is_current ? "current" : "baseline") + " build");
      }
      confirmation.not_possible = run_build(is_current ? new_build : old_build,
                                            is_current ? current : baseline, filter,
                                            options.repetitions, out);
      if (!confirmation.not_possible.empty()) break;
      try {
        pool(is_current ? confirmation.current : confirmation.baseline, read_perf_run(out));
      } catch (const PerfFormatError& error) {
        confirmation.not_possible = error.what();
        break;
      }
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  return confirmation;
}

}  // namespace trainrepro
