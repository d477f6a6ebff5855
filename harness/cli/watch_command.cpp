// `trainrepro watch [options] -- COMMAND…`: runs the user's own training command unchanged with
// the watch module on its path (harness/watch/watch_launch.h), reads what each rank recorded,
// judges it (harness/verdict/judge_watched.h) into a scenario's result
// (harness/pipeline/watched_result.h) and reports it as a scenario run's results are reported.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <regex>
#include <sstream>

#include "harness/cli/commands.h"
#include "harness/cli/watch_save_scenario.h"
#include "harness/files/atomic_write.h"
#include "harness/pipeline/watched_result.h"
#include "harness/report/console_reporter.h"
#include "harness/report/junit_reporter.h"
#include "harness/report/results_json.h"
#include "harness/report/watch_page.h"
#include "harness/verdict/judge_watched.h"
#include "harness/verdict/verdict.h"
#include "harness/watch/watch_launch.h"
#include "harness/watch/watched_process_ends.h"

namespace trainrepro {
namespace {

std::string last_lines(const std::string& text, size_t count) {
  size_t begin = text.size();
  for (size_t lines = 0; begin > 0 && lines <= count;) {
    --begin;
    if (text[begin] == '\n' && begin + 1 < text.size()) ++lines;
  }
  return text.substr(begin == 0 ? 0 : begin + 1);
}

// The lines that end the last Python traceback of a rank: its exception line and the few before
// it ("[rank0]: RuntimeError: …"), not the launcher's own summary after it (torchrun's
// ChildFailedError). The command's last lines when no exception line is found.
std::string traceback_tail(const std::string& output) {
  static const std::regex exception_line(
      R"(^(\[rank[0-9]+\]:\s*)?[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Interrupt|Exit)(:.*)?$)");
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (size_t i = lines.size(); i-- > 0;) {
    if (!std::regex_match(lines[i], exception_line) ||
        lines[i].find("ChildFailedError") != std::string::npos) {
      continue;
    }
    std::string tail;
    for (size_t j = i >= 6 ? i - 6 : 0; j <= i; ++j) tail += lines[j] + "\n";
    return tail;
  }
  return last_lines(output, 12);
}

// Text the command or its ranks wrote, made safe to print inside our own lines: what a terminal
// would show of a line rewritten with carriage returns (a progress bar) is its last part, and
// other control characters (an escape sequence, a form feed) are shown as \xNN, not obeyed.
std::string printable(const std::string& text) {
  std::string result;
  size_t line_start = 0;
  for (unsigned char c : text) {
    if (c == '\r') {
      result.resize(line_start);
    } else if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) {
      result += static_cast<char>(c);
      if (c == '\n') line_start = result.size();
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      result += escaped;
    }
  }
  return result;
}

// Every line of `text` after the first indented under our own, so that no line the command
// wrote (DeepSpeed's error texts hold raw newlines) can pass for one of trainrepro's.
std::string continued(const std::string& text) {
  std::string result;
  for (char c : printable(text)) {
    result += c;
    if (c == '\n') result += "      ";
  }
  while (!result.empty() && (result.back() == ' ' || result.back() == '\n')) result.pop_back();
  return result;
}

std::string indented(const std::string& text) { return "      " + continued(text); }

// The end of the command's output, all its messages need: the file may hold gigabytes.
constexpr size_t kOutputTailBytes = 64 * 1024;

// The watched run as a scenario's result, judged from the ranks' recordings (left in `ranks`);
// `run` holds the command and what its launch said.
ScenarioResult judge_recordings(const WatchArgs& args, const WatchLaunch& watched, WatchedRun run,
                                double seconds, std::vector<RankRecording>& ranks) {
  // The command could not be watched: nothing judged, the problem says why (exit 3).
  const auto not_watched = [&](std::string problem) {
    run.problem = std::move(problem);
    return watched_result(std::move(run), {}, {}, {}, seconds);
  };
  const RankLaunch& launch = watched.launch;
  // Which processes a signal killed, when watch itself did not (--timeout kills them all).
  std::string killed;
  if (!launch.timed_out) {
    for (const std::string& death : signal_deaths(watched.recordings_folder, launch)) {
      killed += (killed.empty() ? " (" : "; ") + death;
    }
    if (!killed.empty()) killed += ")";
  }
  const std::string command_ended =
      launch.timed_out
          ? "the command did not finish within " + std::to_string(args.timeout_seconds) +
                " s (--timeout) and was killed with its processes"
          : "the command ended with exit code " + std::to_string(launch.exit_code) + killed;
  const std::string tail =
      "; its last lines:\n" +
      indented(traceback_tail(tail_of_file(watched.output_file, kOutputTailBytes)));
  try {
    ranks = read_watch_recording(watched.recordings_folder);
  } catch (const std::exception& error) {
    return not_watched(std::string("the watch's recordings cannot be read: ") + error.what());
  }
  const std::vector<int64_t> engines = ranks_with_an_engine(watched.recordings_folder);
  if (ranks.empty() && !engines.empty()) {
    std::string which;
    for (int64_t rank : engines) which += (which.empty() ? "" : ", ") + std::to_string(rank);
    return not_watched("DeepSpeed engines were created (rank" +
                       std::string(engines.size() == 1 ? " " : "s ") + which +
                       "), but no rank wrote its recording of the watched steps (written after "
                       "--steps " + std::to_string(args.steps) +
                       " optimizer steps, or when the script exits normally): " +
                       command_ended + tail);
  }
  if (ranks.empty()) {
    return not_watched("no DeepSpeed engine was created: " + command_ended +
                       " without calling deepspeed.initialize" +
                       (launch.exit_code != 0 || launch.timed_out ? tail : ""));
  }
  for (const RankRecording& rank : ranks) {
    if (!rank.initialize_raised.empty()) {
      return not_watched("no DeepSpeed engine was created: the script's deepspeed.initialize "
                         "raised on rank " + std::to_string(rank.rank) + ": " +
                         continued(rank.initialize_raised) + "; " + command_ended + tail);
    }
  }
  for (const RankRecording& rank : ranks) {
    if (!rank.failure.empty()) {
      return not_watched("the watch failed on rank " + std::to_string(rank.rank) + ": " +
                         continued(rank.failure) + "\n" +
                         indented(last_lines(rank.traceback, 8)));
    }
  }
  const RankRecording& first = ranks.front();
  run.ranks = first.world_size;
  run.ended = first.ended;
  TrainingJudgement training;
  MemoryJudgement memory;
  run.judgement = judge_watched(ranks, args.intended_batch, training, memory);
  if (launch.exit_code != 0 || launch.timed_out) run.problem = command_ended + tail;
  return watched_result(std::move(run), std::move(training), std::move(memory), first.versions,
                        seconds);
}

}  // namespace

