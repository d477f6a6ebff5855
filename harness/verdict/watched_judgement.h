// What only a watched script's judgement holds (judge_watched.h), as plain data: a result
// (report/scenario_result.h) carries it without depending on the watch's recordings.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/verdict/diagnosis_wording.h"

namespace trainrepro {

// What only a watched run's judgement holds, beside the training and memory judgements every
// result has.
struct WatchedJudgement {
  bool judged = false;
  std::string not_judged_reason;  // why the gradients could not be judged
  int64_t world_size = 1;
  int64_t gradient_accumulation_steps = 1;
  int64_t effective_batch = 0;  // samples per optimizer step the loop trained with
  int64_t intended_batch = 0;
  // Which golden judged, in words ("float64", or "float32: the run's own dtype and kernels"),
  // and, when the float64 golden failed its self-check, where and why (never a diagnosis).
  std::string golden;
  std::string golden_self_check_failed;
  // The gradient coordinates judged, in words, when a sample of them ("" when all).
  std::string coordinates;
  // The first thing found, windows first, then the scheduler, the batch and memory: a named
  // diagnosis, or (no kind) gradients no hypothesis explains.
  std::optional<DiagnosisKind> diagnosis;
  std::string explanation;            // in words, with the fix; empty when nothing was found
  std::vector<std::string> findings;  // every other thing found, in words
  bool found_something() const { return !explanation.empty(); }
};

}  // namespace trainrepro
