#include "harness/golden/golden_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <initializer_list>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <ATen/ATen.h>

#include "harness/engine/runtime_info.h"
#include "harness/files/atomic_write.h"
#include "harness/golden/golden_key.h"
#include "harness/files/safetensors.h"
#include "harness/files/sha256.h"
#include "harness/json/json_fields.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "trainrepro-golden";
constexpr const char* kManifestFormat = "trainrepro-golden-manifest";

std::string manifest_path(const std::string& directory) {
  return (fs::path(directory) / "manifest.json").string();
}

nlohmann::json read_manifest(const std::string& directory) {
  const std::string path = manifest_path(directory);
  if (!fs::exists(path)) {
    return {{"format", kManifestFormat},
            {"format_version", kGoldenFormatVersion},
            {"goldens", nlohmann::json::object()}};
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json manifest = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object() ||
      // value("format", "") would throw when "format" is not a string (found by golden_fuzz).
      manifest.value("format", nlohmann::json()) != kManifestFormat ||
      !manifest.contains("goldens") ||
      !manifest["goldens"].is_object()) {
    throw GoldenError(path +
                      ": not a trainrepro golden manifest (corrupt?); regenerate every "
                      "golden with: trainrepro golden --update scenarios");
  }
  return manifest;
}

std::string step_prefix(size_t step) { return "step" + std::to_string(step) + "/"; }

// Several `golden --update` runs on one folder each read, extend and rewrite the manifest: an
// exclusive lock on <folder>/.lock makes each read-modify-write whole (without it, entries were
// lost while both runs exited 0).
class GoldenFolderLock {
 public:
  explicit GoldenFolderLock(const std::string& directory) {
    std::error_code error;
    fs::create_directories(directory, error);
    const std::string path = (fs::path(directory) / ".lock").string();
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) {
      throw GoldenError(path + ": cannot open the golden folder's lock: " + std::strerror(errno));
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        ::close(fd_);
        throw GoldenError(path + ": cannot lock the golden folder: " + std::strerror(errno));
      }
    }
  }
  ~GoldenFolderLock() { ::close(fd_); }  // closing releases the lock
  GoldenFolderLock(const GoldenFolderLock&) = delete;
  GoldenFolderLock& operator=(const GoldenFolderLock&) = delete;

 private:
  int fd_ = -1;
};

// An update writes <name>.next, then the manifest naming its checksum, then renames it over
// <name>. Killed between the last two, the manifest already describes <name>.next: that file is
// the golden until the next update finishes the rename. A .next the manifest does not describe
// is an unfinished write, and absent.
std::string next_path_of(const std::string& path) { return path + ".next"; }

// Under the folder's lock no other write is under way, so what a killed update left is finished
// here: a .next the manifest names is renamed into place, any other .next and every temporary
// (<name>.tmp.XXXXXX) is removed.
void finish_or_remove_unfinished_writes(const std::string& directory,
                                        const nlohmann::json& manifest) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string file = entry.path().filename().string();
    const bool next = file.size() > 5 && file.compare(file.size() - 5, 5, ".next") == 0;
    if (!next && file.find(".tmp.") == std::string::npos) continue;
    if (next && entry.is_regular_file(error)) {
      const std::string name = file.substr(0, file.size() - 5);
      const auto& goldens = manifest["goldens"];
      if (goldens.contains(name) && goldens[name].is_object() &&
          goldens[name].value("sha256", nlohmann::json()) ==
              nlohmann::json(sha256_of_file(entry.path().string()))) {
        fs::rename(entry.path(), entry.path().parent_path() / name, error);
        continue;
      }
    }
    fs::remove(entry.path(), error);
  }
}

// The file whose checksum the manifest names: the golden, or its finished-but-unrenamed .next.
std::string manifested_file(const std::string& path, const std::string& expected_sha256) {
  const std::string next = next_path_of(path);
  if (fs::is_regular_file(next) && sha256_of_file(next) == expected_sha256) return next;
  return path;
}

// The "parameters" metadata: the model's parameter names in order, a JSON array of distinct
// strings (a file edited by hand must be an error for this golden, never an exception).
std::vector<std::string> read_parameter_names(const std::string& text, const std::string& path,
                                              const std::string& regenerate) {
  const nlohmann::json names = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> result;
  if (names.is_array()) {
    for (const nlohmann::json& name : names) {
      if (!name.is_string()) break;
      result.push_back(name.get<std::string>());
    }
  }
  std::vector<std::string> sorted = result;
  std::sort(sorted.begin(), sorted.end());
  if (result.empty() || result.size() != names.size() ||
      std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw GoldenError(path +
                      ": the metadata \"parameters\" is not a list of distinct parameter "
                      "names" + regenerate);
  }
  return result;
}

}  // namespace

bool needs_golden(const Scenario& scenario) {
  // A config error, or an optimizer DeepSpeed refuses by name, stops before any training; a
  // measure-only scenario is never judged.
  return !scenario.measure_only && scenario.expect.outcome != ExpectedOutcome::config_error &&
         scenario.deepspeed.optimizer.has_value();
}

