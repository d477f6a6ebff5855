#include "harness/perf/benchmark_json.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "harness/files/atomic_write.h"
#include "harness/json/json_fields.h"
#include "harness/perf/figure_values.h"
#include "harness/perf/mann_whitney.h"

namespace trainrepro {
namespace {

constexpr double kMilliseconds = 1e3;

nlohmann::json context_to_json(const PerfContext& context) {
  nlohmann::json ours = {
      {"machine", context.machine},
      {"commit", context.commit},
      {"version", context.trainrepro_version},
      {"torch_version", context.torch_version},
      {"executable_sha256", context.executable_sha256},
      {"working_directory", context.working_directory},
      {"scenario_paths", context.scenario_paths},
      {"engines", context.engines},
      {"filter", context.filter},
      {"planted_slowdown", context.planted_slowdown},
      {"threads", context.threads},
  };
  return {{"date", context.date},
          {"host_name", context.host_name},
          {"executable", context.executable},
          {"num_cpus", context.num_cpus},
          {"library_build_type", "release"},
          {"trainrepro", ours}};
}

nlohmann::json repetition_to_json(const PerfBenchmark& benchmark, size_t index) {
  const PerfRepetition& repetition = benchmark.repetitions[index];
  nlohmann::json entry = {
      {"name", benchmark.name},
      {"family_index", 0},
      {"run_name", benchmark.name},
      {"run_type", "iteration"},
      {"repetitions", benchmark.repetitions.size()},
      {"repetition_index", index},
      {"threads", 1},
      {"iterations", benchmark.measured_steps},
      {"real_time", repetition.step_seconds * kMilliseconds},
      {"cpu_time", repetition.cpu_step_seconds * kMilliseconds},
      {"time_unit", "ms"},
      {"calibration_time", repetition.calibration_seconds * kMilliseconds},
      {"normalised_step_time", repetition.normalised_step_time()},
      {"samples_per_second", repetition.samples_per_second},
      {"peak_tensor_bytes", repetition.peak_tensor_bytes},
      {"peak_host_bytes", repetition.peak_host_bytes},
      {"scenario_file", benchmark.scenario_file},
      {"device", benchmark.device},
      {"world_size", benchmark.world_size},
      {"loop", benchmark.loop},
  };
  if (repetition.tokens_per_second) entry["tokens_per_second"] = *repetition.tokens_per_second;
  if (repetition.peak_cuda_reserved_bytes) {
    entry["peak_cuda_reserved_bytes"] = *repetition.peak_cuda_reserved_bytes;
  }
  if (repetition.mfu) entry["mfu"] = *repetition.mfu;
  if (!benchmark.measure.empty()) {
    nlohmann::json measure = nlohmann::json::array();
    for (PerfFigure figure : benchmark.measure) measure.push_back(perf_figure_name(figure));
    entry["measure"] = measure;
  }
  if (!benchmark.twin_of.empty()) entry["twin_of"] = benchmark.twin_of;
  if (!benchmark.sweep_of.empty()) {
    entry["sweep_of"] = benchmark.sweep_of;
    entry["sweep_pointer"] = benchmark.sweep_pointer;
    entry["sweep_value"] = benchmark.sweep_value;
  }
  return entry;
}

// Google Benchmark's aggregates of the step time, for tools that read only those.
std::vector<nlohmann::json> aggregates_of(const PerfBenchmark& benchmark) {
  const std::vector<double> times = figure_values(benchmark, PerfFigure::step_time);
  if (times.empty()) return {};
  double mean = 0.0;
  for (double time : times) mean += time;
  mean /= static_cast<double>(times.size());
  double variance = 0.0;
  for (double time : times) variance += (time - mean) * (time - mean);
  const double stddev =
      times.size() > 1 ? std::sqrt(variance / static_cast<double>(times.size() - 1)) : 0.0;
  const std::pair<const char*, double> values[] = {
      {"mean", mean}, {"median", median_of(times)}, {"stddev", stddev}, {"cv", stddev / mean}};
  std::vector<nlohmann::json> entries;
  for (const auto& [aggregate, value] : values) {
    const bool percentage = std::string(aggregate) == "cv";
    entries.push_back({{"name", benchmark.name + "_" + aggregate},
                       {"family_index", 0},
                       {"run_name", benchmark.name},
                       {"run_type", "aggregate"},
                       {"repetitions", times.size()},
                       {"threads", 1},
                       {"aggregate_name", aggregate},
                       {"aggregate_unit", percentage ? "percentage" : "time"},
                       {"iterations", times.size()},
                       {"real_time", percentage ? value : value * kMilliseconds},
                       {"cpu_time", percentage ? value : value * kMilliseconds},
                       {"time_unit", "ms"}});
  }
  return entries;
}

// Strict reading of the fields we wrote; every error names the file and pointer.
class EntryReader {
 public:
  EntryReader(const nlohmann::json& entry, std::string where)
      : entry_(entry), where_(std::move(where)) {}

