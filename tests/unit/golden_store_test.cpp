// Goldens on disk: written once, read back identically, and every way they can go wrong —
// missing, stale (the scenario changed), corrupt — is an error naming the regenerate command.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <thread>
#include <vector>

#include <ATen/ATen.h>

#include "harness/golden/golden_run.h"
#include "harness/golden/golden_store.h"
#include "harness/files/safetensors.h"
#include "harness/files/sha256.h"
#include "harness/scenario/load_scenario.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class GoldenStore : public ScenarioFileTest {
 protected:
  void SetUp() override {
    ScenarioFileTest::SetUp();
    nlohmann::json scenario = valid_scenario();
    scenario["golden"]["steps"] = 2;
    scenario_ = load_scenario(write("scenario.json", scenario.dump()));
    golden_dir_ = (directory_ / "golden").string();
  }
  std::string error_loading(const Scenario& scenario) {
    try {
      load_golden(golden_dir_, scenario);
    } catch (const GoldenError& error) {
      return error.what();
    }
    return "";
  }
  Scenario scenario_;
  std::string golden_dir_;
};

TEST_F(GoldenStore, WrittenGoldenReadsBackIdentically) {
  const Golden computed = compute_golden(scenario_);
  write_golden(golden_dir_, computed);
  const Golden loaded = load_golden(golden_dir_, scenario_);
  ASSERT_EQ(loaded.parameter_names, computed.parameter_names);
  ASSERT_EQ(loaded.steps.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(loaded.steps[s].loss, computed.steps[s].loss);
    for (size_t i = 0; i < computed.parameter_names.size(); ++i) {
      EXPECT_TRUE(at::equal(loaded.steps[s].gradients[i], computed.steps[s].gradients[i]));
      EXPECT_TRUE(at::equal(loaded.steps[s].parameters[i], computed.steps[s].parameters[i]));
    }
  }
  EXPECT_EQ(check_golden(golden_dir_, scenario_), "");
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir_)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

TEST_F(GoldenStore, MissingGoldenNamesTheRegenerateCommand) {
  const std::string error = error_loading(scenario_);
  EXPECT_NE(error.find("no golden for this scenario's key"), std::string::npos) << error;
  EXPECT_NE(error.find("regenerate it with: build/trainrepro golden --update " + scenario_.file),
            std::string::npos)
      << error;
}

TEST_F(GoldenStore, ChangedScenarioMakesTheGoldenStale) {
  write_golden(golden_dir_, compute_golden(scenario_));
  Scenario changed = scenario_;
  changed.deepspeed.optimizer->lr *= 2.0;
  EXPECT_NE(error_loading(changed).find("no golden for this scenario's key"), std::string::npos);
}

TEST_F(GoldenStore, CorruptFileFailsItsChecksum) {
  const std::string path = write_golden(golden_dir_, compute_golden(scenario_));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put('\x7f');
  }
  const std::string error = error_loading(scenario_);
  EXPECT_NE(error.find(path + ": checksum mismatch"), std::string::npos) << error;
  EXPECT_NE(error.find("golden --update"), std::string::npos) << error;
}

// A hand-edited manifest entry (sha256 a number) or a golden path that is a folder once ended
// the whole run with exit 3; each is now an error for that golden alone.
TEST_F(GoldenStore, BadManifestEntryOrFolderIsThisGoldensErrorAlone) {
  const std::string path = write_golden(golden_dir_, compute_golden(scenario_));
  const std::string manifest = golden_dir_ + "/manifest.json";
  nlohmann::json entries;
  std::ifstream(manifest) >> entries;
  const std::string name = std::filesystem::path(path).filename().string();
  entries["goldens"][name]["sha256"] = 42;
  std::ofstream(manifest) << entries.dump();
  EXPECT_EQ(error_loading(scenario_).rfind(manifest + ":/goldens/" + name +
                                               ": expected an object with a \"sha256\" string, "
                                               "found the number 42",
                                           0),
            0u)
      << error_loading(scenario_);

  write_golden(golden_dir_, compute_golden(scenario_));  // a good manifest again
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  EXPECT_EQ(error_loading(scenario_).rfind(path + ": listed in the manifest but not a regular file",
                                           0),
            0u)
      << error_loading(scenario_);
}

// golden_fuzz found it: a manifest whose "format" is a number threw nlohmann's type_error (exit 3
// for the whole run) instead of saying the manifest is not ours.
TEST_F(GoldenStore, ManifestWithANumberForItsFormatIsAGoldenError) {
  write_golden(golden_dir_, compute_golden(scenario_));
  const std::string manifest = golden_dir_ + "/manifest.json";
  std::ofstream(manifest) << "{\n  \"format\":       6\n}\n";
  EXPECT_EQ(error_loading(scenario_).rfind(manifest + ": not a trainrepro golden manifest", 0), 0u)
      << error_loading(scenario_);
  EXPECT_EQ(check_golden(golden_dir_, scenario_).rfind(manifest + ": not a trainrepro golden", 0),
            0u);
}

