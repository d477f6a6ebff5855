// How many optimizer steps a memory verdict needs. The loader runs that many by default (every
// scenario that trains gets a memory verdict) and the memory judge says the same count when a
// run falls short, so both read it from here.
#pragma once
#include <cstdint>
#include <optional>

#include "harness/scenario/scenario.h"

namespace trainrepro {

// A verdict needs two windows at least: with one, a single step that left something alive (a
// buffer another thread frees a moment later, one change of level) would decide, and "growth in
// every window" could not tell a step change from a leak. Two windows of W birth steps after
// the warm-up take 2W + 1 boundaries (the last boundary's births are the loop's live variables).
// Measured 2026-12-04: a correct watched script, 16 steps and one window, was called leaking
// once in 16 runs for one 4 B scalar born in the last judged step.
constexpr int64_t kWindowsToJudgeMemory = 2;
inline int64_t boundaries_to_judge_memory(int64_t window) {
  return kWindowsToJudgeMemory * window + 1;
}

// A leak that recurs every k steps (an evaluation every k) shows only in windows that span k
// steps: a window of W boundaries spans W - 1 steps, so it widens to k + 1.
int64_t memory_judging_window(const MemorySpec& memory,
                              const std::optional<EvaluationSpec>& evaluation);

// Warm-up plus two windows: 22 optimizer steps with the defaults (5 + 2 x 8 + 1).
int64_t steps_to_judge_memory(const MemorySpec& memory,
                              const std::optional<EvaluationSpec>& evaluation);

}  // namespace trainrepro