  const nlohmann::json* find(const char* key) const {
    return entry_.contains(key) ? &entry_.at(key) : nullptr;
  }
  double number(const char* key) const {
    const nlohmann::json* value = find(key);
    if (!value || !value->is_number() || !std::isfinite(value->get<double>())) {
      fail(key, "expected a number", value);
    }
    return value->get<double>();
  }
  std::optional<double> optional_number(const char* key) const {
    if (!find(key)) return std::nullopt;
    return number(key);
  }
  std::string string(const char* key) const {
    const nlohmann::json* value = find(key);
    if (!value || !value->is_string()) fail(key, "expected a string", value);
    return value->get<std::string>();
  }
  std::string optional_string(const char* key) const {
    return find(key) ? string(key) : std::string();
  }
  [[noreturn]] void fail(const std::string& key, const std::string& expected,
                         const nlohmann::json* found) const {
    throw PerfFormatError(where_ + "/" + escape_pointer_token(key) + ": " + expected + ", found " +
                          (found ? describe_json_value(*found) : "nothing"));
  }

 private:
  const nlohmann::json& entry_;
  std::string where_;
};

// An array of strings at `key`, empty when the key is absent.
std::vector<std::string> optional_strings(const EntryReader& reader, const char* key) {
  std::vector<std::string> strings;
  const nlohmann::json* array = reader.find(key);
  if (!array) return strings;
  if (!array->is_array()) reader.fail(key, "expected an array of strings", array);
  for (size_t i = 0; i < array->size(); ++i) {
    if (!(*array)[i].is_string()) {
      reader.fail(std::string(key) + "/" + std::to_string(i), "expected a string", &(*array)[i]);
    }
    strings.push_back((*array)[i].get<std::string>());
  }
  return strings;
}

PerfContext context_from_json(const nlohmann::json& document, const std::string& file) {
  if (!document.contains("context") || !document["context"].is_object()) {
    throw PerfFormatError(file +
                          ":/context: expected an object (Google Benchmark JSON from "
                          "`trainrepro perf run`), found " +
                          (document.contains("context") ? describe_json_value(document["context"])
                                                        : std::string("nothing")));
  }
  const nlohmann::json& context = document["context"];
  const EntryReader outer(context, file + ":/context");
  PerfContext result;
  result.date = outer.optional_string("date");
  result.host_name = outer.optional_string("host_name");
  result.executable = outer.optional_string("executable");
  if (outer.find("num_cpus")) result.num_cpus = static_cast<int>(outer.number("num_cpus"));
  if (!context.contains("trainrepro")) return result;  // another tool's benchmark file
  if (!context["trainrepro"].is_object()) {
    outer.fail("trainrepro", "expected an object", &context["trainrepro"]);
  }
  const nlohmann::json& ours = context["trainrepro"];
  const EntryReader reader(ours, file + ":/context/trainrepro");
  result.machine = reader.optional_string("machine");
  result.commit = reader.optional_string("commit");
  result.trainrepro_version = reader.optional_string("version");
  result.torch_version = reader.optional_string("torch_version");
  result.executable_sha256 = reader.optional_string("executable_sha256");
  result.working_directory = reader.optional_string("working_directory");
  result.filter = reader.optional_string("filter");
  result.planted_slowdown = reader.optional_number("planted_slowdown").value_or(0.0);
  result.threads = static_cast<int>(reader.optional_number("threads").value_or(1.0));
  result.scenario_paths = optional_strings(reader, "scenario_paths");
  // Runs before 2026-12-06 did not record their engines (and their reruns measured only ours).
  result.engines = optional_strings(reader, "engines");
  return result;
}

PerfRepetition repetition_from_json(const EntryReader& reader) {
  PerfRepetition repetition;
  const std::string unit = reader.string("time_unit");
  const std::map<std::string, double> per_second = {
      {"ns", 1e9}, {"us", 1e6}, {"ms", 1e3}, {"s", 1.0}};
  if (!per_second.count(unit)) {
    const nlohmann::json found = unit;
    reader.fail("time_unit", "expected \"ns\", \"us\", \"ms\" or \"s\"", &found);
  }
  const double scale = per_second.at(unit);
  repetition.step_seconds = reader.number("real_time") / scale;
  repetition.cpu_step_seconds = reader.number("cpu_time") / scale;
  // A file of another tool has no calibration: its repetitions count as calibrated by 1 s.
  repetition.calibration_seconds = reader.optional_number("calibration_time").value_or(1e3) / 1e3;
  if (!(repetition.step_seconds > 0.0) || !(repetition.calibration_seconds > 0.0)) {
    reader.fail(repetition.step_seconds > 0.0 ? "calibration_time" : "real_time",
                "expected a positive time", nullptr);
  }
  repetition.samples_per_second = reader.optional_number("samples_per_second").value_or(0.0);
  repetition.tokens_per_second = reader.optional_number("tokens_per_second");
  repetition.peak_tensor_bytes =
      static_cast<int64_t>(reader.optional_number("peak_tensor_bytes").value_or(0.0));
  repetition.peak_host_bytes =
      static_cast<int64_t>(reader.optional_number("peak_host_bytes").value_or(0.0));
  if (auto reserved = reader.optional_number("peak_cuda_reserved_bytes")) {
    repetition.peak_cuda_reserved_bytes = static_cast<int64_t>(*reserved);
  }
  repetition.mfu = reader.optional_number("mfu");
  return repetition;
}

}  // namespace

nlohmann::json perf_run_to_json(const PerfRun& run) {
  nlohmann::json benchmarks = nlohmann::json::array();
  for (const PerfBenchmark& benchmark : run.benchmarks) {
    for (size_t i = 0; i < benchmark.repetitions.size(); ++i) {
      benchmarks.push_back(repetition_to_json(benchmark, i));
    }
    for (nlohmann::json& aggregate : aggregates_of(benchmark)) {
      benchmarks.push_back(std::move(aggregate));
    }
  }
  nlohmann::json scaling = nlohmann::json::array();
  for (const ScalingFitResult& fit : run.scaling) {
    nlohmann::json entry = {{"scenario", fit.scenario},
                            {"pointer", fit.pointer},
                            {"figure", perf_figure_name(fit.figure)},
                            {"exponent", fit.exponent},
                            {"r_squared", fit.r_squared},
                            {"met", fit.met()}};
    if (fit.expected) entry["expected"] = {fit.expected->at_least, fit.expected->at_most};
    scaling.push_back(entry);
  }
  nlohmann::json targets = nlohmann::json::array();
  for (const TargetResult& target : run.targets) {
    targets.push_back({{"benchmark", target.benchmark},
                       {"relative_to", target.relative_to},
                       {"ratio", target.ratio},
                       {"at_most", target.at_most},
                       {"p_value_above", target.p_value},
                       {"met", target.met()}});
  }
  return {{"context", context_to_json(run.context)},
          {"benchmarks", benchmarks},
          {"scaling", scaling},
          {"targets", targets}};
}

PerfRun perf_run_from_json(const nlohmann::json& document, const std::string& file) {
  if (!document.is_object()) {
    throw PerfFormatError(file + ": expected a JSON object (Google Benchmark JSON), found " +
                          describe_json_value(document));
  }
  PerfRun run;
  run.context = context_from_json(document, file);
  if (!document.contains("benchmarks") || !document["benchmarks"].is_array()) {
    throw PerfFormatError(file + ":/benchmarks: expected an array, found " +
                          (document.contains("benchmarks")
                               ? describe_json_value(document["benchmarks"])
                               : std::string("nothing")));
  }
  const nlohmann::json& entries = document["benchmarks"];
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = file + ":/benchmarks/" + std::to_string(i);
    if (!entries[i].is_object()) {
      throw PerfFormatError(where + ": expected an object, found " +
                            describe_json_value(entries[i]));
    }
    const EntryReader reader(entries[i], where);
    if (reader.optional_string("run_type") == "aggregate") continue;
    const std::string name =
        reader.find("run_name") ? reader.string("run_name") : reader.string("name");
    if (!index_of.count(name)) {
      index_of[name] = run.benchmarks.size();
      PerfBenchmark benchmark;
      benchmark.name = name;
      benchmark.scenario_file = reader.optional_string("scenario_file");
      benchmark.device = reader.optional_string("device");
      benchmark.loop = reader.find("loop") ? reader.string("loop") : "harness";
      benchmark.world_size =
          static_cast<int64_t>(reader.optional_number("world_size").value_or(1.0));
      if (benchmark.world_size < 1) {
        const nlohmann::json found = benchmark.world_size;
        reader.fail("world_size", "expected a positive number of ranks", &found);
      }
      benchmark.measured_steps = static_cast<int64_t>(reader.number("iterations"));
      benchmark.twin_of = reader.optional_string("twin_of");
      benchmark.sweep_of = reader.optional_string("sweep_of");
      if (!benchmark.sweep_of.empty()) {
        benchmark.sweep_pointer = reader.string("sweep_pointer");
        benchmark.sweep_value = reader.number("sweep_value");
      }
      if (const nlohmann::json* measure = reader.find("measure")) {
        for (size_t k = 0; measure->is_array() && k < measure->size(); ++k) {
          for (const auto& [figure, spelling] : perf_figure_spellings()) {
            if ((*measure)[k] == spelling) benchmark.measure.push_back(figure);
          }
        }
      }
      run.benchmarks.push_back(std::move(benchmark));
    }
    run.benchmarks[index_of[name]].repetitions.push_back(repetition_from_json(reader));
  }
  if (run.benchmarks.empty()) {
    throw PerfFormatError(file +
                          ":/benchmarks: expected at least one measured repetition "
                          "(run_type \"iteration\"), found none");
  }
  return run;
}

PerfRun read_perf_run(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw PerfFormatError(file + ": cannot be read (missing, or not a readable file)");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json document = nlohmann::json::parse(text.str(), nullptr, false);
  if (document.is_discarded()) {
    throw PerfFormatError(file +
                          ": not JSON (expected Google Benchmark JSON from `trainrepro "
                          "perf run`)");
  }
  return perf_run_from_json(document, file);
}

void write_perf_run(const std::string& file, const PerfRun& run) {
  write_file_atomically(file, perf_run_to_json(run).dump(2) + "\n");
}

}  // namespace trainrepro
