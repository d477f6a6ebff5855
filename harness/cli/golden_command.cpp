// `trainrepro golden --update|--check [PATH…]`: the only way goldens are written (`run` only
// reads them), and the check that every scenario's golden exists, matches its key and is intact.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "harness/cli/commands.h"
#include "harness/cli/scenario_discovery.h"
#include "harness/golden/golden_key.h"
#include "harness/golden/golden_run.h"
#include "harness/golden/golden_store.h"
#include "harness/memory/host_memory.h"
#include "harness/pipeline/resource_check.h"
#include "harness/pipeline/run_scenario.h"
#include "harness/scenario/plan.h"
#include "models/torchscript_model.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

// Loads every scenario that needs a golden; prints load errors. Returns false if any failed.
bool load_scenarios_needing_goldens(const std::vector<std::string>& paths,
                                    std::vector<Scenario>& scenarios) {
  const DiscoveredScenarios discovered = discover_scenarios(paths);
  bool all_loaded = discovered.errors.empty();
  for (const DiscoveryError& error : discovered.errors) std::cerr << error.message << "\n";
  for (const std::string& file : discovered.files) {
    LoadAttempt attempt = try_load_scenario(file);
    if (!attempt.scenario) {
      std::cerr << attempt.failure.verdict.found << "\n";
      all_loaded = false;
    } else if (needs_golden(*attempt.scenario)) {
      scenarios.push_back(std::move(*attempt.scenario));
    }
  }
  return all_loaded;
}

// A golden of a scenario this machine cannot hold would crash half-way; refused first, unless
// --allow-large.
bool fits_this_machine(const Scenario& scenario) {
  const PlanResolution resolution = resolve_plan(scenario, Device::cpu);
  const Plan* plan = std::get_if<Plan>(&resolution);
  if (plan == nullptr) return true;  // a refused config trains nothing
  const MachineCapacity machine{
      physical_ram_bytes(), 0,
      std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()))};
  if (auto refusal = refuse_beyond_machine(scenario, *plan, machine, ResourceUse::golden_update)) {
    std::cerr << *refusal << "\n";
    return false;
  }
  return true;
}

int update_goldens(const std::vector<Scenario>& scenarios, const GoldenArgs& args) {
  if (!args.allow_large) {
    bool all_fit = true;
    for (const Scenario& scenario : scenarios) all_fit = fits_this_machine(scenario) && all_fit;
    if (!all_fit) return kExitBadInput;
  }
  const std::string& golden_dir = args.golden_dir;
  // Scenarios sharing a key (a bug and its fixed twin) share one golden, computed once.
  std::map<std::string, std::vector<const Scenario*>> by_file;
  for (const Scenario& scenario : scenarios) {
    by_file[golden_file_name(golden_key(scenario))].push_back(&scenario);
  }
  for (const auto& [file, users] : by_file) {
    Golden golden;
    try {
      golden = compute_golden(*users.front());
    } catch (const UserModelError& error) {  // the user's model cannot train on its data
      std::cerr << users.front()->file << ":/model/options/file: " << error.what() << "\n";
      return kExitBadInput;
    }
    const std::string path = write_golden(golden_dir, golden);
    std::cout << "wrote " << path << " (used by";
    for (const Scenario* user : users) std::cout << " " << user->name;
    std::cout << ")\n";
  }
  std::cout << by_file.size() << " golden file(s) for " << scenarios.size() << " scenario(s)\n";
  return kExitOk;
}

int check_goldens(const std::vector<Scenario>& scenarios, const std::string& golden_dir) {
  int problems = 0;
  std::set<std::string> files;
  for (const Scenario& scenario : scenarios) {
    files.insert(golden_file_name(golden_key(scenario)));
    const std::string problem = check_golden(golden_dir, scenario);
    if (!problem.empty()) {
      std::cerr << scenario.file << ": " << problem << "\n";
      ++problems;
    }
  }
  if (problems > 0) {
    std::cerr << problems << " of " << scenarios.size() << " scenario(s) lack a valid golden\n";
    return kExitBadInput;
  }
  std::cout << "every golden is present and intact: " << files.size() << " file(s) for "
            << scenarios.size() << " scenario(s)\n";
  return kExitOk;
}

}  // namespace

int run_golden(const GoldenArgs& args) {
  std::vector<Scenario> scenarios;
  if (!load_scenarios_needing_goldens(args.paths, scenarios)) return kExitBadInput;
  return args.update ? update_goldens(scenarios, args)
                     : check_goldens(scenarios, args.golden_dir);
}

}  // namespace trainrepro
