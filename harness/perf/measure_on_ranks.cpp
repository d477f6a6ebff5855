#include "harness/perf/measure_on_ranks.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "harness/distributed/rank_launcher.h"
#include "harness/distributed/rank_work_folder.h"
#include "harness/files/atomic_write.h"
#include "harness/perf/benchmark_json.h"

namespace trainrepro {
namespace {

std::string comma_separated(const std::vector<int>& values) {
  std::string text;
  for (int value : values) text += (text.empty() ? "" : ",") + std::to_string(value);
  return text;
}

// Removes the work folder however the measurement ends.
struct FolderRemover {
  std::string folder;
  ~FolderRemover() {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  }
};

}  // namespace

PerfRepetition measure_on_ranks(const PlannedBenchmark& benchmark, double planted_slowdown,
                                const std::vector<int>& rank_cpus) {
  const int world_size = static_cast<int>(benchmark.plan.batch.world_size);
  const std::string ranks = std::to_string(world_size) + " rank(s)";
  const FolderRemover work{create_rank_work_folder()};
  // The ranks load the scenario as planned (a sweep's point exists only here), under the name
  // the user knows it by.
  const std::string scenario_path = work.folder + "/scenario.json";
  const std::string result_path = work.folder + "/repetition.json";
  write_file_atomically(scenario_path, benchmark.document.dump(2) + "\n");
  std::vector<std::string> arguments = {"rank-measure",
                                        scenario_path,
                                        "--label",
                                        benchmark.scenario.file,
                                        "--device",
                                        device_name(benchmark.plan.device),
                                        "--plant-slowdown",
                                        std::to_string(planted_slowdown),
                                        "--result-file",
                                        result_path};
  if (static_cast<int>(rank_cpus.size()) >= world_size) {
    arguments.push_back("--rank-cpus");
    arguments.push_back(comma_separated(rank_cpus));
  }
  const RankLaunch launch =
      launch_ranks(world_size, arguments, kRankMeasureTimeoutSeconds, work.folder);
  if (launch.stopped_by_signal != 0) {
    std::error_code ignored;
    std::filesystem::remove_all(work.folder, ignored);
    end_by_signal(launch.stopped_by_signal);
  }
  if (launch.timed_out) {
    throw std::runtime_error(ranks + " did not finish one repetition within " +
                             std::to_string(kRankMeasureTimeoutSeconds) +
                             " s (a rank hangs or died mid-collective); all were killed. Their "
                             "output:\n" + launch.output);
  }
  std::error_code missing;
  if (launch.exit_code != 0 || !std::filesystem::exists(result_path, missing)) {
    throw std::runtime_error(ranks + " ended (mpirun exit code " +
                             std::to_string(launch.exit_code) + ") before rank 0 wrote its "
                             "measurement; a rank failed. Their output:\n" + launch.output);
  }
  PerfRun measured;
  try {
    measured = read_perf_run(result_path);
  } catch (const PerfFormatError& error) {
    throw std::runtime_error(std::string("rank 0's measurement: ") + error.what());
  }
  if (measured.benchmarks.size() != 1 || measured.benchmarks[0].repetitions.size() != 1) {
    throw std::runtime_error("rank 0's measurement holds no single repetition");
  }
  return measured.benchmarks[0].repetitions[0];
}

}  // namespace trainrepro
