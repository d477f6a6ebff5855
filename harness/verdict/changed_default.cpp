#include "harness/verdict/changed_default.h"

#include <cstdio>

namespace trainrepro {
namespace {

std::string clipping_in_words(double threshold) {
  if (threshold <= 0.0) return "does not clip by default";
  char number[32];
  std::snprintf(number, sizeof(number), "%g", threshold);
  const std::string shown = std::string(number).find('.') == std::string::npos
                                ? std::string(number) + ".0"
                                : std::string(number);
  return "clips at " + shown + " by default";
}

}  // namespace

std::optional<std::string> changed_default_finding(const DeepSpeedConfig& config,
                                                   const std::string& trained_release,
                                                   const TrainingJudgement& training) {
  if (!config.release || config.verbatim.contains("gradient_clipping")) return std::nullopt;
  if (!training.first_parameter_mismatch) return std::nullopt;
  if (training.first_gradient_mismatch &&
      *training.first_gradient_mismatch <= *training.first_parameter_mismatch) {
    return std::nullopt;
  }
  const std::string& judged_release = config.release->version;
  const double judged = config.release->gradient_clipping_default;
  const double trained = gradient_clipping_default_of(trained_release);
  if (judged == trained) return std::nullopt;
  return "DeepSpeed " + trained_release + " " + clipping_in_words(trained) +
         "; the scenario follows DeepSpeed " + judged_release + ", which " +
         clipping_in_words(judged) +
         " (the default changed in 0.19.3), and its config does not set gradient_clipping: the "
         "difference can be this default alone. Fix: set \"gradient_clipping\" to the threshold "
         "you mean (0.0 for none), or set \"deepspeed_version\" to the release you train with.";
}

}  // namespace trainrepro
