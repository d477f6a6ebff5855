// "deepspeed_releases": where a DeepSpeed implementation bug shows. A catalogued bug of
// DeepSpeed's own code is a correct user setup (its "expect" is pass, which the reference engine
// meets); on the real DeepSpeed the installed release decides what the run should show: the
// bug on a release that has it, a pass on one that does not. The pipeline chooses the
// expectation before judging (expectation_on_release); the judges never ask which engine ran.
#pragma once
#include <string>
#include <vector>

#include "harness/json/json_fields.h"
#include "harness/scenario/expectation.h"

namespace trainrepro {

struct ReleaseOutcomes {
  std::vector<std::string> reproduces_on;  // releases that have the bug ("0.18.5")
  std::vector<std::string> passes_on;      // releases checked to pass (before it, or fixed)
  Expectation reproduced_as;               // failure (any mismatch) or a named diagnosis
};

// Reads {"reproduces_on": [...], "passes_on": [...], "reproduced_as": {...}}: every key
// required, each list non-empty, every release written MAJOR.MINOR.PATCH, none twice, none in
// both lists. Throws ScenarioError at the JSON pointer of the offending value.
ReleaseOutcomes read_release_outcomes(ObjectReader& section);

// What a run on `installed` (the DeepSpeed release that trained) should show.
struct ReleaseExpectation {
  Expectation expect;
  std::string said;  // which list decided, for results and the console
  bool listed = false;
};

// reproduces_on → reproduced_as; passes_on → pass; a release in neither → `own` (the
// scenario's "expect"), saying the release is not listed.
ReleaseExpectation expectation_on_release(const ReleaseOutcomes& outcomes, const Expectation& own,
                                          const std::string& installed);

}  // namespace trainrepro
