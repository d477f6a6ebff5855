#include "harness/worker/managed_release.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <utility>

#include <nlohmann/json.hpp>

#include "harness/files/install_locations.h"
#include "harness/worker/private_folder.h"

namespace trainrepro {
namespace {

// Building a release's sdist and its dependencies from PyPI takes about a minute here; a slow
// mirror gets half an hour before the install is given up.
constexpr int kInstallTimeoutSeconds = 1800;
constexpr const char* kStamp = ".trainrepro-complete";
constexpr int kInstallerNoSuchRelease = 2;
constexpr int kListTimeoutSeconds = 120;
constexpr const char* kReleasesMarker = "TRAINREPRO-RELEASES ";

bool offline() {
  const char* value = std::getenv("TRAINREPRO_OFFLINE");
  return value != nullptr && std::string(value) == "1";
}

std::string tail_lines(const std::string& text, int lines) {
  size_t at = text.size();
  while (at > 0 && text[at - 1] == '\n') --at;
  for (int seen = 0; at > 0; --at) {
    if (text[at - 1] == '\n' && ++seen == lines) break;
  }
  return text.substr(at);
}

// Runs the compiled-in installer with the torch Python; its exit code says what went wrong.
void install_release(const std::string& release, const std::string& home) {
  const std::string torch_python = torch_python_executable();
  std::cerr << "--engine deepspeed==" << release << ": installing it from PyPI into " << home
            << " over " << torch_python << "'s torch (once; later runs reuse it)\n";
  PrivateFolder folder;
  write_worker_sources(folder.path());
  RankLaunch launch;
  try {
    launch =
        launch_process_group({torch_python, folder.path() + "/install_release.py", release, home},
                             kInstallTimeoutSeconds, folder.path() + "/install-output.txt");
  } catch (const std::runtime_error& error) {
    throw DeepSpeedPythonError("--engine deepspeed==" + release + ": cannot run the torch Python " +
                               torch_python + " (TRAINREPRO_TORCH_PYTHON): " + error.what());
  }
  end_if_stopped(launch, folder);
  if (launch.exit_code == 0 && !launch.timed_out) return;
  const std::string said = tail_lines(launch.output, 16);
  if (launch.exit_code == kInstallerNoSuchRelease) {
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
  try {
    launch = launch_process_group({torch_python, folder.path() + "/install_release.py", "--list"},
                                  kListTimeoutSeconds, folder.path() + "/list-output.txt");
  } catch (const std::runtime_error& error) {
    throw DeepSpeedPythonError("the DeepSpeed release list: cannot run the torch Python " +
                               torch_python + ": " + error.what());
  }
  end_if_stopped(launch, folder);
  const size_t at = launch.output.rfind(kReleasesMarker);
  if (launch.exit_code != 0 || at == std::string::npos) {
    throw DeepSpeedPythonError("the DeepSpeed release list could not be read from PyPI:\n" +
                               tail_lines(launch.output, 8));
  }
  const std::string text = launch.output.substr(at + std::string(kReleasesMarker).size());
  const nlohmann::json listed = nlohmann::json::parse(text.substr(0, text.find('\n')), nullptr,
                                                      /*allow_exceptions=*/false);
  if (!listed.is_object()) {
    throw DeepSpeedPythonError("the DeepSpeed release list is not a JSON object: " +
                               text.substr(0, 200));
  }
  std::map<std::string, bool> releases;
  for (const auto& [release, yanked] : listed.items())
    releases[release] = yanked.is_boolean() && yanked.get<bool>();
  return releases;
}

}  // namespace

std::vector<std::string> deepspeed_releases_between(const std::string& good,
                                                    const std::string& bad) {
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
  static const std::regex pinned(R"(deepspeed==(\d+\.\d+\.\d+))");
  std::smatch match;
  if (std::regex_match(text, match, pinned)) return {true, match[1].str()};
  throw std::invalid_argument(
      "--engine: expected reference, deepspeed, deepspeed==VERSION "
      "(a release as MAJOR.MINOR.PATCH, e.g. deepspeed==0.18.6) or fsdp2; found \"" +
      text + "\"");
}

std::string deepspeed_release_home(const std::string& release) {
  return trainrepro_cache_directory() + "/deepspeed-" + release;
}

DeepSpeedPython managed_deepspeed_python(const std::string& release) {
  const std::string home = deepspeed_release_home(release);
  if (!std::filesystem::exists(home + "/" + kStamp)) {
    if (offline()) {
      throw DeepSpeedPythonError("--engine deepspeed==" + release + ": not installed in " + home +
                                 ", and TRAINREPRO_OFFLINE=1 forbids installing it");
    }
    install_release(release, home);
  }
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
  DeepSpeedPython python = probe_deepspeed_python(command, "deepspeed==" + release + " in " + home);
  if (python.versions.deepspeed != release) {
    throw DeepSpeedPythonError("--engine deepspeed==" + release + ": " + home +
                               " holds deepspeed " + python.versions.deepspeed +
                               "; remove the folder to reinstall it");
  }
  return python;
}

DeepSpeedPython deepspeed_python_for(const EngineChoice& choice) {
  if (choice.fsdp2) return find_fsdp2_python();
  return choice.release ? managed_deepspeed_python(*choice.release) : find_deepspeed_python();
}

}  // namespace trainrepro
