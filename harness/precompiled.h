// Precompiled for every translation unit of trainrepro_core and the unit tests: the heavy
// headers most of them include anyway. ATen's is the costliest (~10 s per file on 2 cores).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
