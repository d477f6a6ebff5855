#include "harness/report/run_provenance.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>

#include "harness/engine/runtime_info.h"
#include "harness/memory/host_memory.h"
#include "harness/memory/leak_analysis.h"

namespace trainrepro {
namespace {

// A word the shell reads back as itself: bare when it is plain, single-quoted otherwise.
std::string shell_quoted(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+=./:,@%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// What a command printed, its trailing newline cut; "" when it failed.
std::string output_of(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  if (::pclose(pipe) != 0) return "";
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  return output;
}

// The commit of the checkout this binary was built from, if it is still there and git is.
std::string source_commit() {
  if (const char* given = std::getenv("TRAINREPRO_GIT_COMMIT"); given != nullptr && *given) {
    return given;
  }
  const std::string source = TRAINREPRO_SOURCE_DIR;
  std::error_code error;
  if (!std::filesystem::exists(std::filesystem::path(source) / ".git", error)) return "";
  const std::string git = "git -C " + shell_quoted(source) + " ";
  const std::string commit = output_of(git + "rev-parse --short=12 HEAD 2>/dev/null");
  if (commit.empty()) return "";
  const std::string changes =
      output_of(git + "status --porcelain --untracked-files=no 2>/dev/null");
  return changes.empty() ? commit : commit + "+dirty";
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

std::string describe_machine() {
  const unsigned cpus = std::thread::hardware_concurrency();
  std::string text = std::to_string(cpus) + (cpus == 1 ? " CPU, " : " CPUs, ") +
                     format_bytes(static_cast<double>(physical_ram_bytes())) + " RAM, ";
  const int gpus = cuda_device_count();
  text += gpus == 0 ? "no GPU" : describe_cuda();
  return text;
}

}  // namespace

std::string utc_timestamp_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

RunProvenance current_run_provenance(int argc, const char* const* argv) {
  RunProvenance provenance;
  provenance.started_at = utc_timestamp_now();
  provenance.host = host_name();
  provenance.machine = describe_machine();
  provenance.git_commit = source_commit();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) provenance.command_line += " ";
    // The program as the user named it, by its last path component: a build folder's path
    // says nothing to a reader of another machine's report.
    provenance.command_line +=
        shell_quoted(i == 0 ? std::filesystem::path(argv[0]).filename().string() : argv[i]);
  }
  provenance.trainrepro_version = TRAINREPRO_VERSION;
  provenance.torch_version = torch_version();
  provenance.cuda_version = cuda_runtime_version();
  return provenance;
}

}  // namespace trainrepro
