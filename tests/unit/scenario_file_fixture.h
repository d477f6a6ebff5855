// Writes scenario text to a temporary file for loading tests, and removes it afterwards.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace trainrepro {

class ScenarioFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ =
        std::filesystem::temp_directory_path() /
        ("trainrepro-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (directory_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // A valid scenario that individual tests break in one place.
  static nlohmann::json valid_scenario() {
    return nlohmann::json::parse(R"({
      "name": "valid",
      "description": "A valid scenario.",
      "model": {"name": "mlp", "options": {"dims": [16, 64, 4]}, "seed": 1},
      "data": {"name": "classification", "options": {"features": 16, "classes": 4}, "seed": 2},
      "deepspeed": {
        "train_batch_size": 32,
        "train_micro_batch_size_per_gpu": 8,
        "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}
      },
      "golden": {"train_batch_size": 32},
      "expect": {"outcome": "pass"}
    })");
  }

  std::filesystem::path directory_;
};

}  // namespace trainrepro
