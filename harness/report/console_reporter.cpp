#include "harness/report/console_reporter.h"

#include <cstdio>
#include <map>

#include "harness/json/printable.h"
#include "harness/memory/leak_analysis.h"
#include "harness/report/watched_console.h"

namespace trainrepro {
namespace {

std::string format_seconds(double seconds) {
  char text[32];
  if (seconds < 1.0) {
    std::snprintf(text, sizeof text, "%.0f ms", seconds * 1000.0);
  } else {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  }
  return text;
}

std::string padded(std::string text, size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

bool needs_detail(const Verdict& verdict) {
  return verdict.outcome == Outcome::failed || verdict.outcome == Outcome::not_reproduced ||
         verdict.outcome == Outcome::error;
}

std::string ratio_text(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fx", ratio);
  return text;
}

// "ZeRO stage 2, 2 rank(s): model states 9.1 KiB, expected 9.1 KiB (1.000x); collectives …".
std::string zero_line(const ZeroJudgement& zero) {
  std::string line =
      "ZeRO stage " + std::to_string(zero.zero_stage) + ", " + std::to_string(zero.world_size) +
      " rank(s): model states " + format_bytes(zero.measured.total()) + ", expected " +
      format_bytes(zero.expected.total()) + " (" + ratio_text(zero.model_states_ratio) +
      "); collectives (ring model) " + format_bytes(zero.ring_bytes_per_step) + "/step, expected " +
      format_bytes(zero.expected_ring_bytes_per_step) + " (" + ratio_text(zero.traffic_ratio) + ")";
  if (!zero.not_judged_reason.empty()) {
    line += "; not judged against the formulas: " + zero.not_judged_reason;
  } else if (!zero.traffic_judged) {
    line += ", not judged: evaluations gather too";
  }
  return line;
}

// ", memory not judged: 3 boundaries, needs 22": short enough for the outcome line; the
// results file has the whole reason.
std::string memory_not_judged(const ScenarioResult& result) {
  if (!result.memory || result.memory->judged) return "";
  const MemoryJudgement& memory = *result.memory;
  // An opted-out scenario's own reason is the line's point ("memory not judged: <reason>").
  if (memory.opted_out) return ", " + memory.not_judged_reason;
  if (memory.boundaries == 0) return ", memory not judged: no samples";
  return ", memory not judged: " + std::to_string(memory.boundaries) + " boundaries, needs " +
         std::to_string(memory.warmup_steps + boundaries_to_judge_memory(memory.window));
}

// ", fp16 calibration: 15 windows skipped, 3 updates compared": a pass that lost windows to the
// loss scale says so on its line (loss_scale_calibration.h).
std::string calibration_cost(const ScenarioResult& result) {
  if (!result.training || result.training->calibration_skips == 0) return "";
  const TrainingJudgement& training = *result.training;
  return ", fp16 calibration: " + std::to_string(training.calibration_skips) + " window" +
         (training.calibration_skips == 1 ? "" : "s") + " skipped, " +
         std::to_string(training.applied_steps) + " update" +
         (training.applied_steps == 1 ? "" : "s") + " compared";
}

// "memory judged in 300 of 307 scenarios that trained (5 opted out, 2 not judged: their
// lines say why)": `passed` alone cannot say whether memory was judged. A kind there is none
// of is left out: "(1 opted out: its line says why)".
std::string memory_summary(const std::vector<ScenarioResult>& results) {
  int trained = 0, judged = 0, opted_out = 0;
  for (const ScenarioResult& result : results) {
    if (!result.memory) continue;
    ++trained;
    judged += result.memory->judged;
    opted_out += result.memory->opted_out;
  }
  if (trained == 0) return "";
  std::string line = "memory judged in " + std::to_string(judged) + " of " +
                     std::to_string(trained) + " scenario" + (trained == 1 ? "" : "s") +
                     " that trained";
  const int short_runs = trained - judged - opted_out;
  std::string unjudged;  // only the kinds there are: "1 opted out", "2 not judged", or both
  if (opted_out > 0) unjudged = std::to_string(opted_out) + " opted out";
  if (short_runs > 0) {
    unjudged += (unjudged.empty() ? "" : ", ") + std::to_string(short_runs) + " not judged";
  }
  if (!unjudged.empty()) {
    line += " (" + unjudged + ": " +
            (opted_out + short_runs == 1 ? "its line says" : "their lines say") + " why)";
  }
  return line + "\n";
}

}  // namespace

void ConsoleReporter::report_scenario(const ScenarioResult& result) {
  // A watched script's lines name its command and each judged step (watched_console.h).
  if (result.watched) {
    out_ << watched_console_text(result);
    return;
  }
  const Verdict& verdict = result.verdict;
  const std::string label = result.name.empty() ? "(not loaded)" : result.name;
  out_ << padded(outcome_name(verdict.outcome), 15) << padded(label, 40) << " "
       << printable(result.file) << " (" << format_seconds(result.seconds)
       << (result.deepspeed_version.empty() ? "" : ", DeepSpeed " + result.deepspeed_version)
       << (result.engine == kReferenceEngine ? "" : ", engine " + result.engine)
       << calibration_cost(result) << memory_not_judged(result) << ")\n";

  // Every text below may quote a scenario (a config key, a reference, DeepSpeed's message about
  // a value): its control characters are shown escaped, never sent to the terminal.
  const std::string found = printable(verdict.found, LineBreaks::kept);
  const std::string diagnosis = printable(verdict.diagnosis, LineBreaks::kept);
  if (needs_detail(verdict)) {
    if (!verdict.expected.empty()) {
      out_ << "    expected:  " << printable(verdict.expected, LineBreaks::kept) << "\n";
    }
    out_ << "    found:     " << found << "\n";
    if (!diagnosis.empty()) out_ << "    diagnosis: " << diagnosis << "\n";
  } else if (verdict.outcome == Outcome::reproduced || verdict.outcome == Outcome::skipped) {
    out_ << "    " << found << "\n";
    if (!diagnosis.empty()) out_ << "    diagnosis: " << diagnosis << "\n";
  }
  if (result.reference) {
    const BugReference& reference = *result.reference;
    out_ << "    reported:  " << printable(reference.url) << " (" << printable(reference.project)
         << " " << printable(reference.affected) << "; fixed: " << printable(reference.fixed)
         << ")\n";
  }
  if (!result.release_expectation.empty()) {
    out_ << "    release:   " << printable(result.release_expectation) << "\n";
  }
  if (result.zero) out_ << "    " << zero_line(*result.zero) << "\n";
  for (const std::string& warning : result.warnings) {
    out_ << "    warning: " << printable(warning) << "\n";
  }
  // Piped into a CI log, stdout is block-buffered: without this a run stopped by `timeout`
  // leaves an empty log although scenarios had finished.
  out_.flush();
}

void ConsoleReporter::report_summary(const std::vector<ScenarioResult>& results, double seconds) {
  std::map<Outcome, int> counts;
  for (const ScenarioResult& result : results) ++counts[result.verdict.outcome];
  out_ << "\n" << results.size() << (results.size() == 1 ? " scenario: " : " scenarios: ");
  const Outcome order[] = {Outcome::passed,         Outcome::reproduced, Outcome::failed,
                           Outcome::not_reproduced, Outcome::error,      Outcome::skipped};
  bool first = true;
  for (Outcome outcome : order) {
    out_ << (first ? "" : ", ") << counts[outcome] << " " << outcome_name(outcome);
    first = false;
  }
  out_ << " in " << format_seconds(seconds) << "\n";
  out_ << memory_summary(results);

  switch (exit_code_of(results)) {
    case kExitOk:
      out_ << "every expectation met (exit 0)\n";
      break;
    case kExitExpectationNotMet:
      out_ << "an expectation was not met (exit 1)\n";
      break;
    case kExitBadInput:
      out_ << "a scenario file is invalid (exit 2)\n";
      break;
    default:
      out_ << "infrastructure failure (exit 3)\n";
      break;
  }
  out_.flush();
}

}  // namespace trainrepro
