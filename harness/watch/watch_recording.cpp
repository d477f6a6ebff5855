#include "harness/watch/watch_recording.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness/files/safetensors.h"
#include "harness/worker/worker_memory.h"

namespace trainrepro {
namespace {

// One JSON object of a recording, with the file and pointer every error starts with.
class Reader {
 public:
  Reader(const nlohmann::json& value, std::string file, std::string pointer)
      : value_(value), file_(std::move(file)), pointer_(std::move(pointer)) {
    if (!value_.is_object()) fail("", "an object", value_);
  }
  const nlohmann::json& at(const std::string& key) const {
    const auto found = value_.find(key);
    if (found == value_.end()) {
      throw WatchRecordingError(file_ + ":" + pointer_ + "/" + key + ": missing");
    }
    return *found;
  }
  bool has(const std::string& key) const { return value_.contains(key); }
  Reader object(const std::string& key) const { return Reader(at(key), file_, pointer_ + "/" + key); }
  std::string text(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_string()) fail(key, "a string", value);
    return value.get<std::string>();
  }
  int64_t integer(const std::string& key, int64_t minimum) const {
    const nlohmann::json& value = at(key);
    if (!value.is_number_integer() || value.get<int64_t>() < minimum) {
      fail(key, "an integer of at least " + std::to_string(minimum), value);
    }
    return value.get<int64_t>();
  }
  double number(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_number()) fail(key, "a number", value);
    return value.get<double>();
  }
  std::vector<std::string> texts(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_array()) fail(key, "an array of strings", value);
    std::vector<std::string> result;
    for (const nlohmann::json& item : value) {
      if (!item.is_string()) fail(key, "an array of strings", value);
      result.push_back(item.get<std::string>());
    }
    return result;
  }
  std::vector<Reader> objects(const std::string& key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_array()) fail(key, "an array of objects", value);
    std::vector<Reader> result;
    for (size_t i = 0; i < value.size(); ++i) {
      result.emplace_back(value[i], file_, pointer_ + "/" + key + "/" + std::to_string(i));
    }
    return result;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const nlohmann::json& found) const {
    throw WatchRecordingError(file_ + ":" + pointer_ + (key.empty() ? "" : "/" + key) +
                              ": expected " + expected + ", found " + found.dump());
  }
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json& value_;
  std::string file_;
  std::string pointer_;
};

std::vector<at::Tensor> tensors_named(const SafetensorsFile& tensors, const std::string& prefix,
                                      const std::vector<std::string>& names,
                                      const std::string& file) {
  std::vector<at::Tensor> result;
  for (const std::string& name : names) {
    const auto found = tensors.tensors.find(prefix + name);
    if (found == tensors.tensors.end()) {
      throw WatchRecordingError(file + ": no tensor \"" + prefix + name + "\"");
    }
    result.push_back(found->second);
  }
  return result;
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json document = nlohmann::json::parse(text.str(), nullptr, false);
  if (document.is_discarded()) {
    throw WatchRecordingError(path + ": not JSON (a watch that was killed while writing?)");
  }
  return document;
}

void read_rank_memory(const std::string& path, RankRecording& rank) {
  if (!std::filesystem::exists(path)) return;
  // No sample can be later than the step count a 64-bit run reaches; the census checks order.
  constexpr int64_t kAnyStep = int64_t{1} << 40;
  try {
    read_worker_memory(read_json_file(path), path + ":", kAnyStep, rank.memory);
  } catch (const WorkerTraceError& error) {
    throw WatchRecordingError(error.what());
  }
  rank.has_memory = true;
}

GoldenSelfCheck self_check_of(const Reader& recorded, const std::string& key) {
  GoldenSelfCheck check;
  if (!recorded.has(key) || recorded.at(key).is_null()) return check;
  const Reader entry = recorded.object(key);
  check.checked = true;
  check.loop_loss = entry.number("loop_loss");
  check.golden_loss = entry.number("golden_loss");
  check.allowance = entry.number("allowance");
  const nlohmann::json& passed = entry.at("passed");
  if (!passed.is_boolean()) entry.fail("passed", "true or false", passed);
  check.passed = passed.get<bool>();
  return check;
}

