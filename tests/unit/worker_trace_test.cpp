// The trace a Python engine worker writes (python/trainrepro_worker/deepspeed_engine_worker.py),
// read into the reference engine's Trace; and the bad outputs a crashed or foreign worker leaves
// (absent, truncated, inconsistent), each a WorkerTraceError naming the file and what is wrong.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/files/safetensors.h"
#include "harness/worker/worker_trace.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

class WorkerTraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("trainrepro-worker-trace-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
    prefix_ = (folder_ / "trace").string();
  }
  void TearDown() override { fs::remove_all(folder_); }

  // Two steps of a 2x3 weight and a bias, as the worker writes them (float32).
  nlohmann::json trained_json() const {
    return {{"format", kWorkerTraceFormat},
            {"format_version", kWorkerTraceFormatVersion},
            {"status", "trained"},
            {"versions", {{"deepspeed", "0.19.8"}, {"torch", "2.11.0"}, {"python", "3.11.7"}}},
            {"parameter_names", names_},
            {"micro_steps",
             {{{"loss", 1.0}, {"items", 4}},
              {{"loss", 3.0}, {"items", 4}},
              {{"loss", 2.0}, {"items", 2}},
              {{"loss", 4.0}, {"items", 6}}}},
            {"steps",
             {{{"micro_step", 2},
               {"through_engine", true},
               {"gradient_norm", 0.5},
               {"lr", 0.01},
               {"loss_scale", 1.0},
               {"skipped", false}},
              {{"micro_step", 4},
               {"through_engine", false},
               {"gradient_norm", 0.25},
               {"lr", 0.005},
               {"loss_scale", 1.0},
               {"skipped", false}}}},
            {"counters", {{"micro_steps", 4}, {"global_steps", 1}, {"skipped_steps", 0}}},
            {"seconds", 1.5}};
  }
  std::vector<std::pair<std::string, at::Tensor>> trained_tensors(int64_t steps = 2) const {
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (int64_t i = 0; i < steps; ++i) {
      const std::string step = "step" + std::to_string(i) + "/";
      tensors.emplace_back(step + "grad/w", at::full({2, 3}, 0.5 * (i + 1), at::kFloat));
      tensors.emplace_back(step + "param/w", at::full({2, 3}, -1.0 * (i + 1), at::kFloat));
      tensors.emplace_back(step + "grad/b", at::full({3}, 0.25, at::kFloat));
      tensors.emplace_back(step + "param/b", at::full({3}, 2.0, at::kBFloat16));
    }
    return tensors;
  }
  void write_json(const nlohmann::json& json) const {
    std::ofstream(prefix_ + ".json") << json.dump();
  }
  void write_text(const std::string& path, const std::string& text) const {
    std::ofstream(path, std::ios::binary) << text;
  }
  WorkerTrace read() const { return read_worker_trace(prefix_, names_, initial_); }
  std::string error_of_read() const {
    try {
      read();
    } catch (const WorkerTraceError& error) {
      return error.what();
    }
    return "(no error)";
  }

  fs::path folder_;
  std::string prefix_;
  std::vector<std::string> names_ = {"w", "b"};
  std::vector<at::Tensor> initial_ = {at::zeros({2, 3}, at::kDouble), at::zeros({3}, at::kDouble)};
};

