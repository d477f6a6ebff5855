// `--engine` as `run` and `perf run` take it: reference (no Python), deepspeed (the user's
// DeepSpeed) or deepspeed==VERSION (a release in trainrepro's cache). The Python is asked once,
// before anything is measured or written; each refusal is printed with its exit code.
#pragma once
#include <optional>
#include <string>

#include "harness/worker/deepspeed_worker.h"

namespace trainrepro {

struct EngineOption {
  std::optional<DeepSpeedPython> deepspeed;  // none: the reference engine
  int exit_code = 0;                         // kExitBadInput or kExitInfrastructure when refused
};

// A misspelt --engine, or one under mpirun/srun (the worker starts its own ranks): exit 2; a
// release PyPI lacks, a bad TRAINREPRO_CACHE or TRAINREPRO_OFFLINE: exit 2; no Python with torch
// and DeepSpeed, no network, a cache another user owns or may write: exit 3. The Python is given
// probe_timeout_seconds (the command's --rank-timeout) to answer.
EngineOption read_engine_option(const std::string& text, int probe_timeout_seconds);

}  // namespace trainrepro
