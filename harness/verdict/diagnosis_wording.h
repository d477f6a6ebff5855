// The one table of diagnosis wording: what each named mistake does and its fix, in words, for a
// scenario's run and a watched script alike. A judge says what it knows (DiagnosisFacts); a fact
// it did not see is left out of the sentence, never guessed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/batch_config.h"
#include "harness/scenario/expectation.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

struct HypothesisResult {
  DiagnosisKind kind;
  double relative_error = 0.0;  // ||observed - predicted|| / ||predicted||
};

// The calls a watched loop made inside the diagnosed window (a scenario's loop is known from
// its file, so a scenario's judge leaves them unset).
struct WindowCalls {
  int64_t engine_steps = 0;            // engine.step()
  int64_t no_syncs = 0;                // engine.no_sync() entered
  int64_t direct_backwards = 0;        // loss.backward(), bypassing engine.backward
  int64_t boundaries_set_by_loop = 0;  // engine.set_gradient_accumulation_boundary(True)
  std::string zero_grad_calls;         // "optimizer.zero_grad(), engine.zero_grad()"; "" if none
  bool scale_wrt_gas_off = false;      // some engine.backward(loss, scale_wrt_gas=False)
};

struct DiagnosisFacts {
  // Known to every judge.
  int64_t step = 0;             // the optimizer step (a watched script's window) diagnosed
  int64_t window_steps = 1;     // micro-batches per optimizer step the config means
  ResolvedBatch batch;          // as DeepSpeed resolved it, with what the config gave
  int64_t effective_batch = 0;  // samples per optimizer step the run trained with
  int64_t intended_batch = 0;   // samples per optimizer step meant
  std::string deepspeed_version;
  // What the matching prediction found, said first (reentrant checkpointing: the parameters
  // left without a gradient; a learning rate: the rates compared), and said last (a variant of
  // the mistake: "Worse, the ranks never average their gradients").
  std::string lead;
  std::string addendum;
  // A scenario's own settings.
  std::optional<TrainerLoopSpec> trainer;  // the Hugging Face Trainer's loop
  bool config_sets_gradient_accumulation_steps = true;
  bool model_has_frozen_layers = false;
  double clip_grad_norm = 0.0;
  int64_t scheduler_steps_per_step = 0;  // the loop's and the engine's scheduler steps
  std::string schedule_effect;           // what that does to the config's schedule
  // What a watched window showed.
  std::optional<double> norm_ratio;           // ||run|| / ||golden||
  std::optional<int64_t> window_micro_steps;  // the window's micro-steps on each rank
  std::optional<int64_t> items;               // its counted targets, every rank
  int64_t labels_counted = 0;                 // its labels not -100 (Hugging Face)
  std::optional<WindowCalls> calls;
  std::optional<int64_t> loop_scheduler_steps;  // lr_scheduler.step() the loop called
  int64_t optimizer_steps_watched = 0;
};

// `kind` in words with its fix; "" for a kind judged from memory or traffic, whose wording is
// its judge's (judge_memory.h, judge_zero.h).
std::string explain_diagnosis(DiagnosisKind kind, const DiagnosisFacts& facts);

// A mismatch no hypothesis explains, with every hypothesis tested and how far it was.
std::string explain_unexplained_mismatch(int64_t step, const std::vector<HypothesisResult>& tested,
                                         std::optional<double> norm_ratio = std::nullopt,
                                         std::optional<double> cosine = std::nullopt);

// low_precision_accumulation in words: the run's relative error against the golden and its
// precision twin's, how many micro-steps were summed in `dtype`, and the fix DeepSpeed
// `deepspeed_version` allows at `zero_stage`.
std::string explain_low_precision_accumulation(double error, double twin_error, int64_t micro_steps,
                                               const std::string& dtype, int64_t zero_stage,
                                               const std::string& deepspeed_version);

}  // namespace trainrepro
