#include "harness/report/watch_page.h"

#include <cstdio>
#include <string_view>

#include "harness/json/json_fields.h"
#include "harness/report/junit_reporter.h"
#include "harness/report/report_assets.h"
#include "harness/report/watched_console.h"

namespace trainrepro {
namespace {

std::string html(const std::string& text) { return xml_text(text); }

// The report's stylesheet has no table of steps: this page's own, in its colours.
constexpr const char* kPageStyle =
    "table.watch { width: 100%; font-size: .92rem; }\n"
    "table.watch th, table.watch td { padding: 4px 8px; border-bottom: 1px solid var(--line); "
    "text-align: left; vertical-align: top; }\n"
    "table.watch th { background: #eef0f3; white-space: nowrap; }\n"
    "table.watch tr.row { border-left: 4px solid var(--c); }\n"
    "table.watch tr.o-failed { background: #fff5f5; }\n"
    "td.tested { white-space: pre-line; }\n";

std::string figure(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string stylesheet() {
  for (const ReportAsset& asset : report_asset_table()) {
    if (std::string_view(asset.name) == "report.css") {
      return std::string(reinterpret_cast<const char*>(asset.bytes), asset.size);
    }
  }
  return "";
}

// The run's outcome in the report's colours: a diagnosis is a failure, not judged an error.
std::string outcome_class(const std::string& outcome) {
  return outcome == "passed" ? "o-passed" : outcome == "failed" ? "o-failed" : "o-error";
}

std::string steps_table(const std::vector<StepJudgement>& steps) {
  if (steps.empty()) return "";
  std::string rows;
  for (const StepJudgement& window : steps) {
    std::string tested;
    for (const HypothesisResult& hypothesis : window.tested) {
      tested += std::string(tested.empty() ? "" : "\n") +
                spelling_of(hypothesis.kind, diagnosis_spellings()) + " " +
                figure("%.2g", hypothesis.relative_error);
    }
    rows += "<tr class=\"row " + std::string(window.gradients_match ? "o-passed" : "o-failed") +
            "\"><td>" + std::to_string(window.step) + "</td><td>" +
            std::to_string(window.micro_batches) + "</td><td>" + std::to_string(window.items) +
            "</td><td>" + figure("%.4g", window.norm_ratio) + "</td><td>" +
            figure("%.6f", window.cosine) + "</td><td>" +
            figure("%.3g", window.relative_error) + "</td><td>" +
            html(step_against_golden(window)) + "</td><td class=\"mono tested\">" +
            html(tested) + "</td></tr>\n";
  }
  return "<h2>Each judged step against the golden</h2>\n<p>The golden: a forward and "
         "backward over all of the step's micro-batches on every rank, at the step's start "
         "weights (in the dtype said below). Hypotheses: each known mistake's predicted gradient, its relative error "
         "(a match is within 1e-4; for a bfloat16 model within 2x its precision twin's relative "
         "error plus one bfloat16 rounding per micro-step).</p>\n<table class=\"watch\"><thead><tr><th>step</th>"
         "<th>micro-steps per rank</th><th>items</th><th>norm ratio</th><th>cosine</th>"
         "<th>relative error</th><th>gradients</th><th>hypotheses tested</th></tr></thead>"
         "<tbody>\n" + rows + "</tbody></table>\n";
}

std::string memory_section(const MemoryJudgement& memory) {
  std::string text = "<h2>Memory</h2>\n";
  if (!memory.judged) return text + "<p>" + html(memory.not_judged_reason) + "</p>\n";
  text += "<p>Over boundaries " + std::to_string(memory.warmup_steps + 1) + "…" +
          std::to_string(memory.boundaries) + ": live tensors " +
          html(format_bytes(memory.tensor.bytes_per_step)) + "/step, host heap beyond tensors " +
          html(format_bytes(memory.host.bytes_per_step)) + "/step" +
          (memory.autograd_nodes.windows > 0
               ? ", autograd nodes kept " + figure("%.3g", memory.autograd_nodes.bytes_per_step) +
                     "/step"
               : std::string()) +
          ".</p>\n";
  if (memory.diagnoses.empty()) return text + "<p>Bounded: nothing survives a step.</p>\n";
  for (size_t i = 0; i < memory.diagnoses.size(); ++i) {
    text += "<p><strong>" + std::string(spelling_of(memory.diagnoses[i], diagnosis_spellings())) +
            "</strong>: " + html(memory.explanations[i]) + "</p>\n";
  }
  return text;
}

}  // namespace

std::string watch_html_page(const ScenarioResult& result) {
  const WatchedRun& run = *result.watched;
  const WatchedJudgement& judged = run.judgement;
  const std::vector<StepJudgement> no_steps;
  const std::vector<StepJudgement>& steps = result.training ? result.training->steps : no_steps;
  const std::string outcome = watched_outcome(result);
  std::string command;
  for (const std::string& word : run.command) command += (command.empty() ? "" : " ") + word;
  const bool good = outcome == "passed";
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<title>trainrepro watch: " + html(outcome) + "</title>\n<style>\n" +
                     stylesheet() + kPageStyle + "\n</style>\n</head>\n<body>\n<main>\n<header>\n"
                     "<h1>trainrepro watch</h1>\n<p class=\"sub mono\">" + html(command) +
                     "</p>\n</header>\n";
  page += "<div class=\"verdict " + std::string(good ? "verdict-good" : "verdict-bad") +
          "\"><span class=\"badge " + outcome_class(outcome) + "\">" + html(outcome) +
          "</span> " +
          html(std::to_string(steps.size()) + " of " + std::to_string(run.steps_wanted) +
               " optimizer steps judged on " + std::to_string(run.ranks) +
               (run.ranks == 1 ? " rank" : " ranks") +
               (run.engine.empty() ? "" : ", " + run.engine)) +
          "</div>\n";
  if (judged.found_something()) {
    page += "<h2>Diagnosis: " +
            html(judged.diagnosis ? spelling_of(*judged.diagnosis, diagnosis_spellings())
                                  : "unexplained") +
            "</h2>\n<p>" + html(judged.explanation) + "</p>\n";
  }
  for (const std::string& finding : judged.findings) page += "<p>Also: " + html(finding) + "</p>\n";
  if (!judged.golden_self_check_failed.empty()) {
    page += "<h2>Golden self-check</h2>\n<p>" + html(judged.golden_self_check_failed) + "</p>\n";
  }
  if (!judged.golden.empty()) page += "<p>Judged by the golden in " + html(judged.golden) + ".</p>\n";
  if (!judged.coordinates.empty()) {
    page += "<p>Judged on " + html(judged.coordinates) + ".</p>\n";
  }
  if (!run.problem.empty()) page += "<h2>The command</h2>\n<pre>" + html(run.problem) + "</pre>\n";
  if (!judged.not_judged_reason.empty()) {
    page += "<p>Gradients not judged: " + html(judged.not_judged_reason) + "</p>\n";
  }
  if (judged.effective_batch > 0) {
    page += "<p>Batch: " + std::to_string(judged.effective_batch) + " samples per optimizer step (" +
            std::to_string(judged.gradient_accumulation_steps) +
            " accumulation steps in DeepSpeed's config), intended " +
            std::to_string(judged.intended_batch) + ".</p>\n";
  }
  page += steps_table(steps) + memory_section(result.memory.value_or(MemoryJudgement{}));
  if (!run.ended.empty()) page += "<p>Watched fewer steps than asked: " + html(run.ended) + "</p>\n";
  return page + "</main>\n</body>\n</html>\n";
}

}  // namespace trainrepro
