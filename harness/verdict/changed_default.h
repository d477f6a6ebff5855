// A scenario judged by one DeepSpeed release's rules and trained by another (`--engine
// deepspeed==VERSION`, or the user's installed DeepSpeed): a default that differs between the two
// is a finding, not noise, when the user's config leaves the key out. Today that is
// gradient_clipping (0.0 up to DeepSpeed 0.19.2, 1.0 from 0.19.3); it reads plain facts, not the
// engine that trained.
#pragma once
#include <optional>
#include <string>

#include "harness/scenario/deepspeed_config.h"
#include "harness/verdict/training_judgement.h"

namespace trainrepro {

// The sentence naming the default that differs between the release whose rules judged (the
// config's) and `trained_release`, with its fix; nothing when the config sets the key, both
// releases agree, or the run's first mismatch cannot come from it: clipping changes the update,
// never the gradients it is computed from, so a run whose gradients differ before any
// parameter did has another cause.
std::optional<std::string> changed_default_finding(const DeepSpeedConfig& config,
                                                   const std::string& trained_release,
                                                   const TrainingJudgement& training);

}  // namespace trainrepro
