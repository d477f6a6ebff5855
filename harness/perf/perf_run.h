// What `trainrepro perf run` measured, as plain data: one benchmark per scenario (or per swept
// value), its repetitions with every figure, the fitted scaling exponents, and where it ran.
// benchmark_json.h writes and reads it in Google Benchmark's JSON format.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/scenario/performance_spec.h"

namespace trainrepro {

// One repetition of one benchmark: `measured_steps` optimizer steps after the warm-up.
// A figure that does not apply here (tokens on feature data, MFU on CPU) is absent.
struct PerfRepetition {
  // Wall time of a measured optimizer step: the median of the measured steps' own times, so a
  // burst of a neighbour's load (a few slow steps) does not move it and a regression (every
  // step slower) does.
  double step_seconds = 0.0;
  double cpu_step_seconds = 0.0;  // process CPU time per measured step (every thread)
  // The machine's speed beside the step, as the time of a fixed calibration work: a chunk of it
  // is timed right after every measured step, and this is step_seconds over the median of the
  // paired ratios step / chunk, so that step_seconds / calibration_seconds is that median: the
  // step in units of work done at the same moment, what `perf compare` judges (a neighbour's
  // load slows both). For the Python loop (another process), the whole kernel just before it.
  double calibration_seconds = 0.0;
  double samples_per_second = 0.0;
  std::optional<double> tokens_per_second;
  int64_t peak_tensor_bytes = 0;
  int64_t peak_host_bytes = 0;
  std::optional<int64_t> peak_cuda_reserved_bytes;
  std::optional<double> mfu;

  double normalised_step_time() const { return step_seconds / calibration_seconds; }
};

struct PerfBenchmark {
  std::string name;  // the scenario's name, or "<name>/<swept key>:<value>"
  std::string scenario_file;
  std::string device;      // "cpu" or "cuda"
  int64_t world_size = 1;  // data-parallel ranks; the times are rank 0's (measure_on_ranks.h)
  int64_t measured_steps = 0;
  std::vector<PerfFigure> measure;  // what the scenario asked for (all by default)
  // PerfLoop's spelling, or the engine that trained a twin ("deepspeed", "fsdp2"): which loop
  // was timed.
  std::string loop = "harness";
  // A benchmark trained by another engine (`perf run --engine deepspeed|fsdp2`): the name of the
  // benchmark of the same scenario that trainrepro's engine trained in the same run.
  std::string twin_of;
  std::vector<PerfRepetition> repetitions;
  // A point of a sweep: the scenario it belongs to, the pointer and the value here.
  std::string sweep_of;
  std::string sweep_pointer;
  double sweep_value = 0.0;
};

struct ScalingFitResult {
  std::string scenario;
  std::string pointer;
  PerfFigure figure = PerfFigure::step_time;
  double exponent = 0.0;
  double r_squared = 0.0;
  std::optional<ExponentExpectation> expected;  // absent when the scenario states none
  bool met() const {
    return !expected || (exponent >= expected->at_least && exponent <= expected->at_most);
  }
};

// A scenario's target ratio to another benchmark of the same run (step time in calibration
// units, medians). Missed only when the ratio is above the target *and* the repetitions show it:
// the one-sided Mann–Whitney test of this benchmark's values against the other's times the
// target has p < kTargetAlpha. Two benchmarks of one process differ by 2-4 % between runs here
// (the probes' 1.02 target read 0.98-1.08 in four runs of the same build), so a median alone
// above the target is noise as often as not.
constexpr double kTargetAlpha = 0.01;
struct TargetResult {
  std::string benchmark;
  std::string relative_to;
  double ratio = 0.0;
  double at_most = 0.0;
  double p_value = 1.0;  // one-sided: that this benchmark is slower than the target allows
  bool above() const { return ratio > at_most; }
  bool met() const { return !(above() && p_value < kTargetAlpha); }
};

// Where and how the run happened: enough to rerun it (`perf compare`'s confirmation does).
struct PerfContext {
  std::string date;  // ISO 8601, UTC
  std::string host_name;
  std::string machine;  // a stable name for the history folder (the host name by default)
  std::string commit;   // git commit of the source tree, "" when unknown
  std::string trainrepro_version;
  std::string torch_version;
  std::string executable;         // absolute path of the trainrepro that measured
  std::string executable_sha256;  // to notice a rebuilt binary before rerunning it
  std::string working_directory;
  std::vector<std::string> scenario_paths;  // as given to `perf run`
  // `perf run --engine` as given ("deepspeed==0.19.8", "fsdp2"): the other engines measured
  // beside trainrepro's, measured again when `perf compare` reruns the suspected benchmarks.
  std::vector<std::string> engines;
  std::string filter;
  double planted_slowdown = 0.0;
  int num_cpus = 0;
  int threads = 1;  // LibTorch intra-op threads
};

struct PerfRun {
  PerfContext context;
  std::vector<PerfBenchmark> benchmarks;
  std::vector<ScalingFitResult> scaling;
  std::vector<TargetResult> targets;
};

}  // namespace trainrepro
