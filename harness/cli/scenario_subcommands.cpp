// `config resolve`, `new`, `export` and `golden`: what inspects a config and writes a scenario,
// its Python program and its golden.
#include "harness/cli/subcommands.h"

#include <iostream>
#include <memory>

#include "harness/cli/commands.h"
#include "harness/scenario/batch_config.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

Subcommand add_config_resolve(CLI::App& app) {
  struct Parsed {
    ConfigResolveArgs resolve_args;
  };
  auto parsed = std::make_shared<Parsed>();
  ConfigResolveArgs& resolve_args = parsed->resolve_args;
  CLI::App* resolve = app.add_subcommand(
      "resolve",
      "Resolve train_batch_size, train_micro_batch_size_per_gpu and "
      "gradient_accumulation_steps as DeepSpeed does; prints them as JSON, or DeepSpeed's own "
      "error message and exit 2");
  resolve->add_option("DS_CONFIG", resolve_args.config_file, "the ds_config.json")->required();
  resolve->add_option("--world-size", resolve_args.world_size, "data-parallel ranks (default 1)")
      ->check(CLI::Range(int64_t{1}, kLargestWorldSize));
  resolve->add_option("--deepspeed-version", resolve_args.deepspeed_version,
                      "the DeepSpeed release whose rules apply (default the newest known)");
  resolve->footer(kExitCodes);
  return {resolve, [parsed] { return run_config_resolve(parsed->resolve_args); }};
}

Subcommand add_new_scenario(CLI::App& app) {
  struct Parsed {
    NewScenarioArgs new_args;
    bool no_golden = false;
  };
  auto parsed = std::make_shared<Parsed>();
  NewScenarioArgs& new_args = parsed->new_args;
  bool& no_golden = parsed->no_golden;
  CLI::App* new_scenario = app.add_subcommand(
      "new",
      "Write a scenario from your own DeepSpeed config (kept verbatim), your model and "
      "samples, your loop's habits and the batch you intend; then its golden");
  new_scenario->add_option("--ds-config", new_args.ds_config, "your ds_config.json")->required();
  new_scenario->add_option("-o,--out", new_args.output, "the scenario file to write")->required();
  new_scenario->add_option("--model", new_args.model_file,
                           "your model as a TorchScript file (torch.jit.save); default the "
                           "built-in MLP, or the built-in model that fits --data");
  new_scenario->add_option("--data", new_args.data_file,
                           "your samples as a safetensors file (inputs, targets, optional "
                           "attention_mask); default generated data");
  new_scenario->add_option("--world-size", new_args.world_size, "data-parallel ranks (default 1)")
      ->check(CLI::Range(int64_t{1}, kLargestWorldSize));
  new_scenario
      ->add_option("--intended-batch", new_args.intended_batch,
                   "the train batch size you mean to train with (default: the one "
                   "DeepSpeed resolves from the config)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  new_scenario->add_option("--steps", new_args.steps, "optimizer steps compared (default 4)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  new_scenario->add_option("--hf-trainer", new_args.hf_trainer,
                           "a JSON file of your TrainingArguments (fills the config's \"auto\")");
  new_scenario->add_option("--habit", new_args.habits,
                           "a loop habit KEY=VALUE (docs/scenarios.md, \"loop\"), e.g. "
                           "keep=loss_with_graph; repeatable");
  new_scenario->add_option("--client-optimizer", new_args.client_optimizer,
                           "the optimizer your script passes to deepspeed.initialize (a config "
                           "without \"optimizer\"): 'AdamW lr=3e-4 weight_decay=0.1 "
                           "betas=0.9,0.95' (AdamW, Adam or SGD with torch's parameter names), or "
                           "a .json file holding the client_optimizer section");
  new_scenario->add_option("--param-groups", new_args.param_groups,
                           "the param groups your script passes: 'no_decay=bias,LayerNorm.weight' "
                           "(names containing one of these get weight_decay 0, the rest the "
                           "optimizer's), or a .json file holding the parameter_groups array");
  new_scenario->add_option("--deepspeed-version", new_args.deepspeed_version,
                           "the DeepSpeed release whose semantics apply (default 0.19.8)");
  new_scenario->add_option("--name", new_args.name, "the scenario's name (default: from -o)");
  new_scenario->add_option("--golden-dir", new_args.golden_dir,
                           "where its golden goes (default golden)");
  new_scenario->add_flag("--no-golden", no_golden, "write the scenario only");
  new_scenario->add_flag("--force", new_args.force, "replace an existing scenario file");
  new_scenario->footer(
      "Exit codes:\n"
      "  0  scenario (and golden) written\n"
      "  2  the config, a file or an option cannot make a scenario (nothing written)\n"
      "  3  the scenario or golden could not be written\n");
  return {new_scenario, [parsed] {
            parsed->new_args.write_golden = !parsed->no_golden;
            return run_new_scenario(parsed->new_args);
          }};
}

Subcommand add_export(CLI::App& app) {
  struct Parsed {
    ExportArgs export_args;
    bool as_python = false;
  };
  auto parsed = std::make_shared<Parsed>();
  ExportArgs& export_args = parsed->export_args;
  bool& as_python = parsed->as_python;
  CLI::App* export_scenario = app.add_subcommand(
      "export",
      "Write a self-contained Python program that reproduces a scenario with PyTorch "
      "and the real DeepSpeed, for an upstream issue");
  export_scenario->add_option("SCENARIO", export_args.scenario_file, "the scenario file")
      ->required();
  export_scenario->add_flag("--python", as_python, "a Python program (the only format)")
      ->required();
  export_scenario->add_option("-o,--out", export_args.output, "the program to write")->required();
  export_scenario->add_flag("--force", export_args.force, "replace an existing file");
  export_scenario->footer(
      "Exit codes:\n"
      "  0  written\n"
      "  2  a bad scenario, or one the script cannot reproduce (said with its key)\n"
      "  3  the program could not be written\n");
  return {export_scenario, [parsed] { return run_export(parsed->export_args); }};
}

Subcommand add_golden(CLI::App& app) {
  struct Parsed {
    GoldenArgs golden_args;
    bool check = false;
  };
  auto parsed = std::make_shared<Parsed>();
  GoldenArgs& golden_args = parsed->golden_args;
  bool& check = parsed->check;
  CLI::App* golden = app.add_subcommand(
      "golden",
      "Write (--update) or verify (--check) the golden reference files of scenarios; `run` only "
      "reads them");
  golden->add_option("PATH", golden_args.paths, "scenario files or folders (default scenarios)");
  auto* update = golden->add_flag("--update", golden_args.update,
                                  "compute and write the goldens (float64, CPU), atomically");
  auto* check_flag =
      golden->add_flag("--check", check, "verify every golden exists, matches and is intact");
  update->excludes(check_flag);
  golden->add_option("--golden-dir", golden_args.golden_dir, "default golden");
  golden->add_flag("--allow-large", golden_args.allow_large,
                   "compute goldens that need more memory or time than this machine gives");
  golden->footer(kExitCodes);
  return {golden, [parsed]() -> int {
            if (!parsed->golden_args.update && !parsed->check) {
              std::cerr << "trainrepro golden: say --update or --check\n";
              return kExitBadInput;
            }
            return run_golden(parsed->golden_args);
          }};
}

}  // namespace trainrepro
