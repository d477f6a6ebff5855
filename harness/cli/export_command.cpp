// `trainrepro export SCENARIO --python -o repro.py`: one self-contained Python program that
// reproduces a scenario with PyTorch and the real DeepSpeed (same model, data, config verbatim and
// loop habits) and prints the same comparison against one unaccumulated batch, so a user can
// attach it to a DeepSpeed or transformers issue. The program is exports/repro_main.py with the
// oracle's PyTorch zoo and DeepSpeed loop filled in and the scenario as data (repro_script.h).
#include <filesystem>
#include <iostream>
#include <string>

#include "harness/cli/commands.h"
#include "harness/cli/repro_script.h"
#include "harness/files/atomic_write.h"
#include "harness/json/printable.h"
#include "harness/json/scenario_error.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

int run_export(const ExportArgs& args) {
  std::error_code exists_error;
  if (std::filesystem::exists(args.output, exists_error) && !args.force) {
    std::cerr << printable(args.output) << ": already exists; choose another -o, or pass --force\n";
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
    std::cerr << printable(*reason) << "\n";
    return kExitBadInput;
  }
  std::string script;
  try {
    script = repro_script(exported_data(scenario, raw, args.scenario_file));
  } catch (const std::exception& error) {  // a template without its placeholder: our bug
    std::cerr << printable(args.scenario_file) << ": cannot write the script: " << error.what()
              << "\n";
    return kExitInfrastructure;
  }
  try {
    write_file_atomically(args.output, script);
    std::filesystem::permissions(args.output, std::filesystem::perms::owner_exec,
                                 std::filesystem::perm_options::add);
  } catch (const std::exception& error) {
    std::cerr << printable(args.output) << ": cannot write: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  std::cout << "wrote " << printable(args.output) << ": DS_ACCELERATOR=cpu "
            << (scenario.world_size > 1
                    ? "torchrun --nproc_per_node " + std::to_string(scenario.world_size) + " "
                    : std::string("python "))
            << printable(args.output) << " (needs torch and deepspeed)\n";
  return kExitOk;
}

}  // namespace trainrepro
