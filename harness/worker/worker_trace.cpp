#include "harness/worker/worker_trace.h"

#include <fstream>
#include <limits>
#include <sstream>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "harness/files/safetensors.h"
#include "harness/worker/worker_memory.h"

namespace trainrepro {
namespace {

std::string tensor_shape_text(const at::Tensor& tensor) {
  std::string text = "[";
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    text += (d > 0 ? ", " : "") + std::to_string(tensor.size(d));
  }
  return text + "]";
}

WorkerStatus worker_status_of(const std::string& spelling, const std::string& path) {
  if (spelling == "trained") return WorkerStatus::trained;
  if (spelling == "skipped") return WorkerStatus::skipped;
  if (spelling == "refused") return WorkerStatus::refused;
  if (spelling == "error") return WorkerStatus::error;
  throw WorkerTraceError(path + ":/status: \"" + spelling +
                         "\" is none of trained, skipped, refused, error");
}

// A number of the trace, which the worker spells "NaN", "Infinity" or "-Infinity" when it is not
// finite (deepspeed_engine_worker.py's json_safe: JSON has no such numbers; a diverged run's
// losses are NaN and must reach the judge as NaN).
double trace_number(const nlohmann::json& value, const std::string& where) {
  if (value.is_number()) return value.get<double>();
  if (value == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (value == "Infinity") return std::numeric_limits<double>::infinity();
  if (value == "-Infinity") return -std::numeric_limits<double>::infinity();
  throw WorkerTraceError(where + ": expected a number (or \"NaN\", \"Infinity\", " +
                         "\"-Infinity\"), found " + value.dump());
}

nlohmann::json read_worker_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw WorkerTraceError(path + ": missing: the worker ended without writing its trace");
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    throw WorkerTraceError(path + ": not a JSON object (truncated or not the worker's trace)");
  }
  if (json.value("format", "") != kWorkerTraceFormat ||
      json.value("format_version", 0) != kWorkerTraceFormatVersion) {
    throw WorkerTraceError(path + ": not a " + std::string(kWorkerTraceFormat) + " of format " +
                           "version " + std::to_string(kWorkerTraceFormatVersion) +
                           " (the worker and this trainrepro differ?)");
  }
  return json;
}

at::Tensor step_tensor(const SafetensorsFile& file, const std::string& path,
                       const std::string& name, const at::Tensor& initial) {
  const auto found = file.tensors.find(name);
  if (found == file.tensors.end()) throw WorkerTraceError(path + ": no tensor " + name);
  if (!found->second.sizes().equals(initial.sizes())) {
    throw WorkerTraceError(path + ": " + name + " has shape " + tensor_shape_text(found->second) +
                           ", the parameter has " + tensor_shape_text(initial));
  }
  return found->second.to(at::kDouble).contiguous();
}

