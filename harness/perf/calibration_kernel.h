// A fixed amount of work timed on the run's device right after every measured step: the
// machine's speed at that moment. On these shared machines a neighbour's load slows the step and
// this work alike, so `perf compare` judges the step in units of it (PerfRepetition).
#pragma once
#include <ATen/Tensor.h>

#include "harness/scenario/plan.h"

namespace trainrepro {

// Timed between two measured steps so that each step has a calibration taken at the same moment
// (a neighbour's load on a shared core slows both). Small operations, as the small models' steps
// are: a kernel of large matrix products did not follow the step's slow spells at all. The
// buffers are made once and the products written into them, so timing it allocates nothing the
// training's memory probes would count.
class CalibrationChunk {
 public:
  explicit CalibrationChunk(Device device);
  double time();  // seconds for the chunk

 private:
  bool cuda_;
  at::Tensor left_;
  at::Tensor right_;
  at::Tensor product_;
};

}  // namespace trainrepro
