// What this process runs on, asked of LibTorch itself: its version, and whether a CUDA GPU is
// usable (a machine with the toolkit but no driver or no GPU answers "no").
#pragma once
#include <string>

namespace trainrepro {

std::string torch_version();  // "2.11.0"
bool cuda_is_available();
int cuda_device_count();
std::string describe_cuda();  // "1 CUDA device(s)" or "none"
// The CUDA runtime LibTorch was built with, "13.0"; "" for a CPU-only LibTorch.
std::string cuda_runtime_version();

// Makes CUDA runs reproducible: deterministic algorithms, no TF32, a fixed cuBLAS workspace.
// Call before the first CUDA operation.
void make_cuda_deterministic();

// CPU seconds this process has used, every thread together (CLOCK_PROCESS_CPUTIME_ID).
double process_cpu_seconds();

// Waits until the current CUDA device has finished its queued work (a timing boundary).
void synchronize_cuda();

}  // namespace trainrepro
