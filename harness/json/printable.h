// User-given text (a file name, a JSON value) may carry control bytes (NUL, ESC): printed raw
// they cut a message short or drive the terminal. Messages show them escaped, as \x00 or \x1b.
#pragma once
#include <string>

namespace trainrepro {

std::string printable(const std::string& text);

}  // namespace trainrepro
