// What `trainrepro watch` reports of a watched script that the shared reporters do not (yet): the
// console lines and the results file's "watch" object, both read from the same plain data
// (judge_watched.h). The results file itself, JUnit and `trainrepro report` read the watched run
// as a scenario's result (watched_result.h).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/watch/judge_watched.h"
#include "harness/watch/watch_recording.h"

namespace trainrepro {

struct WatchReport {
  std::vector<std::string> command;
  std::string outcome;  // "passed", "failed", "not-judged", "error"
  int exit_code = 0;    // trainrepro's
  int command_exit_code = 0;
  std::string problem;  // why the command could not be watched or judged, with its output's tail
  WorkerVersions versions;
  int64_t ranks = 0;
  int64_t windows_wanted = 0;
  std::string ended;  // why fewer windows than wanted were watched; "" when all were
  double seconds = 0.0;  // the command's wall time
  WatchJudgement judgement;
};

// How a judged window stood against the golden, in words: "within tolerance" or "differs"
// (float32); a bfloat16 model's with its RMS error and its precision twin's.
std::string window_against_golden(const WatchedWindowJudgement& window);

// "failed      watch: torchrun … train.py (4 optimizer steps …)" and the indented lines after it.
std::string watch_console_text(const WatchReport& report);

// The "watch" object of the results file ("format": "trainrepro-watch-results", version 2):
// what only a watch knows (the command, not-judged and why, each step's norm ratio, cosine and
// golden, the golden's self-check, the findings) beside the scenario result the file is.
nlohmann::json watch_results_json(const WatchReport& report);

}  // namespace trainrepro
