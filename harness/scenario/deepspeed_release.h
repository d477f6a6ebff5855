// The DeepSpeed releases whose semantics the harness knows, and every behaviour that differs
// between them: defaults, keys DeepSpeed refuses, and what a loop that bypasses the engine gets.
// A scenario names its release ("deepspeed_version"); results and the console say which one
// was used. Each field cites the DeepSpeed source it was read from (paths inside the release's
// sdist, under deepspeed/), so the table can be checked and extended release by release.
#pragma once
#include <string>
#include <vector>

namespace trainrepro {

// A key DeepSpeed refuses outright (it was removed), with DeepSpeed's reason.
struct RemovedKey {
  std::string section;  // "" for the top level, "zero_optimization" for a ZeRO key
  std::string key;
  std::string message;  // DeepSpeed's DeepSpeedConfigError text
};

// A config section DeepSpeed validates with a pydantic model that forbids other keys
// (runtime/config_utils.py DeepSpeedConfigModel: extra="forbid"): any other key is refused with
// pydantic's ValidationError when DeepSpeedConfig reads the section.
struct ValidatedSection {
  std::string pointer;  // "/zero_optimization", "/zero_optimization/offload_param", "/fp16"
  std::string model;    // "DeepSpeedZeroConfig", as pydantic names it in the error
  std::vector<std::string> keys;  // field names and their aliases (populate_by_name=True)
};

struct DeepSpeedRelease {
  std::string version;  // "0.19.8"
  // runtime/constants.py GRADIENT_CLIPPING_DEFAULT: 0.0 up to 0.19.2, 1.0 from 0.19.3.
  double gradient_clipping_default = 0.0;
  // runtime/engine.py forward(): from 0.18.3 the engine hooks the outputs of its forward so a
  // direct loss.backward() is refused at ZeRO stage 0 and scaled by 1/GAS at stages 1-3.
  // Before, loss.backward() was plain autograd: no 1/GAS, no reduction across ranks.
  bool direct_backward_hooked = false;
  // runtime/constants.py MANAGED_GRADIENT_ACCUMULATION (0.19.4+); false makes every step() a
  // boundary. Older releases ignore the key.
  bool has_managed_gradient_accumulation = false;
  // runtime/engine.py get_data_types and _do_optimizer_sanity_check without ZeRO: 0.16.9
  // accumulates bf16 gradients in fp32 by default (BF16_Optimizer) and refuses bf16
  // accumulation; 0.19.8 accumulates in bf16 by default (FP16_Optimizer in bf16) and refuses
  // fp32 accumulation.
  bool bf16_without_zero_accumulates_in_fp32 = false;
  // runtime/lr_schedules.py, changed in 0.19.3: warmup_num_steps must be a positive integer
  // (ValueError), WarmupLR's warmup_max_lr defaults to the optimizer's lr (before: 0.001), and
  // WarmupCosineLR's progress is clamped (a span of at least one step, never past the end).
  bool warmup_num_steps_validated = false;
  bool warmup_lr_max_defaults_to_optimizer_lr = false;
  bool cosine_progress_clamped = false;
  // runtime/lr_schedules.py WarmupCosineLR before 0.19.0 (fixed by PR #7969): at construction
  // get_lr() returns one rate, [0.0], which update_lr zips with the param groups, so only the
  // first group starts at 0 and every other group takes its first step at its full lr.
  bool cosine_construction_rate_first_group_only = false;
  // runtime/lr_schedules.py OneCycle: 0.19.x holds the rate flat over cycle_*_stair_count
  // stairs; 0.16.9 accepts the counts and ignores them.
  bool one_cycle_stair_counts_applied = false;
  // runtime/config.py _reject_removed_config_keys (0.19.7 partly, 0.19.8 fully).
  std::vector<RemovedKey> removed_keys;
  // runtime/engine.py DEEPSPEED_OPTIMIZERS via runtime/config.py: the names DeepSpeed matches
  // case-insensitively; any other name is looked up in torch.optim exactly as written.
  std::vector<std::string> deepspeed_optimizer_names;
  // In the order DeepSpeedConfig reads them (runtime/config.py _initialize_params): ZeRO, then
  // fp16 and bf16 (pydantic models from 0.19; 0.16 reads them with dict.get, ignoring others).
  std::vector<ValidatedSection> validated_sections;
};

// Oldest first; the last is the default.
const std::vector<DeepSpeedRelease>& known_deepspeed_releases();
const DeepSpeedRelease& newest_deepspeed_release();

// The release for `version`: an exact known release, or a known release's line ("0.16.4" is
// read as 0.16.9, the release of that line the table was checked against; `note` says so).
// nullptr for a version of a line the table does not know.
const DeepSpeedRelease* find_deepspeed_release(const std::string& version, std::string& note);

// Whether release a ("0.18.6") comes before b ("0.18.10"): by number, not by text.
bool release_older(const std::string& a, const std::string& b);

// DeepSpeed's own gradient_clipping default in any release (runtime/constants.py
// GRADIENT_CLIPPING_DEFAULT: 0.0 up to 0.19.2, 1.0 from 0.19.3, PR #8068), for a release the
// table above does not hold, such as the one `--engine deepspeed==VERSION` installed.
double gradient_clipping_default_of(const std::string& version);

// "0.16.9 (also used for 0.16.x), 0.19.8", for error messages.
std::string describe_known_releases();

}  // namespace trainrepro
