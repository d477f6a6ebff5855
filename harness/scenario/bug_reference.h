// Where a catalogued bug was reported (scenario key "reference", scenarios/catalogue/): the
// public issue or pull request, the project, the releases it affects and what fixed it. Carried
// into results and reports so a reader can go from a verdict to the upstream thread.
#pragma once
#include <string>

namespace trainrepro {

struct BugReference {
  std::string url;       // https://github.com/… issue or pull request
  std::string project;   // "deepspeed", "transformers", "accelerate" or "pytorch"
  std::string affected;  // the release or range that has the bug ("0.16.9", "<= 4.45.2")
  std::string fixed;     // the release or pull request that fixed it, or "user code"
};

}  // namespace trainrepro
