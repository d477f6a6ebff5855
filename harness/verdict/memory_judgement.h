// The judgement of a run's memory, as plain data: the growth of live tensor memory and of the
// host heap over the boundaries after warm-up, the verdict, what is alive, the projected
// out-of-memory step, the peak against a budget, and the evaluation's peak against no_grad.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/memory/leak_analysis.h"
#include "harness/scenario/expectation.h"
#include "harness/scenario/memory_judging_steps.h"

namespace trainrepro {

struct MemoryJudgement {
  bool judged = false;
  std::string not_judged_reason;  // e.g. too few steps for a window after warm-up
  bool opted_out = false;         // the scenario's memory.judge is false (its reason above)
  int64_t boundaries = 0;
  int64_t warmup_steps = 0;
  int64_t window = 0;
  GrowthTrend tensor;  // live tensor bytes on the run's device
  GrowthTrend host;    // host heap in use, minus CPU tensor bytes
  GrowthTrend cuda_reserved;
  // Autograd nodes the loop's tensors keep alive, per boundary (its "bytes_per_step" counts
  // nodes); windows 0 where the engine did not count them.
  GrowthTrend autograd_nodes;
  SurvivorCount survivors;  // CPU: allocations alive at the end, by the step that made them
  int64_t tensor_bookkeeping_bytes = 0;  // host heap one kept tensor costs beyond its data
  // Leaks and the budget, each with its explanation. Tensor and host leaks can both be found:
  // outputs kept with their graph grow tensor memory and the host heap at once.
  std::vector<DiagnosisKind> diagnoses;
  std::vector<std::string> explanations;
  std::string surviving;  // what is alive, grouped by size and birth step
  int64_t peak_tensor_bytes = 0;
  std::optional<int64_t> budget_peak_bytes;
  int64_t capacity_bytes = 0;  // RAM, or GPU memory
  std::optional<int64_t> out_of_memory_step;
  int64_t evaluation_peak_bytes = 0;
  int64_t evaluation_peak_bytes_no_grad = 0;
  std::string notes;  // evaluation peak ratio, CUDA cache growth: facts that are not failures
};

}  // namespace trainrepro
