#include "harness/scenario/release_outcomes.h"

#include <algorithm>
#include <regex>

namespace trainrepro {
namespace {

std::vector<std::string> read_release_list(ObjectReader& section, const std::string& key) {
  if (!section.has(key)) section.fail(key, "required key is missing");
  std::vector<std::string> releases = section.optional_string_list(key);
  if (releases.empty()) {
    section.fail(key, "expected at least one DeepSpeed release (\"0.18.5\"), found an empty array");
  }
  static const std::regex release(R"(\d+\.\d+\.\d+)");
  for (size_t i = 0; i < releases.size(); ++i) {
    const std::string at = "/" + escape_pointer_token(key) + "/" + std::to_string(i);
    if (!std::regex_match(releases[i], release)) {
      section.fail_at(at,
                      "expected a DeepSpeed release as MAJOR.MINOR.PATCH (\"0.18.5\"), "
                      "found \"" +
                          releases[i] + "\"");
    }
    if (std::find(releases.begin(), releases.begin() + i, releases[i]) != releases.begin() + i) {
      section.fail_at(at, "\"" + releases[i] + "\" is listed twice");
    }
  }
  return releases;
}

std::string spelled(const Expectation& expect) {
  if (expect.outcome == ExpectedOutcome::diagnosis) {
    return "diagnosis " + std::string(spelling_of(*expect.diagnosis, diagnosis_spellings()));
  }
  return spelling_of(expect.outcome, expect.outcome == ExpectedOutcome::failure
                                         ? reproduced_as_spellings()
                                         : expected_outcome_spellings());
}

}  // namespace

ReleaseOutcomes read_release_outcomes(ObjectReader& section) {
  ReleaseOutcomes outcomes;
  outcomes.reproduces_on = read_release_list(section, "reproduces_on");
  outcomes.passes_on = read_release_list(section, "passes_on");
  for (size_t i = 0; i < outcomes.passes_on.size(); ++i) {
    const std::string& release = outcomes.passes_on[i];
    if (std::find(outcomes.reproduces_on.begin(), outcomes.reproduces_on.end(), release) !=
        outcomes.reproduces_on.end()) {
      section.fail_at("/passes_on/" + std::to_string(i),
                      "\"" + release +
                          "\" is also in reproduces_on: a release either has the "
                          "bug or does not");
    }
  }
  ObjectReader reproduced_as = section.required_object("reproduced_as");
  outcomes.reproduced_as = read_reproduced_as(reproduced_as);
  section.reject_unknown_keys();
  return outcomes;
}

ReleaseExpectation expectation_on_release(const ReleaseOutcomes& outcomes, const Expectation& own,
                                          const std::string& installed) {
  auto listed_in = [&](const std::vector<std::string>& releases) {
    return std::find(releases.begin(), releases.end(), installed) != releases.end();
  };
  ReleaseExpectation chosen;
  const std::string release = "DeepSpeed " + installed;
  if (listed_in(outcomes.reproduces_on)) {
    chosen.expect = outcomes.reproduced_as;
    chosen.listed = true;
    chosen.said = release + " is in /deepspeed_releases/reproduces_on: the bug is expected (" +
                  spelled(chosen.expect) + ")";
  } else if (listed_in(outcomes.passes_on)) {
    chosen.expect = Expectation{};
    chosen.listed = true;
    chosen.said = release + " is in /deepspeed_releases/passes_on: a pass is expected";
  } else {
    chosen.expect = own;
    chosen.said = release +
                  " is not listed in /deepspeed_releases (neither reproduces_on nor "
                  "passes_on): the scenario's own expect applies (" +
                  spelled(own) + ")";
  }
  return chosen;
}

}  // namespace trainrepro
