// The judgement of a ZeRO run, as plain data: the model states rank 0 held at the last
// boundary and the bytes it sent per optimizer step, each against the ZeRO paper's formula for
// the stage (with and without the padding to the world size), and the tensor memory actually
// alive there, which shows what a loop keeps beyond the engine's model states.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/engine/model_states.h"
#include "harness/scenario/expectation.h"

namespace trainrepro {

// How far a measurement may sit from the paper's formula.
constexpr double kZeroFormulaTolerance = 0.05;

struct ZeroJudgement {
  bool judged = false;
  int64_t zero_stage = 0;
  int64_t world_size = 1;
  int64_t gradient_accumulation_steps = 1;
  int64_t parameter_numel = 0;    // Ψ
  int64_t partitioned_numel = 0;  // Ψ after padding
  BytesPerParameter bytes_per_parameter;
  ModelStateBytes measured;         // rank 0, at the last boundary
  ModelStateBytes expected;         // the formula for the padded Ψ
  ModelStateBytes expected_paper;   // the formula for Ψ, as the paper writes it
  double model_states_ratio = 0.0;  // measured / expected (totals)
  // Set when the loop does not drive the engine as DeepSpeed's loop does: the figures are
  // reported, but a difference from the formulas is the loop's doing and is not a diagnosis.
  std::string not_judged_reason;
  bool traffic_judged = false;      // evaluations gather parameters too: then only reported
  int64_t ring_bytes_per_step = 0;  // rank 0, the last optimizer step
  int64_t expected_ring_bytes_per_step = 0;
  double traffic_ratio = 0.0;
  int64_t tensor_bytes_at_boundary = 0;  // live tensors on the device after the last step
  int64_t harness_tensor_bytes = 0;      // the harness's own recorded copies, not among those
  std::vector<DiagnosisKind> diagnoses;
  std::vector<std::string> explanations;
};

}  // namespace trainrepro
