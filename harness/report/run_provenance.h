// Where a run's results came from: when, on which machine, from which commit and command line,
// with which trainrepro, torch and CUDA. Every results file carries it, so a report or a bug
// report built from results files alone says what produced them.
#pragma once
#include <string>

namespace trainrepro {

struct RunProvenance {
  std::string started_at;    // UTC, ISO 8601: "2026-11-30T17:20:01Z"
  std::string host;          // the host name
  std::string machine;       // "2 CPUs, 24 GiB RAM, no GPU"
  std::string git_commit;    // of the source tree the binary was built from; "+dirty" when it
                             // had uncommitted changes; "" when unknown
  std::string command_line;  // as typed, each argument quoted where the shell would need it
  std::string trainrepro_version;
  std::string torch_version;
  std::string cuda_version;  // of the CUDA runtime LibTorch was built with; "" for none
};

// The provenance of this process, started now. TRAINREPRO_GIT_COMMIT overrides the commit
// (for builds from a tarball, or CI that knows better).
RunProvenance current_run_provenance(int argc, const char* const* argv);

// "2026-11-30T17:20:01Z" for now.
std::string utc_timestamp_now();

}  // namespace trainrepro
