#include "harness/json/printable.h"

namespace trainrepro {

std::string printable(const std::string& text, LineBreaks line_breaks) {
  static const char digits[] = "0123456789abcdef";
  std::string shown;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (byte == '\n' && line_breaks == LineBreaks::kept) {
      shown += '\n';
    } else if (byte < 0x20 || byte == 0x7f) {
      shown += "\\x";
      shown += digits[byte >> 4];
      shown += digits[byte & 0xf];
    } else if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F in UTF-8
      shown += "\\u00";
      shown += digits[next >> 4];
      shown += digits[next & 0xf];
      ++i;
    } else {
      shown += text[i];
    }
  }
  return shown;
}

}  // namespace trainrepro
