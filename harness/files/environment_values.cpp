#include "harness/files/environment_values.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "harness/json/printable.h"

namespace trainrepro {

bool environment_switch(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return false;
  std::string lowered(value);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lowered == "1" || lowered == "true" || lowered == "yes") return true;
  if (lowered.empty() || lowered == "0" || lowered == "false" || lowered == "no") return false;
  throw EnvironmentValueError(std::string(name) +
                              ": expected 1, true or yes (on) or 0, false, no or empty (off); "
                              "found " +
                              printable_excerpt(value));
}

bool offline_requested() { return environment_switch("TRAINREPRO_OFFLINE"); }

}  // namespace trainrepro
