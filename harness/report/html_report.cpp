#include "harness/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "harness/perf/mann_whitney.h"
#include "harness/report/report_assets.h"
#include "harness/report/results_json.h"

namespace trainrepro {
namespace {

using nlohmann::json;

// Which of n points a curve keeps: all when few, else evenly spread, always the first and the
// last, and `keep` (a failing step) when it is one of them.
std::vector<size_t> sampled_indices(size_t n, std::optional<size_t> keep = std::nullopt) {
  std::vector<size_t> indices;
  if (n <= kMostPointsPerCurve) {
    for (size_t i = 0; i < n; ++i) indices.push_back(i);
    return indices;
  }
  std::set<size_t> chosen;
  for (size_t k = 0; k < kMostPointsPerCurve - 1; ++k) {
    chosen.insert(k * (n - 1) / (kMostPointsPerCurve - 2));
  }
  chosen.insert(n - 1);
  if (keep && *keep < n) chosen.insert(*keep);
  return {chosen.begin(), chosen.end()};
}

// A number, or null for NaN and infinities (JSON has neither).
json finite_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

bool outcome_needs_attention(Outcome outcome) {
  return outcome == Outcome::failed || outcome == Outcome::not_reproduced ||
         outcome == Outcome::error;
}

json plan_summary(const json& plan) {
  if (plan.is_null()) return nullptr;
  return {{"train_batch_size", plan["train_batch_size"]},
          {"train_micro_batch_size_per_gpu", plan["train_micro_batch_size_per_gpu"]},
          {"gradient_accumulation_steps", plan["gradient_accumulation_steps"]},
          {"world_size", plan["world_size"]},
          {"given", plan["given"]},
          {"device", plan["device"]},
          {"dtype", plan["dtype"]},
          {"precision", plan["precision"]},
          {"zero_stage", plan["zero_stage"]},
          {"gradient_clipping", plan["gradient_clipping"]},
          {"optimizer", {{"type", plan["optimizer"]["type"]}, {"lr", plan["optimizer"]["lr"]}}},
          {"golden", plan["golden"]}};
}

// Per optimizer step, each tensor's share of its tolerance in percent.
json gradients_of(const TrainingJudgement& training, const json& written) {
  const std::vector<StepJudgement>& steps = training.steps;
  std::optional<size_t> failing;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (training.first_gradient_mismatch && steps[i].step == *training.first_gradient_mismatch) {
      failing = i;
    }
  }
  const std::vector<size_t> shown = sampled_indices(steps.size(), failing);
  // Tensors in the order the engine reports them; a tensor missing at a step is null there.
  std::vector<std::string> names;
  for (const StepJudgement& step : steps) {
    for (const TensorComparison& c : step.gradients) {
      if (std::find(names.begin(), names.end(), c.name) == names.end()) names.push_back(c.name);
    }
  }
  json step_numbers = json::array();
  json tensors = json::array();
  for (size_t i : shown) step_numbers.push_back(steps[i].step);
  for (const std::string& name : names) {
    json percent = json::array();
    for (size_t i : shown) {
      json value = nullptr;
      for (const TensorComparison& c : steps[i].gradients) {
        if (c.name == name) value = finite_or_null(100.0 * c.tolerance_used);
      }
      percent.push_back(value);
    }
    tensors.push_back({{"name", name}, {"percent", percent}});
  }
  return {{"tolerance", written["tolerance"]},
          {"steps", step_numbers},
          {"tensors", tensors},
          {"first_failure_step", written["first_gradient_mismatch"]},
          {"mismatch", training.mismatch},
          {"divergence", written["divergence"]},
          {"diagnosis", written["diagnosis"]}};
}

json losses_of(const TrainingJudgement& training) {
  json steps = json::array(), run = json::array(), golden = json::array();
  for (size_t i : sampled_indices(training.steps.size())) {
    const StepJudgement& step = training.steps[i];
    steps.push_back(step.step);
    run.push_back(finite_or_null(step.loss));
    golden.push_back(finite_or_null(step.golden_loss));
  }
  return {{"steps", steps}, {"run", run}, {"golden", golden}};
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

// The judged slope as a segment over the judged boundaries (after warm-up), through the median
// of the points: the line the verdict saw.
json fit_of(const GrowthTrend& trend, const std::vector<double>& steps,
            const std::vector<double>& bytes) {
  if (steps.empty()) return nullptr;
  std::vector<double> intercepts;
  for (size_t i = 0; i < steps.size(); ++i) {
    intercepts.push_back(bytes[i] - trend.bytes_per_step * steps[i]);
  }
  const double intercept = median(intercepts);
  return {{"from_step", steps.front()},
          {"to_step", steps.back()},
          {"from_bytes", intercept + trend.bytes_per_step * steps.front()},
          {"to_bytes", intercept + trend.bytes_per_step * steps.back()},
          {"bytes_per_step", trend.bytes_per_step},
          {"grows_in_every_window", trend.grows_in_every_window},
          {"windows", trend.windows}};
}

// Allocations alive at the end by the step that made them, sampled like the curves.
json survivors_of(const MemoryJudgement& memory) {
  const std::vector<int64_t>& by_step = memory.survivors.allocations_by_step;
  json steps = json::array(), allocations = json::array();
  for (size_t i : sampled_indices(by_step.size())) {
    steps.push_back(memory.warmup_steps + 1 + static_cast<int64_t>(i));
    allocations.push_back(by_step[i]);
  }
  return {{"steps", steps}, {"allocations", allocations}};
}

json memory_of(const ScenarioResult& result, const json& written) {
  const MemoryJudgement& memory = *result.memory;
  const bool cuda = result.plan && result.plan->device == Device::cuda;
  std::vector<const MemorySample*> boundaries;
  for (const MemorySample& sample : result.memory_samples) {
    if (sample.point == SamplePoint::boundary) boundaries.push_back(&sample);
  }
  // The same quantities the verdict judged (judge_memory.cpp).
  auto tensor_bytes = [&](const MemorySample& s) {
    return static_cast<double>(cuda ? s.cuda_allocated_bytes : s.cpu_tensor_bytes);
  };
  auto host_bytes = [](const MemorySample& s) {
    return static_cast<double>(s.host_heap_bytes - s.cpu_tensor_bytes);
  };
  json steps = json::array(), tensor = json::array(), host = json::array();
  json allocated = json::array(), reserved = json::array();
  for (size_t i : sampled_indices(boundaries.size())) {
    const MemorySample& s = *boundaries[i];
    steps.push_back(s.optimizer_step);
    tensor.push_back(tensor_bytes(s));
    host.push_back(s.host_heap_bytes < 0 ? json(nullptr) : json(host_bytes(s)));
    allocated.push_back(s.cuda_allocated_bytes);
    reserved.push_back(s.cuda_reserved_bytes);
  }
  json fits = {{"tensor", nullptr}, {"host", nullptr}, {"cuda_reserved", nullptr}};
  if (memory.judged) {
    std::vector<double> x, y_tensor, y_host, y_reserved;
    for (const MemorySample* s : boundaries) {
      if (s->optimizer_step <= memory.warmup_steps) continue;
      x.push_back(static_cast<double>(s->optimizer_step));
      y_tensor.push_back(tensor_bytes(*s));
      y_host.push_back(host_bytes(*s));
      y_reserved.push_back(static_cast<double>(s->cuda_reserved_bytes));
    }
    fits["tensor"] = fit_of(memory.tensor, x, y_tensor);
    fits["host"] = fit_of(memory.host, x, y_host);
    if (cuda) fits["cuda_reserved"] = fit_of(memory.cuda_reserved, x, y_reserved);
  }
  return {{"judged", memory.judged},
          {"not_judged_reason", memory.not_judged_reason},
          {"warmup_steps", memory.warmup_steps},
          {"window", memory.window},
          {"device", cuda ? "cuda" : "cpu"},
          {"steps", steps},
          {"tensor_bytes", tensor},
          {"host_heap_bytes", host},
          {"cuda_allocated_bytes", cuda ? allocated : json(nullptr)},
          {"cuda_reserved_bytes", cuda ? reserved : json(nullptr)},
          {"fits", fits},
          {"out_of_memory_step", written["out_of_memory_step"]},
          {"capacity_bytes", memory.capacity_bytes},
          {"budget_peak_bytes", written["budget_peak_bytes"]},
          {"peak_tensor_bytes", memory.peak_tensor_bytes},
          {"diagnoses", written["diagnoses"]},
          {"explanations", memory.explanations},
          {"surviving", memory.surviving},
          {"survivors_by_birth_step", survivors_of(memory)},
          {"notes", memory.notes}};
}

json scenario_data(const ScenarioResult& result, const RunProvenance& provenance) {
  const json written = result_to_json(result, provenance);
  const std::string folder = std::filesystem::path(result.file).parent_path().string();
  return {{"name", result.name},
          {"file", result.file},
          {"folder", folder.empty() ? "." : folder},
          {"description", result.description},
          {"tags", result.tags},
          {"reference", written["scenario"]["reference"]},
          {"outcome", written["outcome"]},
          {"exit_code", written["exit_code"]},
          {"error_source", written["error_source"]},
          {"expected", result.verdict.expected},
          {"found", result.verdict.found},
          {"diagnosis", result.verdict.diagnosis},
          {"warnings", result.warnings},
          {"seconds", result.seconds},
          {"timings",
           {{"golden_seconds", result.golden_seconds},
            {"training_seconds", result.training_seconds},
            {"judging_seconds", result.judging_seconds}}},
          {"deepspeed_version", result.deepspeed_version},
          {"engine", result.engine},
          {"torch_version", result.torch_version},
          {"plan", plan_summary(written["plan"])},
          {"gradients",
           result.training ? gradients_of(*result.training, written["training"]) : json(nullptr)},
          {"losses", result.training ? losses_of(*result.training) : json(nullptr)},
          {"memory", result.memory ? memory_of(result, written["memory"]) : json(nullptr)},
          {"zero", written["zero"]}};
}

json runs_of(const ReportInput& input) {
  // One entry per distinct run; results of one run share its start, host and commit.
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  json runs = json::array();
  for (const RunProvenance& p : input.provenances) {
    const auto key = std::make_tuple(p.started_at, p.host, p.git_commit);
    auto [it, inserted] = index.emplace(key, runs.size());
    if (inserted) {
      json run = provenance_to_json(p);
      run["scenarios"] = 0;
      runs.push_back(std::move(run));
    }
    runs[it->second]["scenarios"] = runs[it->second]["scenarios"].get<int64_t>() + 1;
  }
  return runs;
}

// Scenarios that need attention first (failed, not-reproduced, error), then by folder and name.
std::vector<size_t> report_order(const std::vector<ScenarioResult>& results) {
  std::vector<size_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const ScenarioResult& x = results[a];
    const ScenarioResult& y = results[b];
    return std::make_tuple(!outcome_needs_attention(x.verdict.outcome), x.file, x.name) <
           std::make_tuple(!outcome_needs_attention(y.verdict.outcome), y.file, y.name);
  });
  return order;
}

