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

// Loads every scenario that needs a golden; prints each file that does not load (or cannot be
// read) and goes on with the others, as `run` does. Returns how many did not load.
int load_scenarios_needing_goldens(const std::vector<std::string>& paths,
                                   std::vector<Scenario>& scenarios) {
  const DiscoveredScenarios discovered = discover_scenarios(paths);
  int not_loaded = static_cast<int>(discovered.errors.size());
  for (const DiscoveryError& error : discovered.errors) std::cerr << error.message << "\n";
  for (const std::string& file : discovered.files) {
    LoadAttempt attempt = try_load_scenario(file);
    if (!attempt.scenario) {
      std::cerr << attempt.failure.verdict.found << "\n";
      ++not_loaded;
    } else if (needs_golden(*attempt.scenario)) {
      scenarios.push_back(std::move(*attempt.scenario));
    }
  }
  return not_loaded;
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

// Writes every golden it can: a scenario this machine cannot hold, or whose model cannot train
// on its data, is named and left without one (exit 2), and the others are written.
int update_goldens(const std::vector<Scenario>& scenarios, const GoldenArgs& args) {
  int refused = 0;
  // Scenarios sharing a key (a bug and its fixed twin) share one golden, computed once.
  std::map<std::string, std::vector<const Scenario*>> by_file;
  for (const Scenario& scenario : scenarios) {
    if (!args.allow_large && !fits_this_machine(scenario)) {
      ++refused;
      continue;
    }
    by_file[golden_file_name(golden_key(scenario))].push_back(&scenario);
  }
  size_t written = 0, users_written = 0;
  for (const auto& [file, users] : by_file) {
    Golden golden;
    try {
      golden = compute_golden(*users.front());
    } catch (const UserModelError& error) {  // the user's model cannot train on its data
      std::cerr << users.front()->file << ":/model/options/file: " << error.what() << "\n";
      refused += static_cast<int>(users.size());
      continue;
    }
    const std::string path = write_golden(args.golden_dir, golden);
    std::cout << "wrote " << path << " (used by";
    for (const Scenario* user : users) std::cout << " " << user->name;
    std::cout << ")\n";
    ++written;
    users_written += users.size();
  }
  std::cout << written << " golden file(s) for " << users_written << " scenario(s)\n";
  if (refused > 0) {
    std::cerr << refused << " scenario(s) got no golden (above)\n";
    return kExitBadInput;
  }
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
  const int not_loaded = load_scenarios_needing_goldens(args.paths, scenarios);
  const int status = args.update ? update_goldens(scenarios, args)
                                 : check_goldens(scenarios, args.golden_dir);
  if (not_loaded == 0) return status;
  // The goldens of the others are written (or checked) all the same; the bad files decide the
  // exit code unless something worse happened.
  std::cerr << not_loaded << " file(s) did not load (above): "
            << (args.update ? "no golden written for them; the others' are above"
                            : "not checked; the others are above")
            << "\n";
  return status == kExitOk ? kExitBadInput : status;
}

}  // namespace trainrepro
