// `trainrepro perf history FOLDER -o PAGE`: every perf run in a machine's history folder, ordered
// by when it ran, drawn as one HTML page with change points (perf_history_page.h).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/files/atomic_write.h"
#include "harness/perf/benchmark_json.h"
#include "harness/report/perf_history_page.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

int run_perf_history(const PerfHistoryArgs& args) {
  std::error_code error;
  if (!std::filesystem::is_directory(args.folder, error)) {
    std::cerr << args.folder << ": expected a folder of perf runs (reports/history/<machine>), "
                 "found " << (std::filesystem::exists(args.folder, error) ? "a file" : "nothing")
              << "\n";
    return kExitBadInput;
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(args.folder, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path().string());
    }
  }
  std::vector<std::pair<PerfRun, std::string>> runs;
  PerfHistoryInput input;
  input.alpha = args.alpha;
  input.min_effect = args.min_effect;
  for (const std::string& file : files) {
    try {
      runs.push_back({read_perf_run(file), file});
    } catch (const PerfFormatError& problem) {
      std::cerr << problem.what() << "\n";
      input.unreadable.push_back(problem.what());
    }
  }
  // ISO 8601 UTC dates sort as text; the file name breaks ties.
  std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.context.date, a.second) < std::tie(b.first.context.date, b.second);
  });
  for (auto& [run, file] : runs) {
    input.runs.push_back(std::move(run));
    input.files.push_back(file);
  }
  if (input.runs.empty()) {
    std::cerr << args.folder << ": no perf runs found (*.json from `perf run --out`)\n";
    return kExitBadInput;
  }
  try {
    const std::filesystem::path parent = std::filesystem::path(args.output).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    write_file_atomically(args.output, perf_history_page(input));
  } catch (const std::exception& problem) {
    std::cerr << args.output << ": cannot write the page: " << problem.what() << "\n";
    return kExitInfrastructure;
  }
  std::cout << "wrote " << args.output << " (" << input.runs.size() << " runs)\n";
  return input.unreadable.empty() ? kExitOk : kExitBadInput;
}

}  // namespace trainrepro
