// Which setting explains a mismatch that no accumulation hypothesis explains: low-precision
// accumulation, DeepSpeed's optimizer step at initialization, the learning-rate schedule, Lamb
// over ZeRO partitions, a loss scale raised before unscaling.
#include "harness/verdict/training_findings.h"

#include <algorithm>
#include <cmath>

#include "harness/verdict/diagnosis_wording.h"

namespace trainrepro::training_findings {

// No fault hypothesis explains a mixed-precision mismatch. When the run is nearer the golden
// than every fault tested, its semantics are DeepSpeed's and the extra error is rounding: with
// gradients accumulated in fp16/bf16 across micro-steps, that is the accumulation.
void diagnose_low_precision_accumulation(const Plan& plan, const Trace& trace, const Golden& golden,
                                         int64_t step, double noise, Diagnosis& diagnosis) {
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  if (gas <= 1 || plan.mixed.accumulate_in_fp32) return;
  const double error =
      gradients_relative_error(trace.steps[step].gradients, golden.steps[step].gradients);
  for (const HypothesisResult& tested : diagnosis.tested) {
    if (tested.relative_error <= error) return;
  }
  diagnosis.kind = DiagnosisKind::low_precision_accumulation;
  diagnosis.explanation = explain_low_precision_accumulation(
      error, noise, gas, precision_name(plan.precision), plan.zero_stage, plan.deepspeed_version);
}

// Whether FP16_Optimizer's zero-gradient step at construction leaves a trace: Adam's step count
// always; SGD only through weight decay (a momentum buffer seeded with zeros then takes the first
// gradient whole, as an empty one would, unless dampening scales it); Lamb through its bias
// correction or weight decay (its update of zero moments is otherwise zero).
bool initialization_step_changes_training(const Plan& plan) {
  if (!plan.mixed.optimizer_steps_at_initialization) return false;
  const OptimizerConfig& optimizer = plan.optimizer;
  switch (optimizer.kind) {
    case OptimizerKind::sgd:
      return optimizer.weight_decay != 0.0 ||
             (optimizer.momentum != 0.0 && optimizer.dampening != 0.0);
    case OptimizerKind::lamb:
      return optimizer.bias_correction || optimizer.weight_decay != 0.0;
    default:
      return true;
  }
}

// FP16_Optimizer's zero-gradient step at construction (precision_config.h): every update after
// it differs from the golden's, by a factor the optimizer's settings give for the first one.
void diagnose_initialization_step(const Plan& plan, Diagnosis& diagnosis) {
  diagnosis.kind = DiagnosisKind::optimizer_stepped_at_initialization;
  const OptimizerConfig& optimizer = plan.optimizer;
  std::string effect;
  if (optimizer.kind == OptimizerKind::sgd) {
    effect = "with SGD the weight decay shrank the master weights once and seeded the momentum";
  } else if (optimizer.kind == OptimizerKind::lamb) {
    effect =
        std::string("Lamb's step count started at 1") +
        (optimizer.bias_correction ? " (so every step used the bias correction of the next)" : "") +
        (optimizer.weight_decay > 0.0
             ? ", and its weight decay, scaled by a trust ratio of up to max_coeff, shrank "
               "the float32 master weights once"
             : std::string());
  } else {
    const double first_update =
        std::sqrt(1.0 + optimizer.beta2) / (1.0 + optimizer.beta1);  // Adam at step 2, m1 = 0
    effect =
        "Adam's step count started at 1, so the first real update used the bias "
        "correction of step 2 (" +
        format_number(first_update) + "x the intended size for betas " +
        format_number(optimizer.beta1) + ", " + format_number(optimizer.beta2) + ")" +
        (optimizer.weight_decay > 0.0 ? ", and weight decay shrank the float32 master "
                                        "weights once"
                                      : std::string());
  }
  diagnosis.explanation =
      "DeepSpeed " + plan.deepspeed_version + "'s FP16_Optimizer (ZeRO stage 0 with " +
      precision_name(plan.precision) +
      ") stepped the optimizer once with zero gradients when deepspeed.initialize built it "
      "(initialize_optimizer_states): " +
      effect +
      "; every later step inherits it. This is DeepSpeed's behaviour, not the loop's (upstream "
      "PR #5104 \"Remove optimizer step on initialization\", released in 0.13.2, removed it "
      "from ZeRO stages 1-3 and BF16_Optimizer only). ZeRO stages 1-3 and BF16_Optimizer do "
      "not do it: ZeRO stage 1 gives the intended updates";
}

// The learning rate of optimizer step `step` against the config's schedule. The correct loop
// leaves the scheduler to the engine, which steps it once per optimizer step it takes; the
// hypothesis: the loop also called lr_scheduler.step() after every micro-batch before it.
void diagnose_learning_rate(const Plan& plan, const Trace& trace, int64_t step,
                            Diagnosis& diagnosis) {
  if (!plan.lr_schedule) return;
  const LrSchedule& schedule = *plan.lr_schedule;
  int64_t engine_steps = 0;  // scheduler steps the engine took before this optimizer step
  for (int64_t k = 0; k < step; ++k) {
    if (trace.steps[k].through_engine && !trace.steps[k].skipped) ++engine_steps;
  }
  const OptimizerStepRecord& record = trace.steps[step];
  const auto same = [](double a, double b) {
    return std::abs(a - b) <= 1e-12 * std::max({std::abs(a), std::abs(b), 1e-300});
  };
  const int64_t correct_iteration = engine_steps - 1;
  const double intended = scheduled_lr(schedule, correct_iteration, plan.optimizer.lr);
  if (same(record.lr, intended)) return;
  const int64_t loop_steps = record.micro_step - 1;  // after each earlier micro-batch
  const double with_loop =
      scheduled_lr(schedule, correct_iteration + loop_steps, plan.optimizer.lr);
  std::string text = "optimizer step " + std::to_string(step) + " used learning rate " +
                     format_number(record.lr) + ", where the config's " + schedule.type_as_written +
                     " gives " + format_number(intended) + " for it";
  if (!same(record.lr, with_loop)) {
    diagnosis.explanation = text + "; " + diagnosis.explanation;
    return;
  }
  const int64_t gas = plan.batch.gradient_accumulation_steps;
  const int64_t per_step = gas + 1;
  diagnosis.kind = DiagnosisKind::lr_scheduler_stepped_every_micro_step;
  DiagnosisFacts facts;
  facts.step = step;
  facts.window_steps = gas;
  facts.scheduler_steps_per_step = per_step;
  facts.lead = text + ": the scheduler had been stepped " +
               std::to_string(correct_iteration + loop_steps + 1) + " times, not " +
               std::to_string(correct_iteration + 1);
  if (schedule.kind == LrScheduleKind::one_cycle) {
    const double cycle =
        schedule.one_cycle.cycle_first_step_size + schedule.one_cycle.cycle_second_step_size;
    const double steps = std::ceil(cycle / static_cast<double>(per_step));
    facts.schedule_effect = ": its cycle of " + format_number(cycle) + " steps ends after about " +
                            format_number(steps) +
                            (steps == 1.0 ? " optimizer step" : " optimizer steps");
  } else {
    const int64_t warmup = std::max<int64_t>(2, schedule.warmup_num_steps);
    const int64_t steps = (warmup + per_step - 1) / per_step;
    facts.schedule_effect = ": its warm-up of " + std::to_string(warmup) +
                            " steps ends after about " + std::to_string(steps) +
                            (steps == 1 ? " optimizer step" : " optimizer steps");
  }
  diagnosis.explanation = explain_diagnosis(diagnosis.kind.value(), facts);
}

// WarmupCosineLR before DeepSpeed 0.19.0 (lr_schedule.h): the first update of every param group
// but the first runs at the group's full lr instead of the schedule's start rate, while the
// gradients match. Only the scheduler's first update (iteration -1) is affected.
void diagnose_start_rate_first_group_only(const Plan& plan, const Trace& trace, int64_t step,
                                          Diagnosis& diagnosis) {
  if (!plan.lr_schedule || !plan.lr_schedule->construction_rate_first_group_only) return;
  // The Trainer's AdamW has two groups (decayed weights; biases and LayerNorm), one lr.
  std::vector<double> group_lrs;
  for (const ParameterGroup& group : plan.optimizer.parameter_groups) group_lrs.push_back(group.lr);
  if (plan.optimizer.decay_skips_bias_and_norm) group_lrs = {plan.optimizer.lr, plan.optimizer.lr};
  const size_t groups = group_lrs.size();
  if (groups < 2 || step >= static_cast<int64_t>(trace.steps.size())) return;
  if (trace.steps[step].scheduler_iteration != -1) return;
  const double start = scheduled_lr(*plan.lr_schedule, -1, plan.optimizer.lr);
  diagnosis.kind = DiagnosisKind::scheduler_start_rate_first_group_only;
  std::string rates;
  for (size_t g = 1; g < groups; ++g) {
    rates += (g > 1 ? ", " : "") + std::string("group ") + std::to_string(g) + " at " +
             format_number(group_lrs[g]);
  }
  diagnosis.explanation =
      "the gradients match the golden but the first update does not: DeepSpeed " +
      plan.deepspeed_version + "'s " + plan.lr_schedule->type_as_written +
      " writes the rate it starts from (" + format_number(start) +
      ") into the first param group only when deepspeed.initialize builds it (get_lr() returns "
      "one rate, which update_lr pairs with the groups), so the other " +
      std::to_string(groups - 1) +
      " group(s) took their first step at their full learning "
      "rate (" +
      rates + ") instead of warming up from " + format_number(start) +
      ". A DeepSpeed bug, fixed in 0.19.0 (PR #7969, \"Fix WarmupCosineLR multi-group "
      "initialization\"). Fix: upgrade DeepSpeed to 0.19.0 or later, or give the optimizer one "
      "param group";
}

// ZeRO stages 1-2 flatten the model and hand FusedLamb each rank's flat float32 partition as one
// tensor (stage_1_and_2.py: param_group["params"] = [the rank's partition]); stage 3 does the same
// with each sub group's flat partition of the rank's shards (stage3.py _optimizer_step; one sub
// group below sub_group_size, 1e9 elements). So the trust ratio ||p|| / ||update|| is taken over
// a partition spanning layers, not layer by layer as LAMB intends and as the golden's
// single-rank stage-0 run does.
void diagnose_partitioned_lamb(const Plan& plan, Diagnosis& diagnosis) {
  if (plan.optimizer.kind != OptimizerKind::lamb || plan.zero_stage < 1) return;
  diagnosis.kind = DiagnosisKind::lamb_trust_ratio_over_partition;
  const int64_t ranks = plan.batch.world_size;
  diagnosis.explanation =
      "the gradients match the golden but the Lamb update does not: at ZeRO stage " +
      std::to_string(plan.zero_stage) + " DeepSpeed " + plan.deepspeed_version +
      " gives FusedLamb each rank's flat partition of " +
      (plan.optimizer.parameter_groups.size() > 1 || plan.optimizer.decay_skips_bias_and_norm
           ? std::string("each param group")
           : std::string("the whole model")) +
      " as one tensor" +
      (plan.zero_stage == 3 ? std::string(" (at stage 3: the rank's shards of every parameter "
                                          "side by side, one tensor per sub group)")
                            : std::string()) +
      ", so its "
      "trust ratio ||p|| / ||update|| is computed over " +
      (ranks == 1 ? std::string("the whole model at once")
                  : "each of the " + std::to_string(ranks) + " ranks' partitions") +
      " instead of per layer (the golden's per-tensor Lamb). This is why Lamb is an untested "
      "ZeRO optimizer (zero_allow_untested_optimizer). Stage 0 keeps LAMB's layer-wise ratio";
}

// DeepSpeed raises the fp16 loss scale before it unscales (precision_config.h): the first step
// of the run whose gradients were divided by a larger scale than they carried.
void diagnose_grown_scale(const Plan& plan, const Trace& trace, int64_t step,
                          Diagnosis& diagnosis) {
  if (plan.precision != Precision::fp16) return;
  for (int64_t s = 0; s <= step && s < static_cast<int64_t>(trace.steps.size()); ++s) {
    const OptimizerStepRecord& record = trace.steps[s];
    if (record.skipped || record.unscaled_by <= record.loss_scale) continue;
    diagnosis.kind = DiagnosisKind::unscaled_by_grown_scale;
    diagnosis.step = s;
    diagnosis.explanation =
        "at optimizer step " + std::to_string(s) + " the gradients carried loss scale " +
        loss_scale_text(record.loss_scale) + ", but DeepSpeed " + plan.deepspeed_version +
        " raised the scale to " + loss_scale_text(record.unscaled_by) +
        " (after loss_scale_window = " + std::to_string(plan.mixed.fp16.loss_scale_window) +
        " steps without overflow) before unscaling, and divided them by the new scale: that "
        "update used " +
        format_number(record.loss_scale / record.unscaled_by) +
        "x the gradient. DeepSpeed's fp16 optimizers (FP16_Optimizer and ZeRO 1-3) call "
        "_update_scale before unscale_and_clip_grads; it happens once per loss_scale_window "
        "clean steps (DeepSpeed's default 1000). Not the loop's doing; bf16, which has no loss "
        "scale, avoids it";
    return;
  }
}

}  // namespace trainrepro::training_findings
