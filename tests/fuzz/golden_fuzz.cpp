// libFuzzer target: the golden folder as a hostile user or a broken disk leaves it. The first
// byte chooses what the rest of the input replaces in a folder holding one valid golden:
//   even: manifest.json (the golden file stays valid);
//   odd:  the golden's safetensors file, with a manifest that names its true checksum and key,
//         so the input reaches everything load_golden reads after the checksum matches.
// load_golden (which runs check_golden's checks first) must then succeed or throw GoldenError
// naming the problem, never crash or throw anything else (that would end the whole run with
// exit 3). Coverage guides on the golden readers only (golden_coverage.txt): the scenario loader
// runs once, at start, and has its own target.
// Seeds: TRAINREPRO_GOLDEN_FUZZ_SEEDS=<folder> writes one valid input of each kind there.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "harness/golden/golden_key.h"
#include "harness/golden/golden_store.h"
#include "harness/files/sha256.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"

using namespace trainrepro;
namespace fs = std::filesystem;

namespace {

// A small scenario whose golden has two parameters and two steps.
constexpr const char* kScenarioText = R"({
  "name": "golden-fuzz",
  "description": "The scenario whose golden the fuzz target corrupts.",
  "model": {"name": "mlp", "options": {"dims": [3, 2], "activation": "tanh"}, "seed": 1},
  "data": {"name": "classification", "options": {"features": 3, "classes": 2}, "seed": 2},
  "deepspeed": {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
                "optimizer": {"type": "SGD", "params": {"lr": 0.1}}},
  "dtype": "float64",
  "golden": {"train_batch_size": 4, "steps": 2},
  "expect": {"outcome": "pass"}
})";

struct Folder {
  std::string directory;
  Scenario scenario;
  std::string golden_path;
  std::string golden_bytes;    // the valid golden file
  std::string manifest_bytes;  // the valid manifest
  nlohmann::json manifest;     // the same, parsed once
  bool golden_replaced = false;  // the last input replaced the golden file
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

Golden small_golden(const Scenario& scenario) {
  at::manual_seed(0);  // the same bytes in every process, so the kept manifest seed matches
  Golden golden;
  golden.key = golden_key(scenario);
  golden.parameter_names = {"0.weight", "0.bias"};
  golden.initial_parameters = {at::rand({2, 3}, at::kDouble), at::rand({2}, at::kDouble)};
  golden.data.inputs = at::rand({8, 3}, at::kDouble);
  golden.data.targets = at::randint(2, {8}, at::kLong);
  for (int s = 0; s < 2; ++s) {
    GoldenStep step;
    step.loss = 0.5 + s;
    for (const at::Tensor& parameter : golden.initial_parameters) {
      step.gradients.push_back(at::rand_like(parameter));
      step.parameters.push_back(at::rand_like(parameter));
    }
    golden.steps.push_back(std::move(step));
  }
  return golden;
}

Folder& folder() {
  static Folder* made = [] {
    auto* result = new Folder;
    std::string pattern = (fs::temp_directory_path() / "golden-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    result->directory = pattern;
    result->scenario = load_scenario_document(parse_json_text(kScenarioText, "golden-fuzz.json"),
                                              "golden-fuzz.json");
    result->golden_path = write_golden(result->directory, small_golden(result->scenario));
    result->golden_bytes = read_file(result->golden_path);
    result->manifest_bytes = read_file((fs::path(result->directory) / "manifest.json").string());
    result->manifest = nlohmann::json::parse(result->manifest_bytes);
    (void)load_golden(result->directory, result->scenario);  // the valid folder loads
    std::atexit([] { fs::remove_all(folder().directory); });
    return result;
  }();
  return *made;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Folder& made = folder();
  if (const char* seeds = std::getenv("TRAINREPRO_GOLDEN_FUZZ_SEEDS")) {
    fs::create_directories(seeds);
    write_file((fs::path(seeds) / "manifest").string(), std::string(1, '\0') + made.manifest_bytes);
    write_file((fs::path(seeds) / "golden").string(), std::string(1, '\1') + made.golden_bytes);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Folder& made = folder();
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string manifest_path = (fs::path(made.directory) / "manifest.json").string();
  // Only what changes is written: at ~500 executions/s most of the time went to rewriting and
  // re-hashing files that stay the same.
  if (data[0] % 2 == 0) {
    if (made.golden_replaced) write_file(made.golden_path, made.golden_bytes);
    made.golden_replaced = false;
    write_file(manifest_path, rest);
  } else {
    write_file(made.golden_path, rest);
    made.golden_replaced = true;
    nlohmann::json manifest = made.manifest;
    const std::string name = fs::path(made.golden_path).filename().string();
    manifest["goldens"][name]["sha256"] = sha256_hex(rest);
    write_file(manifest_path, manifest.dump(2));
  }
  // load_golden runs every check of check_golden first.
  try {
    (void)load_golden(made.directory, made.scenario);
  } catch (const GoldenError&) {
  }
  return 0;
}
