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

namespace trainrepro {

std::string printable_excerpt(const std::string& text, size_t at_most) {
  if (text.size() <= at_most) return "\"" + printable(text) + "\"";
  size_t cut = at_most;  // never inside a UTF-8 sequence
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return "\"" + printable(text.substr(0, cut)) + "\"... (" + std::to_string(text.size()) +
         " characters)";
}

std::string printable_output_tail(const std::string& text, size_t at_most) {
  if (text.size() <= at_most) return printable(text, LineBreaks::kept);
  size_t from = text.size() - at_most;
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xc0) == 0x80) ++from;
  return "...\n" + printable(text.substr(from), LineBreaks::kept);
}

}  // namespace trainrepro
