// The real DeepSpeed (or PyTorch's FSDP2) as the engine under test: the Python that has it, and
// one worker process (python/trainrepro_worker/deepspeed_engine_worker.py, compiled in) that
// trains a job and writes its trace into a private folder removed afterwards. DeepSpeedPython
// names the Python of either engine (versions.engine says which).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include "harness/worker/worker_trace.h"

namespace trainrepro {

class WorkerSets;  // worker_sets.h

struct DeepSpeedPython {
  // What starts that Python, before the script's arguments: {program} for the user's own Python
  // (a path or a name on the PATH), {"env", "PYTHONPATH=…", …, program} for a release in the cache.
  std::vector<std::string> command;
  std::string named;  // how errors name it ("python3 (on the PATH)", "deepspeed==0.18.6 in …")
  WorkerVersions versions;
};

// The Python cannot be run, or lacks torch or deepspeed: an infrastructure failure (exit 3).
class DeepSpeedPythonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// TRAINREPRO_DEEPSPEED_PYTHON when set and not empty, else "python3" (on the PATH).
std::string deepspeed_python_program();

// The user's own Python (deepspeed_python_program()), asked for its versions.
DeepSpeedPython find_deepspeed_python(int probe_timeout_seconds);

// Asks the Python that `command` starts for torch's, deepspeed's and its own version (importing
// deepspeed with DS_ACCELERATOR=cpu unless the environment says otherwise), killing it after
// probe_timeout_seconds (the command's --rank-timeout: a first `import deepspeed` may build its
// op cache). Throws DeepSpeedPythonError naming it (`named`) and what is missing.
DeepSpeedPython probe_deepspeed_python(std::vector<std::string> command, const std::string& named,
                                       int probe_timeout_seconds);

// `--engine fsdp2`: TRAINREPRO_FSDP2_PYTHON when set and not empty, else the Python whose torch
// built trainrepro, asked for torch's fully_shard and safetensors.
DeepSpeedPython find_fsdp2_python(int probe_timeout_seconds);

// probe_deepspeed_python for either engine ("deepspeed" or "fsdp2": torch alone).
DeepSpeedPython probe_worker_python(std::vector<std::string> command, const std::string& named,
                                    const std::string& engine, int probe_timeout_seconds);

// `arguments` run with the caches a Python worker would otherwise leave in the user's $TMPDIR
// (torch inductor's /tmp/torchinductor_<user>) inside `private_folder`, removed with it.
std::vector<std::string> with_private_caches(std::vector<std::string> arguments,
                                             const std::string& private_folder);

// Writes the compiled-in Python files (python/trainrepro_worker) into `folder`.
void write_worker_sources(const std::string& folder);

// The worker's name in messages: "FSDP2" or "DeepSpeed" (its versions.engine).
std::string worker_title(const DeepSpeedPython& python);

// Runs the worker on `job` (its "trace" key is filled in here) with a limit of timeout_seconds,
// and reads what it wrote. Throws WorkerTraceError when it wrote no usable trace (crashed, timed
// out, truncated files), with the tail of its output. A stop signal (Ctrl-C) kills it, removes
// the folder and ends this process by the same signal. With `served` (`run`'s default; none
// with --fresh-workers) a DeepSpeed or FSDP2 job goes to the set of ranks kept for its world size
// and engine instead of fresh ones.
// `served_as` names the job in the sets' summary (the scenario's file).
WorkerTrace run_deepspeed_worker(const DeepSpeedPython& python, nlohmann::json job,
                                 int timeout_seconds,
                                 const std::vector<std::string>& parameter_names,
                                 const std::vector<at::Tensor>& initial_parameters,
                                 WorkerSets* served = nullptr, const std::string& served_as = "");

}  // namespace trainrepro
