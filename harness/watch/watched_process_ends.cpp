#include "harness/watch/watched_process_ends.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

namespace trainrepro {
namespace {

// Every `<prefix><number>.json` of the folder, parsed; files that do not parse are skipped
// (they are hints for messages, written by the user's processes).
std::vector<nlohmann::json> small_records(const std::string& folder, const std::string& prefix) {
  std::vector<nlohmann::json> records;
  const std::regex name(prefix + "[0-9]+\\.json");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    if (!std::regex_match(entry.path().filename().string(), name)) continue;
    std::ifstream in(entry.path());
    const nlohmann::json record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (record.is_object()) records.push_back(record);
  }
  return records;
}

int64_t integer_or(const nlohmann::json& record, const char* key, int64_t otherwise) {
  const auto found = record.find(key);
  return found != record.end() && found->is_number_integer() ? found->get<int64_t>() : otherwise;
}

std::string oom_words(int signal, const RankLaunch& launch) {
  if (signal != SIGKILL || launch.oom_kills <= 0) return "";
  return ", by the kernel's out-of-memory killer (its kill count rose by " +
         std::to_string(launch.oom_kills) + " while the command ran)";
}

}  // namespace

std::string signal_name(int signal) {
  static const std::map<int, const char*> names = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
      {SIGSEGV, "SIGSEGV"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
      {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}, {SIGSYS, "SIGSYS"}};
  const auto found = names.find(signal);
  return found != names.end() ? found->second : "signal " + std::to_string(signal);
}

std::vector<int64_t> ranks_with_an_engine(const std::string& recordings_folder) {
  std::vector<int64_t> ranks;
  for (const nlohmann::json& record : small_records(recordings_folder, "engine-rank")) {
    const int64_t rank = integer_or(record, "rank", -1);
    if (rank >= 0) ranks.push_back(rank);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<std::string> signal_deaths(const std::string& recordings_folder,
                                       const RankLaunch& launch) {
  std::map<int64_t, int64_t> rank_of_pid;
  for (const nlohmann::json& record : small_records(recordings_folder, "process-")) {
    rank_of_pid[integer_or(record, "pid", -1)] = integer_or(record, "rank", -1);
  }
  // By rank, then pid: the same order however the files were listed.
  std::vector<std::pair<std::pair<int64_t, int64_t>, int>> deaths;
  for (const nlohmann::json& record : small_records(recordings_folder, "exit-")) {
    const int64_t pid = integer_or(record, "pid", -1);
    const auto rank = rank_of_pid.find(pid);
    deaths.push_back({{rank != rank_of_pid.end() ? rank->second : INT64_MAX, pid},
                      static_cast<int>(integer_or(record, "signal", 0))});
  }
  std::sort(deaths.begin(), deaths.end());
  std::vector<std::string> said;
  for (const auto& [who, signal] : deaths) {
    const auto& [rank, pid] = who;
    said.push_back((rank != INT64_MAX ? "rank " + std::to_string(rank) + " (pid " : "a process it "
                                        "started (pid ") +
                   std::to_string(pid) + ") was killed by " + signal_name(signal) +
                   oom_words(signal, launch));
  }
  if (launch.killed_by != 0) {
    said.push_back("the command itself was killed by " + signal_name(launch.killed_by) +
                   oom_words(launch.killed_by, launch));
  }
  return said;
}

}  // namespace trainrepro