RankRecording read_rank(const std::string& json_path) {
  const nlohmann::json document = read_json_file(json_path);
  const Reader json(document, json_path, "");
  if (json.text("format") != kWatchRecordingFormat ||
      json.integer("version", 0) != kWatchRecordingFormatVersion) {
    throw WatchRecordingError(json_path + ": not a " + kWatchRecordingFormat + " version " +
                              std::to_string(kWatchRecordingFormatVersion) + " recording");
  }
  RankRecording rank;
  rank.file = json_path;
  rank.rank = json.integer("rank", 0);
  rank.world_size = json.integer("world_size", 1);
  if (json.has("failure")) {
    rank.failure = json.text("failure");
    rank.traceback = json.text("traceback");
    return rank;
  }
  if (json.has("initialize_raised")) {
    rank.initialize_raised = json.text("initialize_raised");
    return rank;
  }
  rank.ended = json.text("ended");
  rank.steps_wanted = json.integer("steps_wanted", 1);
  rank.memory_steps = json.has("memory_steps") ? json.integer("memory_steps", 0) : -1;
  const Reader versions = json.object("versions");
  rank.versions = {versions.text("deepspeed"), versions.text("torch"), versions.text("python")};
  rank.config = json.at("config");
  const Reader resolved = json.object("resolved");
  rank.resolved.train_batch_size = resolved.integer("train_batch_size", 1);
  rank.resolved.micro_batch_per_gpu = resolved.integer("train_micro_batch_size_per_gpu", 1);
  rank.resolved.gradient_accumulation_steps = resolved.integer("gradient_accumulation_steps", 1);
  rank.resolved.gradient_clipping = resolved.number("gradient_clipping");
  rank.resolved.zero_stage = resolved.integer("zero_stage", 0);
  rank.resolved.dtype = resolved.text("dtype");
  if (resolved.has("grad_accum_dtype") && !resolved.at("grad_accum_dtype").is_null()) {
    rank.resolved.grad_accum_dtype = resolved.text("grad_accum_dtype");
  }
  rank.parameter_names = json.texts("parameter_names");
  rank.calls = json.texts("calls");
  rank.golden_not_computed = json.text("golden_not_computed");
  if (json.has("golden_kind")) rank.golden_kind = json.text("golden_kind");
  if (json.has("coordinates")) {
    const Reader coordinates = json.object("coordinates");
    const nlohmann::json& judged = coordinates.at("judged");
    const nlohmann::json& of = coordinates.at("of");
    if (!judged.is_array() || judged.size() != rank.parameter_names.size()) {
      coordinates.fail("judged", "one count per parameter", judged);
    }
    if (!of.is_array() || of.size() != rank.parameter_names.size()) {
      coordinates.fail("of", "one count per parameter", of);
    }
    rank.coordinates_judged = rank.coordinates_total = 0;
    for (size_t p = 0; p < judged.size(); ++p) {
      if (!judged[p].is_number_integer() || !of[p].is_number_integer() ||
          judged[p].get<int64_t>() < 0 || judged[p].get<int64_t>() > of[p].get<int64_t>()) {
        coordinates.fail("judged", "counts between 0 and the parameter's size", judged);
      }
      rank.coordinates_judged += judged[p].get<int64_t>();
      rank.coordinates_total += of[p].get<int64_t>();
    }
  }
  if (json.has("config_given")) rank.config_given = json.at("config_given");
  if (json.has("save_not_possible")) rank.save_not_possible = json.text("save_not_possible");

  const std::string tensors_path =
      json_path.substr(0, json_path.size() - std::string(".json").size()) + ".safetensors";
  const SafetensorsFile tensors = read_safetensors(tensors_path);
  const std::vector<Reader> windows = json.objects("windows");
  for (size_t w = 0; w < windows.size(); ++w) {
    const Reader& entry = windows[w];
    WatchedWindow window;
    window.closed_by = entry.text("closed_by");
    window.calls_at_close = entry.integer("calls_at_close", 0);
    if (entry.has("golden") && !entry.at("golden").is_null()) {
      const Reader golden = entry.object("golden");
      window.golden_dtype = golden.text("dtype");
      if (!golden.at("float64_failed").is_null()) {
        window.float64_failed = self_check_of(golden, "float64_failed");
        window.float64_failed_micro_step =
            golden.object("float64_failed").integer("micro_step", 0);
      }
    }
    const std::string prefix = "window" + std::to_string(w) + "/";
    window.run_gradients =
        tensors_named(tensors, prefix + "run/", rank.parameter_names, tensors_path);
    const std::vector<Reader> micro_steps = entry.objects("micro_steps");
    for (size_t i = 0; i < micro_steps.size(); ++i) {
      const Reader& recorded = micro_steps[i];
      WatchedMicroStep micro;
      micro.has_loss = !recorded.at("loss").is_null();
      if (micro.has_loss) micro.loss = recorded.number("loss");
      if (recorded.has("scale_wrt_gas")) {
        const nlohmann::json& scale = recorded.at("scale_wrt_gas");
        if (!scale.is_boolean()) recorded.fail("scale_wrt_gas", "true or false", scale);
        micro.scale_wrt_gas = scale.get<bool>();
      }
      if (recorded.has("labels_counted") && !recorded.at("labels_counted").is_null()) {
        micro.labels_counted = recorded.integer("labels_counted", 0);
      }
      if (!recorded.at("loss_function").is_null()) {
        micro.loss_function = recorded.object("loss_function").text("name");
      }
      if (recorded.has("items")) {
        micro.items = recorded.integer("items", 0);
        micro.loss_sum = recorded.number("loss_sum");
        micro.self_check = self_check_of(recorded, "self_check");
        micro.own_check = self_check_of(recorded, "own_check");
        micro.summed_loss_gradients =
            tensors_named(tensors, prefix + "micro" + std::to_string(i) + "/",
                          rank.parameter_names, tensors_path);
        const std::string twin = prefix + "twin" + std::to_string(i) + "/";
        if (!rank.parameter_names.empty() &&
            tensors.tensors.count(twin + rank.parameter_names.front())) {
          micro.twin_summed_loss_gradients =
              tensors_named(tensors, twin, rank.parameter_names, tensors_path);
        }
      }
      const std::string saved = prefix + "micro" + std::to_string(i) + "/";
      const auto inputs = tensors.tensors.find(saved + "inputs");
      const auto targets = tensors.tensors.find(saved + "targets");
      if (inputs != tensors.tensors.end() && targets != tensors.tensors.end()) {
        micro.saved_inputs = inputs->second;
        micro.saved_targets = targets->second;
      }
      window.micro_steps.push_back(std::move(micro));
    }
    window.calls_at_close = std::min<int64_t>(window.calls_at_close,
                                              static_cast<int64_t>(rank.calls.size()));
    rank.windows.push_back(std::move(window));
  }
  read_rank_memory(json_path.substr(0, json_path.size() - std::string(".json").size()) +
                       ".memory.json",
                   rank);
  return rank;
}

}  // namespace

std::vector<RankRecording> read_watch_recording(const std::string& folder) {
  std::vector<RankRecording> ranks;
  const std::regex rank_file("rank[0-9]+\\.json");
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (!std::regex_match(entry.path().filename().string(), rank_file)) continue;
    ranks.push_back(read_rank(entry.path().string()));
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const RankRecording& a, const RankRecording& b) { return a.rank < b.rank; });
  for (const RankRecording& rank : ranks) {
    if (rank.world_size != ranks.front().world_size) {
      throw WatchRecordingError(rank.file + ":/world_size: " + std::to_string(rank.world_size) +
                                ", while " + ranks.front().file + " says " +
                                std::to_string(ranks.front().world_size));
    }
    if (rank.recorded() && ranks.front().recorded() &&
        rank.parameter_names != ranks.front().parameter_names) {
      throw WatchRecordingError(rank.file + ":/parameter_names: not those of " +
                                ranks.front().file);
    }
  }
  return ranks;
}

}  // namespace trainrepro
