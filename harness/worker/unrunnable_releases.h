// DeepSpeed releases that cannot run over the torch trainrepro was built with, known before any
// install: each with the reason found when it was tried (the error, and the place in DeepSpeed's
// or torch's source that explains it). `--engine deepspeed==R` refuses them up front (exit 2)
// and `bisect` skips them without an install. docs/releases.md has the whole sweep.
#pragma once
#include <optional>
#include <string>

namespace trainrepro {

// Why `release` cannot run over torch `torch_version` ("2.11.0"), or nullopt when nothing known
// stops it.
std::optional<std::string> why_release_cannot_run(const std::string& release,
                                                  const std::string& torch_version);

}  // namespace trainrepro
