// Precompiled for every translation unit of trainrepro_core: the heavy headers most of
// them include anyway. LibTorch's own headers are added once the engine uses them widely.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>
