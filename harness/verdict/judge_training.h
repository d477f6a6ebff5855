// Judges a training run: every optimizer step's gradients (tight tolerance) and parameters
// (with, for Adam, an allowance derived from the optimizer) against the golden's, and the
// diagnosis of the first mismatch; then, with the memory judgement, the outcome against the
// scenario's expectation.
#pragma once
#include "harness/golden/golden.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/memory_judgement.h"
#include "harness/verdict/training_judgement.h"
#include "harness/verdict/verdict.h"
#include "harness/verdict/zero_judgement.h"

namespace trainrepro {

// The whole model's gradients against the golden's into `step`: the relative error, the norm
// ratio and the cosine (left at 0, 1, 1 when the two do not hold the same tensors' shapes).
void compare_whole_model(const std::vector<at::Tensor>& run, const std::vector<at::Tensor>& golden,
                         StepJudgement& step);

// `precision_twin` (fp16/bf16 runs): the same steps without accumulation in the same
// precision; the run is then judged by its error relative to the twin's (precision_config.h).
void judge_training(const Scenario& scenario, const Plan& plan, const Trace& trace,
                    const Golden& golden, TrainingJudgement& judgement,
                    const Trace* precision_twin = nullptr);

// Gradients, then memory, then ZeRO's model states and traffic, then the outcome: a
// reproduction is reproduced when its named diagnosis is among those found; a regression
// scenario passes when none is.
Verdict judge_run(const Scenario& scenario, const Plan& plan, const Trace& trace,
                  const Golden& golden, TrainingJudgement& training, MemoryJudgement& memory,
                  ZeroJudgement& zero, const Trace* precision_twin = nullptr);

}  // namespace trainrepro