std::string regenerate_command(const Scenario& scenario) {
  return "build/trainrepro golden --update " + scenario.file;
}

std::string write_golden(const std::string& directory, const Golden& golden) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (size_t i = 0; i < golden.parameter_names.size(); ++i) {
    tensors.emplace_back("init/" + golden.parameter_names[i], golden.initial_parameters[i]);
  }
  for (size_t i = 0; i < golden.frozen_parameter_names.size(); ++i) {
    tensors.emplace_back("frozen/" + golden.frozen_parameter_names[i],
                         golden.frozen_parameters[i]);
  }
  tensors.emplace_back("data/inputs", golden.data.inputs);
  tensors.emplace_back("data/targets", golden.data.targets);
  if (golden.data.mask.defined()) tensors.emplace_back("data/mask", golden.data.mask);
  for (size_t s = 0; s < golden.steps.size(); ++s) {
    const GoldenStep& step = golden.steps[s];
    tensors.emplace_back(step_prefix(s) + "loss", at::scalar_tensor(step.loss, at::kDouble));
    for (size_t i = 0; i < golden.parameter_names.size(); ++i) {
      tensors.emplace_back(step_prefix(s) + "grad/" + golden.parameter_names[i], step.gradients[i]);
      tensors.emplace_back(step_prefix(s) + "param/" + golden.parameter_names[i],
                           step.parameters[i]);
    }
  }
  const std::map<std::string, std::string> metadata = {
      {"format", kFormat},
      {"format_version", std::to_string(kGoldenFormatVersion)},
      {"key", golden.key.dump()},
      {"parameters", nlohmann::json(golden.parameter_names).dump()},
      {"torch_version", torch_version()},
      {"dtype", "float64"},
      {"generated_by", "trainrepro golden --update"},
  };

  const std::string name = golden_file_name(golden.key);
  const std::string path = (fs::path(directory) / name).string();
  const std::string next = next_path_of(path);
  const GoldenFolderLock lock(directory);
  // Under the lock the manifest cannot change: read once, for the clean-up and the update.
  nlohmann::json manifest = read_manifest(directory);
  finish_or_remove_unfinished_writes(directory, manifest);
  write_safetensors(next, tensors, metadata);

  manifest["goldens"][name] = {{"key", golden.key},
                               {"sha256", sha256_of_file(next)},
                               {"bytes", static_cast<int64_t>(fs::file_size(next))},
                               {"torch_version", torch_version()}};
  write_file_atomically(manifest_path(directory), manifest.dump(2) + "\n");
  if (::rename(next.c_str(), path.c_str()) != 0) {
    throw GoldenError(path + ": cannot move the new golden into place: " + std::strerror(errno));
  }
  return path;
}

namespace {

// What check_golden finds, kept for load_golden so that the key, the manifest and the checksum
// (a pass over a golden of many megabytes) are each worked out once per load.
struct GoldenInspection {
  std::string problem;  // "" when the golden is usable
  nlohmann::json key;
  std::string file;     // the manifested file: the golden or its finished .next
  std::string regenerate;
};

GoldenInspection inspect_golden(const std::string& directory, const Scenario& scenario) {
  GoldenInspection found;
  found.key = golden_key(scenario);
  const std::string name = golden_file_name(found.key);
  const std::string path = (fs::path(directory) / name).string();
  found.regenerate = "; regenerate it with: " + regenerate_command(scenario);
  const std::string& regenerate = found.regenerate;
  auto fail = [&](std::string problem) {
    found.problem = std::move(problem);
    return found;
  };
  nlohmann::json manifest;
  try {
    manifest = read_manifest(directory);
  } catch (const GoldenError& error) {
    return fail(error.what());
  }
  const auto& goldens = manifest["goldens"];
  if (!goldens.contains(name)) {
    return fail(path +
                ": no golden for this scenario's key (new scenario, or its model, data, "
                "optimizer, golden batch or steps changed)" +
                regenerate);
  }
  // One bad entry is this golden's problem alone, never the whole run's.
  const nlohmann::json& entry = goldens[name];
  const std::string entry_pointer =
      manifest_path(directory) + ":/goldens/" + escape_pointer_token(name);
  if (!entry.is_object() || !entry.contains("sha256") || !entry["sha256"].is_string()) {
    return fail(entry_pointer + ": expected an object with a \"sha256\" string, found " +
                describe_json_value(entry.is_object() && entry.contains("sha256")
                                        ? entry["sha256"]
                                        : entry) +
                " (the manifest was edited by hand?)" + regenerate);
  }
  if (entry.value("key", nlohmann::json()) != found.key) {
    return fail(manifest_path(directory) + ": the entry for " + name +
                " has a different key (stale manifest)" + regenerate);
  }
  const std::string expected = entry["sha256"].get<std::string>();
  found.file = manifested_file(path, expected);
  if (!fs::exists(found.file)) return fail(path + ": listed in the manifest but missing" + regenerate);
  if (!fs::is_regular_file(found.file)) {
    return fail(path + ": listed in the manifest but not a regular file" + regenerate);
  }
  const std::string actual = sha256_of_file(found.file);
  if (actual != expected) {
    return fail(path + ": checksum mismatch (the file is corrupt or was changed by hand): SHA-256 " +
                actual + ", manifest says " + expected + regenerate);
  }
  return found;
}

}  // namespace

