// `trainrepro perf history FOLDER -o PAGE`: every perf run in a machine's history folder, ordered
// by when it ran, drawn as one HTML page with change points (perf_history_page.h).
#include <filesystem>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/files/atomic_write.h"
#include "harness/perf/perf_history.h"
#include "harness/report/perf_history_page.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {

int run_perf_history(const PerfHistoryArgs& args) {
  PerfHistoryInput input;
  try {
    input = read_perf_history(args.folder, args.alpha, args.min_effect);
  } catch (const PerfHistoryError& error) {
    std::cerr << error.what() << "\n";
    return kExitBadInput;
  }
  for (const std::string& problem : input.unreadable) std::cerr << problem << "\n";
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
