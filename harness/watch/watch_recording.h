// What `trainrepro watch` recorded of the user's own script, rank by rank
// (python/trainrepro_watch/trainrepro_watch_output.py writes rank<R>.json and rank<R>.safetensors
// into the watch folder). Read strictly: a missing key, a wrong type or a tensor of another shape
// than its parameter's is a WatchRecordingError naming the file and the JSON pointer, never a
// guess.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include "harness/loop/trace.h"
#include "harness/worker/worker_trace.h"

namespace trainrepro {

inline constexpr const char* kWatchRecordingFormat = "trainrepro-watch";
inline constexpr int kWatchRecordingFormatVersion = 1;

// A golden's loss for one micro-step at the window's start weights against the loop's own
// (the value its loss function returned, summed), and the rounding the run's dtype allows
// (python/trainrepro_watch: _loss_allowance).
struct GoldenSelfCheck {
  bool checked = false;  // false: the loop's loss function returned no tensor
  double loop_loss = 0.0;
  double golden_loss = 0.0;
  double allowance = 0.0;
  bool passed = true;
  double ratio() const { return allowance > 0.0 ? std::abs(golden_loss - loop_loss) / allowance : 0.0; }
};

struct WatchedMicroStep {
  bool has_loss = false;  // the loop passed a loss to backward
  double loss = 0.0;      // that loss, as the loop scaled it
  // engine.backward(..., scale_wrt_gas=False): the loop asked DeepSpeed not to divide this
  // micro-step's loss by gradient_accumulation_steps (as transformers' Trainer does).
  bool scale_wrt_gas = true;
  std::string loss_function;  // "cross_entropy", "mse_loss"; empty: none seen on the outputs
  // The labels the forward received that are not -100 (a Hugging Face model's `labels`), as the
  // Trainer counts them; -1 when the forward received no labels.
  int64_t labels_counted = -1;
  // The golden's piece, at the window's start weights (in float64, or in the run's own dtype:
  // WatchedWindow::golden_dtype): the summed loss over the micro-batch's items (targets
  // counted, ignore_index left out) and its gradient, on the judged coordinates. Absent
  // (items 0, no tensors) when the golden could not be computed.
  int64_t items = 0;
  double loss_sum = 0.0;
  std::vector<at::Tensor> summed_loss_gradients;
  // A bfloat16 model's precision twin of that piece: the same gradient computed in bfloat16 (at
  // the start weights rounded to bfloat16, the loop's own inputs), held as float64. Empty for a
  // float32 model.
  std::vector<at::Tensor> twin_summed_loss_gradients;
  // The float64 golden's self-check; and the own-dtype golden's, when it was computed.
  GoldenSelfCheck self_check;
  GoldenSelfCheck own_check;
  // --save-scenario: the forward's one input tensor and the loss's target, as recorded (float64;
  // undefined when not saved).
  at::Tensor saved_inputs;
  at::Tensor saved_targets;
};

struct WatchedWindow {
  std::vector<WatchedMicroStep> micro_steps;
  std::string closed_by;  // "engine.step()" or "optimizer.step()" (called by the loop itself)
  int64_t calls_at_close = 0;  // how many of the rank's calls had happened when it closed
  std::vector<at::Tensor> run_gradients;  // what the update used, before clipping, float64
  // The dtype the golden's pieces were computed in: "float64", or the run's own ("float32",
  // "bfloat16": its precision twin) when the float64 golden failed its self-check, at
  // float64_failed_micro_step with float64_failed (-1: it passed).
  std::string golden_dtype = "float64";
  int64_t float64_failed_micro_step = -1;
  GoldenSelfCheck float64_failed;
};

struct WatchedResolution {  // what DeepSpeed resolved from the user's config
  int64_t train_batch_size = 0;
  int64_t micro_batch_per_gpu = 0;
  int64_t gradient_accumulation_steps = 0;
  double gradient_clipping = 0.0;
  int64_t zero_stage = 0;
  std::string dtype;  // the module's parameters: "float32", "bfloat16", "float16"
  // The dtype DeepSpeed sums a window's micro-steps in (engine.get_data_types()); empty when
  // the recording does not say.
  std::string grad_accum_dtype;
};

struct RankRecording {
  std::string file;  // rank<R>.json, for messages
  int64_t rank = 0;
  int64_t world_size = 1;
  // The watch itself failed on this rank (the script trained on): why, and where.
  std::string failure;
  std::string traceback;
  // The script's deepspeed.initialize raised on this rank ("AssertionError: …"): no engine.
  std::string initialize_raised;
  bool recorded() const { return failure.empty() && initialize_raised.empty(); }
  std::string ended;  // "" when every watched step was recorded; else why it stopped early
  int64_t steps_wanted = 0;
  int64_t memory_steps = -1;  // --memory-steps as the rank received it; -1 when not recorded
  WorkerVersions versions;
  nlohmann::json config;  // the config DeepSpeed received, as it holds it
  WatchedResolution resolved;
  std::vector<std::string> parameter_names;
  std::vector<std::string> calls;  // the loop's calls in order, during the watched steps
  std::vector<WatchedWindow> windows;
  std::string golden_not_computed;  // why the golden's pieces are missing; "" when present
  // --golden: "own" (each piece computed again in the run's dtype and kernels) or "float64".
  std::string golden_kind = "float64";
  // The gradient coordinates every tensor of this recording holds, of all the model's (the
  // same coordinates on every rank; equal when every one is judged). -1: not recorded.
  int64_t coordinates_judged = -1;
  int64_t coordinates_total = -1;
  // --save-scenario: the config as the script passed it to deepspeed.initialize (null when it
  // could not be read), and why the run cannot become a scenario ("" when it can).
  nlohmann::json config_given;
  std::string save_not_possible;
  // Memory at every boundary of the first M optimizer steps (rank<R>.memory.json), in the
  // Trace fields the memory judge reads; has_memory false when the rank wrote none.
  bool has_memory = false;
  Trace memory;
};

class WatchRecordingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every rank<R>.json in `folder`, by rank (empty when no process created a DeepSpeed engine).
// Throws WatchRecordingError for a file that is unreadable or inconsistent, and for ranks that
// disagree on the world size or the parameters.
std::vector<RankRecording> read_watch_recording(const std::string& folder);

}  // namespace trainrepro