int run_watch(const WatchArgs& args) {
  if (args.command.empty()) {
    std::cerr << "trainrepro watch: give the training command after --, e.g. trainrepro watch "
                 "-- torchrun --nproc_per_node 2 train.py\n";
    return kExitBadInput;
  }
  WatchedRun run;
  run.command = args.command;
  run.steps_wanted = args.steps;
  PrivateFolder folder;
  WatchLaunch watched;
  const auto started = std::chrono::steady_clock::now();
  try {
    watched = launch_watched({args.command, args.steps, args.memory_steps, args.timeout_seconds,
                              !args.save_scenario.empty(), args.loss, args.golden,
                              args.coordinates},
                             folder);
  } catch (const std::runtime_error& error) {
    std::cerr << "trainrepro watch: " << error.what() << "\n";
    return kExitBadInput;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  end_if_stopped(watched.launch, folder);
  run.command_exit_code = watched.launch.exit_code;
  std::vector<RankRecording> ranks;
  const ScenarioResult result = judge_recordings(args, watched, std::move(run), seconds, ranks);
  const int exit_code = exit_code_of(result.verdict);
  // The reporters of scenario results write it: the console's lines, the results file (what
  // only a watch knows in its "watch" object), JUnit; `trainrepro report` reads the file back.
  ConsoleReporter(std::cout).report_scenario(result);
  for (const auto& [file, content] :
       {std::pair{args.results_file, result_to_json(result, args.provenance).dump(2) + "\n"},
        std::pair{args.junit_file, junit_xml({result}, args.provenance, seconds)},
        std::pair{args.html_file, watch_html_page(result)}}) {
    if (file.empty()) continue;
    try {
      write_file_atomically(file, content);
    } catch (const std::exception& error) {
      std::cerr << "trainrepro watch: cannot write " << file << ": " << error.what() << "\n";
      return kExitInfrastructure;
    }
  }
  if (!args.save_scenario.empty() && !ranks.empty()) {
    const int saved = save_watched_scenario(ranks, result, args, watched.recordings_folder);
    if (saved != kExitOk) return std::max(saved, exit_code);
  }
  return exit_code;
}

}  // namespace trainrepro