std::string check_golden(const std::string& directory, const Scenario& scenario) {
  return inspect_golden(directory, scenario).problem;
}

Golden load_golden(const std::string& directory, const Scenario& scenario) {
  const GoldenInspection found = inspect_golden(directory, scenario);
  if (!found.problem.empty()) throw GoldenError(found.problem);
  const nlohmann::json& key = found.key;
  const std::string& regenerate = found.regenerate;
  const std::string& path = found.file;
  SafetensorsFile file;
  try {
    file = read_safetensors(path);
  } catch (const std::runtime_error& error) {
    throw GoldenError(std::string(error.what()) + regenerate);
  }
  auto meta = [&](const std::string& field) {
    auto it = file.metadata.find(field);
    return it == file.metadata.end() ? std::string() : it->second;
  };
  if (meta("format") != kFormat || meta("format_version") != std::to_string(kGoldenFormatVersion)) {
    throw GoldenError(path + ": format \"" + meta("format") + "\" version \"" +
                      meta("format_version") + "\", expected \"" + kFormat + "\" version " +
                      std::to_string(kGoldenFormatVersion) + regenerate);
  }
  if (meta("key") != key.dump()) {
    throw GoldenError(path + ": the key stored in the file differs from the scenario's" +
                      regenerate);
  }

  Golden golden;
  golden.file = path;
  golden.key = key;
  golden.parameter_names = read_parameter_names(meta("parameters"), path, regenerate);
  // A file whose checksum matches can still be one written by hand or by another tool: every
  // tensor is checked for the dtype and shape the comparisons rely on before it is used.
  auto tensor = [&](const std::string& name, std::initializer_list<at::ScalarType> dtypes) {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end()) {
      throw GoldenError(path + ": tensor \"" + name + "\" is missing" + regenerate);
    }
    if (std::find(dtypes.begin(), dtypes.end(), it->second.scalar_type()) == dtypes.end()) {
      throw GoldenError(path + ": tensor \"" + name + "\" has dtype " +
                        std::string(c10::toString(it->second.scalar_type())) +
                        ", not the golden's" + regenerate);
    }
    return it->second;
  };
  const auto float64 = {at::kDouble};
  for (const std::string& name : golden.parameter_names) {
    golden.initial_parameters.push_back(tensor("init/" + name, float64));
  }
  golden.data.inputs = tensor("data/inputs", {at::kDouble, at::kLong});
  golden.data.targets = tensor("data/targets", {at::kDouble, at::kLong});
  if (file.tensors.count("data/mask")) golden.data.mask = tensor("data/mask", {at::kBool});
  golden.data.samples = golden.data.inputs.dim() > 0 ? golden.data.inputs.size(0) : 0;
  golden.data.items = golden.data.mask.defined() ? golden.data.mask.sum().item<int64_t>()
                                                 : golden.data.samples;
  const auto samples_of = [](const at::Tensor& t) { return t.dim() > 0 ? t.size(0) : -1; };
  if (golden.data.inputs.dim() == 0 || samples_of(golden.data.targets) != golden.data.samples ||
      (golden.data.mask.defined() &&
       !golden.data.mask.sizes().equals(golden.data.targets.sizes()))) {
    throw GoldenError(path + ": the data tensors do not hold the same samples" + regenerate);
  }
  for (int64_t s = 0; s < scenario.golden.steps; ++s) {
    GoldenStep step;
    const at::Tensor loss = tensor(step_prefix(s) + "loss", float64);
    if (loss.numel() != 1) {
      throw GoldenError(path + ": tensor \"" + step_prefix(s) + "loss\" holds " +
                        std::to_string(loss.numel()) + " values, not one" + regenerate);
    }
    step.loss = loss.item<double>();
    for (size_t i = 0; i < golden.parameter_names.size(); ++i) {
      const std::string& name = golden.parameter_names[i];
      step.gradients.push_back(tensor(step_prefix(s) + "grad/" + name, float64));
      step.parameters.push_back(tensor(step_prefix(s) + "param/" + name, float64));
      if (!step.gradients.back().sizes().equals(golden.initial_parameters[i].sizes()) ||
          !step.parameters.back().sizes().equals(golden.initial_parameters[i].sizes())) {
        throw GoldenError(path + ": step " + std::to_string(s) + " tensors of \"" + name +
                          "\" do not have the parameter's shape" + regenerate);
      }
    }
    golden.steps.push_back(std::move(step));
  }
  return golden;
}

}  // namespace trainrepro
