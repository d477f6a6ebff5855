// `trainrepro watch --save-scenario S.json`: the watched run written as a scenario, so the bug it
// showed becomes a regression test that runs without the script. Beside S.json go the config the
// script passed to deepspeed.initialize (S-ds_config.json, verbatim), the model at the first
// watched window's start weights as TorchScript (S-model.pt) and the micro-batches every rank
// trained on, in the order trainrepro's loop feeds them (S-samples.safetensors); then
// `trainrepro new` builds and checks the scenario from them, with the habit the diagnosis names
// as its loop key, and computes its golden.
#include "harness/cli/watch_save_scenario.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <ATen/ATen.h>

#include "harness/cli/commands.h"
#include "harness/files/atomic_write.h"
#include "harness/files/safetensors.h"
#include "harness/json/json_fields.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

// The loop key each gradient diagnosis of a watched loop corresponds to; a diagnosis that is
// absent here has none that reproduces it exactly (say why instead of guessing).
const std::map<DiagnosisKind, std::string>& habit_of_diagnosis() {
  static const std::map<DiagnosisKind, std::string> habits = {
      {DiagnosisKind::loss_scaled_twice, "loss_scaling=twice"},
      {DiagnosisKind::zeroed_inside_window, "zero_grad=every_micro_step"},
      {DiagnosisKind::optimizer_every_micro_step, "stepping=optimizer_every_micro_step"},
      {DiagnosisKind::step_once_per_window, "stepping=once_per_window"},
      {DiagnosisKind::per_micro_batch_token_normalisation, "token_normalisation=per_micro_batch"},
      {DiagnosisKind::lr_scheduler_stepped_every_micro_step, "lr_scheduler_step=every_micro_step"},
      {DiagnosisKind::no_accumulation, ""},
      {DiagnosisKind::effective_batch_differs, ""},
  };
  return habits;
}

// The loop's own sync switch as a loop key, read from rank 0's calls in the first watched window:
// which of its backwards ran inside engine.no_sync() (entered since the backward before).
// "gradient_sync=never" (all of them) or "gradient_sync=first_micro_step" (all but the first);
// "" for another pattern, which no loop key reproduces.
std::string gradient_sync_habit(const RankRecording& rank) {
  if (rank.windows.empty()) return "";
  std::vector<bool> inside;
  bool entered = false;
  const auto end = rank.calls.begin() + rank.windows.front().calls_at_close;
  for (auto call = rank.calls.begin(); call != end; ++call) {
    if (*call == "engine.no_sync()") entered = true;
    if (*call == "engine.backward()") {
      inside.push_back(entered);
      entered = false;
    }
  }
  if (inside.empty()) return "";
  const bool rest_inside = std::all_of(inside.begin() + 1, inside.end(), [](bool in) { return in; });
  if (inside.front() && rest_inside) return "gradient_sync=never";
  if (inside.size() > 1 && rest_inside) return "gradient_sync=first_micro_step";
  return "";
}

// The loop key that reproduces the diagnosis (empty: the config alone does), or nullopt when
// none does exactly.
std::optional<std::string> habit_for(const RankRecording& rank, DiagnosisKind diagnosis) {
  if (diagnosis == DiagnosisKind::gradients_not_reduced) {
    const std::string habit = gradient_sync_habit(rank);
    if (habit.empty()) return std::nullopt;
    return habit;
  }
  const auto found = habit_of_diagnosis().find(diagnosis);
  if (found == habit_of_diagnosis().end()) return std::nullopt;
  return found->second;
}

// Why this watched run cannot be written as a scenario; "" when it can.
std::string why_not_saved(const std::vector<RankRecording>& ranks, const WatchedJudgement& judged) {
  for (const RankRecording& rank : ranks) {
    if (!rank.save_not_possible.empty()) {
      return "rank " + std::to_string(rank.rank) + ": " + rank.save_not_possible;
    }
  }
  if (!ranks.front().config_given.is_object()) {
    return "the config the script passed to deepspeed.initialize could not be read";
  }
  if (!judged.judged) return "the run was not judged: " + judged.not_judged_reason;
  if (judged.found_something() && !judged.diagnosis) {
    return "its gradients differ from the golden's in a way no known mistake explains";
  }
  if (judged.diagnosis && !habit_for(ranks.front(), *judged.diagnosis)) {
    return std::string("the scenario format has no loop key that reproduces ") +
           spelling_of(*judged.diagnosis, diagnosis_spellings()) + " exactly" +
           (*judged.diagnosis == DiagnosisKind::gradients_not_reduced
                ? " (loop.gradient_sync knows a window whose backwards all run inside no_sync() "
                  "and one whose first alone runs outside)"
                : "");
  }
  return "";
}