// JSON inside <script>: "</script" would end the element early and "<!--" changes how the
// browser parses the rest. In JSON a "<" can only stand inside a string, where \u003c means the
// same character, so every one is written that way.
std::string script_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// Six significant digits are more than a chart or a table shows, and a third of the page's
// bytes when numbers are written with all seventeen.
void round_numbers(json& value) {
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (std::isfinite(x) && x != 0.0) {
      char text[32];
      std::snprintf(text, sizeof text, "%.6g", x);
      value = std::strtod(text, nullptr);
    }
  } else if (value.is_structured()) {
    for (json& item : value) round_numbers(item);
  }
}

std::string asset(const std::string& name) {
  for (const ReportAsset& a : report_asset_table()) {
    if (name == a.name) return std::string(reinterpret_cast<const char*>(a.bytes), a.size);
  }
  throw std::runtime_error("report: the asset " + name + " is not compiled in");
}

void replace_once(std::string& page, const std::string& placeholder, const std::string& value) {
  const size_t at = page.find(placeholder);
  if (at == std::string::npos || page.find(placeholder, at + 1) != std::string::npos) {
    throw std::runtime_error("report: reports/template.html must hold " + placeholder +
                             " exactly once");
  }
  page.replace(at, placeholder.size(), value);
}

// The "performance" object of reports/DATA.md: per benchmark and figure, each run's median and
// range of repetitions, and the change points.
json performance_data(const PerfHistoryInput& history) {
  json runs = json::array();
  for (size_t i = 0; i < history.runs.size(); ++i) {
    const PerfContext& context = history.runs[i].context;
    runs.push_back({{"commit", context.commit},
                    {"date", context.date},
                    {"machine", context.machine},
                    {"file", i < history.files.size() ? history.files[i] : ""}});
  }
  json benchmarks = json::array();
  for (const BenchmarkHistory& benchmark : benchmark_histories(history)) {
    json figures = json::array();
    for (const FigureHistory& figure : benchmark.figures) {
      json median = json::array();
      json low = json::array();
      json high = json::array();
      bool any = false;
      for (const auto& values : figure.values) {
        if (!values || values->empty()) {
          median.push_back(nullptr);
          low.push_back(nullptr);
          high.push_back(nullptr);
          continue;
        }
        any = true;
        median.push_back(finite_or_null(median_of(*values)));
        low.push_back(finite_or_null(*std::min_element(values->begin(), values->end())));
        high.push_back(finite_or_null(*std::max_element(values->begin(), values->end())));
      }
      if (!any) continue;
      json changes = json::array();
      for (const ChangePoint& change : figure.change_points) {
        changes.push_back({{"run", change.index},
                           {"ratio", finite_or_null(change.ratio)},
                           {"p", finite_or_null(change.p_value)}});
      }
      figures.push_back({{"title", figure.title},
                         {"unit", figure.unit},
                         {"judged", figure.judged},
                         {"median", median},
                         {"low", low},
                         {"high", high},
                         {"change_points", changes}});
    }
    benchmarks.push_back({{"name", benchmark.name}, {"figures", figures}});
  }
  json result = {{"folder", history.folder},
                 {"alpha", history.alpha},
                 {"min_effect", history.min_effect},
                 {"runs", runs},
                 {"unreadable", history.unreadable},
                 {"benchmarks", benchmarks}};
  round_numbers(result);
  return result;
}

}  // namespace

