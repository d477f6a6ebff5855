#include "harness/scenario/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace trainrepro {
namespace {

// The warm-up fraction at `iteration` < W: log(i + 1) / log(W), or i / W.
double warmup_fraction(const LrSchedule& schedule, int64_t iteration, int64_t warmup) {
  const double i = static_cast<double>(iteration);
  return schedule.warmup_type == WarmupType::log
             ? std::log(i + 1.0) / std::log(static_cast<double>(warmup))
             : i / static_cast<double>(warmup);
}

}  // namespace

double scheduled_lr(const LrSchedule& schedule, int64_t iteration, double optimizer_lr) {
  const int64_t warmup = std::max<int64_t>(2, schedule.warmup_num_steps);
  if (schedule.kind == LrScheduleKind::warmup_cosine_lr) {
    if (iteration < 0) return 0.0;
    double ratio = 0.0;
    if (iteration < warmup) {
      ratio = schedule.warmup_min_ratio +
              warmup_fraction(schedule, iteration, warmup) * (1.0 - schedule.warmup_min_ratio);
    } else {
      const double done = static_cast<double>(iteration - warmup + 1);
      double span = static_cast<double>(schedule.total_num_steps - warmup);
      double progress = done / span;
      if (schedule.cosine_progress_clamped) {  // at least one step, never past the end
        span = std::max(1.0, span);
        progress = std::min(1.0, done / span);
      }
      const double cosine = (1.0 + std::cos(M_PI * progress)) / 2.0;
      ratio = std::max(0.0, schedule.cos_min_ratio + (1.0 - schedule.cos_min_ratio) * cosine);
    }
    return optimizer_lr * ratio;
  }
  const double min_lr = schedule.warmup_min_lr;
  const double max_lr = schedule.warmup_max_lr.value_or(optimizer_lr);
  if (iteration < 0) return min_lr;
  double gamma = 1.0;
  if (iteration < warmup) {
    gamma = warmup_fraction(schedule, iteration, warmup);
  } else if (schedule.kind == LrScheduleKind::warmup_decay_lr) {
    gamma = std::max(0.0, static_cast<double>(schedule.total_num_steps - iteration) /
                              std::max(1.0, static_cast<double>(schedule.total_num_steps - warmup)));
  }
  return min_lr + (max_lr - min_lr) * gamma;
}

nlohmann::json lr_schedule_to_json(const LrSchedule& schedule) {
  nlohmann::json json = {
      {"type", schedule.type_as_written},
      {"warmup_num_steps", schedule.warmup_num_steps},
      {"warmup_type", schedule.warmup_type == WarmupType::log ? "log" : "linear"},
  };
  if (schedule.kind == LrScheduleKind::warmup_cosine_lr) {
    json["total_num_steps"] = schedule.total_num_steps;
    json["warmup_min_ratio"] = schedule.warmup_min_ratio;
    json["cos_min_ratio"] = schedule.cos_min_ratio;
    json["cosine_progress_clamped"] = schedule.cosine_progress_clamped;
    return json;
  }
  json["warmup_min_lr"] = schedule.warmup_min_lr;
  json["warmup_max_lr"] =
      schedule.warmup_max_lr ? nlohmann::json(*schedule.warmup_max_lr) : nlohmann::json("optimizer lr");
  if (schedule.kind == LrScheduleKind::warmup_decay_lr) {
    json["total_num_steps"] = schedule.total_num_steps;
  }
  return json;
}

}  // namespace trainrepro
