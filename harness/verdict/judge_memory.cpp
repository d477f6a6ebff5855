#include "harness/verdict/judge_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/memory/cuda_memory.h"
#include "harness/memory/host_memory.h"

namespace trainrepro {
namespace {

std::string with_thousands(int64_t value) {
  std::string digits = std::to_string(value);
  for (int64_t i = static_cast<int64_t>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

std::string rate(double bytes_per_step) { return format_bytes(bytes_per_step) + "/step"; }

// "; at this rate the 23 GiB of RAM run out at step ~3,100,000"
std::string project_out_of_memory(MemoryJudgement& judgement, double bytes_per_step, int64_t used,
                                  int64_t last_step, const char* device_memory) {
  if (bytes_per_step <= 0.0 || judgement.capacity_bytes <= 0) return "";
  const double steps_left = (judgement.capacity_bytes - used) / bytes_per_step;
  const int64_t step = last_step + static_cast<int64_t>(std::max(0.0, steps_left));
  if (!judgement.out_of_memory_step || step < *judgement.out_of_memory_step) {
    judgement.out_of_memory_step = step;
  }
  return "; at this rate the " + format_bytes(static_cast<double>(judgement.capacity_bytes)) +
         " of " + device_memory + " run out at step ~" + with_thousands(step);
}

}  // namespace

MemoryJudgement judge_memory(const Scenario& scenario, const Plan& plan, const Trace& trace) {
  MemoryJudgement judgement;
  const MemorySpec& spec = scenario.memory;
  const bool cuda = plan.device == Device::cuda;
  judgement.warmup_steps = spec.warmup_steps;
  judgement.window = spec.window;
  judgement.tensor_threshold = spec.tensor_threshold;
  judgement.host_threshold = spec.host_threshold;
  judgement.budget_peak_bytes = spec.budget_peak_bytes;
  judgement.evaluation_peak_bytes = trace.evaluation_peak_bytes;
  judgement.evaluation_peak_bytes_no_grad = trace.evaluation_peak_bytes_no_grad;
  judgement.capacity_bytes = cuda ? cuda_device_capacity_bytes(0) : physical_ram_bytes();

  std::vector<double> tensor, host, reserved;
  int64_t last_step = 0, last_used = 0;
  for (const MemorySample& sample : trace.memory) {
    judgement.peak_tensor_bytes =
        std::max(judgement.peak_tensor_bytes,
                 cuda ? sample.cuda_peak_allocated_bytes : sample.cpu_tensor_peak_bytes);
    if (sample.point != SamplePoint::boundary) continue;
    ++judgement.boundaries;
    if (sample.optimizer_step <= spec.warmup_steps) continue;
    tensor.push_back(
        static_cast<double>(cuda ? sample.cuda_allocated_bytes : sample.cpu_tensor_bytes));
    host.push_back(static_cast<double>(sample.host_heap_bytes - sample.cpu_tensor_bytes));
    reserved.push_back(static_cast<double>(sample.cuda_reserved_bytes));
    last_step = sample.optimizer_step;
    last_used = cuda ? sample.cuda_reserved_bytes : sample.resident_bytes;
  }

  if (judgement.evaluation_peak_bytes_no_grad > 0 &&
      judgement.evaluation_peak_bytes > judgement.evaluation_peak_bytes_no_grad) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1f",
                  static_cast<double>(judgement.evaluation_peak_bytes) /
                      judgement.evaluation_peak_bytes_no_grad);
    judgement.notes += std::string("evaluation without no_grad peaks at ") + ratio +
                       "x the tensor memory of the same evaluation under no_grad (" +
                       format_bytes(judgement.evaluation_peak_bytes) + " vs " +
                       format_bytes(judgement.evaluation_peak_bytes_no_grad) + ")";
  }

  if (spec.budget_peak_bytes && judgement.peak_tensor_bytes > *spec.budget_peak_bytes) {
    judgement.diagnoses.push_back(DiagnosisKind::memory_over_budget);
    judgement.explanations.push_back(
        "peak live tensor memory " + format_bytes(judgement.peak_tensor_bytes) +
        " exceeds the budget " + format_bytes(*spec.budget_peak_bytes) +
        " (memory.budget_peak_bytes)");
  }

  if (static_cast<int64_t>(tensor.size()) < spec.window) {
    judgement.not_judged_reason =
        "too few steps for a leak verdict: " + std::to_string(tensor.size()) +
        " boundaries after " + std::to_string(spec.warmup_steps) +
        " warm-up steps, a window needs " + std::to_string(spec.window) +
        " (run more loop.steps to judge memory)";
    return judgement;
  }
  judgement.judged = true;
  judgement.tensor = growth_trend(tensor, spec.window);
  judgement.host = growth_trend(host, spec.window);
  if (cuda) judgement.cuda_reserved = growth_trend(reserved, spec.window);
  judgement.surviving =
      describe_surviving_allocations(trace.live_at_end, spec.warmup_steps + 1, last_step);

  const bool tensor_leak = judgement.tensor.bytes_per_step > spec.tensor_threshold &&
                           judgement.tensor.grows_in_every_window;
  const bool host_leak =
      judgement.host.bytes_per_step > spec.host_threshold && judgement.host.grows_in_every_window;
  const std::string where = " over boundaries " + std::to_string(spec.warmup_steps + 1) + "…" +
                            std::to_string(last_step) + ", growing in every window of " +
                            std::to_string(spec.window);
  if (tensor_leak) {
    judgement.diagnoses.push_back(DiagnosisKind::tensor_memory_leak);
    judgement.explanations.push_back(
        "live tensor memory grows by " + rate(judgement.tensor.bytes_per_step) + where + ": " +
        judgement.surviving +
        ". Something keeps every step's tensors alive: outputs or losses kept with their graphs, "
        "or an evaluation loss summed as a tensor without no_grad. Fix: keep loss.item(), or "
        "detach and move to the CPU what you must keep; evaluate under no_grad" +
        project_out_of_memory(judgement, judgement.tensor.bytes_per_step, last_used, last_step,
                              cuda ? "GPU memory" : "RAM"));
  }
  if (host_leak) {
    judgement.diagnoses.push_back(DiagnosisKind::host_memory_leak);
    judgement.explanations.push_back(
        "the host heap grows by " + rate(judgement.host.bytes_per_step) + where +
        ", while live tensor memory grows by " + rate(judgement.tensor.bytes_per_step) + " (" +
        judgement.surviving +
        "): each step leaves its autograd graph alive — a loss or output kept after backward() "
        "holds the graph's nodes on the host heap even though backward freed its activations. "
        "Fix: keep loss.item() (or loss.detach()), not the loss" +
        project_out_of_memory(judgement, judgement.host.bytes_per_step, last_used, last_step,
                              cuda ? "host RAM" : "RAM"));
  }
  if (cuda && judgement.cuda_reserved.grows_in_every_window && !tensor_leak) {
    judgement.notes += std::string(judgement.notes.empty() ? "" : "; ") +
                       "CUDA reserved memory grows by " +
                       rate(judgement.cuda_reserved.bytes_per_step) +
                       " while allocated memory stays flat: the caching allocator's cache "
                       "grows or fragments; this is not a leak";
  }
  return judgement;
}

}  // namespace trainrepro
