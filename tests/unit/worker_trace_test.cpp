// The trace a Python engine worker writes (python/trainrepro_worker/deepspeed_engine_worker.py),
// read into the reference engine's Trace; and the bad outputs a crashed or foreign worker leaves
// (absent, truncated, inconsistent), each a WorkerTraceError naming the file and what is wrong.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <functional>
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
               {"recorded", true},
               {"lr", 0.01},
               {"loss_scale", 1.0},
               {"skipped", false}},
              {{"micro_step", 4},
               {"through_engine", false},
               {"gradient_norm", 0.25},
               {"recorded", true},
               {"lr", 0.005},
               {"loss_scale", 1.0},
               {"skipped", false}}}},
            {"counters", {{"micro_steps", 4}, {"global_steps", 1}, {"skipped_steps", 0}}},
            {"memory", memory_json()},
            {"seconds", 1.5}};
  }
  // memory_census.py's samples: a micro-step (no host signals), two boundaries, an evaluation.
  static nlohmann::json memory_json() {
    const auto sample = [](const char* point, int64_t micro, int64_t step, int64_t bytes,
                           int64_t host) {
      return nlohmann::json{{"point", point},
                            {"micro_step", micro},
                            {"optimizer_step", step},
                            {"cpu_tensor_bytes", bytes},
                            {"cpu_tensor_allocations", bytes / 4},
                            {"cpu_tensor_peak_bytes", bytes + 8},
                            {"host_heap_bytes", host},
                            {"resident_bytes", host < 0 ? -1 : 4096}};
    };
    return {{"samples",
             {sample("micro_step", 0, 0, 100, -1), sample("boundary", 1, 1, 104, 5000),
              sample("before_evaluation", 1, 1, 104, 5000),
              sample("after_evaluation", 1, 1, 120, 5100), sample("boundary", 3, 2, 124, 5200)}},
            {"live_at_end", {{100, 0}, {4, 0}, {16, 1}, {4, 1}}},
            {"tensor_bookkeeping_bytes", 320}};
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

// A run that diverged: the worker spells its non-finite numbers as strings (JSON has none), and
// they come back as the numbers they were, for the judge to call the run diverged.
TEST_F(WorkerTraceFiles, NonFiniteNumbersComeBackFromTheirSpelling) {
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  nlohmann::json json = trained_json();
  json["micro_steps"][2]["loss"] = "NaN";
  json["steps"][1]["gradient_norm"] = "Infinity";
  json["steps"][1]["loss_scale"] = "-Infinity";
  write_json(json);
  const Trace trace = read().trace;
  EXPECT_TRUE(std::isnan(trace.micro_steps[2].loss));
  EXPECT_TRUE(std::isnan(trace.steps[1].loss));
  EXPECT_EQ(trace.steps[1].gradient_norm, std::numeric_limits<double>::infinity());
  EXPECT_EQ(trace.steps[1].loss_scale, -std::numeric_limits<double>::infinity());
  json["steps"][0]["lr"] = "fast";
  write_json(json);
  EXPECT_NE(error_of_read().find("trace.json:/steps/0/lr: expected a number (or \"NaN\", "
                                 "\"Infinity\", \"-Infinity\"), found \"fast\""),
            std::string::npos)
      << error_of_read();
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
  EXPECT_NE(error_of_read().find("format version 2"), std::string::npos) << error_of_read();
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
  EXPECT_NE(error_of_read().find("4 tensors where 2 recorded steps of 2 parameters"),
            std::string::npos)
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

TEST_F(WorkerTraceFiles, StepsAfterTheRecordedOnesCarryNoTensors) {
  nlohmann::json json = trained_json();
  json["steps"][1]["recorded"] = false;
  write_safetensors(prefix_ + ".safetensors", trained_tensors(/*steps=*/1));
  write_json(json);
  const WorkerTrace read_back = read();
  ASSERT_EQ(read_back.trace.steps.size(), 2u);
  EXPECT_EQ(read_back.trace.steps[0].gradients.size(), 2u);
  EXPECT_TRUE(read_back.trace.steps[1].gradients.empty());
  EXPECT_TRUE(read_back.trace.steps[1].parameters.empty());
  EXPECT_DOUBLE_EQ(read_back.trace.steps[1].gradient_norm, 0.25);
}

TEST_F(WorkerTraceFiles, RecordedStepAfterAnUnrecordedOneIsAnError) {
  nlohmann::json json = trained_json();
  json["steps"][0]["recorded"] = false;
  write_safetensors(prefix_ + ".safetensors", trained_tensors(/*steps=*/1));
  write_json(json);
  EXPECT_NE(error_of_read().find("trace.json:/steps/1/recorded: true after an unrecorded step"),
            std::string::npos)
      << error_of_read();
}

TEST_F(WorkerTraceFiles, MemoryBecomesTheReferenceProbesSamples) {
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  write_json(trained_json());
  const Trace trace = read().trace;
  ASSERT_EQ(trace.memory.size(), 5u);
  EXPECT_EQ(trace.memory[0].point, SamplePoint::micro_step);
  EXPECT_EQ(trace.memory[0].host_heap_bytes, -1);
  EXPECT_EQ(trace.memory[1].point, SamplePoint::boundary);
  EXPECT_EQ(trace.memory[1].optimizer_step, 1);
  EXPECT_EQ(trace.memory[1].cpu_tensor_bytes, 104);
  EXPECT_EQ(trace.memory[1].cpu_tensor_allocations, 26);
  EXPECT_EQ(trace.memory[1].cpu_tensor_peak_bytes, 112);
  EXPECT_EQ(trace.memory[1].host_heap_bytes, 5000);
  EXPECT_EQ(trace.memory[1].resident_bytes, 4096);
  EXPECT_EQ(trace.memory[2].point, SamplePoint::before_evaluation);
  EXPECT_EQ(trace.memory[3].point, SamplePoint::after_evaluation);
  ASSERT_EQ(trace.live_at_end.size(), 4u);
  EXPECT_EQ(trace.live_at_end[2].bytes, 16);
  EXPECT_EQ(trace.live_at_end[2].birth_step, 1);
  EXPECT_EQ(trace.tensor_bookkeeping_bytes, 320);
  EXPECT_TRUE(trace.memory_not_measured.empty());
}

// Each bad memory field, and the start of the error it must give.
TEST_F(WorkerTraceFiles, BadMemoryFieldsNameTheirPlace) {
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& m) { m.erase("samples"); }, "trace.json:/memory/samples: missing"},
      {[](nlohmann::json& m) { m["samples"] = "none"; },
       "trace.json:/memory/samples: expected an array"},
      {[](nlohmann::json& m) { m["samples"][1].erase("host_heap_bytes"); },
       "trace.json:/memory/samples/1/host_heap_bytes: missing"},
      {[](nlohmann::json& m) { m["samples"][1]["cpu_tensor_bytes"] = "104"; },
       "trace.json:/memory/samples/1/cpu_tensor_bytes: expected an integer, found \"104\""},
      {[](nlohmann::json& m) { m["samples"][1]["cpu_tensor_bytes"] = 104.5; },
       "trace.json:/memory/samples/1/cpu_tensor_bytes: expected an integer"},
      {[](nlohmann::json& m) { m["samples"][1]["cpu_tensor_bytes"] = -4; },
       "trace.json:/memory/samples/1/cpu_tensor_bytes: -4 is below 0"},
      {[](nlohmann::json& m) { m["samples"][1]["host_heap_bytes"] = -1; },
       "trace.json:/memory/samples/1/host_heap_bytes: -1 is below 0"},
      {[](nlohmann::json& m) { m["samples"][1]["point"] = "step"; },
       "trace.json:/memory/samples/1/point: \"step\" is none of"},
      {[](nlohmann::json& m) { m["samples"][4]["optimizer_step"] = 0; },
       "trace.json:/memory/samples/4/optimizer_step: 0 is below 1"},
      {[](nlohmann::json& m) { m["samples"][4]["optimizer_step"] = 3; },
       "trace.json:/memory/samples/4/optimizer_step: 3 is beyond the 2 optimizer steps"},
      {[](nlohmann::json& m) { m["live_at_end"][1] = {4}; },
       "trace.json:/memory/live_at_end/1: expected [bytes, birth_step] as integers"},
      {[](nlohmann::json& m) {
         m["live_at_end"][1] = {4, 9};
       },
       "trace.json:/memory/live_at_end/1: [4,9] is out of range"},
      {[](nlohmann::json& m) { m.erase("tensor_bookkeeping_bytes"); },
       "trace.json:/memory/tensor_bookkeeping_bytes: missing"},
  };
  for (const auto& [spoil, expected] : cases) {
    nlohmann::json json = trained_json();
    spoil(json["memory"]);
    write_json(json);
    const std::string error = error_of_read();
    EXPECT_NE(error.find(expected), std::string::npos)
        << "expected " << expected << "\n  got " << error;
  }
}

TEST_F(WorkerTraceFiles, AbsentMemoryIsAnError) {
  nlohmann::json json = trained_json();
  json.erase("memory");
  write_safetensors(prefix_ + ".safetensors", trained_tensors());
  write_json(json);
  EXPECT_NE(error_of_read().find("trace.json:/memory: missing: the worker measured no memory"),
            std::string::npos)
      << error_of_read();
}

}  // namespace
}  // namespace trainrepro
