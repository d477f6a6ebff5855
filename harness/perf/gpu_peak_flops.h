// The dense peak FLOP rate of the current GPU for a precision, from its datasheet, for model FLOPs
// utilisation (MFU). Absent for a GPU not in the table: MFU is then not reported rather than
// guessed.
#pragma once
#include <optional>
#include <string>

#include "harness/scenario/precision_config.h"

namespace trainrepro {

std::string current_cuda_device_name();
std::optional<double> gpu_peak_flops(const std::string& device_name, Precision precision);

}  // namespace trainrepro
