#include "harness/verdict/judge_watched.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <ATen/ATen.h>

#include "harness/golden/gradient_arithmetic.h"
#include "harness/json/json_fields.h"
#include "harness/scenario/precision_config.h"
#include "harness/verdict/diagnosis_wording.h"
#include "harness/verdict/judge_memory.h"
#include "harness/verdict/judge_training.h"

namespace trainrepro {
namespace {

// A float32 run reproduces a hypothesis to ~1e-7 relative (measured: 1.0e-7 to 1.2e-7 for a
// loss divided twice); harness/verdict/diagnosis.cpp uses the same threshold for float32.
constexpr double kHypothesisMatch = 1e-4;

Gradients zeros_like(const Gradients& tensors) {
  Gradients result;
  for (const at::Tensor& tensor : tensors) result.push_back(at::zeros_like(tensor));
  return result;
}

void add_scaled(Gradients& into, const Gradients& tensors, double factor) {
  for (size_t i = 0; i < into.size(); ++i) into[i] = into[i] + tensors[i] * factor;
}

std::string format(const char* pattern, double value) {
  char text[128];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

// The float64 pieces of one window, added up over micro-steps and ranks.
struct WindowPieces {
  Gradients golden;       // sum over every item of the window / the items: the intended loss
  // A bfloat16 model's precision twin of the golden: the same sum of pieces, each computed in
  // bfloat16 (no accumulation rounding); empty for float32, or when a piece lacks its twin.
  Gradients twin;
  Gradients per_micro;    // (1/R) sum over ranks and micro-steps of each micro-batch's mean
  Gradients last_micro;   // (1/R) sum over ranks of the last micro-batch's mean
  Gradients first_rank_last_micro;  // rank 0's last micro-batch's mean alone
  Gradients first_rank_per_micro;   // the sum of rank 0's micro-batch means alone
  Gradients per_rank;  // (1/R) sum over ranks of each rank's window divided by its own items
  int64_t items = 0;
  bool items_vary = false;  // micro-batches of different item counts (tokens)
  bool rank_items_vary = false;  // ranks whose windows hold different item counts
  int64_t labels_counted = 0;  // the forwards' labels not -100 (Hugging Face); 0 when none
};

// The micro-step's piece of the golden that judges: the recorded piece (float64's, or the
// run's own dtype's), or, where a float64 golden failed its self-check in a bfloat16 run, its
// precision twin (a float32 run's recording holds its own-dtype pieces in place of the float64
// ones; --golden own records only the own-dtype pieces).
const Gradients& golden_piece(const WatchedMicroStep& micro, bool twin_judges) {
  return twin_judges && !micro.twin_summed_loss_gradients.empty()
             ? micro.twin_summed_loss_gradients
             : micro.summed_loss_gradients;
}

WindowPieces pieces_of(const std::vector<RankRecording>& ranks, size_t w, bool twin_judges) {
  WindowPieces pieces;
  const double world = static_cast<double>(ranks.size());
  pieces.golden = zeros_like(ranks.front().windows[w].run_gradients);
  pieces.per_micro = zeros_like(pieces.golden);
  pieces.last_micro = zeros_like(pieces.golden);
  pieces.first_rank_last_micro = zeros_like(pieces.golden);
  pieces.first_rank_per_micro = zeros_like(pieces.golden);
  pieces.per_rank = zeros_like(pieces.golden);
  Gradients twin = zeros_like(pieces.golden);
  bool every_twin = true;
  const int64_t first_items = ranks.front().windows[w].micro_steps.front().items;
  int64_t first_rank_items = -1;
  for (const RankRecording& rank : ranks) {
    const std::vector<WatchedMicroStep>& micro_steps = rank.windows[w].micro_steps;
    Gradients rank_sum = zeros_like(pieces.golden);
    int64_t rank_items = 0;
    for (const WatchedMicroStep& micro : micro_steps) {
      add_scaled(rank_sum, golden_piece(micro, twin_judges), 1.0);
      rank_items += micro.items;
    }
    add_scaled(pieces.per_rank, rank_sum,
               1.0 / (world * static_cast<double>(std::max<int64_t>(rank_items, 1))));
    if (first_rank_items < 0) first_rank_items = rank_items;
    pieces.rank_items_vary = pieces.rank_items_vary || rank_items != first_rank_items;
    for (size_t i = 0; i < micro_steps.size(); ++i) {
      const WatchedMicroStep& micro = micro_steps[i];
      pieces.items += micro.items;
      pieces.labels_counted += std::max<int64_t>(micro.labels_counted, 0);
      pieces.items_vary = pieces.items_vary || micro.items != first_items;
      add_scaled(pieces.golden, golden_piece(micro, twin_judges), 1.0);
      every_twin = every_twin && !micro.twin_summed_loss_gradients.empty();
      if (every_twin) add_scaled(twin, micro.twin_summed_loss_gradients, 1.0);
      const double mean = 1.0 / static_cast<double>(std::max<int64_t>(micro.items, 1));
      add_scaled(pieces.per_micro, golden_piece(micro, twin_judges), mean / world);
      if (&rank == &ranks.front()) {
        add_scaled(pieces.first_rank_per_micro, golden_piece(micro, twin_judges), mean);
      }
      if (i + 1 == micro_steps.size()) {
        add_scaled(pieces.last_micro, golden_piece(micro, twin_judges), mean / world);
        if (&rank == &ranks.front()) {
          add_scaled(pieces.first_rank_last_micro, golden_piece(micro, twin_judges), mean);
        }
      }
    }
  }
  const double per_item = 1.0 / static_cast<double>(std::max<int64_t>(pieces.items, 1));
  pieces.golden = scaled(pieces.golden, per_item);
  if (every_twin) pieces.twin = scaled(twin, per_item);
  return pieces;
}

int64_t count_calls(const RankRecording& rank, size_t w, const std::string& call) {
  const int64_t begin = w == 0 ? 0 : rank.windows[w - 1].calls_at_close;
  const int64_t end = rank.windows[w].calls_at_close;
  return std::count(rank.calls.begin() + begin, rank.calls.begin() + end, call);
}

struct Hypothesis {
  DiagnosisKind kind;
  Gradients predicted;
  std::string specifics = "";  // what this variant of the mistake adds to the explanation
};

// What each known mistake makes DeepSpeed's gradient for this window, from the same pieces.
// DeepSpeed averages the ranks and engine.backward divides by gradient_accumulation_steps (G).
std::vector<Hypothesis> hypotheses_for(const RankRecording& rank, size_t w,
                                       const WindowPieces& pieces, int64_t gas) {
  const double g = static_cast<double>(gas);
  const WatchedWindow& window = rank.windows[w];
  const int64_t micro_steps = static_cast<int64_t>(window.micro_steps.size());
  std::vector<Hypothesis> hypotheses;
  // The loop asked engine.backward not to divide (scale_wrt_gas=False) with a loss already
  // averaged over the window, and DeepSpeed divided by G all the same (before the contract's
  // other readings: with equal micro-batches loss_scaled_twice predicts the same gradient, but
  // a loop that passes scale_wrt_gas=False has not divided twice).
  const bool scale_wrt_gas_off =
      std::any_of(window.micro_steps.begin(), window.micro_steps.end(),
                  [](const WatchedMicroStep& micro) { return !micro.scale_wrt_gas; });
  if (scale_wrt_gas_off) {
    hypotheses.push_back({DiagnosisKind::scale_wrt_gas_ignored, scaled(pieces.golden, 1.0 / g)});
    if (rank.world_size > 1 && pieces.rank_items_vary) {
      hypotheses.push_back(
          {DiagnosisKind::scale_wrt_gas_ignored, scaled(pieces.per_rank, 1.0 / g),
           ". Besides, each rank divided its loss by its own tokens, not the window's across "
           "all ranks (transformers: average_tokens_across_devices=False)"});
    }
  }
  // A window the loop ended before G micro-batches (engine.set_gradient_accumulation_boundary,
  // as accelerate's accumulate() does at the end of the data loader): engine.backward still
  // divides each micro-batch's loss by G, so the window weighs micro_steps/G of its mean. Only
  // where the engine stepped: a window the loop's own optimizer.step() closed is that habit's.
  if (micro_steps < gas && window.closed_by == "engine.step()") {
    hypotheses.push_back({DiagnosisKind::window_closed_early, scaled(pieces.per_micro, 1.0 / g)});
  }
  if (count_calls(rank, w, "engine.step()") < micro_steps && micro_steps > gas) {
    hypotheses.push_back({DiagnosisKind::step_once_per_window, scaled(pieces.per_micro, 1.0 / g)});
  }
  if (window.closed_by == "optimizer.step()") {
    hypotheses.push_back(
        {DiagnosisKind::optimizer_every_micro_step, scaled(pieces.last_micro, 1.0 / g)});
    // DeepSpeed all-reduces at its own boundary, which engine.step() never advances to here.
    if (rank.world_size > 1) {
      hypotheses.push_back(
          {DiagnosisKind::optimizer_every_micro_step, scaled(pieces.first_rank_last_micro, 1.0 / g),
           ". Worse, the ranks never average their gradients (DeepSpeed all-reduces at its "
           "accumulation boundary, which only engine.step() advances): each rank steps on its "
           "own micro-batch and the ranks' models drift apart"});
    }
  }
  if (micro_steps > 1) {
    hypotheses.push_back(
        {DiagnosisKind::zeroed_inside_window, scaled(pieces.last_micro, 1.0 / g)});
  }
  // The boundary's backward inside engine.no_sync() (ZeRO 0): rank 0's own micro-batches,
  // divided by engine.backward, never averaged with the other ranks'.
  if (rank.world_size > 1 && count_calls(rank, w, "engine.no_sync()") > 0) {
    hypotheses.push_back(
        {DiagnosisKind::gradients_not_reduced, scaled(pieces.first_rank_per_micro, 1.0 / g)});
  }
  hypotheses.push_back({DiagnosisKind::loss_scaled_twice, scaled(pieces.per_micro, 1.0 / (g * g))});
  hypotheses.push_back({DiagnosisKind::loss_not_scaled, pieces.per_micro});
  if (pieces.labels_counted > pieces.items) {
    hypotheses.push_back({DiagnosisKind::labels_counted_but_not_predicted,
                          scaled(pieces.golden, static_cast<double>(pieces.items) /
                                                    static_cast<double>(pieces.labels_counted))});
  }
  if (pieces.items_vary) {
    hypotheses.push_back(
        {DiagnosisKind::per_micro_batch_token_normalisation, scaled(pieces.per_micro, 1.0 / g)});
  }
  if (rank.world_size > 1 && pieces.rank_items_vary) {
    hypotheses.push_back({DiagnosisKind::per_rank_token_normalisation, pieces.per_rank});
  }
  return hypotheses;
}

std::string calls_between_backwards(const RankRecording& rank, size_t w) {
  const int64_t begin = w == 0 ? 0 : rank.windows[w - 1].calls_at_close;
  std::string seen;
  for (int64_t c = begin; c < rank.windows[w].calls_at_close; ++c) {
    const std::string& call = rank.calls[static_cast<size_t>(c)];
    if (call.find("zero_grad") != std::string::npos && seen.find(call) == std::string::npos) {
      seen += (seen.empty() ? "" : ", ") + call;
    }
  }
  return seen;
}

// The batch DeepSpeed resolved for the watched script, with the keys its config gave (the
// batch fix says which key to set).
ResolvedBatch batch_of(const RankRecording& rank) {
  const WatchedResolution& resolved = rank.resolved;
  ResolvedBatch batch{resolved.train_batch_size,
                      resolved.micro_batch_per_gpu,
                      resolved.gradient_accumulation_steps,
                      rank.world_size,
                      {}};
  auto given = [&](const char* key) -> std::optional<int64_t> {
    if (!rank.config.is_object() || !rank.config.contains(key) ||
        !rank.config[key].is_number_integer()) {
      return std::nullopt;
    }
    return rank.config[key].get<int64_t>();
  };
  batch.given = {given("train_batch_size"), given("train_micro_batch_size_per_gpu"),
                 given("gradient_accumulation_steps")};
  return batch;
}

// What the watched run tells the wording table (diagnosis_wording.h), the table a scenario's
// diagnosis reads too: the config as DeepSpeed resolved it and the batches.
DiagnosisFacts facts_of(const RankRecording& rank, const WatchedJudgement& judgement) {
  DiagnosisFacts facts;
  facts.window_steps = rank.resolved.gradient_accumulation_steps;
  facts.batch = batch_of(rank);
  facts.effective_batch = judgement.effective_batch;
  facts.intended_batch = judgement.intended_batch;
  facts.deepspeed_version = rank.versions.deepspeed;
  return facts;
}

// And of window w: what was measured against the golden and the loop's calls inside it.
DiagnosisFacts facts_of_window(const RankRecording& rank, const WatchedJudgement& judgement,
                               size_t w, const StepJudgement& judged, int64_t labels_counted) {
  DiagnosisFacts facts = facts_of(rank, judgement);
  facts.step = static_cast<int64_t>(w);
  facts.norm_ratio = judged.norm_ratio;
  facts.window_micro_steps = judged.micro_batches;
  facts.items = judged.items;
  facts.labels_counted = labels_counted;
  WindowCalls calls;
  calls.engine_steps = count_calls(rank, w, "engine.step()");
  calls.no_syncs = count_calls(rank, w, "engine.no_sync()");
  calls.direct_backwards = count_calls(rank, w, "loss.backward()");
  calls.boundaries_set_by_loop =
      count_calls(rank, w, "engine.set_gradient_accumulation_boundary(True)");
  calls.zero_grad_calls = calls_between_backwards(rank, w);
  const std::vector<WatchedMicroStep>& micro_steps = rank.windows[w].micro_steps;
  calls.scale_wrt_gas_off =
      std::any_of(micro_steps.begin(), micro_steps.end(),
                  [](const WatchedMicroStep& micro) { return !micro.scale_wrt_gas; });
  facts.calls = calls;
  return facts;
}

void find_lr_scheduler_stepped_by_loop(const RankRecording& rank, WatchedJudgement& judgement) {
  int64_t loop_steps = 0;
  for (const std::string& call : rank.calls) loop_steps += call == "lr_scheduler.step()";
  if (loop_steps == 0 || rank.windows.empty()) return;
  DiagnosisFacts facts = facts_of(rank, judgement);
  facts.loop_scheduler_steps = loop_steps;
  facts.optimizer_steps_watched = static_cast<int64_t>(rank.windows.size());
  const std::string text =
      explain_diagnosis(DiagnosisKind::lr_scheduler_stepped_every_micro_step, facts);
  if (!judgement.found_something()) {
    judgement.diagnosis = DiagnosisKind::lr_scheduler_stepped_every_micro_step;
    judgement.explanation = text;
  } else {
    judgement.findings.push_back(text);
  }
}

void find_batch(const RankRecording& rank, WatchedJudgement& judgement) {
  if (judgement.effective_batch == judgement.intended_batch) return;
  const bool no_accumulation = rank.resolved.gradient_accumulation_steps == 1;
  const std::string text = explain_diagnosis(
      no_accumulation ? DiagnosisKind::no_accumulation : DiagnosisKind::effective_batch_differs,
      facts_of(rank, judgement));
  if (!judgement.found_something()) {
    judgement.diagnosis =
        no_accumulation ? DiagnosisKind::no_accumulation : DiagnosisKind::effective_batch_differs;
    judgement.explanation = text;
  } else {
    judgement.findings.push_back(text);
  }
}

// The scenario a watched script is judged as for memory: the default warm-up and window, a loop
// whose habits are unknown (the explanation then names what the measurement shows).
void judge_memory_of(const RankRecording& rank, WatchedJudgement& judgement,
                     MemoryJudgement& memory) {
  if (!rank.has_memory) {
    // The samples are written after the M-th step or at the script's normal exit: a rank
    // killed before either (--timeout, a signal) wrote none, though memory was watched.
    memory.not_judged_reason =
        rank.memory_steps == 0
            ? "memory not watched (--memory-steps 0)"
            : "memory not judged: rank " + std::to_string(rank.rank) +
                  " wrote no memory samples (they are written after --memory-steps " +
                  (rank.memory_steps > 0 ? std::to_string(rank.memory_steps) + " " : "") +
                  "optimizer steps or when the script exits normally; it was ended before "
                  "either, by --timeout or a signal)";
    return;
  }
  Scenario scenario;
  scenario.memory = MemorySpec{};
  Plan plan;
  plan.device = Device::cpu;
  memory = judge_memory(scenario, plan, rank.memory);
  // judge_memory speaks of a scenario's key; a watched script has optimizer steps and the
  // watch's option instead.
  std::string& reason = memory.not_judged_reason;
  const size_t key = reason.find(" loop.steps to judge memory");
  if (key != std::string::npos) {
    reason.replace(key, std::string::npos,
                   " optimizer steps, all within --memory-steps, to judge memory");
  }
  for (size_t i = 0; i < memory.diagnoses.size(); ++i) {
    const std::string& text = memory.explanations[i];
    if (!judgement.found_something()) {
      judgement.diagnosis = memory.diagnoses[i];
      judgement.explanation = text;
    } else if (judgement.explanation != text) {
      judgement.findings.push_back(text);
    }
  }
}

// A bfloat16 window beyond its twin that no fault explains, nearer the golden than every fault
// tested and within the rounding a bfloat16 sum of its micro-steps allows (hypothesis_match),
// where DeepSpeed summed the micro-steps in bfloat16: the extra error is that running
// sum's rounding (the scenario judge's rule, setting_mismatch_diagnosis.cpp). Sets `kind` and
// returns the explanation; returns "" and leaves `kind` alone otherwise.
std::string low_precision_accumulation(const RankRecording& rank, const StepJudgement& window,
                                       double hypothesis_match,
                                       std::optional<DiagnosisKind>& kind) {
  if (window.micro_batches <= 1 || rank.resolved.grad_accum_dtype != "bfloat16") return "";
  // Rounding, not a fault: the run is the golden within what a bfloat16 run that sums its
  // micro-steps may err (the twin's error and one rounding per micro-step, as a hypothesis is
  // matched); a gradient further off is unexplained, however near the golden.
  if (window.relative_error > hypothesis_match) return "";
  for (const HypothesisResult& tested : window.tested) {
    if (tested.relative_error <= window.relative_error) return "";
  }
  kind = DiagnosisKind::low_precision_accumulation;
  return "window " + std::to_string(window.step) + "'s " +
         explain_low_precision_accumulation(window.relative_error, window.twin_relative_error,
                                            window.micro_batches, "bfloat16",
                                            rank.resolved.zero_stage, rank.versions.deepspeed);
}

// Which golden judges window w: float64 unless some rank's float64 golden failed its
// self-check (that rank's recording then holds the run's own dtype's pieces; a rank whose
// float64 golden reproduced its losses keeps its float64 pieces, within any own-dtype golden's
// tolerance of them). The first failure, said in words, and the largest check ratio.
struct WindowGolden {
  std::string dtype = "float64";
  std::string failure;  // "" when the float64 golden reproduced every loss
  double ratio = -1.0;
};

WindowGolden golden_of(const std::vector<RankRecording>& ranks, size_t w) {
  WindowGolden golden;
  golden.dtype = ranks.front().windows[w].golden_dtype;  // --golden own: the run's dtype
  for (const RankRecording& rank : ranks) {
    const WatchedWindow& window = rank.windows[w];
    for (const WatchedMicroStep& micro : window.micro_steps) {
      if (micro.self_check.checked) golden.ratio = std::max(golden.ratio, micro.self_check.ratio());
    }
    if (window.float64_failed_micro_step < 0 || !golden.failure.empty()) continue;
    golden.dtype = window.golden_dtype;
    golden.ratio = std::max(golden.ratio, window.float64_failed.ratio());
    const GoldenSelfCheck& check = window.float64_failed;
    golden.failure =
        "the float64 golden failed its self-check: at window " + std::to_string(w) +
        "'s start weights, micro-batch " + std::to_string(window.float64_failed_micro_step) +
        " of rank " + std::to_string(rank.rank) + " has the loss " +
        format("%.9g", check.golden_loss) + " in float64, but the loop computed " +
        format("%.9g", check.loop_loss) + " (difference " +
        format("%.3g", std::abs(check.golden_loss - check.loop_loss)) + ", " +
        format("%.3g", check.ratio()) + "x the " + format("%.3g", check.allowance) +
        " that " + rank.resolved.dtype +
        " rounding allows): the model's forward is another function in float64. Likely cause: "
        "a tensor the forward makes in a fixed dtype (a causal mask such as "
        "torch.triu(torch.full((T, T), float(\"-inf\")), 1), a position table, a rotary cache, "
        "a constant) or a kernel that behaves differently by dtype (torch 2.11's "
        "scaled_dot_product_attention, which nn.MultiheadAttention calls, computes a wrong "
        "attention from a float32 mask and float64 query, key and value). Make such tensors in "
        "the activations' dtype (dtype=x.dtype) for a float64 golden; judged instead by the "
        "golden in the run's own dtype and kernels";
  }
  return golden;
}

// The RMS relative error of a sum of G micro-steps' gradients kept in bfloat16: each addition
// rounds the running sum S_k, an error uniform in +-u |S_k| (RMS u/sqrt(3) |S_k|), independent
// of the others. Where the micro-steps' gradients point one way |S_k| = (k/G)|S|, where they
// are independent |S_k| = sqrt(k/G)|S|; the larger of the two sums of squares, sum k/G =
// (G+1)/2, gives u sqrt((G+1)/6) relative. (Measured with DeepSpeed 0.19.8 at GAS 4-64 on
// bf16-accumulation.py: a correct window's error is 0.24-0.33 of the whole allowance, twice
// this plus the golden's own rounding.) The error of the shares themselves rounded, u/sqrt(3)
// |S|/G each, adds u^2/(3G), left out.
double bfloat16_running_sum_error(int64_t micro_steps) {
  if (micro_steps <= 1) return 0.0;
  return unit_roundoff(Precision::bf16) * std::sqrt(static_cast<double>(micro_steps + 1) / 6.0);
}

Gradients rounded_to_bfloat16(const Gradients& tensors) {
  Gradients result;
  for (const at::Tensor& tensor : tensors) {
    result.push_back(tensor.to(at::kBFloat16).to(at::kDouble));
  }
  return result;
}

// A correct bfloat16 window whose running sum costs more than the unaccumulated batch's own
// rounding: not a fault (the config asks for that sum), but worth knowing, with the fix.
std::string bfloat16_sum_in_words(size_t w, const StepJudgement& window, double error,
                                  const RankRecording& rank) {
  return "window " + std::to_string(w) + ": DeepSpeed " + rank.versions.deepspeed +
         " summed its " + std::to_string(window.micro_batches) +
         " micro-steps in bfloat16 (data_types.grad_accum_dtype; the model's dtype by default), "
         "so the gradient errs " + format("%.3g", error) + " relative, " +
         format("%.2g", error / std::max(window.twin_relative_error, 1e-300)) +
         "x what the unaccumulated batch's gradient rounded once to bfloat16 errs (" +
         format("%.3g", window.twin_relative_error) +
         "): within what such a running sum errs, so not a fault. \"data_types\": "
         "{\"grad_accum_dtype\": \"fp32\"} sums in float32 instead (DeepSpeed refuses it at "
         "ZeRO stage 0 with bfloat16)";
}

std::string own_golden_in_words(const std::string& dtype) {
  return dtype + ": each micro-batch's forward and backward computed again at the step's start "
         "weights in the run's own dtype and kernels, summed in float64 as the unaccumulated "
         "large batch would be (--golden float64 for a float64 one)";
}

// How many gradient coordinates were judged, and what a sample can miss.
std::string coordinates_in_words(const RankRecording& rank) {
  if (rank.coordinates_judged < 0 || rank.coordinates_judged == rank.coordinates_total) {
    return "";
  }
  const double share = static_cast<double>(rank.coordinates_judged) /
                       static_cast<double>(std::max<int64_t>(rank.coordinates_total, 1));
  return std::to_string(rank.coordinates_judged) + " of the " +
         std::to_string(rank.coordinates_total) + " gradient coordinates (" +
         format("%.3g", 100.0 * share) +
         "%, the same on every rank: every tensor at least 64, the rest in proportion to its "
         "size). Every known mistake scales or drops whole micro-batches, the same on every "
         "coordinate, so a sample judges it as the whole does; a fault confined to a share f of "
         "a tensor judged on k coordinates escapes with probability (1-f)^k (--coordinates 0 "
         "judges all)";
}

std::string why_gradients_not_judged(const std::vector<RankRecording>& ranks) {
  const RankRecording& first = ranks.front();
  if (static_cast<int64_t>(ranks.size()) != first.world_size) {
    return "only " + std::to_string(ranks.size()) + " of " + std::to_string(first.world_size) +
           " ranks recorded a watched step";
  }
  for (const RankRecording& rank : ranks) {
    if (!rank.golden_not_computed.empty()) {
      return "the golden could not be computed on rank " + std::to_string(rank.rank) + ": " +
             rank.golden_not_computed;
    }
  }
  if (first.resolved.dtype == "float16") {
    return "the model trains in float16: its loss scaling (the windows skipped while the scale "
           "calibrates, the scale the gradients are divided by) is not followed by watch yet";
  }
  if (first.resolved.dtype != "float32" && first.resolved.dtype != "bfloat16") {
    return "the model trains in " + first.resolved.dtype + ", which watch does not judge";
  }
  return "";
}

}  // namespace

WatchedJudgement judge_watched(const std::vector<RankRecording>& ranks,
                               std::optional<int64_t> intended_batch,
                               TrainingJudgement& training, MemoryJudgement& memory) {
  WatchedJudgement judgement;
  training.gradient_tolerance = default_tolerance(EngineDtype::float32);
  const RankRecording& first = ranks.front();
  judgement.world_size = first.world_size;
  judgement.gradient_accumulation_steps = first.resolved.gradient_accumulation_steps;
  size_t windows = first.windows.size();
  for (const RankRecording& rank : ranks) windows = std::min(windows, rank.windows.size());
  if (windows == 0) {
    const int64_t backwards =
        std::count(first.calls.begin(), first.calls.end(), std::string("engine.backward()"));
    const bool forwards =
        std::find(first.calls.begin(), first.calls.end(), "forward") != first.calls.end();
    judgement.not_judged_reason =
        backwards > 0 && !forwards
            ? "no micro-batch was watched: the loop called engine.backward() " +
                  std::to_string(backwards) +
                  " times, but never a forward of the engine or of its module (a loop calling "
                  "engine.module.forward(...) or another method of the model skips both); call "
                  "engine(inputs) or engine.module(inputs)"
            : "no optimizer step was watched: the script ended before its first one";
    training.not_judged = judgement.not_judged_reason;
    return judgement;
  }
  // The batch of a whole window: the largest watched (a window the loop closed early, at the end
  // of an epoch, is diagnosed on its own).
  int64_t micro_steps = 0;
  for (size_t w = 0; w < windows; ++w) {
    micro_steps = std::max(micro_steps, static_cast<int64_t>(first.windows[w].micro_steps.size()));
  }
  judgement.effective_batch = first.resolved.micro_batch_per_gpu * micro_steps * first.world_size;
  judgement.intended_batch = intended_batch.value_or(first.resolved.train_batch_size);
  judgement.not_judged_reason = why_gradients_not_judged(ranks);
  judgement.judged = judgement.not_judged_reason.empty();

  const int64_t gas = first.resolved.gradient_accumulation_steps;
  const Tolerance tolerance = default_tolerance(EngineDtype::float32);
  judgement.golden = !judgement.judged          ? ""
                     : first.golden_kind == "own" ? own_golden_in_words(first.resolved.dtype)
                                                  : "float64";
  judgement.coordinates = coordinates_in_words(first);
  bool bfloat16_sum_said = false;  // the bfloat16 running sum's cost, said once
  for (size_t w = 0; judgement.judged && w < windows; ++w) {
    const WindowGolden golden = golden_of(ranks, w);
    const bool twin_judges = golden.dtype == "bfloat16";
    const WindowPieces pieces = pieces_of(ranks, w, twin_judges);
    StepJudgement window;
    window.golden_dtype = golden.dtype;
    window.self_check_ratio = golden.ratio;
    if (!golden.failure.empty() && judgement.golden_self_check_failed.empty()) {
      judgement.golden_self_check_failed = golden.failure;
      judgement.golden =
          golden.dtype + ": each micro-batch's gradient at the window's start weights in the "
          "run's own dtype and kernels, combined as the unaccumulated large batch would be, "
          "judged within torch.testing's " + golden.dtype + " tolerance (the float64 golden "
          "failed its self-check)";
    }
    window.step = static_cast<int64_t>(w);
    window.micro_batches = static_cast<int64_t>(first.windows[w].micro_steps.size());
    window.items = pieces.items;
    const Gradients& run = first.windows[w].run_gradients;
    // The relative error a run following a hypothesis may show: float32's, or for bfloat16 the
    // twin's plus the running sum's roundings, one per micro-step, random in sign (as
    // judge_training.cpp allows a scenario's run).
    double hypothesis_match = kHypothesisMatch;
    if (twin_judges) {
      // The golden is the run's own function in bfloat16 (its pieces computed in the run's
      // kernels, summed in float64): what parts the run from it is how DeepSpeed summed the
      // micro-steps. What the run may err: the unaccumulated batch's own gradient rounded once
      // to bfloat16 (the least any bfloat16 gradient errs) and, where DeepSpeed sums the
      // micro-steps in bfloat16 (the config's data_types.grad_accum_dtype, the model's dtype
      // by default), that running sum's roundings, one per micro-step, random in sign; within
      // kPrecisionTwinFactor of that the window passes (PyTorch's rule).
      const Gradients rounded = rounded_to_bfloat16(pieces.golden);
      window.twin_relative_error = relative_error(rounded, pieces.golden);
      window.twin_is_rounded_golden = true;
      const bool summed_in_bfloat16 = first.resolved.grad_accum_dtype == "bfloat16";
      const double allowed =
          kPrecisionTwinFactor *
          (window.twin_relative_error +
           (summed_in_bfloat16 ? bfloat16_running_sum_error(window.micro_batches) : 0.0));
      window.gradients = compare_model_with_twin(first.parameter_names, run, rounded,
                                                 pieces.golden, kPrecisionTwinFactor,
                                                 kPrecisionTwinFloor);
      const double error = relative_error(run, pieces.golden);
      window.gradients_match = error <= allowed;
      window.gradients.front().within_tolerance = window.gradients_match;
      hypothesis_match = std::max(kHypothesisMatch, allowed);
      if (window.gradients_match && summed_in_bfloat16 && window.micro_batches > 1 &&
          error > kPrecisionTwinFactor * window.twin_relative_error &&
          !bfloat16_sum_said) {
        bfloat16_sum_said = true;
        judgement.findings.push_back(bfloat16_sum_in_words(w, window, error, first));
      }
    } else if (first.resolved.dtype == "bfloat16") {
      if (pieces.twin.empty()) {
        judgement.not_judged_reason =
            "the model trains in bfloat16 and the recording holds no precision twin";
        judgement.judged = false;
        break;
      }
      window.gradients = compare_model_with_twin(first.parameter_names, run, pieces.twin,
                                                 pieces.golden, kPrecisionTwinFactor,
                                                 kPrecisionTwinFloor);
      window.gradients_match = window.gradients.front().within_tolerance;
      window.twin_relative_error = relative_error(pieces.twin, pieces.golden);
      hypothesis_match =
          std::max(kHypothesisMatch,
                   kPrecisionTwinFactor * accumulation_noise(window.twin_relative_error,
                                                             window.micro_batches,
                                                             Precision::bf16));
    } else {
      for (size_t p = 0; p < run.size(); ++p) {
        window.gradients.push_back(
            compare_tensors(first.parameter_names[p], run[p], pieces.golden[p], tolerance));
        window.gradients_match =
            window.gradients_match && window.gradients.back().within_tolerance;
      }
    }
    compare_whole_model(run, pieces.golden, window);
    if (!window.gradients_match) {
      std::optional<DiagnosisKind> best;
      std::string best_specifics;
      double best_error = hypothesis_match;
      for (const Hypothesis& hypothesis : hypotheses_for(first, w, pieces, gas)) {
        const double error = relative_error(run, hypothesis.predicted);
        window.tested.push_back({hypothesis.kind, error});
        if (error <= best_error && !best) {  // the first listed that matches: most specific
          best = hypothesis.kind;
          best_specifics = hypothesis.specifics;
          best_error = error;
        }
      }
      if (!best && (window.twin_relative_error >= 0.0 || twin_judges)) {
        best_specifics = low_precision_accumulation(first, window, hypothesis_match, best);
      }
      if (!judgement.diagnosis && judgement.explanation.empty()) {
        if (best && *best == DiagnosisKind::low_precision_accumulation) {
          judgement.diagnosis = best;
          judgement.explanation = best_specifics;
        } else if (best) {
          judgement.diagnosis = best;
          DiagnosisFacts facts =
              facts_of_window(first, judgement, w, window, pieces.labels_counted);
          facts.addendum = best_specifics;
          judgement.explanation = explain_diagnosis(*best, facts);
        } else {
          judgement.explanation = explain_unexplained_mismatch(
              static_cast<int64_t>(w), window.tested, window.norm_ratio, window.cosine);
        }
      }
    }
    training.micro_steps += window.micro_batches;
    if (window.twin_relative_error >= 0.0) training.precision = "bf16";
    if (!window.gradients_match && !training.first_gradient_mismatch) {
      training.first_gradient_mismatch = window.step;
      training.diagnosis = Diagnosis{std::nullopt, "", window.step, window.tested};
    }
    training.steps.push_back(std::move(window));
  }
  find_lr_scheduler_stepped_by_loop(first, judgement);
  find_batch(first, judgement);
  judge_memory_of(first, judgement, memory);
  // Windows are judged before the scheduler, the batch and memory, so a window that mismatched
  // holds the first thing found: the training's diagnosis is that window's.
  if (training.diagnosis) {
    training.diagnosis->kind = judgement.diagnosis;
    training.diagnosis->explanation = judgement.explanation;
  }
  training.not_judged = judgement.judged ? "" : judgement.not_judged_reason;
  return judgement;
}

}  // namespace trainrepro
