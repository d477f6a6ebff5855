// Reads a scenario's optional "performance" section (see performance_spec.h), strictly: unknown
// keys, wrong types, a swept pointer that names no number in the file are errors at their pointer.
#pragma once
#include <optional>

#include <nlohmann/json.hpp>

#include "harness/json/json_fields.h"
#include "harness/scenario/performance_spec.h"

namespace trainrepro {

// `document` is the whole scenario file, for checking the swept pointer.
std::optional<PerformanceSpec> read_performance_section(ObjectReader& root,
                                                        const nlohmann::json& document);

}  // namespace trainrepro
