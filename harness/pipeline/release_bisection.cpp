#include "harness/pipeline/release_bisection.h"

#include <stdexcept>

namespace trainrepro {

std::string bisection_outcome(const ScenarioResult& result) {
  return outcome_name(result.verdict.outcome);
}

ReleaseBisection bisect_releases(const std::vector<std::string>& releases,
                                 const std::function<ScenarioResult(const std::string&)>& probe,
                                 const std::function<void(const ReleaseProbe&)>& on_probe) {
  if (releases.size() < 2) {
    throw std::invalid_argument("bisect: needs a good and a bad release, found " +
                                std::to_string(releases.size()) + " release(s)");
  }
  ReleaseBisection bisection;
  // Runs one release; false when it gave no outcome to compare (an error), which ends the search.
  auto run = [&](size_t index, std::string& outcome) {
    ReleaseProbe done{releases[index], probe(releases[index])};
    outcome = bisection_outcome(done.result);
    const bool usable = done.result.verdict.outcome != Outcome::error;
    on_probe(done);
    bisection.probes.push_back(std::move(done));
    if (!usable) bisection.stopped_at = releases[index];
    return usable;
  };
  std::string good_outcome, bad_outcome;
  if (!run(0, good_outcome) || !run(releases.size() - 1, bad_outcome)) return bisection;
  if (good_outcome == bad_outcome) return bisection;
  size_t good = 0, bad = releases.size() - 1;  // the invariant: good behaves as front, bad not
  while (bad - good > 1) {
    const size_t middle = good + (bad - good) / 2;
    std::string outcome;
    if (!run(middle, outcome)) return bisection;
    (outcome == good_outcome ? good : bad) = middle;
  }
  bisection.first_bad = releases[bad];
  bisection.last_good = releases[good];
  return bisection;
}

}  // namespace trainrepro