// Concurrent `golden --update` runs on one folder once lost manifest entries (3 of 5 rounds
// left 16 goldens but 14-15 entries). Four writers at once, four goldens each: every one listed.
TEST_F(GoldenStore, ConcurrentUpdatesKeepEveryManifestEntry) {
  std::vector<Golden> goldens;
  for (int seed = 0; seed < 16; ++seed) {
    nlohmann::json scenario = valid_scenario();
    scenario["name"] = "seed-" + std::to_string(seed);
    scenario["model"]["seed"] = 100 + seed;
    scenario["golden"]["steps"] = 1;
    goldens.push_back(compute_golden(load_scenario(
        write("seed-" + std::to_string(seed) + ".json", scenario.dump()))));
  }
  std::vector<std::thread> writers;
  for (int writer = 0; writer < 4; ++writer) {
    writers.emplace_back([&, writer] {
      for (int i = writer; i < 16; i += 4) write_golden(golden_dir_, goldens[i]);
    });
  }
  for (std::thread& writer : writers) writer.join();
  nlohmann::json manifest;
  std::ifstream(golden_dir_ + "/manifest.json") >> manifest;
  EXPECT_EQ(manifest["goldens"].size(), 16u);
}

// Killed after the manifest named the new golden but before the rename, the new golden (still
// <name>.next) is the one read; a .next the manifest does not name is ignored.
TEST_F(GoldenStore, UpdateKilledBeforeTheRenameReadsTheManifestedFile) {
  const std::string path = write_golden(golden_dir_, compute_golden(scenario_));
  std::filesystem::copy_file(path, path + ".next");
  std::ofstream(path, std::ios::trunc) << "the old golden, whatever it was";
  EXPECT_EQ(check_golden(golden_dir_, scenario_), "");
  EXPECT_EQ(load_golden(golden_dir_, scenario_).steps.size(), 2u);

  write_golden(golden_dir_, compute_golden(scenario_));  // finishes cleanly
  EXPECT_FALSE(std::filesystem::exists(path + ".next"));
  std::ofstream(path + ".next") << "an unfinished write";
  std::ofstream(path + ".tmp.Ab12Cd") << "a temporary of a killed write";
  EXPECT_EQ(check_golden(golden_dir_, scenario_), "");
  EXPECT_EQ(load_golden(golden_dir_, scenario_).steps.size(), 2u);

  // The next update, holding the lock, clears what killed writes left.
  nlohmann::json other = valid_scenario();
  other["model"]["seed"] = 77;
  other["golden"]["steps"] = 1;
  write_golden(golden_dir_, compute_golden(load_scenario(write("other.json", other.dump()))));
  EXPECT_FALSE(std::filesystem::exists(path + ".next"));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp.Ab12Cd"));
  EXPECT_EQ(check_golden(golden_dir_, scenario_), "");
}

// The loaded golden's data knew no sample count, so the staleness check compared 0 samples and
// could never see a changed data generator.
TEST_F(GoldenStore, LoadedGoldenCountsItsSamples) {
  const Golden computed = compute_golden(scenario_);
  write_golden(golden_dir_, computed);
  const Golden loaded = load_golden(golden_dir_, scenario_);
  EXPECT_GT(computed.data.samples, 0);
  EXPECT_EQ(loaded.data.samples, computed.data.samples);
  EXPECT_EQ(loaded.data.items, computed.data.items);
}

// Found by tests/fuzz/golden_fuzz.cpp: a golden whose checksum matches its manifest entry (a
// file rewritten by hand or another tool) but whose content is wrong ended the run with exit 3
// (a JSON parse exception, or a tensor of the wrong dtype or size reaching the comparisons).
// Each is now this golden's error, naming the regenerate command.
TEST_F(GoldenStore, WellChecksummedButMalformedGoldenIsAnError) {
  const auto rewrite = [&](const std::function<void(SafetensorsFile&)>& edit) {
    const std::string path = write_golden(golden_dir_, compute_golden(scenario_));
    SafetensorsFile file = read_safetensors(path);
    edit(file);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const std::string& name : file.names) tensors.emplace_back(name, file.tensors.at(name));
    write_safetensors(path, tensors, file.metadata);
    const std::string manifest = golden_dir_ + "/manifest.json";
    nlohmann::json entries;
    std::ifstream(manifest) >> entries;
    entries["goldens"][std::filesystem::path(path).filename().string()]["sha256"] =
        sha256_of_file(path);
    std::ofstream(manifest) << entries.dump();
    return path;
  };
  std::string path = rewrite([](SafetensorsFile& file) { file.metadata["parameters"] = "[1,"; });
  EXPECT_EQ(error_loading(scenario_).rfind(path + ": the metadata \"parameters\" is not a list", 0),
            0u)
      << error_loading(scenario_);
  path = rewrite([](SafetensorsFile& file) {
    file.tensors["step0/loss"] = at::zeros({2}, at::kDouble);
  });
  EXPECT_EQ(error_loading(scenario_).rfind(path + ": tensor \"step0/loss\" holds 2 values", 0), 0u)
      << error_loading(scenario_);
  path = rewrite([](SafetensorsFile& file) {
    at::Tensor& inputs = file.tensors["data/inputs"];
    inputs = inputs.to(at::kFloat);
  });
  EXPECT_EQ(error_loading(scenario_).rfind(path + ": tensor \"data/inputs\" has dtype Float", 0),
            0u)
      << error_loading(scenario_);
  EXPECT_NE(error_loading(scenario_).find("golden --update"), std::string::npos);
}

TEST_F(GoldenStore, ConfigErrorScenariosNeedNoGolden) {
  Scenario config_error = scenario_;
  config_error.expect.outcome = ExpectedOutcome::config_error;
  EXPECT_FALSE(needs_golden(config_error));
  EXPECT_TRUE(needs_golden(scenario_));
}

}  // namespace
}  // namespace trainrepro
