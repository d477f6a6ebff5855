// libFuzzer target: any bytes given as a safetensors file must decode or end in a
// std::runtime_error naming what is wrong, never a crash, an out-of-bounds read or unbounded
// memory. What decodes must also survive a round trip: encoding the decoded tensors and
// decoding that again gives the same names, metadata and values (a decoder that accepts bytes
// it misreads fails here). Links LibTorch (CPU) as shipped; our code is instrumented.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "harness/files/safetensors.h"

using namespace trainrepro;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SafetensorsFile file;
  try {
    file = decode_safetensors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const std::runtime_error&) {
    return 0;
  }
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const std::string& name : file.names) tensors.emplace_back(name, file.tensors.at(name));
  const SafetensorsFile again = decode_safetensors(encode_safetensors(tensors, file.metadata), "again");
  if (again.names != file.names || again.metadata != file.metadata) std::abort();
  for (const std::string& name : file.names) {
    const at::Tensor& before = file.tensors.at(name);
    const at::Tensor& after = again.tensors.at(name);
    // Bitwise: NaN payloads and negative zeros must come back as they were.
    if (before.scalar_type() != after.scalar_type() || !before.sizes().equals(after.sizes()) ||
        (before.nbytes() > 0 &&
         std::memcmp(before.data_ptr(), after.data_ptr(), before.nbytes()) != 0)) {
      std::abort();
    }
  }
  return 0;
}
