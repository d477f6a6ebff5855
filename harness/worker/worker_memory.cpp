#include "harness/worker/worker_memory.h"

#include "harness/worker/worker_trace.h"

namespace trainrepro {
namespace {

const nlohmann::json& required(const nlohmann::json& object, const char* key,
                               const std::string& where) {
  if (!object.is_object()) throw WorkerTraceError(where + ": expected an object");
  const auto found = object.find(key);
  if (found == object.end()) {
    throw WorkerTraceError(where + "/" + key + ": missing");
  }
  return *found;
}

// An integer at least `minimum`: a float, a string or a negative count is the worker's bug.
int64_t integer(const nlohmann::json& object, const char* key, const std::string& where,
                int64_t minimum) {
  const nlohmann::json& value = required(object, key, where);
  if (!value.is_number_integer()) {
    throw WorkerTraceError(where + "/" + key + ": expected an integer, found " + value.dump());
  }
  const int64_t number = value.get<int64_t>();
  if (number < minimum) {
    throw WorkerTraceError(where + "/" + key + ": " + std::to_string(number) + " is below " +
                           std::to_string(minimum));
  }
  return number;
}

SamplePoint sample_point_of(const nlohmann::json& sample, const std::string& where) {
  const nlohmann::json& value = required(sample, "point", where);
  const std::string spelling = value.is_string() ? value.get<std::string>() : value.dump();
  for (SamplePoint point : {SamplePoint::micro_step, SamplePoint::boundary,
                            SamplePoint::before_evaluation, SamplePoint::after_evaluation}) {
    if (spelling == sample_point_name(point)) return point;
  }
  throw WorkerTraceError(where + "/point: \"" + spelling +
                         "\" is none of micro_step, boundary, before_evaluation, "
                         "after_evaluation");
}

MemorySample read_sample(const nlohmann::json& json, const std::string& where,
                         int64_t previous_step, int64_t optimizer_steps) {
  MemorySample sample;
  sample.point = sample_point_of(json, where);
  sample.micro_step = integer(json, "micro_step", where, 0);
  sample.optimizer_step = integer(json, "optimizer_step", where, previous_step);
  if (sample.optimizer_step > optimizer_steps) {
    throw WorkerTraceError(where + "/optimizer_step: " + std::to_string(sample.optimizer_step) +
                           " is beyond the " + std::to_string(optimizer_steps) +
                           " optimizer steps the trace recorded");
  }
  sample.cpu_tensor_bytes = integer(json, "cpu_tensor_bytes", where, 0);
  sample.cpu_tensor_allocations = integer(json, "cpu_tensor_allocations", where, 0);
  sample.cpu_tensor_peak_bytes = integer(json, "cpu_tensor_peak_bytes", where, 0);
  // The host signals are sampled where the reference engine samples them: not at micro-steps
  // (-1 there), always elsewhere, for the leak verdict reads them at boundaries.
  const int64_t least = sample.point == SamplePoint::micro_step ? -1 : 0;
  sample.host_heap_bytes = integer(json, "host_heap_bytes", where, least);
  sample.resident_bytes = integer(json, "resident_bytes", where, least);
  if (json.contains("autograd_nodes")) {
    sample.autograd_nodes = integer(json, "autograd_nodes", where, -1);
  }
  return sample;
}

}  // namespace

void read_worker_memory(const nlohmann::json& memory, const std::string& where,
                        int64_t optimizer_steps, Trace& trace) {
  const nlohmann::json& samples = required(memory, "samples", where);
  if (!samples.is_array()) throw WorkerTraceError(where + "/samples: expected an array");
  int64_t previous_step = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const MemorySample sample = read_sample(samples[i], where + "/samples/" + std::to_string(i),
                                            previous_step, optimizer_steps);
    previous_step = sample.optimizer_step;
    trace.memory.push_back(sample);
  }
  const nlohmann::json& live = required(memory, "live_at_end", where);
  if (!live.is_array()) throw WorkerTraceError(where + "/live_at_end: expected an array");
  for (size_t i = 0; i < live.size(); ++i) {
    const std::string at = where + "/live_at_end/" + std::to_string(i);
    const nlohmann::json& entry = live[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_number_integer() ||
        !entry[1].is_number_integer()) {
      throw WorkerTraceError(at + ": expected [bytes, birth_step] as integers, found " +
                             entry.dump());
    }
    const LiveAllocation allocation{entry[0].get<int64_t>(), entry[1].get<int64_t>()};
    if (allocation.bytes < 0 || allocation.birth_step < 0 ||
        allocation.birth_step > optimizer_steps) {
      throw WorkerTraceError(at + ": " + entry.dump() + " is out of range (bytes at least 0, " +
                             "birth step 0…" + std::to_string(optimizer_steps) + ")");
    }
    trace.live_at_end.push_back(allocation);
  }
  trace.tensor_bookkeeping_bytes = integer(memory, "tensor_bookkeeping_bytes", where, 0);
  // Absent or null where nothing reached the engine's objects (a watched script's census).
  const auto engine_bytes = memory.find("engine_tensor_bytes_at_end");
  if (engine_bytes != memory.end() && !engine_bytes->is_null()) {
    trace.engine_tensor_bytes_at_end = integer(memory, "engine_tensor_bytes_at_end", where, 0);
  }
}

}  // namespace trainrepro
