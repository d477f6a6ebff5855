// A scenario's "performance" section: how `trainrepro perf run` measures its training step
// (warm-up, measured steps, repetitions, which figures) and, optionally, a dimension to sweep
// with the growth expected of step time and memory. Plain data; read by performance_section.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/json/json_fields.h"

namespace trainrepro {

// What a repetition measures. Lower is better for every figure except the rates and MFU.
enum class PerfFigure {
  step_time,           // wall seconds per optimizer step (and the process's CPU seconds)
  samples_per_second,  // samples the step trained, over its time
  tokens_per_second,   // target tokens trained per second (token data only; padding excluded)
  peak_tensor_bytes,   // the training's peak live tensor bytes on its device
  peak_host_bytes,     // peak host heap in use (boundaries), the harness's own copies excluded
  peak_cuda_reserved_bytes,  // peak bytes LibTorch's CUDA allocator held (CUDA only)
  mfu,                 // model FLOPs utilisation against the GPU's peak (CUDA only)
};
const EnumSpellings<PerfFigure>& perf_figure_spellings();
const char* perf_figure_name(PerfFigure figure);

// Which loop a repetition times. The harness's own loop is what `run` trains; the others measure
// the same step beside it, to track what the harness itself costs.
enum class PerfLoop {
  harness,             // the training loop of `run`: engine, loop habits, memory probes, data
  engine,              // the reference engine alone on pre-made batches: no probes, no habits
  engine_with_probes,  // the same with a memory sample per micro-step and boundary
  hand_written,        // a hand-written LibTorch loop: forward, loss / GAS backward, step, zero
  python_eager,        // the same hand-written step in Python eager PyTorch (MLP only)
};
const EnumSpellings<PerfLoop>& perf_loop_spellings();

// A ratio of this scenario's step time (in calibration units) to another benchmark's of the same
// run: the harness's overhead targets (engine / hand-written <= 1.05).
struct PerfTarget {
  std::string benchmark;
  double at_most = 0.0;
};

// The fitted exponent k of figure ≈ c · value^k that the sweep must show.
struct ExponentExpectation {
  PerfFigure figure = PerfFigure::step_time;
  double at_least = 0.0;
  double at_most = 0.0;
};

struct ScalingSpec {
  // A JSON pointer into this scenario file naming an existing number (a model width or depth,
  // gradient_accumulation_steps, a sequence length); each value replaces it in turn.
  std::string pointer;
  std::vector<double> values;  // at least 2, each > 0
  std::vector<ExponentExpectation> expect;
};

struct PerformanceSpec {
  int64_t warmup_steps = 3;     // optimizer steps run first and not measured (allocator warm-up)
  int64_t measured_steps = 10;  // optimizer steps timed in each repetition
  int64_t repetitions = 9;      // independent runs, interleaved with the other scenarios'
  std::vector<PerfFigure> measure;  // empty: every figure that applies on the device
  PerfLoop loop = PerfLoop::harness;
  std::optional<PerfTarget> target;
  std::optional<ScalingSpec> scaling;
};

}  // namespace trainrepro
