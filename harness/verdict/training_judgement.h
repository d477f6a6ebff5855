// The judgement of a training run against its golden, as plain data: per optimizer step the
// losses and every tensor's comparison, where the first mismatch is, and its diagnosis.
#pragma once
#include <optional>
#include <vector>

#include "harness/engine/reference_engine.h"
#include "harness/golden/tensor_comparison.h"
#include "harness/verdict/diagnosis.h"

namespace trainrepro {

struct StepJudgement {
  int64_t step = 0;
  int64_t micro_step = 0;  // backwards the run had done at this optimizer step
  double loss = 0.0;
  double golden_loss = 0.0;
  bool skipped = false;     // the engine skipped this step (overflow): gradients not compared
  double loss_scale = 1.0;  // the fp16 loss scale the window's gradients carried
  bool gradients_match = true;
  bool parameters_match = true;
  std::vector<TensorComparison> gradients;
  std::vector<TensorComparison> parameters;
};

struct TrainingJudgement {
  std::string golden_file;
  Tolerance gradient_tolerance;
  std::string tolerance_reason;  // when the scenario overrides the default
  std::vector<StepJudgement> steps;
  std::optional<int64_t> first_gradient_mismatch;
  std::optional<int64_t> first_parameter_mismatch;
  std::optional<Diagnosis> diagnosis;  // when something mismatched
  std::string mismatch;                // the first mismatch in words, with the numbers
  // The first NaN or Inf in the run's losses, gradients or parameters, in words ("the loss of
  // micro-step 7 is NaN"); a diverged run is never "passed", even where the golden diverged too.
  std::optional<std::string> divergence;
  EngineCounters counters;
  // Mixed precision: the precision ("fp16", "bf16"; empty for fp32) and, when judged against
  // the precision twin, its factor and the worst tensor's RMS errors (run, twin).
  std::string precision;
  double precision_twin_factor = 0.0;
  double worst_rms_error = 0.0;
  double worst_twin_rms_error = 0.0;
  std::vector<int64_t> skipped_steps;        // optimizer steps skipped on overflow
  // fp16 dynamic loss scaling: compared steps skipped while the scale came down (or tried a
  // doubled scale; loss_scale_calibration.h), and compared steps that applied an update. A
  // golden that skips the same windows judges the rest.
  int64_t calibration_skips = 0;
  int64_t applied_steps = 0;
  // Why the run could not be judged (every compared window skipped in calibration): the verdict
  // is then an error of the scenario (too short), not a failure. Empty when judged.
  std::string not_judged;
  std::vector<std::string> loss_scale_log;   // DeepSpeed's lines about the scale (first 20)
  std::string stopped;                       // why the run ended early; empty when it did not
  int64_t micro_steps = 0;
  std::vector<double> micro_step_losses;
};

}  // namespace trainrepro
