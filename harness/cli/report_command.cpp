// `trainrepro report RESULTS…`: reads results files (folders are searched for *.json) and writes
// one HTML page. A file that is not a readable results file is named with its reason, listed in
// the page, and makes the exit code 2; the page is still written from the others.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness/cli/commands.h"
#include "harness/files/atomic_write.h"
#include "harness/json/printable.h"
#include "harness/perf/perf_compare.h"
#include "harness/perf/perf_history.h"
#include "harness/report/html_report.h"
#include "harness/report/results_json.h"
#include "harness/verdict/verdict.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

// Results files are a few hundred KiB; anything far larger is not one.
constexpr std::uintmax_t kLargestResultsFile = 256u << 20;

// Every *.json under the paths, each folder's in name order. Throws std::invalid_argument for
// a path that is neither a file nor a folder.
std::vector<std::string> results_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (fs::is_regular_file(path, error)) {
      files.push_back(path);
      continue;
    }
    if (!fs::is_directory(path, error)) {
      throw std::invalid_argument(printable(path) + ": no such results file or folder");
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(path, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it->is_regular_file(error) && it->path().extension() == ".json") {
        found.push_back(it->path().string());
      }
    }
    if (error) throw std::invalid_argument(printable(path) + ": cannot be read: " + error.message());
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

// Reads one results file into the input, or records why it cannot be.
void read_results_file(const std::string& file, ReportInput& input) {
  std::error_code error;
  const std::uintmax_t size = fs::file_size(file, error);
  if (error || size > kLargestResultsFile) {
    input.unreadable.push_back(
        {file, printable(file) + ": " +
                   (error ? "cannot be read: " + error.message()
                          : "too large for a results file (" + std::to_string(size) + " bytes)")});
    return;
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  if (json.is_discarded()) {
    input.unreadable.push_back({file, printable(file) + ": not valid JSON"});
    return;
  }
  try {
    ScenarioResult result = result_from_json(json, printable(file));
    RunProvenance provenance = provenance_from_json(json, printable(file));
    input.results.push_back(std::move(result));
    input.provenances.push_back(std::move(provenance));
  } catch (const ResultsFormatError& format) {
    input.unreadable.push_back({file, format.what()});
  }
}

}  // namespace

int run_report(const ReportArgs& args) {
  ReportInput input;
  input.sources = args.paths;
  std::vector<std::string> files;
  try {
    files = results_files(args.paths);
  } catch (const std::invalid_argument& error) {
    std::cerr << "trainrepro report: " << error.what() << "\n";
    return kExitBadInput;
  }
  for (const std::string& file : files) read_results_file(file, input);
  for (const auto& unreadable : input.unreadable) {
    std::cerr << "trainrepro report: skipped " << unreadable.message << "\n";
  }
  if (input.results.empty()) {
    std::cerr << "trainrepro report: no readable results files in";
    for (const std::string& path : args.paths) std::cerr << " " << printable(path);
    std::cerr << (input.unreadable.empty() ? "" : " (" + std::to_string(input.unreadable.size()) +
                                                      " skipped, above)")
              << "; they are written by `trainrepro run --results DIR`; nothing written\n";
    return kExitBadInput;
  }
  if (!args.perf_history.empty()) {
    // The history's own statistics: `perf compare`'s defaults, as `perf history` uses.
    const CompareOptions defaults;
    try {
      input.performance = read_perf_history(args.perf_history, defaults.alpha, defaults.min_effect);
    } catch (const PerfHistoryError& error) {
      std::cerr << "trainrepro report: --perf-history " << error.what() << "; nothing written\n";
      return kExitBadInput;
    }
    for (const std::string& problem : input.performance->unreadable) {
      std::cerr << "trainrepro report: skipped " << problem << "\n";
    }
  }
  try {
    write_file_atomically(args.output, html_report(input));
  } catch (const std::exception& error) {
    std::cerr << "trainrepro report: cannot write the report: " << error.what() << "\n";
    return kExitInfrastructure;
  }
  std::cout << "report: " << printable(args.output) << " (" << input.results.size()
            << " scenarios" << (input.unreadable.empty() ? "" : ", ")
            << (input.unreadable.empty() ? "" : std::to_string(input.unreadable.size()) +
                                                    " files skipped")
            << (input.performance ? ", performance history of " +
                                         std::to_string(input.performance->runs.size()) + " runs"
                                   : std::string())
            << ")\n";
  const bool all_read =
      input.unreadable.empty() && (!input.performance || input.performance->unreadable.empty());
  return all_read ? kExitOk : kExitBadInput;
}

}  // namespace trainrepro