void read_trained(const nlohmann::json& json, const std::string& prefix,
                  const std::vector<std::string>& parameter_names,
                  const std::vector<at::Tensor>& initial_parameters, bool expect_memory,
                  Trace& trace) {
  const std::string json_path = prefix + ".json";
  if (json.at("parameter_names").get<std::vector<std::string>>() != parameter_names) {
    throw WorkerTraceError(json_path + ":/parameter_names: not the golden's parameters");
  }
  trace.parameter_names = parameter_names;
  for (const at::Tensor& parameter : initial_parameters) trace.parameter_numel += parameter.numel();
  const nlohmann::json& micro_steps = json.at("micro_steps");
  for (size_t i = 0; i < micro_steps.size(); ++i) {
    const nlohmann::json& micro = micro_steps[i];
    trace.micro_steps.push_back(
        {trace_number(micro.at("loss"), json_path + ":/micro_steps/" + std::to_string(i) + "/loss"),
         micro.at("items").get<int64_t>()});
  }
  const std::string tensors_path = prefix + ".safetensors";
  SafetensorsFile file;
  try {
    file = read_safetensors(tensors_path);
  } catch (const std::runtime_error& error) {
    throw WorkerTraceError(error.what());
  }
  const nlohmann::json& steps = json.at("steps");
  // The first steps are recorded (the golden's), the rest of the loop's steps are not: the
  // reference engine copies gradients and parameters for the compared steps only.
  size_t recorded_steps = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool recorded = steps[i].at("recorded").get<bool>();
    if (recorded && recorded_steps != i) {
      throw WorkerTraceError(json_path + ":/steps/" + std::to_string(i) + "/recorded: true " +
                             "after an unrecorded step (recorded steps come first)");
    }
    if (recorded) ++recorded_steps;
  }
  if (file.tensors.size() != recorded_steps * parameter_names.size() * 2) {
    throw WorkerTraceError(tensors_path + ": " + std::to_string(file.tensors.size()) +
                           " tensors where " + std::to_string(recorded_steps) +
                           " recorded steps of " + std::to_string(parameter_names.size()) +
                           " parameters need a gradient and a value each");
  }
  int64_t previous_micro_step = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& recorded = steps[i];
    OptimizerStepRecord step;
    step.micro_step = recorded.at("micro_step").get<int64_t>();
    step.through_engine = recorded.at("through_engine").get<bool>();
    const std::string where = json_path + ":/steps/" + std::to_string(i) + "/";
    step.gradient_norm = trace_number(recorded.at("gradient_norm"), where + "gradient_norm");
    step.lr = trace_number(recorded.at("lr"), where + "lr");
    step.loss_scale = trace_number(recorded.at("loss_scale"), where + "loss_scale");
    step.skipped = recorded.at("skipped").get<bool>();
    if (step.micro_step < previous_micro_step ||
        step.micro_step > static_cast<int64_t>(trace.micro_steps.size())) {
      throw WorkerTraceError(json_path + ":/steps/" + std::to_string(i) + "/micro_step: " +
                             std::to_string(step.micro_step) + " is not between the previous " +
                             "step's and the micro-steps recorded");
    }
    // The mean loss over the items since the previous optimizer step, as the reference loop's.
    double loss_sum = 0.0;
    int64_t items = 0;
    for (int64_t m = previous_micro_step; m < step.micro_step; ++m) {
      const MicroStepRecord& micro = trace.micro_steps[static_cast<size_t>(m)];
      loss_sum += micro.loss * static_cast<double>(micro.items);
      items += micro.items;
    }
    step.loss = items > 0 ? loss_sum / static_cast<double>(items) : 0.0;
    previous_micro_step = step.micro_step;
    for (size_t p = 0; i < recorded_steps && p < parameter_names.size(); ++p) {
      const std::string prefix_of_step = "step" + std::to_string(i) + "/";
      step.gradients.push_back(step_tensor(file, tensors_path,
                                           prefix_of_step + "grad/" + parameter_names[p],
                                           initial_parameters[p]));
      step.parameters.push_back(step_tensor(file, tensors_path,
                                            prefix_of_step + "param/" + parameter_names[p],
                                            initial_parameters[p]));
    }
    if (!step.through_engine) ++trace.counters.bypass_steps;
    trace.steps.push_back(std::move(step));
  }
  const nlohmann::json& counters = json.at("counters");
  trace.counters.micro_steps = counters.at("micro_steps").get<int64_t>();
  trace.counters.global_steps = counters.at("global_steps").get<int64_t>();
  trace.counters.skipped_steps = counters.at("skipped_steps").get<int64_t>();
  if (!json.contains("memory")) {
    if (!expect_memory) return;
    throw WorkerTraceError(json_path + ":/memory: missing: the worker measured no memory");
  }
  read_worker_memory(json.at("memory"), json_path + ":/memory",
                     static_cast<int64_t>(trace.steps.size()), trace);
}

}  // namespace

std::string engine_description(const WorkerVersions& versions) {
  const std::string engine =
      versions.engine == "deepspeed" ? "deepspeed " + versions.deepspeed : versions.engine;
  return engine + " (torch " + versions.torch + ", python " + versions.python + ")";
}

WorkerTrace read_worker_trace(const std::string& prefix,
                              const std::vector<std::string>& parameter_names,
                              const std::vector<at::Tensor>& initial_parameters,
                              bool expect_memory) {
  const std::string json_path = prefix + ".json";
  const nlohmann::json json = read_worker_json(json_path);
  WorkerTrace read;
  try {
    read.status = worker_status_of(json.at("status").get<std::string>(), json_path);
    read.reason = json.value("reason", "");
    read.traceback = json.value("traceback", "");
    if (json.contains("versions")) {
      const nlohmann::json& versions = json.at("versions");
      const std::string engine = versions.value("engine", "deepspeed");
      read.versions = {engine == "deepspeed" ? versions.at("deepspeed").get<std::string>() : "",
                       versions.at("torch").get<std::string>(),
                       versions.at("python").get<std::string>(), engine};
    }
    if (read.status == WorkerStatus::trained) {
      read_trained(json, prefix, parameter_names, initial_parameters, expect_memory, read.trace);
      read.trace.seconds = json.value("seconds", 0.0);
      read.step_seconds = json.value("step_seconds", std::vector<double>{});
      read.step_cpu_seconds = json.value("step_cpu_seconds", std::vector<double>{});
      if (read.step_cpu_seconds.size() != read.step_seconds.size()) {
        throw WorkerTraceError(
            json_path + ":/step_cpu_seconds: " + std::to_string(read.step_cpu_seconds.size()) +
            " times for " + std::to_string(read.step_seconds.size()) + " timed steps");
      }
    }
  } catch (const nlohmann::json::exception& error) {
    throw WorkerTraceError(json_path + ": " + error.what());
  }
  return read;
}

}  // namespace trainrepro
