// Writes the sample golden that tests/golden/read_with_python.py checks from Python, or checks a
// file Python wrote from tests/golden/sample_safetensors_expected.json (--check). The sample here
// and that JSON file state the same contents independently; edit them together.
#include <ATen/ATen.h>

#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/files/safetensors.h"

namespace {

using trainrepro::SafetensorsFile;

std::vector<std::pair<std::string, at::Tensor>> sample_tensors() {
  const auto i64 = [](int64_t v) { return v; };
  return {
      {"step0/grad/layers.0.weight",
       at::tensor({0.1, -1.25, 3.0, 1e-300, -0.0, 123456789.125}, at::kDouble).reshape({2, 3})},
      {"step0/loss", at::scalar_tensor(2.75, at::kFloat)},
      {"half", at::tensor({1.0, -0.5, 65504.0, 0.0009765625}).to(at::kHalf)},
      {"brain", at::tensor({1.0, -2.0, 0.0078125, 256.0}).to(at::kBFloat16).reshape({2, 2})},
      {"token_ids", at::tensor({i64(INT64_MIN), i64(0), i64(4611686018427387905)}, at::kLong)},
      {"positions", at::tensor({INT32_MIN, INT32_MAX, 0, 7}, at::kInt).reshape({2, 2})},
      {"shorts", at::tensor({-32768, 32767}, at::kShort)},
      {"signed_bytes", at::tensor({-128, 127}, at::kChar)},
      {"bytes", at::tensor({0, 128, 255}, at::kByte)},
      {"mask",
       at::tensor({1, 0, 0, 1, 1}).to(at::kBool)},  // at::tensor is not implemented for bool
      {"empty", at::empty({0}, at::kFloat)},
      {"empty_matrix", at::empty({2, 0}, at::kDouble)},
  };
}

const std::map<std::string, std::string> kSampleMetadata = {
    {"format", "trainrepro-golden"},
    {"format_version", "1"},
    {"note",
     "gr\xc3\xbc\xc3\x9f"
     "e from C++"},
};

// Python's save_file orders tensors its own way, so only names, not their order, are compared.
int check_against_sample(const std::string& path) {
  const SafetensorsFile file = trainrepro::read_safetensors(path);
  int mismatches = 0;
  const auto mismatch = [&mismatches, &path](const std::string& what) {
    std::cerr << path << ": " << what << "\n";
    ++mismatches;
  };
  const auto sample = sample_tensors();
  if (file.tensors.size() != sample.size()) {
    mismatch("expected " + std::to_string(sample.size()) + " tensors, found " +
             std::to_string(file.tensors.size()));
  }
  for (const auto& [name, expected] : sample) {
    const auto found = file.tensors.find(name);
    if (found == file.tensors.end()) {
      mismatch("tensor \"" + name + "\" is missing");
      continue;
    }
    const at::Tensor& actual = found->second;
    if (actual.scalar_type() != expected.scalar_type() || actual.sizes() != expected.sizes() ||
        !at::equal(actual, expected)) {
      std::cerr << "expected " << expected << "\nfound " << actual << "\n";
      mismatch("tensor \"" + name + "\" differs from the sample");
    }
  }
  if (file.metadata != kSampleMetadata) mismatch("metadata differs from the sample");
  if (mismatches == 0) {
    std::cout << path << ": OK, " << file.tensors.size() << " tensors and the metadata match\n";
  }
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] != "--check") {
      trainrepro::write_safetensors(args[0], sample_tensors(), kSampleMetadata);
      std::cout << "wrote " << args[0] << "\n";
      return 0;
    }
    if (args.size() == 2 && args[0] == "--check") return check_against_sample(args[1]);
  } catch (const std::exception& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
  std::cerr << "usage: write_sample_safetensors OUT.safetensors\n"
               "       write_sample_safetensors --check IN.safetensors\n";
  return 2;
}
