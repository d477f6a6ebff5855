// A golden: the reference a scenario is judged against — the same initial weights and samples
// as the run, one unaccumulated batch of the intended size per optimizer step, float64 on CPU.
// Per step: the loss, every trainable parameter's gradient (before clipping) and value after the
// step.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include "models/batch.h"

namespace trainrepro {

struct GoldenStep {
  double loss = 0.0;
  std::vector<at::Tensor> gradients;   // float64 CPU, in parameter_names order
  std::vector<at::Tensor> parameters;  // after the step
  // Skipped as the judged run skipped this window (a golden that follows an fp16 run's
  // loss-scale calibration, computed at judging time; never in a stored golden).
  bool skipped = false;
};

struct Golden {
  std::string file;  // where it was read from or written to
  nlohmann::json key;
  std::vector<std::string> parameter_names;
  std::vector<at::Tensor> initial_parameters;
  // Parameters the scenario froze (model.frozen): not trained, not compared; their values are
  // written ("frozen/<name>") so that a reader outside trainrepro can rebuild the model.
  std::vector<std::string> frozen_parameter_names;
  std::vector<at::Tensor> frozen_parameters;
  Batch data;  // every sample the golden consumed, float64 / int64 on CPU
  std::vector<GoldenStep> steps;
  // The optimizer steps this golden skipped because the judged run skipped them (empty for a
  // stored golden): see compute_golden_following_skips.
  std::vector<int64_t> followed_skips;
};

// A golden that is missing, stale or corrupt. The message says which command regenerates it.
class GoldenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trainrepro
