#include "harness/scenario/hf_trainer_release.h"

namespace trainrepro {
namespace {

std::vector<AccelerateRelease> make_accelerate_releases() {
  // utils/deepspeed.py DeepSpeedEngineWrapper.backward, read in each wheel.
  AccelerateRelease v1_7{"1.7.0", /*passes_explicit_boundary=*/false};
  AccelerateRelease v1_8{"1.8.0", /*passes_explicit_boundary=*/true};
  AccelerateRelease v1_15{"1.15.0", /*passes_explicit_boundary=*/true};
  return {v1_7, v1_8, v1_15};
}

}  // namespace

const std::vector<AccelerateRelease>& known_accelerate_releases() {
  static const std::vector<AccelerateRelease> releases = make_accelerate_releases();
  return releases;
}

const AccelerateRelease& newest_accelerate_release() { return known_accelerate_releases().back(); }

const AccelerateRelease* find_accelerate_release(const std::string& version) {
  for (const AccelerateRelease& release : known_accelerate_releases()) {
    if (release.version == version) return &release;
  }
  return nullptr;
}

std::string describe_known_accelerate_releases() {
  std::string text;
  for (const AccelerateRelease& release : known_accelerate_releases()) {
    text += (text.empty() ? "" : ", ") + release.version;
  }
  return text;
}

}  // namespace trainrepro
