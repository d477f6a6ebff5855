// Judges a training run: every optimizer step's gradients (tight tolerance) and parameters
// (with, for Adam, an allowance derived from the optimizer) against the golden's, then the
// diagnosis of the first mismatch, then the outcome against the scenario's expectation.
#pragma once
#include "harness/golden/golden.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/training_judgement.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

Verdict judge_training(const Scenario& scenario, const Plan& plan, const Trace& trace,
                       const Golden& golden, TrainingJudgement& judgement);

}  // namespace trainrepro
