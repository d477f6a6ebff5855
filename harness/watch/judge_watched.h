// Judges a watched script (watch_recording.h) as a scenario is judged: each watched window's
// gradients against the golden, a forward and backward over all of that window's micro-batches
// on every rank at the window's start weights (in the run's own dtype and kernels, or in
// float64), summed in float64 on the judged coordinates; a mismatch is explained by the
// hypotheses of harness/verdict/diagnosis.h, each predicted from the same pieces
// (a loss divided twice, not at all, gradients zeroed inside the window, the optimizer stepped
// by the loop, the token mean taken per micro-batch, the boundary reached once per window); and
// the batch the loop trains with against the one the user intends. Plain data out.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/golden/tensor_comparison.h"
#include "harness/scenario/expectation.h"
#include "harness/verdict/diagnosis.h"
#include "harness/verdict/memory_judgement.h"
#include "harness/watch/watch_recording.h"

namespace trainrepro {

struct WatchedWindowJudgement {
  int64_t window = 0;
  int64_t micro_steps = 0;  // on each rank
  int64_t items = 0;        // counted targets, all ranks
  bool gradients_match = true;
  double relative_error = 0.0;  // ||run - golden|| / ||golden||, the whole model
  double norm_ratio = 1.0;      // ||run|| / ||golden||
  double cosine = 1.0;
  // A bfloat16 model: ||twin - golden|| / ||golden||, the precision's own error (-1: float32).
  // Its gradients pass within kPrecisionTwinFactor x the twin's RMS error, the whole model as
  // one vector (gradients.front(); each tensor's follows for information).
  double twin_relative_error = -1.0;
  // The twin is the golden itself rounded once to bfloat16: the golden is already the run's own
  // function in bfloat16 (--golden own, or a float64 golden that failed its self-check).
  bool twin_is_rounded_golden = false;
  std::vector<TensorComparison> gradients;
  std::vector<HypothesisResult> tested;  // when it mismatched
  // The golden that judged this window: "float64", or the run's own dtype ("float32",
  // "bfloat16") when the float64 golden failed its self-check on some rank.
  std::string golden_dtype = "float64";
  // The float64 golden's self-check, the largest |golden loss - loop loss| / allowance over
  // its micro-steps and ranks (-1: not checked).
  double self_check_ratio = -1.0;
};

struct WatchJudgement {
  bool judged = false;
  std::string not_judged_reason;  // why the gradients could not be judged
  int64_t world_size = 1;
  int64_t gradient_accumulation_steps = 1;
  int64_t effective_batch = 0;  // samples per optimizer step the loop trained with
  int64_t intended_batch = 0;
  std::vector<WatchedWindowJudgement> windows;
  // Which golden judged, in words ("float64", or "float32: the run's own dtype and kernels"),
  // and, when the float64 golden failed its self-check, where and why (never a diagnosis).
  std::string golden;
  std::string golden_self_check_failed;
  // The gradient coordinates judged, in words, when a sample of them ("" when all).
  std::string coordinates;
  // Rank 0's memory over the first M steps, judged as a scenario's with the default warm-up and
  // window (not judged when no memory was watched, or too few steps).
  MemoryJudgement memory;
  // The first thing found: a named diagnosis, or (no kind) gradients no hypothesis explains.
  std::optional<DiagnosisKind> diagnosis;
  std::string explanation;            // in words, with the fix; empty when nothing was found
  std::vector<std::string> findings;  // every other thing found, in words
  bool found_something() const { return !explanation.empty(); }
};

WatchJudgement judge_watched(const std::vector<RankRecording>& ranks,
                             std::optional<int64_t> intended_batch);

}  // namespace trainrepro
