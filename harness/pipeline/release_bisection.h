// `trainrepro bisect`: the first release whose outcome on a scenario differs from the good
// release's, found by binary search over the releases between a good and a bad one. A release
// that gives no outcome (it cannot be installed, does not import, is refused as unable to run
// here) is skipped, as `git bisect skip` does: the search goes on around it, and when only
// skipped releases stand between the last good and the first bad one, the answer names them.
// The search only orders probes; what a probe is (install the release, train, judge) is the
// caller's.
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
  // The releases that stood for the good and the bad end: the ends asked for, or, when one
  // could not run, the nearest release inside the range that could. Unset when none could.
  std::optional<std::string> good_end;
  std::optional<std::string> bad_end;
  // Set when the two ends' outcomes differ (else the search did not start).
  std::optional<std::string> first_bad;
  std::optional<std::string> last_good;
  // Releases between last_good and first_bad that gave no outcome: the change came in one of
  // them or in first_bad (release order). Empty when the answer is exact.
  std::vector<std::string> undecided;
  // Every release that gave no outcome, in the order probed (their probes say why).
  std::vector<std::string> skipped;
};

// What two releases are compared by: the verdict's outcome ("passed", "failed", "reproduced"…).
std::string bisection_outcome(const ScenarioResult& result);

// True when a probe gave an outcome the search can compare (not an error).
bool gave_outcome(const ScenarioResult& result);

// releases: in release order from the good one (front) to the bad one (back), at least two;
// newest first when the good release is the newer (the search then finds the fix: `first_bad`
// is the newest bad release, `last_good` the release that fixed it). Probes the ends first (an
// end that gives no outcome is replaced by the next release inward), then halves the span
// between the last release that behaved as the good end and the first that did not, probing
// the untried release nearest its middle: about log2(n) + 2 probes, plus one per skipped
// release. `on_probe` sees each as it ends. Assumes the change happened once in the range (a
// release that flips back is not searched for).
ReleaseBisection bisect_releases(const std::vector<std::string>& releases,
                                 const std::function<ScenarioResult(const std::string&)>& probe,
                                 const std::function<void(const ReleaseProbe&)>& on_probe);

}  // namespace trainrepro
