// Samples a user brings in a safetensors file (data "safetensors"): tensors "inputs", "targets"
// and, for token data, an optional "attention_mask". Read and checked once, when the scenario
// loads; what kind of data it is follows from the tensors' shapes and dtypes:
//   classification: inputs (N, F) floating, targets (N) integer class ids
//   regression:     inputs (N, F) floating, targets (N, O) floating
//   tokens:         inputs (N, T) integer token ids, targets (N, T) integer next tokens; a target
//                   counts in the loss where attention_mask (if given) is set and the target is
//                   not -100 (Hugging Face's ignore index)
// Sample i is row i mod N: a run that needs more samples than the file holds goes round again,
// in file order, as epochs without shuffling do.
#pragma once
#include <cstdint>
#include <memory>

#include <ATen/Tensor.h>

#include "harness/json/json_fields.h"
#include "models/batch.h"
#include "models/data_zoo.h"

namespace trainrepro {

// The tensors as the run uses them, on the CPU: inputs float64 (feature data) or int64 (tokens),
// targets int64 or float64, mask bool (token data only; a masked target is stored as 0).
struct SampleFileTensors {
  at::Tensor inputs;
  at::Tensor targets;
  at::Tensor mask;
};

// The "options" of data "safetensors": {"file": path relative to the scenario's folder}.
DataOptions read_safetensors_data(ObjectReader& options);

// Samples [begin, end) (indices taken mod the file's sample count), floating tensors in `dtype`.
Batch samples_from_file(const SafetensorsData& data, int64_t begin, int64_t end,
                        at::ScalarType dtype, at::Device device);

}  // namespace trainrepro
