// The DeepSpeed settings through which the real DeepSpeed (0.19.8, read from its source) acts
// outside the run: it imports a module the config names, writes where the config (or its
// default, the current folder) says, deletes there, or logs to an online service. A shared
// scenario must not choose those on the user's machine, so every path that hands a scenario's
// config to the real DeepSpeed (`run`/`bisect`/`perf run --engine deepspeed…`, the release
// matrix, `export --python`) refuses a config that sets one: exit 2, the key's JSON pointer and
// what DeepSpeed would do. The table of every key that names a path, a module, a URL or a service
// is in docs/trust.md, "Running someone else's scenario: what it trusts". The reference engine and
// FSDP2 (which reads only numbers resolved from the config) never act on them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/scenario.h"

namespace trainrepro {

struct SettingOutsideTheRun {
  std::string pointer;  // inside the DeepSpeed config: "/flops_profiler/output_file"
  std::string effect;   // what DeepSpeed does with it: "DeepSpeed's flops profiler overwrites …"
};

// Every setting of `config` (as deepspeed.initialize receives it) that DeepSpeed would act on
// outside the run, each flag read as DeepSpeed reads it (Python truth for dict sections, pydantic's
// bool for pydantic ones, "auto" dropped there). Settings left off (`"tensorboard": {"enabled":
// false}`, a flops profiler printing to stdout) are not listed.
std::vector<SettingOutsideTheRun> settings_acting_outside_the_run(const nlohmann::json& config);

// "file:/deepspeed/<pointer>: <effect>; <why refused and the fix>" for the scenario's first such
// setting, or nothing. `refuser` names who refuses ("--engine deepspeed", "bisect").
std::optional<std::string> refuse_settings_acting_outside_the_run(const Scenario& scenario,
                                                                  const std::string& refuser);

}  // namespace trainrepro
