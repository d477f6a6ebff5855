#include "harness/pipeline/release_bisection.h"

#include <optional>
#include <set>
#include <stdexcept>

namespace trainrepro {

std::string bisection_outcome(const ScenarioResult& result) {
  return outcome_name(result.verdict.outcome);
}

bool gave_outcome(const ScenarioResult& result) { return result.verdict.outcome != Outcome::error; }

ReleaseBisection bisect_releases(const std::vector<std::string>& releases,
                                 const std::function<ScenarioResult(const std::string&)>& probe,
                                 const std::function<void(const ReleaseProbe&)>& on_probe) {
  if (releases.size() < 2) {
    throw std::invalid_argument("bisect: needs a good and a bad release, found " +
                                std::to_string(releases.size()) + " release(s)");
  }
  ReleaseBisection bisection;
  std::set<size_t> skipped;
  // Runs one release; its outcome, or nullopt when it gave none (it is skipped from then on).
  auto run = [&](size_t index) -> std::optional<std::string> {
    ReleaseProbe done{releases[index], probe(releases[index])};
    const bool usable = gave_outcome(done.result);
    const std::string outcome = bisection_outcome(done.result);
    on_probe(done);
    bisection.probes.push_back(std::move(done));
    if (usable) return outcome;
    skipped.insert(index);
    bisection.skipped.push_back(releases[index]);
    return std::nullopt;
  };

  // The ends: each moves inward past releases that give no outcome, never onto the other.
  size_t good = 0;
  std::optional<std::string> good_outcome;
  for (; good < releases.size(); ++good) {
    if ((good_outcome = run(good))) break;
  }
  if (!good_outcome) return bisection;  // no release could run
  bisection.good_end = releases[good];
  size_t bad = releases.size() - 1;
  std::optional<std::string> bad_outcome;
  for (; bad > good; --bad) {
    if ((bad_outcome = run(bad))) break;
  }
  if (!bad_outcome) return bisection;  // only the good end could run
  bisection.bad_end = releases[bad];
  if (*good_outcome == *bad_outcome) return bisection;

  // The invariant: `good` behaves as the good end, `bad` does not; between them, the releases
  // not yet skipped are still to try, the one nearest the middle first.
  for (;;) {
    const size_t middle = good + (bad - good) / 2;
    std::optional<size_t> next;
    for (size_t index = good + 1; index < bad; ++index) {
      if (skipped.count(index) != 0) continue;
      const auto distance = [&](size_t i) { return i > middle ? i - middle : middle - i; };
      if (!next || distance(index) < distance(*next)) next = index;
    }
    if (!next) break;
    const std::optional<std::string> outcome = run(*next);
    if (!outcome) continue;
    (*outcome == *good_outcome ? good : bad) = *next;
  }
  bisection.first_bad = releases[bad];
  bisection.last_good = releases[good];
  for (size_t index = good + 1; index < bad; ++index) {
    bisection.undecided.push_back(releases[index]);  // every one of them was skipped
  }
  return bisection;
}

}  // namespace trainrepro
