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
  // The whole model's gradients against the golden's: ||run - golden|| / ||golden||, the norm
  // ratio ||run|| / ||golden|| and the cosine. A scaled loss shows in the ratio, a micro-batch
  // dropped or weighed wrongly in the cosine (0, 1, 1: not compared, a skipped step).
  double relative_error = 0.0;
  double norm_ratio = 1.0;
  double cosine = 1.0;
  // The micro-batches of this step's window on each rank, and the items (samples or counted
  // target tokens) of all ranks; 0 where the engine did not count them.
  int64_t micro_batches = 0;
  int64_t items = 0;
  // A bfloat16 run judged as a whole model: ||twin - golden|| / ||golden||, the precision's own
  // error (-1: not judged against a twin), and whether the twin is the golden itself rounded
  // once to bfloat16 (a watched run whose golden is already the run's own function).
  double twin_relative_error = -1.0;
  bool twin_is_rounded_golden = false;
  // Every hypothesis tested at this step when its gradients mismatched (a watched run tests each
  // window; a scenario's diagnosis holds the first mismatch's).
  std::vector<HypothesisResult> tested;
  // A watched run: the golden that judged this window ("float64", or the run's own dtype when
  // the float64 golden failed its self-check) and its self-check, the largest
  // |golden loss - loop loss| / allowance over the window's micro-steps and ranks (-1: not
  // checked). "" and -1 for a scenario, whose golden is its golden file.
  std::string golden_dtype;
  double self_check_ratio = -1.0;
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
