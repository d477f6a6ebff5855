// Golden tensors on disk in the safetensors format (github.com/huggingface/safetensors), so that
// Python's safetensors and torch read the goldens we write, and we read the ones they write.
#pragma once
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainrepro {

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
  std::vector<std::string> names;               // in file order: ascending data_offsets
  std::map<std::string, at::Tensor> tensors;    // on the CPU, each owning its memory
};

// Dtypes both ways: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL.
//
// Writes the tensors in the given order (each moved to the CPU and made contiguous first), then
// renames the file into place, so a reader never sees half a golden. Throws std::invalid_argument
// for a name given twice, the reserved name "__metadata__", a dtype or layout the format cannot
// hold, or names and metadata that are not valid UTF-8; std::runtime_error when writing fails.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Validates everything before trusting any of it: header length, JSON, dtypes, shapes, and that
// the tensors tile the data buffer exactly (no overlap, no gap, no trailing bytes). Throws
// std::runtime_error starting with `path` and saying what is wrong; never reads out of bounds.
SafetensorsFile read_safetensors(const std::string& path);

// The same two without the file system: the exact bytes write_safetensors puts on disk, and
// reading from bytes already in memory (`origin` starts every error message).
std::string encode_safetensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                               const std::map<std::string, std::string>& metadata = {});
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& origin);

}  // namespace trainrepro
