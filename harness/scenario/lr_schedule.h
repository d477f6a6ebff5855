// DeepSpeed's learning-rate schedulers from the config's "scheduler" block, as the named release
// computes them (runtime/lr_schedules.py): WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle
// (which cycles Adam's beta1 too). The engine
// steps one at every optimizer step it takes (never on skipped or bypassing steps), after the
// step, so update n uses the rate of iteration n-2: the scheduler starts at iteration -1 and the
// rate it writes at construction is the first update's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace trainrepro {

enum class LrScheduleKind { warmup_lr, warmup_decay_lr, warmup_cosine_lr, one_cycle };
enum class WarmupType { log, linear };

// OneCycle: the rate climbs from cycle_min_lr to cycle_max_lr over the first half-cycle and back
// over the second, then decays; with cycle_momentum, Adam's beta1 moves the opposite way between
// cycle_max_mom and cycle_min_mom, and beta2 is set to 0.99 (DeepSpeed writes the pair
// (momentum, 0.99) into the optimizer's "betas", whatever the config's betas were).
struct OneCycleParams {
  double cycle_min_lr = 0.0;  // required
  double cycle_max_lr = 0.0;  // required
  double decay_lr_rate = 0.0;
  double cycle_first_step_size = 2000.0;
  double cycle_second_step_size = 2000.0;  // absent: cycle_first_step_size
  int64_t cycle_first_stair_count = 0;
  int64_t cycle_second_stair_count = 0;  // absent: cycle_first_stair_count
  double decay_step_size = 0.0;
  // False also when the optimizer has no "betas" (torch.optim.SGD): DeepSpeed then warns and
  // leaves the momentum alone.
  bool cycle_momentum = true;
  double cycle_min_mom = 0.8;
  double cycle_max_mom = 0.9;
  double decay_mom_rate = 0.0;
  bool stair_counts_applied = true;  // 0.19.x; 0.16.9 accepts the stair counts and ignores them
};

// Adam's (beta1, beta2) as a scheduler writes them.
struct Betas {
  double beta1 = 0.9;
  double beta2 = 0.999;
};

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::warmup_lr;
  std::string type_as_written;
  double warmup_min_lr = 0.0;
  // Absent: the optimizer's lr (WarmupLR since 0.17.2, PR #7360); 0.001 for WarmupDecayLR, and for
  // WarmupLR before.
  std::optional<double> warmup_max_lr;
  int64_t warmup_num_steps = 1000;  // as given; DeepSpeed warms up over max(2, this)
  WarmupType warmup_type = WarmupType::log;
  int64_t total_num_steps = 0;     // WarmupDecayLR, WarmupCosineLR
  double warmup_min_ratio = 0.0;   // WarmupCosineLR
  double cos_min_ratio = 0.0001;   // WarmupCosineLR
  bool cosine_progress_clamped = true;  // 0.19.3+: the cosine stays at its floor after the end
  // WarmupCosineLR before 0.19.0 (DeepSpeed PR #7969): the rate written at construction reaches
  // the first param group only; the others keep their own lr for the first update. A DeepSpeed
  // bug, not the schedule's meaning: the golden follows the documented schedule (every group
  // from the start rate), so it is left out of the golden's key.
  bool construction_rate_first_group_only = false;
  OneCycleParams one_cycle;             // OneCycle
};

// The rate the scheduler writes at `iteration` (-1 at construction) for an optimizer whose own
// lr is `optimizer_lr`.
double scheduled_lr(const LrSchedule& schedule, int64_t iteration, double optimizer_lr);

// The betas the scheduler writes at `iteration`; none when it leaves them alone (every scheduler
// but OneCycle with cycle_momentum).
std::optional<Betas> scheduled_betas(const LrSchedule& schedule, int64_t iteration);

// Everything that determines the rates (for the golden's key and the results file).
nlohmann::json lr_schedule_to_json(const LrSchedule& schedule);

}  // namespace trainrepro
