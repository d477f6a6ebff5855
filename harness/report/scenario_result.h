// The result of one scenario: everything a reporter needs, as plain data. Reporters only read
// it; nothing in it refers back to the runner.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/bug_reference.h"
#include "harness/verdict/memory_judgement.h"
#include "harness/verdict/watched_judgement.h"
#include "harness/verdict/training_judgement.h"
#include "harness/verdict/verdict.h"
#include "harness/verdict/zero_judgement.h"

namespace trainrepro {

// A watched script's run (`trainrepro watch`): what only a watch knows, beside the training and
// memory judgements every result has. The script is the scenario, each judged optimizer step a
// step against the golden.
struct WatchedRun {
  std::vector<std::string> command;
  int command_exit_code = 0;
  // Why the command could not be watched or judged, with its output's tail ("" when it could).
  std::string problem;
  // What trained, "deepspeed 0.19.8 (torch 2.11.0, python 3.11.7)"; "" when no engine was made.
  std::string engine;
  int64_t ranks = 0;  // 0: no rank recorded anything
  int64_t steps_wanted = 0;
  std::string ended;  // why fewer steps than wanted were watched; "" when all were
  WatchedJudgement judgement;
};

struct ScenarioResult {
  std::string file;
  std::string name;  // empty when the file did not load
  std::string description;
  std::vector<std::string> tags;
  std::optional<BugReference> reference;  // a catalogued upstream bug
  Verdict verdict;
  std::vector<std::string> warnings;          // "file:/pointer: …" each
  std::optional<Plan> plan;                   // when the config resolved
  std::optional<TrainingJudgement> training;  // when training ran and was judged
  std::optional<MemoryJudgement> memory;
  std::optional<ZeroJudgement> zero;         // when judged: several ranks or a ZeRO stage
  std::vector<MemorySample> memory_samples;  // every probe sample, for curves in reports
  std::vector<MemorySnapshot> memory_snapshots;  // written next to the results when a leak is found
  std::string torch_version;      // of the LibTorch that ran it
  std::string deepspeed_version;  // the DeepSpeed release whose semantics judged it
  // What trained it: kReferenceEngine, or the real DeepSpeed as
  // "deepspeed 0.19.8 (torch 2.11.0, python 3.11.7)" (`run --engine deepspeed`).
  std::string engine = kReferenceEngine;
  // `--engine deepspeed` on a scenario with "deepspeed_releases": which list the installed
  // release is in and so what was expected ("DeepSpeed 0.18.5 is in …/reproduces_on: …"); empty
  // otherwise.
  std::string release_expectation;
  double seconds = 0.0;           // everything, loading included
  double golden_seconds = 0.0;
  double training_seconds = 0.0;
  double judging_seconds = 0.0;
  std::optional<WatchedRun> watched;  // only for `trainrepro watch`
};

// A watched run's outcome in watch's words: "passed", "failed", "not-judged" (the ranks recorded
// but the gradients could not be judged) or "error".
std::string watched_outcome(const ScenarioResult& result);

// The worst exit code over all results (see ExitCode); kExitOk for none.
int exit_code_of(const std::vector<ScenarioResult>& results);

}  // namespace trainrepro
