// Golden files on disk: golden/<name>.safetensors (readable by Python's safetensors and torch)
// plus golden/manifest.json listing each file's key and SHA-256. Files and manifest are written
// atomically. Reading verifies key, format version, checksum and shapes: a missing, stale or
// corrupt golden is a GoldenError naming the command that regenerates it, never a silent pass.
#pragma once
#include <string>
#include <vector>

#include "harness/golden/golden.h"
#include "harness/scenario/scenario.h"

namespace trainrepro {

// Writes the golden and records it in the manifest; returns the file's path.
std::string write_golden(const std::string& directory, const Golden& golden);

// Reads and verifies the golden this scenario needs.
Golden load_golden(const std::string& directory, const Scenario& scenario);

// Verifies without loading tensors into a run: key present in the manifest, checksum, format.
// Returns "" when fine, else the problem (with the regenerate command).
std::string check_golden(const std::string& directory, const Scenario& scenario);

// Whether a scenario needs a golden at all (a config-error scenario stops before training).
bool needs_golden(const Scenario& scenario);

std::string regenerate_command(const Scenario& scenario);

}  // namespace trainrepro
