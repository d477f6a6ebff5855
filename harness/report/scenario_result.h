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
#include "harness/verdict/training_judgement.h"
#include "harness/verdict/verdict.h"
#include "harness/verdict/zero_judgement.h"

namespace trainrepro {

inline constexpr const char* kReferenceEngine = "reference";

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
};

// The worst exit code over all results (see ExitCode); kExitOk for none.
int exit_code_of(const std::vector<ScenarioResult>& results);

}  // namespace trainrepro