// Every micro-batch of every rank, in trainrepro's order: micro-step m of rank r holds samples
// [(m * W + r) * MB, (m * W + r + 1) * MB).
std::vector<std::pair<std::string, at::Tensor>> samples_in_loop_order(
    const std::vector<RankRecording>& ranks) {
  std::vector<at::Tensor> inputs, targets;
  const RankRecording& first = ranks.front();
  for (size_t w = 0; w < first.windows.size(); ++w) {
    for (size_t i = 0; i < first.windows[w].micro_steps.size(); ++i) {
      for (const RankRecording& rank : ranks) {
        const WatchedMicroStep& micro = rank.windows[w].micro_steps[i];
        inputs.push_back(micro.saved_inputs);
        // A token model's loss sees (N*T, V) against (N*T): the file holds targets as (N, T).
        const bool token_ids = micro.saved_inputs.dim() == 2 &&
                               micro.saved_targets.numel() == micro.saved_inputs.numel();
        targets.push_back(token_ids ? micro.saved_targets.reshape(micro.saved_inputs.sizes())
                                    : micro.saved_targets);
      }
    }
  }
  at::Tensor all_inputs = at::cat(inputs);
  at::Tensor all_targets = at::cat(targets);
  // Recorded as float64; the file says what they are: class ids and token ids are integers.
  if (first.windows.front().micro_steps.front().loss_function == "cross_entropy") {
    all_targets = all_targets.to(at::kLong);
  }
  return {{"inputs", all_inputs}, {"targets", all_targets}};
}

std::string beside(const std::string& scenario, const std::string& suffix) {
  const fs::path path(scenario);
  return (path.parent_path() / (path.stem().string() + suffix)).string();
}

}  // namespace

int save_watched_scenario(const std::vector<RankRecording>& ranks, const ScenarioResult& result,
                          const WatchArgs& args, const std::string& recordings_folder) {
  const WatchedJudgement& judged = result.watched->judgement;
  const std::string why = why_not_saved(ranks, judged);
  if (!why.empty()) {
    std::cerr << "--save-scenario " << args.save_scenario << ": not saved: " << why << "\n";
    return kExitBadInput;
  }
  if (fs::exists(args.save_scenario)) {
    std::cerr << "--save-scenario " << args.save_scenario
              << ": already exists; choose another file\n";
    return kExitBadInput;
  }
  const RankRecording& first = ranks.front();
  NewScenarioArgs scenario;
  scenario.output = args.save_scenario;
  scenario.ds_config = beside(args.save_scenario, "-ds_config.json");
  scenario.model_file = beside(args.save_scenario, "-model.pt");
  scenario.data_file = beside(args.save_scenario, "-samples.safetensors");
  scenario.world_size = first.world_size;
  scenario.intended_batch = judged.intended_batch;
  scenario.steps = result.training ? static_cast<int64_t>(result.training->steps.size()) : 0;
  scenario.golden_dir = args.golden_dir;
  std::string command;
  for (const std::string& word : args.command) command += (command.empty() ? "" : " ") + word;
  scenario.description = "Watched by `trainrepro watch` from `" + command + "` on " +
                         engine_description(first.versions) + ": " +
                         (judged.diagnosis ? judged.explanation : "it passed");
  if (judged.diagnosis) {
    scenario.expected_diagnosis = spelling_of(*judged.diagnosis, diagnosis_spellings());
    const std::string habit = *habit_for(first, *judged.diagnosis);
    if (!habit.empty()) scenario.habits.push_back(habit);
  }
  try {
    write_file_atomically(scenario.ds_config, first.config_given.dump(2) + "\n");
    fs::copy_file(fs::path(recordings_folder) / "rank0.model.pt", scenario.model_file + ".partial",
                  fs::copy_options::overwrite_existing);
    fs::rename(scenario.model_file + ".partial", scenario.model_file);
    write_safetensors(scenario.data_file, samples_in_loop_order(ranks));
  } catch (const std::exception& error) {
    std::cerr << "--save-scenario " << args.save_scenario << ": cannot write: " << error.what()
              << "\n";
    return kExitInfrastructure;
  }
  return run_new_scenario(scenario);
}

}  // namespace trainrepro
