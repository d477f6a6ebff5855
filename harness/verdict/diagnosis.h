// Explains a gradient mismatch: tests named hypotheses (each a known way to break accumulation)
// by predicting the gradient each would produce at the first mismatching step — recomputed in
// float64 from the golden's parameters and the run's samples — and names the one the run's
// gradient matches, with the fix (in the words of diagnosis_wording.h, which a watched script's
// judge shares). A mismatch no hypothesis explains is reported as such.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/golden/golden.h"
#include "harness/loop/trace.h"
#include "harness/scenario/plan.h"
#include "harness/scenario/scenario.h"
#include "harness/verdict/diagnosis_wording.h"

namespace trainrepro {

struct Diagnosis {
  std::optional<DiagnosisKind> kind;  // std::nullopt: nothing we know explains it
  std::string explanation;            // in words, with the fix
  int64_t step = 0;                   // the optimizer step diagnosed
  std::vector<HypothesisResult> tested;
};

// `noise` (mixed precision): the relative error a run of this precision that follows the
// hypothesis can have at this step (the precision twin's, plus the accumulation's roundings);
// a hypothesis within factor x noise matches too.
Diagnosis diagnose_gradient_mismatch(const Scenario& scenario, const Plan& plan, const Trace& trace,
                                     const Golden& golden, int64_t step, double noise = 0.0);

// ||observed - predicted|| / ||predicted|| over a whole model's gradients.
double gradients_relative_error(const std::vector<at::Tensor>& observed,
                                const std::vector<at::Tensor>& predicted);

// Parameters match but gradients did too: the update itself differs.
Diagnosis diagnose_parameter_mismatch(const Plan& plan, int64_t step);

}  // namespace trainrepro
