// What a Python engine worker wrote (python/trainrepro_worker/deepspeed_engine_worker.py):
// PREFIX.json, then the tensors in PREFIX.safetensors, read into the reference engine's Trace so
// that the same judges and reporters take it. Read strictly: a missing, truncated or
// inconsistent file is a WorkerTraceError naming the file and what is wrong, never a guess.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "harness/loop/trace.h"

namespace trainrepro {

inline constexpr const char* kWorkerTraceFormat = "trainrepro-deepspeed-trace";
inline constexpr int kWorkerTraceFormatVersion = 2;

enum class WorkerStatus {
  invalid,  // sentinel: never read from a file
  trained,  // the trace holds the run
  skipped,  // the engine cannot run it on this machine (DeepSpeed's reason)
  refused,  // deepspeed.initialize raised (DeepSpeed's message)
  error,    // the worker raised: reason and traceback say where
};

struct WorkerVersions {
  std::string deepspeed;  // empty for FSDP2
  std::string torch;
  std::string python;
  std::string engine = "deepspeed";  // or "fsdp2": torch's own, no DeepSpeed
};

// "deepspeed 0.19.8 (torch 2.11.0, python 3.11.7)", "fsdp2 (torch 2.11.0, python 3.11.7)"
std::string engine_description(const WorkerVersions& versions);

struct WorkerTrace {
  WorkerStatus status = WorkerStatus::invalid;
  std::string reason;     // skipped, refused, error: in the worker's (or DeepSpeed's) words
  std::string traceback;  // error: the tail of the Python traceback
  WorkerVersions versions;
  // Each optimizer step's wall and CPU time as the worker timed it (job "time_steps", for `perf
  // run --engine deepspeed`), the worker's own recording left out; empty otherwise.
  std::vector<double> step_seconds;
  std::vector<double> step_cpu_seconds;
  Trace trace;  // trained: steps (the recorded ones with gradients and parameters, float64
                // CPU), micro-steps, counters, memory (worker_memory.h); initial parameters
                // are the caller's to fill
};

class WorkerTraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads PREFIX.json and, when it says "trained", PREFIX.safetensors. Each recorded step (the
// first ones: "recorded" true) must hold a gradient and a parameter of each of
// `parameter_names`, shaped as `initial_parameters`; a trained trace must hold its "memory"
// when the job asked for it (`expect_memory`).
WorkerTrace read_worker_trace(const std::string& prefix,
                              const std::vector<std::string>& parameter_names,
                              const std::vector<at::Tensor>& initial_parameters,
                              bool expect_memory = true);

}  // namespace trainrepro
