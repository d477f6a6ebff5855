// `trainrepro export SCENARIO --python -o repro.py`: one self-contained Python program that
// reproduces a scenario with PyTorch and the real DeepSpeed (same model, data, config verbatim and
// loop habits) and prints the same comparison against one unaccumulated batch, so a user can
// attach it to a DeepSpeed or transformers issue. The program is exports/repro_main.py with the
// scenario and the oracle's PyTorch zoo and DeepSpeed loop filled in (export_sources.h).
#include <filesystem>
#include <iostream>
#include <string>

#include "harness/cli/commands.h"
#include "harness/cli/export_sources.h"
#include "harness/files/atomic_write.h"
#include "harness/json/scenario_error.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/json_document.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

std::string embedded(const std::string& name) {
  for (const ExportSource& source : export_source_table()) {
    if (name == source.name) {
      return std::string(reinterpret_cast<const char*>(source.bytes), source.size);
    }
  }
  throw std::logic_error("export: no embedded source " + name);
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// What the exported loop does not do (yet), said with the key that asks for it. The script
// drives the oracle's loop: built-in models and generated data, fp32 or bf16 on the CPU, the
// accumulation habits; memory is not measured there.
std::optional<std::string> not_exportable(const Scenario& scenario, const nlohmann::json& raw) {
  const std::string where = scenario.file + ":";
  if (std::holds_alternative<TorchScriptOptions>(scenario.model.options)) {
    return where + "/model/name: export --python writes the built-in models only (your "
                   "TorchScript model is not exported yet)";
  }
  if (std::holds_alternative<SafetensorsData>(scenario.data.options)) {
    return where + "/data/name: export --python writes generated data only (your samples "
                   "file is not exported yet)";
  }
  if (raw.contains("hf_trainer")) {
    return where + "/hf_trainer: the config holds \"auto\" values the Trainer fills; export "
                   "the config as the Trainer fills it (trainrepro run prints it) instead";
  }
  if (scenario.expect.outcome == ExpectedOutcome::config_error) {
    return where + "/expect/outcome: DeepSpeed refuses this config; `trainrepro config "
                   "resolve` shows it without a script";
  }
  if (scenario.loop.keep != KeepHabit::nothing || scenario.loop.evaluation) {
    return where + "/loop: memory reproductions (keep, evaluation) are not exported: the "
                   "script compares gradients only";
  }
  if (raw.contains("/deepspeed/fp16/enabled"_json_pointer) &&
      raw.at("/deepspeed/fp16/enabled"_json_pointer) == true) {
    return where + "/deepspeed/fp16/enabled: DeepSpeed refuses fp16 on a CPU; the script "
                   "runs on the CPU";
  }
  if (scenario.deepspeed.bf16_enabled) {
    return where + "/deepspeed/bf16: a bf16 run is judged against its precision twin (the same "
                   "run in float32 semantics), which the script does not compute; it compares "
                   "with float32 tolerance only";
  }
  // Verdicts about the update (learning rate, optimizer state), not the accumulated gradients:
  // the script compares gradients, so it would show these runs agreeing.
  if (scenario.expect.diagnosis) {
    switch (*scenario.expect.diagnosis) {
      case DiagnosisKind::lr_scheduler_stepped_every_micro_step:
      case DiagnosisKind::scheduler_start_rate_first_group_only:
      case DiagnosisKind::lamb_trust_ratio_over_partition:
      case DiagnosisKind::optimizer_stepped_at_initialization:
      case DiagnosisKind::training_diverged:
      case DiagnosisKind::model_states_differ_from_zero:
      case DiagnosisKind::traffic_differs_from_zero:
        return where + "/expect/diagnosis: this verdict is about the update or the engine's "
                       "state, not the accumulated gradients the script compares";
      default:
        break;
    }
  }
  if (raw.dump().find("'''") != std::string::npos) {
    return where + " holds ''' , which the script's embedded text cannot";
  }
  return std::nullopt;
}

}  // namespace

int run_export(const ExportArgs& args) {
  std::error_code exists_error;
  if (std::filesystem::exists(args.output, exists_error) && !args.force) {
    std::cerr << args.output << ": already exists; choose another -o, or pass --force\n";
    return kExitBadInput;
  }
  Scenario scenario;
  nlohmann::json raw;
  try {
    raw = read_json_file(args.scenario_file);
    scenario = load_scenario_document(raw, args.scenario_file);
  } catch (const ScenarioError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  if (auto reason = not_exportable(scenario, raw)) {
    std::cerr << *reason << "\n";
    return kExitBadInput;
  }
  std::string expected = scenario.expect.outcome == ExpectedOutcome::pass
                             ? std::string("pass (the gradients should agree)")
                             : "diagnosis " + (scenario.expect.diagnosis
                                                   ? spelling_of(*scenario.expect.diagnosis,
                                                                 diagnosis_spellings())
                                                   : std::string("?"));
  std::string script = embedded("repro_main.py");
  replace_all(script, "__TITLE__", "Reproduction of the trainrepro scenario " + scenario.name + ".");
  replace_all(script, "__DESCRIPTION__", scenario.description);
  replace_all(script, "__VERSION__", TRAINREPRO_VERSION);
  replace_all(script, "__SOURCE__", args.scenario_file);
  replace_all(script, "__INTENDED__", std::to_string(scenario.golden.train_batch_size));
  replace_all(script, "__SCRIPT__", std::filesystem::path(args.output).filename().string());
  replace_all(script, "__EXPECTED__", expected);
  replace_all(script, "__ZOO_SOURCE__", embedded("zoo.py"));
  replace_all(script, "__WORKER_SOURCE__", embedded("ds_worker.py"));
  replace_all(script, "__SCENARIO_JSON__", raw.dump(2));  // last: the user's text, verbatim
  try {
    write_file_atomically(args.output, script);
    std::filesystem::permissions(args.output, std::filesystem::perms::owner_exec,
                                 std::filesystem::perm_options::add);
  } catch (const std::exception& error) {
    std::cerr << args.output << ": cannot write: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  std::cout << "wrote " << args.output << ": DS_ACCELERATOR=cpu "
            << (scenario.world_size > 1
                    ? "torchrun --nproc_per_node " + std::to_string(scenario.world_size) + " "
                    : std::string("python "))
            << args.output << " (needs torch and deepspeed)\n";
  return kExitOk;
}

}  // namespace trainrepro
