// What judge_training and judge_run find beside the step-by-step comparison (judge_training.h):
// the worst difference in words, why a run stopped, diverged or skipped steps, and which setting
// explains a mismatch that no accumulation hypothesis does. Internal to harness/verdict.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/golden/golden.h"
#include "harness/golden/tensor_comparison.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/diagnosis.h"
#include "harness/verdict/loss_scale_calibration.h"
#include "harness/verdict/training_judgement.h"

namespace trainrepro::training_findings {

// worst_difference.cpp
// A number as every verdict writes one ("%.3g").
std::string format_number(double value);

// The comparison that used most of its tolerance: where, the values, the errors; judged
// against a precision twin, the whole model's RMS error against the twin's.
std::string describe_worst(const std::vector<TensorComparison>& comparisons);

// interrupted_run_diagnosis.cpp
// The first NaN or Inf the run produced, in the order it happened: the losses of the
// micro-steps before an optimizer step, then that step's gradients, then its parameters.
std::optional<std::string> find_divergence(const Trace& trace);

// training_diverged, from find_divergence's words, at optimizer step `step`.
Diagnosis diagnose_divergence(const std::string& divergence, int64_t step);

// DynamicLossScaler raised at its minimum scale (ZeRO stages 1-3): DeepSpeed ends the run.
Diagnosis diagnose_stopped_run(const Trace& trace, const Plan& plan);

// A skipped step that is not loss-scale calibration (loss_scale_calibration.h): each one
// discards a whole accumulation window. Calibration skips before it are counted apart.
Diagnosis diagnose_skipped_steps(const Trace& trace, const Plan& plan, const SkipReading& skips);

// How many windows after the `compared` ones the dynamic scale needs before its first update:
// read from the trace when the loop ran on and applied one (the steps a memory verdict needs);
// else predicted from the gradients the golden computed at the run's weights (its first applied
// update is the same update at the same weights): DeepSpeed's scaler is stepped on "overflow"
// while the scaled gradient's largest element is beyond fp16's 65504. A floor: an activation's
// gradient can overflow before any parameter's does.
int64_t windows_to_settle(const Plan& plan, const Trace& trace, const Golden& golden,
                          int64_t compared);

// setting_mismatch_diagnosis.cpp
// No fault hypothesis explains a mixed-precision mismatch. When the run is nearer the golden
// than every fault tested, its semantics are DeepSpeed's and the extra error is rounding: with
// gradients accumulated in fp16/bf16 across micro-steps, that is the accumulation.
void diagnose_low_precision_accumulation(const Plan& plan, const Trace& trace, const Golden& golden,
                                         int64_t step, double noise, Diagnosis& diagnosis);

// Whether FP16_Optimizer's zero-gradient step at construction leaves a trace: Adam's step count
// always; SGD only through weight decay (a momentum buffer seeded with zeros then takes the first
// gradient whole, as an empty one would, unless dampening scales it); Lamb through its bias
// correction or weight decay (its update of zero moments is otherwise zero).
bool initialization_step_changes_training(const Plan& plan);

// FP16_Optimizer's zero-gradient step at construction (precision_config.h): every update after
// it differs from the golden's, by a factor the optimizer's settings give for the first one.
void diagnose_initialization_step(const Plan& plan, Diagnosis& diagnosis);

// The learning rate of optimizer step `step` against the config's schedule. The correct loop
// leaves the scheduler to the engine, which steps it once per optimizer step it takes; the
// hypothesis: the loop also called lr_scheduler.step() after every micro-batch before it.
void diagnose_learning_rate(const Plan& plan, const Trace& trace, int64_t step,
                            Diagnosis& diagnosis);

// WarmupCosineLR before DeepSpeed 0.19.0 (lr_schedule.h): the first update of every param group
// but the first runs at the group's full lr instead of the schedule's start rate, while the
// gradients match. Only the scheduler's first update (iteration -1) is affected.
void diagnose_start_rate_first_group_only(const Plan& plan, const Trace& trace, int64_t step,
                                          Diagnosis& diagnosis);

// ZeRO stages 1-2 flatten the model and hand FusedLamb each rank's flat float32 partition as one
// tensor (stage_1_and_2.py: param_group["params"] = [the rank's partition]); stage 3 does the same
// with each sub group's flat partition of the rank's shards (stage3.py _optimizer_step; one sub
// group below sub_group_size, 1e9 elements). So the trust ratio ||p|| / ||update|| is taken over
// a partition spanning layers, not layer by layer as LAMB intends and as the golden's
// single-rank stage-0 run does.
void diagnose_partitioned_lamb(const Plan& plan, Diagnosis& diagnosis);

// DeepSpeed raises the fp16 loss scale before it unscales (precision_config.h): the first step
// of the run whose gradients were divided by a larger scale than they carried.
void diagnose_grown_scale(const Plan& plan, const Trace& trace, int64_t step, Diagnosis& diagnosis);

}  // namespace trainrepro::training_findings