TEST_F(WorkerTraceFiles, TrainedTraceBecomesTheReferenceEnginesTrace) {
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  write_json(trained_json());
  const WorkerTrace read_back = read();
  ASSERT_EQ(read_back.status, WorkerStatus::trained);
  EXPECT_EQ(engine_description(read_back.versions),
            "deepspeed 0.19.8 (torch 2.11.0, python 3.11.7)");
  const Trace& trace = read_back.trace;
  EXPECT_EQ(trace.parameter_names, names_);
  EXPECT_EQ(trace.parameter_numel, 9);
  ASSERT_EQ(trace.micro_steps.size(), 4u);
  EXPECT_EQ(trace.micro_steps[3].items, 6);
  ASSERT_EQ(trace.steps.size(), 2u);
  // Each step's loss is the items-weighted mean since the previous step: (1*4+3*4)/8, (2*2+4*6)/8.
  EXPECT_DOUBLE_EQ(trace.steps[0].loss, 2.0);
  EXPECT_DOUBLE_EQ(trace.steps[1].loss, 3.5);
  EXPECT_EQ(trace.steps[1].micro_step, 4);
  EXPECT_DOUBLE_EQ(trace.steps[1].lr, 0.005);
  EXPECT_FALSE(trace.steps[1].through_engine);
  EXPECT_EQ(trace.counters.bypass_steps, 1);
  EXPECT_EQ(trace.counters.global_steps, 1);
  ASSERT_EQ(trace.steps[1].gradients.size(), 2u);
  EXPECT_EQ(trace.steps[1].gradients[0].scalar_type(), at::kDouble);
  EXPECT_DOUBLE_EQ(trace.steps[1].gradients[0][1][2].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(trace.steps[1].parameters[1][0].item<double>(), 2.0);  // from bf16
  EXPECT_DOUBLE_EQ(trace.seconds, 1.5);
}

TEST_F(WorkerTraceFiles, SkippedAndRefusedCarryDeepSpeedsWords) {
  nlohmann::json json = {{"format", kWorkerTraceFormat},
                         {"format_version", kWorkerTraceFormatVersion},
                         {"status", "skipped"},
                         {"reason", "Type fp16 is not supported on your device."}};
  write_json(json);
  EXPECT_EQ(read().status, WorkerStatus::skipped);
  EXPECT_EQ(read().reason, "Type fp16 is not supported on your device.");
  json["status"] = "refused";
  write_json(json);
  EXPECT_EQ(read().status, WorkerStatus::refused);
}

TEST_F(WorkerTraceFiles, AbsentTraceSaysTheWorkerWroteNone) {
  EXPECT_NE(error_of_read().find("trace.json: missing: the worker ended without writing"),
            std::string::npos)
      << error_of_read();
}

TEST_F(WorkerTraceFiles, TruncatedJsonIsAnError) {
  const std::string text = trained_json().dump();
  write_text(prefix_ + ".json", text.substr(0, text.size() / 2));
  EXPECT_NE(error_of_read().find("not a JSON object (truncated"), std::string::npos)
      << error_of_read();
}

TEST_F(WorkerTraceFiles, ForeignFormatIsAnError) {
  nlohmann::json json = trained_json();
  json["format_version"] = 99;
  write_json(json);
  EXPECT_NE(error_of_read().find("format version 1"), std::string::npos) << error_of_read();
}

TEST_F(WorkerTraceFiles, MissingKeyNamesItsPlace) {
  nlohmann::json json = trained_json();
  json["steps"][1].erase("lr");
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  write_json(json);
  const std::string error = error_of_read();
  EXPECT_NE(error.find("trace.json"), std::string::npos) << error;
  EXPECT_NE(error.find("lr"), std::string::npos) << error;
}

TEST_F(WorkerTraceFiles, AbsentTensorsAreAnError) {
  write_json(trained_json());
  EXPECT_NE(error_of_read().find("trace.safetensors"), std::string::npos) << error_of_read();
}

TEST_F(WorkerTraceFiles, TruncatedTensorsAreAnError) {
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  const std::string bytes = encode_safetensors(trained_tensors());
  write_text(prefix_ + ".safetensors", bytes.substr(0, bytes.size() - 7));
  write_json(trained_json());
  EXPECT_NE(error_of_read().find("trace.safetensors"), std::string::npos) << error_of_read();
}

TEST_F(WorkerTraceFiles, TooFewTensorsForTheStepsAreAnError) {
  write_safetensors(prefix_ + ".safetensors", trained_tensors(/*steps=*/1));
  write_json(trained_json());
  EXPECT_NE(error_of_read().find("4 tensors where 2 steps of 2 parameters"), std::string::npos)
      << error_of_read();
}

TEST_F(WorkerTraceFiles, WrongShapeIsAnError) {
  auto tensors = trained_tensors();
  tensors[0].second = at::zeros({3, 2}, at::kFloat);
  write_safetensors(prefix_ + ".safetensors", tensors);
  write_json(trained_json());
  EXPECT_NE(error_of_read().find("step0/grad/w has shape [3, 2], the parameter has [2, 3]"),
            std::string::npos)
      << error_of_read();
}

TEST_F(WorkerTraceFiles, OtherParametersThanTheGoldensAreAnError) {
  nlohmann::json json = trained_json();
  json["parameter_names"] = {"b", "w"};
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  write_json(json);
  EXPECT_NE(error_of_read().find("not the golden's parameters"), std::string::npos)
      << error_of_read();
}

TEST_F(WorkerTraceFiles, UnknownStatusIsAnError) {
  nlohmann::json json = trained_json();
  json["status"] = "finished";
  write_json(json);
  EXPECT_NE(error_of_read().find("\"finished\" is none of"), std::string::npos) << error_of_read();
}

}  // namespace
}  // namespace trainrepro
