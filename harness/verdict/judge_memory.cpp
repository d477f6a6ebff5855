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
                                  int64_t capacity, int64_t last_step, const char* device_memory) {
  if (bytes_per_step <= 0.0 || capacity <= 0) return "";
  const double steps_left = (capacity - used) / bytes_per_step;
  const int64_t step = last_step + static_cast<int64_t>(std::max(0.0, steps_left));
  if (!judgement.out_of_memory_step || step < *judgement.out_of_memory_step) {
    judgement.out_of_memory_step = step;
  }
  return "; at this rate the " + format_bytes(static_cast<double>(capacity)) +
         " of " + device_memory + " run out at step ~" + with_thousands(step);
}

std::string window_reason(const Scenario& scenario, int64_t window) {
  if (window == scenario.memory.window) return " (memory.window)";
  return " (memory.window " + std::to_string(scenario.memory.window) +
         ", widened to span the evaluation every " +
         std::to_string(scenario.loop.evaluation->every) + " steps)";
}

// "live tensor memory grows by 24 B/step (3 allocations/step survive), the host heap by …"
std::string describe_leak_measurement(const MemoryJudgement& judgement, bool cuda) {
  char allocations[64];
  std::snprintf(allocations, sizeof allocations, "%.3g", judgement.survivors.allocations_per_step);
  std::string text = "live tensor memory grows by " + rate(judgement.tensor.bytes_per_step);
  if (!cuda) {
    text += " (" + std::string(allocations) + " allocations/step survive), the host heap " +
            "beyond tensors by " + rate(judgement.host.bytes_per_step);
  }
  if (judgement.autograd_nodes.grows_in_every_window) {
    char nodes[64];
    std::snprintf(nodes, sizeof nodes, "%.3g", judgement.autograd_nodes.bytes_per_step);
    text += ", the autograd graph the loop keeps by " + std::string(nodes) + " nodes/step";
  }
  return text;
}

// Each habit that keeps memory, with its own mechanism and fix. The measurement decided that
// there is a leak; the scenario's loop says which of the user's lines it comes from.
std::string explain_leak_by_habit(const LoopSpec& loop, bool graph_kept) {
  switch (loop.keep) {
    case KeepHabit::loss_with_graph:
      return "The loop keeps the loss tensor every step: backward() freed its activations, but "
             "the loss still holds its autograd graph's nodes on the host heap. Fix: keep "
             "loss.item()";
    case KeepHabit::loss_detached:
      return "The loop keeps loss.detach() every step: no graph, but one tensor per step (its "
             "storage and its TensorImpl) stays alive for the whole run. Fix: keep loss.item()";
    case KeepHabit::loss_on_cpu:
      return "The loop keeps loss.detach().cpu() every step: off the device, but one CPU tensor "
             "per step stays alive in host memory for the whole run. Fix: keep loss.item()";
    case KeepHabit::outputs_with_graph:
      return "The loop keeps the model's outputs every step with their autograd graph: their "
             "tensors and the graph's nodes stay alive. Fix: keep what you need as numbers "
             "(.item(), or .detach().cpu() of a reduced value), or drop them";
    case KeepHabit::outputs_detached:
      return "The loop keeps outputs.detach() every step: the graph is gone, but every step's "
             "outputs stay on the device. Fix: keep numbers derived from them, or move them off "
             "the device and bound the list";
    case KeepHabit::outputs_on_cpu:
      return "The loop keeps outputs.detach().cpu() every step: off the device, but every "
             "step's outputs stay in host memory for the whole run. Fix: keep numbers derived "
             "from them, or bound the list";
    case KeepHabit::gathered_parameters:
      return "The loop keeps gathered full parameters beyond the step they were gathered for. "
             "Fix: keep their norms or values as numbers";
    case KeepHabit::nothing:
    case KeepHabit::loss_item:
    case KeepHabit::gathered_parameter_norms:
      break;
  }
  const auto& evaluation = loop.evaluation;
  if (evaluation && !evaluation->no_grad && evaluation->sum_as_tensor) {
    return "The evaluation sums its loss as a tensor without torch.no_grad(): every evaluation's "
           "graph, activations included, stays reachable from the running sum. Fix: evaluate "
           "under torch.no_grad() and add loss.item()";
  }
  return graph_kept ? "Something keeps every step's autograd graph alive (a loss or an output "
                      "kept after backward()). Fix: keep loss.item(), never the loss"
                    : "Something keeps every step's tensors alive. Fix: keep numbers "
                      "(loss.item()), not tensors, across steps";
}

}  // namespace

