// The real DeepSpeed as the engine under test: the Python that has it, and one worker process
// (python/trainrepro_worker/deepspeed_engine_worker.py, compiled in) that trains a job and
// writes its trace into a private folder removed afterwards.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include "harness/worker/worker_trace.h"

namespace trainrepro {

struct DeepSpeedPython {
  std::string program;  // as given: a path or a name looked up on the PATH
  WorkerVersions versions;
};

// The Python cannot be run, or lacks torch or deepspeed: an infrastructure failure (exit 3).
class DeepSpeedPythonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// TRAINREPRO_DEEPSPEED_PYTHON when set and not empty, else "python3" (on the PATH).
std::string deepspeed_python_program();

// Asks that Python for torch's, deepspeed's and its own version (importing deepspeed with
// DS_ACCELERATOR=cpu unless the environment says otherwise). Throws DeepSpeedPythonError naming
// the Python and what is missing.
DeepSpeedPython find_deepspeed_python();

// Runs the worker on `job` (its "trace" key is filled in here) with a limit of timeout_seconds,
// and reads what it wrote. Throws WorkerTraceError when it wrote no usable trace (crashed, timed
// out, truncated files), with the tail of its output. A stop signal (Ctrl-C) kills it, removes
// the folder and ends this process by the same signal.
WorkerTrace run_deepspeed_worker(const DeepSpeedPython& python, nlohmann::json job,
                                 int timeout_seconds,
                                 const std::vector<std::string>& parameter_names,
                                 const std::vector<at::Tensor>& initial_parameters);

}  // namespace trainrepro
