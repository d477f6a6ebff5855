// DeepSpeed's learning-rate schedulers from the config's "scheduler" block, as the named release
// computes them (runtime/lr_schedules.py): WarmupLR, WarmupDecayLR, WarmupCosineLR. The engine
// steps one at every optimizer step it takes (never on skipped or bypassing steps), after the
// step, so update n uses the rate of iteration n-2: the scheduler starts at iteration -1 and the
// rate it writes at construction is the first update's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace trainrepro {

enum class LrScheduleKind { warmup_lr, warmup_decay_lr, warmup_cosine_lr };
enum class WarmupType { log, linear };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::warmup_lr;
  std::string type_as_written;
  double warmup_min_lr = 0.0;
  // Absent: the optimizer's lr (WarmupLR since 0.19.3); 0.001 for WarmupDecayLR, and for
  // WarmupLR before.
  std::optional<double> warmup_max_lr;
  int64_t warmup_num_steps = 1000;  // as given; DeepSpeed warms up over max(2, this)
  WarmupType warmup_type = WarmupType::log;
  int64_t total_num_steps = 0;     // WarmupDecayLR, WarmupCosineLR
  double warmup_min_ratio = 0.0;   // WarmupCosineLR
  double cos_min_ratio = 0.0001;   // WarmupCosineLR
  bool cosine_progress_clamped = true;  // 0.19.3+: the cosine stays at its floor after the end
};

// The rate the scheduler writes at `iteration` (-1 at construction) for an optimizer whose own
// lr is `optimizer_lr`.
double scheduled_lr(const LrSchedule& schedule, int64_t iteration, double optimizer_lr);

// Everything that determines the rates (for the golden's key and the results file).
nlohmann::json lr_schedule_to_json(const LrSchedule& schedule);

}  // namespace trainrepro
