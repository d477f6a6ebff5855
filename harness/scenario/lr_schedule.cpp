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

// OneCycle's place in its cycle when its last_batch_iteration is `iteration`: 0 at the
// bottom, 1 at the peak. Like DeepSpeed's _get_scale_factor it looks one batch ahead.
double one_cycle_scale(const OneCycleParams& cycle, int64_t iteration) {
  const double batch = static_cast<double>(iteration + 1);
  const double first = cycle.cycle_first_step_size;
  const double second = cycle.cycle_second_step_size;
  const double total = first + second;
  const double step_ratio = first / total;
  const double x = 1.0 + batch / total - std::floor(1.0 + batch / total);
  const bool rising = x <= step_ratio;
  double scale = rising ? x / step_ratio : (x - 1.0) / (step_ratio - 1.0);
  // Stairs hold the rate flat over equal parts of each half, counted from the integer offset.
  const int64_t stairs = rising ? cycle.cycle_first_stair_count : cycle.cycle_second_stair_count;
  if (cycle.stair_counts_applied && stairs > 0) {
    const double offset = std::fmod(batch, total);
    const double position = offset <= first ? offset * static_cast<double>(stairs) / first
                                            : (total - offset) * static_cast<double>(stairs) / second;
    scale = std::floor(position) / static_cast<double>(stairs);
  }
  return scale;
}

bool past_the_cycle(const OneCycleParams& cycle, int64_t iteration) {
  return static_cast<double>(iteration) >=
         cycle.cycle_first_step_size + cycle.cycle_second_step_size;
}

// Batches since the cycle ended, in decay intervals (the decay's "decay_interval").
double decay_intervals(const OneCycleParams& cycle, int64_t iteration) {
  const double since_end = static_cast<double>(iteration) -
                           (cycle.cycle_first_step_size + cycle.cycle_second_step_size) + 1.0;
  return since_end / cycle.decay_step_size;
}

double one_cycle_lr(const OneCycleParams& cycle, int64_t iteration) {
  if (iteration < 0) return cycle.cycle_min_lr;  // written at construction
  if (!past_the_cycle(cycle, iteration)) {
    return cycle.cycle_min_lr +
           (cycle.cycle_max_lr - cycle.cycle_min_lr) * one_cycle_scale(cycle, iteration);
  }
  if (cycle.decay_step_size == 0.0 || cycle.decay_lr_rate == 0.0) return cycle.cycle_min_lr;
  return cycle.cycle_min_lr / (1.0 + cycle.decay_lr_rate * decay_intervals(cycle, iteration));
}

// DeepSpeed pairs every momentum with beta2 = 0.99.
constexpr double kOneCycleBeta2 = 0.99;

}  // namespace

std::optional<Betas> scheduled_betas(const LrSchedule& schedule, int64_t iteration) {
  const OneCycleParams& cycle = schedule.one_cycle;
  if (schedule.kind != LrScheduleKind::one_cycle || !cycle.cycle_momentum) return std::nullopt;
  // At construction the bottom of the range, cycle_min_mom; from the first step on, the cycle
  // starts at its top.
  if (iteration < 0) return Betas{cycle.cycle_min_mom, kOneCycleBeta2};
  if (!past_the_cycle(cycle, iteration)) {
    const double scale = one_cycle_scale(cycle, iteration);
    return Betas{cycle.cycle_max_mom - (cycle.cycle_max_mom - cycle.cycle_min_mom) * scale,
                 kOneCycleBeta2};
  }
  if (cycle.decay_step_size == 0.0 || cycle.decay_mom_rate == 0.0) {
    return Betas{cycle.cycle_max_mom, kOneCycleBeta2};
  }
  return Betas{cycle.cycle_max_mom * (1.0 + cycle.decay_mom_rate * decay_intervals(cycle, iteration)),
               kOneCycleBeta2};
}

double scheduled_lr(const LrSchedule& schedule, int64_t iteration, double optimizer_lr) {
  if (schedule.kind == LrScheduleKind::one_cycle) return one_cycle_lr(schedule.one_cycle, iteration);
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
  if (schedule.kind == LrScheduleKind::one_cycle) {
    const OneCycleParams& cycle = schedule.one_cycle;
    return {{"type", schedule.type_as_written},
            {"cycle_min_lr", cycle.cycle_min_lr},
            {"cycle_max_lr", cycle.cycle_max_lr},
            {"decay_lr_rate", cycle.decay_lr_rate},
            {"cycle_first_step_size", cycle.cycle_first_step_size},
            {"cycle_second_step_size", cycle.cycle_second_step_size},
            {"cycle_first_stair_count", cycle.cycle_first_stair_count},
            {"cycle_second_stair_count", cycle.cycle_second_stair_count},
            {"decay_step_size", cycle.decay_step_size},
            {"cycle_momentum", cycle.cycle_momentum},
            {"cycle_min_mom", cycle.cycle_min_mom},
            {"cycle_max_mom", cycle.cycle_max_mom},
            {"decay_mom_rate", cycle.decay_mom_rate},
            {"stair_counts_applied", cycle.stair_counts_applied}};
  }
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
