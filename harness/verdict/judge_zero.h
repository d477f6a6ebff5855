// Judges a run's model states and traffic against the ZeRO paper (see zero_judgement.h).
// Only runs that go through the engine on several ranks or at a ZeRO stage are judged.
#pragma once
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/zero_judgement.h"

namespace trainrepro {

ZeroJudgement judge_zero(const Scenario& scenario, const Plan& plan, const Trace& trace);

}  // namespace trainrepro
