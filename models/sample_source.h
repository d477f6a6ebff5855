// Deterministic samples by index: sample i is the same whatever range it is asked for in, so the
// run under test (micro-batches) and its golden (one large batch) see identical data. Samples
// are generated in float64 on the CPU in fixed chunks seeded by (seed, chunk), then converted.
#pragma once
#include <cstdint>

#include <ATen/Tensor.h>

#include "models/batch.h"
#include "models/zoo_choice.h"

namespace trainrepro {

class SampleSource {
 public:
  explicit SampleSource(const DataSpec& spec);
  // Samples [begin, end), floating tensors in `dtype`, everything on `device`.
  Batch samples(int64_t begin, int64_t end, at::ScalarType dtype, at::Device device) const;

 private:
  DataSpec spec_;
  at::Tensor teacher_;  // feature data's linear teacher, drawn once
};

}  // namespace trainrepro
