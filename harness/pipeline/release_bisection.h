// `trainrepro bisect`: the first release whose outcome on a scenario differs from the good
// release's, found by binary search over the releases between a good and a bad one. The search
// only orders probes; what a probe is (install the release, train, judge) is the caller's.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/scenario_result.h"

namespace trainrepro {

struct ReleaseProbe {
  std::string release;
  ScenarioResult result;
};

struct ReleaseBisection {
  std::vector<ReleaseProbe> probes;  // in the order they ran
  // Set when the good and bad releases' outcomes differ (else the search did not start).
  std::optional<std::string> first_bad;
  std::optional<std::string> last_good;
  // A probe that could not give an outcome (an error verdict) stops the search: its release.
  std::optional<std::string> stopped_at;
};

// What two releases are compared by: the verdict's outcome ("passed", "failed", "reproduced"…).
std::string bisection_outcome(const ScenarioResult& result);

// releases: in release order from the good one (front) to the bad one (back), at least two;
// newest first when the good release is the newer (the search then finds the fix: `first_bad`
// is the newest bad release, `last_good` the release that fixed it). Probes the ends first, then
// halves the span between the last release that behaved as the good one and the first that did not:
// about log2(n) + 2 probes. `on_probe` sees each as it ends. Assumes the change happened once in
// the range (a release that flips back is not searched for).
ReleaseBisection bisect_releases(const std::vector<std::string>& releases,
                                 const std::function<ScenarioResult(const std::string&)>& probe,
                                 const std::function<void(const ReleaseProbe&)>& on_probe);

}  // namespace trainrepro
