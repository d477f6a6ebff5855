#include "harness/perf/calibration_kernel.h"

#include <chrono>

#include <ATen/ATen.h>

#include "harness/engine/runtime_info.h"
#include "harness/perf/mann_whitney.h"

namespace trainrepro {

double time_calibration_kernel(Device device) {
  const bool cuda = device == Device::cuda;
  // Wide enough on a GPU to keep it busy for milliseconds rather than measure launch latency.
  const int64_t size = cuda ? 4096 : 192;
  const int products = cuda ? 16 : 96;
  const auto options = at::TensorOptions().dtype(at::kFloat).device(cuda ? at::kCUDA : at::kCPU);
  // Fixed inputs, not random: the same work every time (a product of ones stays finite).
  const at::Tensor left = at::full({size, size}, 1.0 / static_cast<double>(size), options);
  at::Tensor right = at::ones({size, size}, options);
  // Each product timed on its own and the median taken, times the count: like the step's
  // median, a burst of a neighbour's load moves a few products, not the figure.
  std::vector<double> times;
  for (int i = 0; i < products; ++i) {
    if (cuda) synchronize_cuda();
    const auto start = std::chrono::steady_clock::now();
    right = at::relu(at::mm(left, right));
    if (cuda) synchronize_cuda();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median_of(times) * products;
}

}  // namespace trainrepro
