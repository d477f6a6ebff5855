// Judges a run's memory: discards warm-up, then calls a leak only when growth is persistent —
// a Theil–Sen slope above the threshold and growth in every window — on live tensor memory
// (a tensor leak) or, with tensors flat, on the host heap (autograd graphs kept alive).
#pragma once
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/memory_judgement.h"

namespace trainrepro {

MemoryJudgement judge_memory(const Scenario& scenario, const Plan& plan, const Trace& trace);

}  // namespace trainrepro
