// The worker sets of one `trainrepro run --engine deepspeed|fsdp2`: a set of worker ranks per
// Python, engine and world size (worker_set.h), kept for the whole run, so that each scenario after
// a set's first pays for its training alone. A set that fails a job (a timeout, a rank that died, a
// job that did not train) is dropped and the next scenario starts a new one: the failure is that
// scenario's alone.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include "harness/worker/deepspeed_worker.h"
#include "harness/worker/worker_set.h"
#include "harness/worker/worker_trace.h"

namespace trainrepro {

class WorkerSets {
 public:
  WorkerSets() = default;
  ~WorkerSets() { close_all(); }
  WorkerSets(const WorkerSets&) = delete;
  WorkerSets& operator=(const WorkerSets&) = delete;

  // run_deepspeed_worker's contract on the set for `python` and the job's world size (started
  // when there is none): the trace, or WorkerTraceError with the set's output since the job
  // was handed over. A stop signal ends every set, then this process by that signal. `named`
  // names the job in summary().
  WorkerTrace train(const DeepSpeedPython& python, nlohmann::json job, int timeout_seconds,
                    const std::vector<std::string>& parameter_names,
                    const std::vector<at::Tensor>& initial_parameters,
                    const std::string& named = "");

  // Ends every set (worker_set.h's close), as the run ends.
  void close_all() { sets_.clear(); }
  // What the run's sets did, for its last lines: "served N scenarios on M sets of worker
  // ranks", and each set that ended early with why (a retiring answer, a timeout, …).
  std::string summary() const;

 private:
  std::map<std::string, std::unique_ptr<WorkerSet>> sets_;
  int started_ = 0;
  int jobs_ = 0;
  std::vector<std::string> ended_early_;
};

}  // namespace trainrepro
