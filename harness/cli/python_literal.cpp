#include "harness/cli/python_literal.h"

#include <cstdint>
#include <stdexcept>

namespace trainrepro {
namespace {

// The code point starting at text[at], and how many bytes it takes; throws on anything that is
// not UTF-8 (a stray continuation byte, a cut sequence, an overlong form, a surrogate, beyond
// U+10FFFF), which Python could not hold in a str read from UTF-8 either.
char32_t decode_utf8(std::string_view text, size_t at, size_t& length) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) {
    length = 1;
    return lead;
  }
  char32_t code_point = 0;
  char32_t smallest = 0;
  if (lead >= 0xc0 && lead < 0xe0) {
    length = 2, code_point = lead & 0x1f, smallest = 0x80;
  } else if (lead >= 0xe0 && lead < 0xf0) {
    length = 3, code_point = lead & 0x0f, smallest = 0x800;
  } else if (lead >= 0xf0 && lead < 0xf8) {
    length = 4, code_point = lead & 0x07, smallest = 0x10000;
  } else {
    throw std::invalid_argument("not UTF-8: byte " + std::to_string(lead) + " at offset " +
                                std::to_string(at) + " starts no character");
  }
  if (at + length > text.size()) {
    throw std::invalid_argument("not UTF-8: the text ends inside a character at offset " +
                                std::to_string(at));
  }
  for (size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[at + i]);
    if ((byte & 0xc0) != 0x80) {
      throw std::invalid_argument("not UTF-8: a character is cut short at offset " +
                                  std::to_string(at + i));
    }
    code_point = (code_point << 6) | (byte & 0x3f);
  }
  if (code_point < smallest || code_point > 0x10ffff ||
      (code_point >= 0xd800 && code_point <= 0xdfff)) {
    throw std::invalid_argument(
        "not UTF-8: an overlong form, a surrogate or a code point beyond "
        "U+10FFFF at offset " +
        std::to_string(at));
  }
  return code_point;
}

void append_hex(std::string& out, char32_t value, int digits) {
  static const char kDigits[] = "0123456789abcdef";
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kDigits[(value >> shift) & 0xf];
}

}  // namespace

std::string python_string_literal(std::string_view utf8) {
  std::string literal = "'";
  for (size_t at = 0; at < utf8.size();) {
    size_t length = 1;
    const char32_t code_point = decode_utf8(utf8, at, length);
    at += length;
    if (code_point == '\\' || code_point == '\'') {
      literal += '\\';
      literal += static_cast<char>(code_point);
    } else if (code_point >= 0x20 && code_point <= 0x7e) {
      literal += static_cast<char>(code_point);
    } else if (code_point == '\n') {  // the JSON's own line ends, so readable
      literal += "\\n";
    } else if (code_point == '\t') {
      literal += "\\t";
    } else if (code_point == '\r') {
      literal += "\\r";
    } else if (code_point <= 0xff) {
      literal += "\\x";
      append_hex(literal, code_point, 2);
    } else if (code_point <= 0xffff) {
      literal += "\\u";
      append_hex(literal, code_point, 4);
    } else {
      literal += "\\U";
      append_hex(literal, code_point, 8);
    }
  }
  return literal + "'";
}

}  // namespace trainrepro
