// `trainrepro rank-measure SCENARIO --label NAME --result-file F`: one rank of a multi-rank
// performance benchmark, started by `perf run` through mpirun (measure_on_ranks.h). Every rank
// pins itself to its CPU, joins the others and trains the scenario for warm-up plus measured
// steps; rank 0 writes what it measured as a one-repetition perf run. Not meant to be typed by
// hand.
#include <c10/util/Exception.h>
#include <mpi.h>

#include <iostream>
#include <sstream>
#include <variant>

#include "harness/cli/commands.h"
#include "harness/distributed/communicator.h"
#include "harness/distributed/mpi_session.h"
#include "harness/perf/benchmark_json.h"
#include "harness/perf/cpu_pinning.h"
#include "harness/perf/measure_repetition.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/plan.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

// "1,0" → {1, 0}; throws std::invalid_argument on anything else.
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) cpus.push_back(std::stoi(item));
  return cpus;
}

// This rank's measurement; rank 0 writes it. Throws on any failure.
void measure_as_rank(const RankMeasureArgs& args, int rank, int world_size) {
  if (!args.rank_cpus.empty()) {
    const std::vector<int> cpus = parse_cpu_list(args.rank_cpus);
    if (world_size <= static_cast<int>(cpus.size())) pin_process_to_cpu(cpus[rank]);
  }
  Scenario scenario = load_scenario_document(read_json_file(args.scenario_file), args.label);
  const PlanResolution resolution = resolve_plan(scenario, args.device);
  if (const auto* refused = std::get_if<ConfigError>(&resolution)) {
    throw std::runtime_error("the config is refused: " + refused->message);
  }
  const Plan& plan = std::get<Plan>(resolution);
  if (plan.batch.world_size != world_size) {
    throw std::runtime_error(args.label + ":/world_size: " + std::to_string(plan.batch.world_size) +
                             " ranks, but mpirun started " + std::to_string(world_size));
  }
  std::unique_ptr<Communicator> communicator =
      plan.device == Device::cuda ? make_nccl_communicator() : make_mpi_communicator();
  const PerfRepetition repetition =
      measure_repetition(scenario, plan, args.planted_slowdown, communicator.get());
  if (rank != 0) return;
  PerfBenchmark benchmark;
  benchmark.name = scenario.name;
  benchmark.scenario_file = args.label;
  benchmark.device = device_name(plan.device);
  benchmark.world_size = world_size;
  benchmark.measured_steps = scenario.performance->measured_steps;
  benchmark.repetitions = {repetition};
  PerfRun run;
  run.benchmarks = {benchmark};
  write_perf_run(args.result_file, run);
}

}  // namespace

int run_rank_measure(const RankMeasureArgs& args) {
  ensure_mpi_initialized();
  int rank = 0;
  int world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  std::string failure;
  try {
    measure_as_rank(args, rank, world_size);
  } catch (const c10::Error& error) {
    failure = error.what_without_backtrace();
  } catch (const std::exception& error) {
    failure = error.what();
  }
  if (failure.empty()) return kExitOk;
  // The other ranks may wait in a collective for this one: end them all now rather than at
  // perf run's timeout.
  const bool names_scenario = failure.rfind(args.label, 0) == 0;
  std::cerr << "rank " << rank << ": " << (names_scenario ? "" : args.label + ": ") << failure
            << std::endl;
  MPI_Abort(MPI_COMM_WORLD, kExitInfrastructure);
  return kExitInfrastructure;
}

}  // namespace trainrepro