json report_data(const ReportInput& input) {
  json by_outcome = json::object();
  for (Outcome outcome : {Outcome::passed, Outcome::reproduced, Outcome::skipped, Outcome::failed,
                          Outcome::not_reproduced, Outcome::error}) {
    by_outcome[outcome_name(outcome)] = 0;
  }
  double seconds = 0.0;
  std::set<std::string> releases;
  json scenarios = json::array();
  for (size_t i : report_order(input.results)) {
    const ScenarioResult& result = input.results[i];
    by_outcome[outcome_name(result.verdict.outcome)] =
        by_outcome[outcome_name(result.verdict.outcome)].get<int64_t>() + 1;
    seconds += result.seconds;
    if (!result.deepspeed_version.empty()) releases.insert(result.deepspeed_version);
    json scenario = scenario_data(result, input.provenances.at(i));
    round_numbers(scenario);
    scenarios.push_back(std::move(scenario));
  }
  json unreadable = json::array();
  for (const auto& file : input.unreadable) {
    unreadable.push_back({{"file", file.file}, {"message", file.message}});
  }
  return {{"format", "trainrepro-report-data"},
          {"format_version", 1},
          {"generated_at", utc_timestamp_now()},
          {"trainrepro_version", TRAINREPRO_VERSION},
          {"sources", input.sources},
          {"runs", runs_of(input)},
          {"totals",
           {{"scenarios", input.results.size()},
            {"by_outcome", by_outcome},
            {"exit_code", exit_code_of(input.results)},
            {"seconds", seconds}}},
          {"deepspeed_versions", std::vector<std::string>(releases.rbegin(), releases.rend())},
          {"unreadable", unreadable},
          {"performance", input.performance ? performance_data(*input.performance) : json(nullptr)},
          {"scenarios", scenarios}};
}

std::string html_report(const ReportInput& input) {
  std::string page = asset("template.html");
  const int64_t attention = std::count_if(
      input.results.begin(), input.results.end(),
      [](const ScenarioResult& r) { return outcome_needs_attention(r.verdict.outcome); });
  const std::string title = "trainrepro: " + std::to_string(input.results.size()) +
                            " scenarios, " + std::to_string(attention) + " need attention";
  // The data last: no placeholder spelled inside it can be mistaken for the template's.
  replace_once(page, "{{title}}", title);
  replace_once(page, "{{report.css}}", asset("report.css"));
  replace_once(page, "{{charts.js}}", asset("charts.js"));
  replace_once(page, "{{report.js}}", asset("report.js"));
  replace_once(page, "{{data}}", script_safe(report_data(input).dump(-1, ' ', false,
                                                                   json::error_handler_t::replace)));
  return page;
}

}  // namespace trainrepro
