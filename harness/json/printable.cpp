#include "harness/json/printable.h"

namespace trainrepro {

std::string printable(const std::string& text) {
  static const char digits[] = "0123456789abcdef";
  std::string shown;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      shown += "\\x";
      shown += digits[byte >> 4];
      shown += digits[byte & 0xf];
    } else {
      shown += c;
    }
  }
  return shown;
}

}  // namespace trainrepro
