// `trainrepro rank-run SCENARIO --result-file F`: one rank of a multi-rank scenario, started by
// mpirun (or srun). Every rank trains its share; rank 0 judges and writes the results file that
// the launching `trainrepro run` reports. Not meant to be typed by hand.
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/thread_budget.h"
#include "harness/distributed/mpi_session.h"
#include "harness/engine/runtime_info.h"
#include "harness/files/atomic_write.h"
#include "harness/pipeline/run_scenario.h"
#include "harness/report/results_json.h"

#include <mpi.h>

namespace trainrepro {

int run_rank(const RankRunArgs& args) {
  ensure_mpi_initialized();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  LoadAttempt attempt = try_load_scenario(args.scenario_file);
  ScenarioResult result = attempt.failure;
  if (attempt.scenario) {
    RunOptions options;
    options.launcher_world_size = launcher_world_size();
    options.device_override = args.device;
    options.cuda_available = cuda_is_available();
    options.cuda_devices = cuda_device_count();
    options.golden_dir = args.golden_dir;
    options.allow_large = true;  // the launching process checked the resources already
    result = run_loaded_scenario(*attempt.scenario, options);
  }
  if (rank != 0) return kExitOk;
  try {
    // The CUDA snapshots are binary: beside the result, where the launching process reads them.
    for (const MemorySnapshot& snapshot : result.memory_snapshots) {
      write_file_atomically(args.result_file + ".snapshot-" +
                                std::to_string(snapshot.optimizer_step),
                            snapshot.pickle);
    }
    // As the results folder does: a path that is not UTF-8 is written with U+FFFD.
    write_file_atomically(args.result_file,
                          result_to_json(result, args.provenance)
                                  .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                              "\n");
  } catch (const std::exception& error) {
    std::cerr << "rank 0: cannot write the result: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  return exit_code_of(result.verdict);
}

}  // namespace trainrepro
