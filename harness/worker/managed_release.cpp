#include "harness/worker/managed_release.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <utility>

#include <torch/headeronly/version.h>
#include <nlohmann/json.hpp>

#include "harness/files/environment_values.h"
#include "harness/files/install_locations.h"
#include "harness/json/printable.h"
#include "harness/worker/private_folder.h"
#include "harness/worker/release_manifest.h"
#include "harness/worker/unrunnable_releases.h"

namespace trainrepro {
namespace {

// Building a release's sdist and its dependencies from PyPI takes about a minute here; a slow
// mirror gets half an hour before the install is given up.
constexpr int kInstallTimeoutSeconds = 1800;
// DeepSpeed's releases have 1-2 digits per part; 6 leaves room and keeps a folder name short.
constexpr int kReleasePartDigits = 6;  // install_release.py RELEASE agrees
constexpr int kInstallerBadInput = 2;  // no such release, or a bad version or environment value
constexpr int kListTimeoutSeconds = 120;
constexpr size_t kOutputShown = 4000;            // bytes of an installer's output in a message
constexpr std::streamsize kListLimit = 4 << 20;  // PyPI's 133 releases list in 2.3 KB

std::string tail_lines(const std::string& text, int lines) {
  size_t at = text.size();
  while (at > 0 && text[at - 1] == '\n') --at;
  const size_t end = at;
  for (int seen = 0; at > 0; --at) {
    if (text[at - 1] == '\n' && ++seen == lines) break;
  }
  return printable_output_tail(text.substr(at, end - at), kOutputShown);
}

// The whole output file (the launcher keeps only a tail), at most `limit` bytes from its end.
std::string read_output(const std::string& path, std::streamsize limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamsize size = in.tellg();
  in.seekg(size > limit ? size - limit : 0);
  std::string text(static_cast<size_t>(std::min(size, limit)), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// The torch a release runs over: the torch Python's, the one this build's LibTorch came from.
std::string built_torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Runs the compiled-in installer with the torch Python; its exit code says what went wrong.
void install_release(const std::string& release, const std::string& home, ReleaseStamp stamp) {
  const std::string torch_python = torch_python_executable();
  if (stamp == ReleaseStamp::unlisted) {
    std::cerr << "--engine deepspeed==" << release << ": " << home
              << " was installed by an earlier trainrepro: listing its files in its stamp\n";
  } else {
    std::cerr << "--engine deepspeed==" << release << ": installing it from PyPI into " << home
              << " over " << torch_python << "'s torch (once; later runs reuse it)\n";
  }
  PrivateFolder folder;
  write_worker_sources(folder.path());
  RankLaunch launch;
  const std::string output = folder.path() + "/install-output.txt";
  try {
    launch = launch_process_group({torch_python, folder.path() + "/install_release.py", release,
                                   home, pip_downloads_directory()},
                                  kInstallTimeoutSeconds, output);
  } catch (const std::runtime_error& error) {
    throw DeepSpeedPythonError("--engine deepspeed==" + release + ": cannot run the torch Python " +
                               torch_python + " (TRAINREPRO_TORCH_PYTHON): " + error.what());
  }
  end_if_stopped(launch, folder);
  if (launch.exit_code == 0 && !launch.timed_out) return;
  const std::string said = tail_lines(read_output(output, 1 << 20), 16);
  if (launch.exit_code == kInstallerBadInput) {
    throw DeepSpeedReleaseError("--engine deepspeed==" + release + ": " + said);
  }
  throw DeepSpeedPythonError(
      "--engine deepspeed==" + release + ": the install into " + home +
      (launch.timed_out ? " did not finish within " + std::to_string(kInstallTimeoutSeconds) + " s"
                        : " failed (exit code " + std::to_string(launch.exit_code) + ")") +
      ":\n" + said);
}

// {release: yanked} from PyPI, through the installer's --list.
std::map<std::string, bool> published_releases() {
  PrivateFolder folder;
  write_worker_sources(folder.path());
  const std::string torch_python = torch_python_executable();
  RankLaunch launch;
  // The list goes into a file: 300 releases are more than the launcher's output tail.
  const std::string list = folder.path() + "/releases.json";
  const std::string output = folder.path() + "/list-output.txt";
  try {
    launch =
        launch_process_group({torch_python, folder.path() + "/install_release.py", "--list", list},
                             kListTimeoutSeconds, output);
  } catch (const std::runtime_error& error) {
    throw DeepSpeedPythonError("the DeepSpeed release list: cannot run the torch Python " +
                               torch_python + ": " + error.what());
  }
  end_if_stopped(launch, folder);
  if (launch.exit_code == kInstallerBadInput) {
    throw DeepSpeedReleaseError("the DeepSpeed release list: " +
                                tail_lines(read_output(output, 1 << 20), 8));
  }
  if (launch.exit_code != 0 || launch.timed_out) {
    throw DeepSpeedPythonError(
        "the DeepSpeed release list could not be read from PyPI" +
        (launch.timed_out ? " within " + std::to_string(kListTimeoutSeconds) + " s" : "") + ":\n" +
        tail_lines(read_output(output, 1 << 20), 8));
  }
  const std::string text = read_output(list, kListLimit);
  const nlohmann::json listed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!listed.is_object()) {
    throw DeepSpeedPythonError("the DeepSpeed release list is not a JSON object: " +
                               printable_excerpt(text, 200));
  }
  std::map<std::string, bool> releases;
  for (const auto& [release, yanked] : listed.items()) {
    if (is_release_text(release)) releases[release] = yanked.is_boolean() && yanked.get<bool>();
  }
  return releases;
}

}  // namespace

bool is_release_text(const std::string& text) {
  int digits = 0, dots = 0;
  for (const char c : text) {
    if (c >= '0' && c <= '9') {
      if (++digits > kReleasePartDigits) return false;
    } else if (c == '.' && digits > 0 && dots < 2) {
      ++dots;
      digits = 0;
    } else {
      return false;
    }
  }
  return dots == 2 && digits > 0;
}

void require_release_text(const std::string& text, const std::string& where) {
  if (is_release_text(text)) return;
  throw DeepSpeedReleaseError(where +
                              ": expected a release as MAJOR.MINOR.PATCH in ASCII "
                              "digits, at most " +
                              std::to_string(kReleasePartDigits) + " each (e.g. 0.18.6); found " +
                              printable_excerpt(text));
}

std::vector<std::string> deepspeed_releases_between(const std::string& good,
                                                    const std::string& bad) {
  require_release_text(good, "--good");
  require_release_text(bad, "--bad");
  if (good == bad) {
    throw DeepSpeedReleaseError("--good and --bad are the same release, " + good);
  }
  const std::map<std::string, bool> published = published_releases();
  for (const std::string& end : {good, bad}) {
    const auto found = published.find(end);
    if (found == published.end()) {
      throw DeepSpeedReleaseError("PyPI has no deepspeed " + end);
    }
    if (found->second) throw DeepSpeedReleaseError("deepspeed " + end + " was yanked from PyPI");
  }
  const bool looking_for_a_fix = release_older(bad, good);
  const std::string& oldest = looking_for_a_fix ? bad : good;
  const std::string& newest = looking_for_a_fix ? good : bad;
  std::vector<std::string> between;
  for (const auto& [release, yanked] : published) {
    if (!yanked && !release_older(release, oldest) && !release_older(newest, release)) {
      between.push_back(release);
    }
  }
  std::sort(between.begin(), between.end(), release_older);
  if (looking_for_a_fix) std::reverse(between.begin(), between.end());
  return between;
}

EngineChoice parse_engine_choice(const std::string& text) {
  if (text == "reference") return {};
  if (text == "deepspeed") return {true, std::nullopt};
  if (text == "fsdp2") return {false, std::nullopt, true};
  const std::string pinned = "deepspeed==";
  if (text.rfind(pinned, 0) == 0 && is_release_text(text.substr(pinned.size()))) {
    return {true, text.substr(pinned.size())};
  }
  throw std::invalid_argument(
      "--engine: expected reference, deepspeed, deepspeed==VERSION "
      "(a release as MAJOR.MINOR.PATCH in ASCII digits, e.g. deepspeed==0.18.6) or fsdp2; "
      "found " +
      printable_excerpt(text));
}

std::string deepspeed_release_home(const std::string& release) {
  require_release_text(release, "--engine deepspeed==");
  return own_cache_directory() + "/deepspeed-" + release;
}

DeepSpeedPython managed_deepspeed_python(const std::string& release, int probe_timeout_seconds) {
  const std::string home = deepspeed_release_home(release);
  // Known not to run over this torch: refused before minutes of installing end the same way.
  if (const auto reason = why_release_cannot_run(release, built_torch_version())) {
    throw DeepSpeedReleaseError("--engine deepspeed==" + release + ": refused: " + *reason +
                                " (harness/worker/unrunnable_releases.cpp; docs/releases.md)");
  }
  const ReleaseStamp stamp = read_release_stamp(home);
  if (stamp == ReleaseStamp::missing && offline_requested()) {
    throw DeepSpeedPythonError("--engine deepspeed==" + release + ": not installed in " + home +
                               ", and TRAINREPRO_OFFLINE forbids installing it");
  }
  // Installed by an earlier trainrepro (a stamp without a file list): the installer lists its
  // files as they are, offline too, instead of installing it again.
  if (stamp != ReleaseStamp::listed) install_release(release, home, stamp);
  check_installed_release(home);
  // The release's packages before anything else on the path, its ops compiled into its own
  // folder with the ninja it brought, the CPU accelerator, one thread per rank process.
  const char* path = std::getenv("PATH");
  std::vector<std::string> command = {
      "env",
      "PYTHONPATH=" + home + "/site:" + home + "/deps",
      "PATH=" + home + "/deps/bin:" + (path != nullptr ? path : "/usr/bin:/bin"),
      "TORCH_EXTENSIONS_DIR=" + home + "/torch_extensions",
      "PYTHONDONTWRITEBYTECODE=1",
      "PYTHONNOUSERSITE=1"};
  const std::pair<const char*, const char*> overridable[] = {
      {"DS_ACCELERATOR", "cpu"}, {"OMP_NUM_THREADS", "1"}, {"TRAINREPRO_THREADS", "1"}};
  for (const auto& [name, value] : overridable) {
    if (std::getenv(name) == nullptr) command.push_back(std::string(name) + "=" + value);
  }
  command.push_back(torch_python_executable());
  DeepSpeedPython python = probe_deepspeed_python(command, "deepspeed==" + release + " in " + home,
                                                  probe_timeout_seconds);
  if (python.versions.deepspeed != release) {
    throw DeepSpeedPythonError("--engine deepspeed==" + release + ": " + home +
                               " holds deepspeed " + printable_excerpt(python.versions.deepspeed) +
                               "; remove the folder to reinstall it");
  }
  return python;
}

DeepSpeedPython deepspeed_python_for(const EngineChoice& choice, int probe_timeout_seconds) {
  if (choice.fsdp2) return find_fsdp2_python(probe_timeout_seconds);
  return choice.release ? managed_deepspeed_python(*choice.release, probe_timeout_seconds)
                        : find_deepspeed_python(probe_timeout_seconds);
}

}  // namespace trainrepro
