// Settings read from the environment (TRAINREPRO_OFFLINE, TRAINREPRO_CACHE, …) are user input like
// any argument: a value trainrepro cannot use is refused (exit 2) naming the variable, never
// silently read as something else.
#pragma once
#include <stdexcept>
#include <string>

namespace trainrepro {

// A variable whose value cannot be used; the message starts with its name.
class EnvironmentValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A yes/no switch: 1, true, yes (any case) are on; unset, empty, 0, false, no are off; anything
// else throws EnvironmentValueError. scripts/env.sh reads TRAINREPRO_OFFLINE the same way.
bool environment_switch(const char* name);

// TRAINREPRO_OFFLINE: never install anything, never reach for the network.
bool offline_requested();

}  // namespace trainrepro
