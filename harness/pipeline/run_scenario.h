// Runs one scenario through the stages of the data flow — load, resolve, (run, judge) — and
// returns its result as plain data. Never throws for a bad scenario: that is a result too.
#pragma once
#include <optional>
#include <string>

#include "harness/engines/training_engine.h"
#include "harness/report/scenario_result.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

struct RunOptions {
  std::optional<DeviceChoice> device_override;  // --device
  bool cuda_available = false;
  int cuda_devices = 0;
  std::string golden_dir = "golden";
  int rank_timeout_seconds = 600;  // a multi-rank run that takes longer is killed
  // Ranks an outside launcher (mpirun, srun) started this process among; scenarios of another
  // world size are skipped under such a launch. 1 when there is none.
  int launcher_world_size = 1;
  // Runs a scenario the resource check refuses (`run --allow-large`); ranks never re-check.
  bool allow_large = false;
  // What trains each scenario (`run --engine`, chosen once before any scenario); the golden,
  // judges and reporters are the same whichever it is.
  std::shared_ptr<const TrainingEngine> engine = reference_training_engine();
  // `run`'s worker sets, kept for the whole run (the caller owns them; the default with a
  // Python engine); none: fresh worker ranks for every scenario (--fresh-workers).
  WorkerSets* worker_sets = nullptr;
};

// The load stage alone, as a result when it fails (outcome error, source scenario).
struct LoadAttempt {
  std::optional<Scenario> scenario;
  ScenarioResult failure;  // meaningful when !scenario
};
LoadAttempt try_load_scenario(const std::string& file);

ScenarioResult run_loaded_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace trainrepro
