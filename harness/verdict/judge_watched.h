// Judges a watched script (harness/watch/watch_recording.h) as a scenario is judged, into the
// same plain data: each watched window an optimizer step (StepJudgement) against the golden, a
// forward and backward over all of that window's micro-batches on every rank at the window's
// start weights (in the run's own dtype and kernels, or in float64), summed in float64 on the
// judged coordinates; a mismatch explained by the hypotheses of harness/verdict/diagnosis.h,
// each predicted from the same pieces (a loss divided twice, not at all, gradients zeroed
// inside the window, the optimizer stepped by the loop, the token mean taken per micro-batch,
// the boundary reached once per window) and worded by the one table (diagnosis_wording.h); rank
// 0's memory by the scenario's memory judge; and the batch the loop trains with against the one
// the user intends.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/verdict/memory_judgement.h"
#include "harness/verdict/training_judgement.h"
#include "harness/verdict/watched_judgement.h"
#include "harness/watch/watch_recording.h"

namespace trainrepro {

// `training` gets one step per judged window (none when no window was watched) and, when a
// window mismatched, the first such window's diagnosis carrying the first thing found;
// `memory` rank 0's memory judged with a scenario's default warm-up and window.
WatchedJudgement judge_watched(const std::vector<RankRecording>& ranks,
                               std::optional<int64_t> intended_batch, TrainingJudgement& training,
                               MemoryJudgement& memory);

}  // namespace trainrepro