MemoryJudgement judge_memory(const Scenario& scenario, const Plan& plan, const Trace& trace) {
  MemoryJudgement judgement;
  MemorySpec spec = scenario.memory;
  const bool cuda = plan.device == Device::cuda;
  // The warm-up counts from the first update applied: windows skipped in fp16 loss-scale
  // calibration create no optimizer state, which the first applied step then allocates.
  int64_t skipped_first = 0;
  while (skipped_first < static_cast<int64_t>(trace.steps.size()) &&
         trace.steps[static_cast<size_t>(skipped_first)].skipped) {
    ++skipped_first;
  }
  // A run that skips every window (a static scale too high, a scale pinned at its
  // minimum) never allocates optimizer state: its skipping is the steady state, judged as is.
  if (skipped_first == static_cast<int64_t>(trace.steps.size())) skipped_first = 0;
  spec.warmup_steps += skipped_first;
  judgement.warmup_steps = spec.warmup_steps;
  judgement.window = memory_judging_window(scenario.memory, scenario.loop.evaluation);
  judgement.tensor_bookkeeping_bytes = trace.tensor_bookkeeping_bytes;
  judgement.budget_peak_bytes = spec.budget_peak_bytes;
  judgement.evaluation_peak_bytes = trace.evaluation_peak_bytes;
  judgement.evaluation_peak_bytes_no_grad = trace.evaluation_peak_bytes_no_grad;
  judgement.capacity_bytes = cuda ? cuda_device_capacity_bytes() : physical_ram_bytes();
  if (!trace.memory_not_measured.empty()) {
    judgement.not_judged_reason = "memory not judged: " + trace.memory_not_measured;
    return judgement;
  }

  std::vector<double> tensor, host, reserved, autograd_nodes;
  int64_t last_step = 0, last_used = 0, last_host_resident = 0;
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
    if (sample.autograd_nodes >= 0) autograd_nodes.push_back(static_cast<double>(sample.autograd_nodes));
    last_step = sample.optimizer_step;
    last_used = cuda ? sample.cuda_reserved_bytes : sample.resident_bytes;
    last_host_resident = sample.resident_bytes;
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

  // Opting out spares the leak verdict only: a peak budget the scenario sets is still judged.
  if (!spec.judge) {
    judgement.not_judged_reason = "memory not judged: " + spec.reason + " (memory.judge is false)";
    judgement.opted_out = true;
    return judgement;
  }
  const int64_t needed = boundaries_to_judge_memory(judgement.window);
  if (static_cast<int64_t>(tensor.size()) < needed) {
    judgement.not_judged_reason =
        "memory not judged: " + std::to_string(tensor.size()) + " boundaries after " +
        std::to_string(spec.warmup_steps) + " warm-up steps, and two windows of " +
        std::to_string(judgement.window) + window_reason(scenario, judgement.window) +
        " need " + std::to_string(needed) + "; run at least " +
        std::to_string(spec.warmup_steps + needed) + " loop.steps to judge memory" +
        (skipped_first > 0 ? " (the first " + std::to_string(skipped_first) +
                                 " windows, skipped by fp16's loss scale, count as warm-up)"
                           : "");
    return judgement;
  }
  judgement.judged = true;
  judgement.tensor = growth_trend(tensor, judgement.window);
  judgement.host = growth_trend(host, judgement.window);
  if (cuda) judgement.cuda_reserved = growth_trend(reserved, judgement.window);
  if (autograd_nodes.size() == tensor.size()) {
    judgement.autograd_nodes = growth_trend(autograd_nodes, judgement.window);
  }
  const int64_t first_step = spec.warmup_steps + 1;
  judgement.surviving = describe_surviving_allocations(trace.live_at_end, first_step, last_step);
  judgement.survivors =
      count_survivors_by_step(trace.live_at_end, first_step, last_step, judgement.window);

  // A leak is a step that leaves allocations alive, in every window: the counting CPU allocator
  // knows each CPU survivor's birth step; CUDA's allocator does not, so there live bytes must
  // grow in every window. On a CUDA run the CPU survivors count too: tensors moved off the
  // device (outputs.detach().cpu()) and kept still pile up, in host memory. Bytes per step are
  // reported, never thresholded.
  const bool device_leak =
      cuda && judgement.tensor.grows_in_every_window && judgement.tensor.bytes_per_step > 0.0;
  const bool host_tensor_leak = cuda && !device_leak && judgement.survivors.in_every_window;
  const bool leak = cuda ? device_leak || host_tensor_leak : judgement.survivors.in_every_window;
  if (cuda && judgement.cuda_reserved.grows_in_every_window && !leak) {
    judgement.notes += std::string(judgement.notes.empty() ? "" : "; ") +
                       "CUDA reserved memory grows by " +
                       rate(judgement.cuda_reserved.bytes_per_step) +
                       " while allocated memory stays flat: the caching allocator's cache "
                       "grows or fragments; this is not a leak";
  }
  if (!leak) return judgement;
  const std::string where = " over boundaries " + std::to_string(first_step) + "…" +
                            std::to_string(last_step) + ", in every window of " +
                            std::to_string(judgement.window);
  // Every leak found on the CPU keeps tensors (survivors are how it is found). A kept loss or
  // output also keeps the autograd graph that made it, whose nodes are not tensors but live on
  // the host heap: counted at every boundary from what the loop holds (autograd_graph.h), a
  // graph that grows in every window makes the leak a host_memory_leak first.
  const bool graph_kept = !cuda && judgement.autograd_nodes.grows_in_every_window &&
                          judgement.autograd_nodes.bytes_per_step > 0.0;
  const char* device_memory = cuda && !host_tensor_leak ? "GPU memory" : "RAM";
  const std::string measured = describe_leak_measurement(judgement, cuda && !host_tensor_leak) +
                               (host_tensor_leak ? " on the GPU, while CPU tensors survive" : "") +
                               where + ": " +
                               judgement.surviving + ". " +
                               explain_leak_by_habit(scenario.loop, graph_kept);
  if (graph_kept) {
    judgement.diagnoses.push_back(DiagnosisKind::host_memory_leak);
    judgement.explanations.push_back(measured +
                                     project_out_of_memory(judgement, judgement.host.bytes_per_step,
                                                           last_used, judgement.capacity_bytes,
                                                           last_step, device_memory));
  }
  judgement.diagnoses.push_back(DiagnosisKind::tensor_memory_leak);
  // CPU tensors kept by a CUDA run grow RAM by what survives, not by the device's trend.
  const double growth = host_tensor_leak ? judgement.survivors.bytes_per_step
                                         : judgement.tensor.bytes_per_step;
  const std::string out_of_memory =
      host_tensor_leak
          ? project_out_of_memory(judgement, growth, last_host_resident, physical_ram_bytes(),
                                  last_step, device_memory)
          : project_out_of_memory(judgement, growth, last_used, judgement.capacity_bytes,
                                  last_step, device_memory);
  judgement.explanations.push_back(
      (graph_kept ? "the kept tensors themselves: live tensor memory grows by " +
                        rate(judgement.tensor.bytes_per_step)
                  : measured) +
      out_of_memory);
  return judgement;
}

}  // namespace trainrepro
