// A recursive-descent reader of hjson, written from the hjson syntax (hjson.github.io) and checked
// against hjson-py 3.1.0, the library DeepSpeed reads config files with
// (tests/json/hjson_cross_check.py). Where hjson-py decides something particular, the comment
// says so.
#include "harness/json/hjson_reader.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string_view>

#include "harness/json/json_fields.h"
#include "harness/json/scenario_error.h"

namespace trainrepro {
namespace {

bool is_punctuator(char c) {
  return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':';
}
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

class HjsonReader {
 public:
  HjsonReader(const std::string& text, const std::string& display_path, size_t max_depth,
              KeyOrder* key_order)
      : text_(text), path_(display_path), max_depth_(max_depth), key_order_(key_order) {}

  nlohmann::json read_root() {
    check_utf8();
    skip_blanks_and_comments();
    nlohmann::json value;
    if (peek() == '{' || peek() == '[') {
      value = read_value("");
    } else {
      // hjson-py reads a root without braces as an object's members first and, when that
      // fails, as a single value (a bare number, say); the first error is the one reported.
      const size_t start = at_;
      try {
        value = read_object_members("", /*braced=*/false);
      } catch (const ScenarioError& as_members) {
        at_ = start;
        depth_ = 0;
        if (key_order_ != nullptr) key_order_->clear();
        try {
          value = read_value("");
          skip_blanks_and_comments();
        } catch (const ScenarioError&) {
          throw as_members;
        }
        if (!at_end()) throw as_members;
      }
    }
    skip_blanks_and_comments();
    if (!at_end()) fail("unexpected text after the config's value ends");
    return value;
  }

 private:
  // Python opens the file as UTF-8 text, so bytes that are not UTF-8 never reach hjson: they
  // stop DeepSpeed with a UnicodeDecodeError (and nlohmann::json could not print them either).
  void check_utf8() {
    for (size_t i = 0; i < text_.size();) {
      const auto byte = static_cast<unsigned char>(text_[i]);
      size_t length = byte < 0x80 ? 1 : (byte >> 5) == 0x6 ? 2 : (byte >> 4) == 0xE ? 3
                                      : (byte >> 3) == 0x1E ? 4 : 0;
      bool valid = length > 0 && i + length <= text_.size();
      uint32_t code_point = length == 1 ? byte : length == 2 ? byte & 0x1F
                                       : length == 3 ? byte & 0x0F : byte & 0x07;
      for (size_t k = 1; valid && k < length; ++k) {
        const auto next = static_cast<unsigned char>(text_[i + k]);
        valid = (next >> 6) == 0x2;
        code_point = (code_point << 6) | (next & 0x3F);
      }
      // Overlong forms, surrogates and code points beyond U+10FFFF are not UTF-8 either.
      static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
      valid = valid && code_point >= kSmallest[length] && code_point <= 0x10FFFF &&
              (code_point < 0xD800 || code_point > 0xDFFF);
      if (!valid) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", byte);
        fail_at(i, std::string("byte ") + hex +
                       " is not UTF-8 text (DeepSpeed opens config files as UTF-8)");
      }
      i += length;
    }
  }

  bool at_end() const { return at_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return at_ + ahead < text_.size() ? text_[at_ + ahead] : '\0';
  }

  [[noreturn]] void fail(const std::string& what) const { fail_at(at_, what); }
  [[noreturn]] void fail_at(size_t offset, const std::string& what) const {
    throw ScenarioError(path_, line_and_column(text_, offset),
                        "invalid hjson (DeepSpeed reads config files with hjson): " + what);
  }

  void skip_blanks_and_comments() {
    while (!at_end()) {
      const char c = peek();
      if (is_blank(c)) {
        ++at_;
      } else if (c == '#' || (c == '/' && peek(1) == '/')) {
        while (!at_end() && peek() != '\n') ++at_;
      } else if (c == '/' && peek(1) == '*') {
        const size_t end = text_.find("*/", at_ + 2);
        if (end == std::string::npos) fail("a /* comment is never closed with */");
        at_ = end + 2;
      } else {
        return;
      }
    }
  }

  void enter(const std::string& pointer) {
    if (++depth_ > max_depth_) {
      throw ScenarioError(path_, pointer,
                          "nested more than " + std::to_string(max_depth_) +
                              " levels deep; no scenario or DeepSpeed config needs that many");
    }
  }

  nlohmann::json read_value(const std::string& pointer) {
    skip_blanks_and_comments();
    if (at_end()) fail("the text ends where a value was expected");
    const char c = peek();
    if (c == '{') {
      ++at_;
      enter(pointer);
      nlohmann::json object = read_object_members(pointer, /*braced=*/true);
      --depth_;
      return object;
    }
    if (c == '[') {
      ++at_;
      enter(pointer);
      nlohmann::json array = read_array(pointer);
      --depth_;
      return array;
    }
    if (c == '\'' && peek(1) == '\'' && peek(2) == '\'') return read_multiline_string();
    if (c == '"' || c == '\'') return read_quoted_string();
    if (is_punctuator(c)) {
      fail(std::string("found '") + c + "' where a value was expected");
    }
    return read_quoteless_value();
  }

  // Members up to '}' (braced) or the end of the text (a root without braces). Commas between
  // members are optional; a trailing one is allowed.
  nlohmann::json read_object_members(const std::string& pointer, bool braced) {
    nlohmann::json object = nlohmann::json::object();
    std::set<std::string> keys;
    while (true) {
      skip_blanks_and_comments();
      if (braced && peek() == '}') {
        ++at_;
        return object;
      }
      if (at_end()) {
        if (!braced) return object;
        fail("the text ends inside an object: a closing '}' is missing");
      }
      const std::string key = peek() == '"' || peek() == '\''
                                  ? read_quoted_string().get<std::string>()
                                  : read_key_name();
      skip_blanks_and_comments();
      if (peek() != ':') fail("expected ':' after the key \"" + key + "\"");
      ++at_;
      const std::string member_pointer = pointer + "/" + escape_pointer_token(key);
      if (!keys.insert(key).second) {
        // DeepSpeed passes object_pairs_hook=dict_raise_error_on_duplicate_keys to hjson.
        throw ScenarioError(path_, member_pointer,
                            "key \"" + key +
                                "\" appears twice in the same object; DeepSpeed refuses a "
                                "config with repeated keys (ValueError: Duplicate keys in "
                                "DeepSpeed config), so remove one of them");
      }
      if (key_order_ != nullptr) (*key_order_)[pointer].push_back(key);
      object[key] = read_value(member_pointer);
      skip_blanks_and_comments();
      if (peek() == ',') ++at_;
    }
  }

  nlohmann::json read_array(const std::string& pointer) {
    nlohmann::json array = nlohmann::json::array();
    while (true) {
      skip_blanks_and_comments();
      if (peek() == ']') {
        ++at_;
        return array;
      }
      if (at_end()) fail("the text ends inside an array: a closing ']' is missing");
      array.push_back(read_value(pointer + "/" + std::to_string(array.size())));
      skip_blanks_and_comments();
      if (peek() == ',') ++at_;
    }
  }

  // A key without quotes runs to the ':'; whitespace may only come right before the ':'.
  std::string read_key_name() {
    const size_t begin = at_;
    size_t blank_from = std::string::npos;
    while (true) {
      if (at_end()) fail("the text ends inside a key name");
      const char c = peek();
      if (c == ':') {
        if (at_ == begin) fail("found ':' without a key name before it");
        const size_t end = blank_from == std::string::npos ? at_ : blank_from;
        return text_.substr(begin, end - begin);
      }
      if (is_blank(c)) {
        if (blank_from == std::string::npos) blank_from = at_;
      } else if (blank_from != std::string::npos) {
        fail_at(blank_from, "whitespace inside a key name (quote the key to include it)");
      } else if (is_punctuator(c)) {
        fail(std::string("found '") + c + "' inside a key name (check the syntax before it)");
      }
      ++at_;
    }
  }

  void append_utf8(std::string& out, uint32_t code_point) {
    if (code_point < 0x80) {
      out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
      out += static_cast<char>(0xC0 | (code_point >> 6));
      out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
      out += static_cast<char>(0xE0 | (code_point >> 12));
      out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code_point >> 18));
      out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
  }

  uint32_t read_hex4() {
    if (at_ + 4 > text_.size()) fail("a \\u escape needs four hex digits");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      value <<= 4;
      if (c >= '0' && c <= '9') {
        value |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail_at(at_ - 1, "a \\u escape needs four hex digits");
      }
    }
    return value;
  }

  // "…" or '…' with JSON's escapes (and \' in either); control characters are refused, as
  // hjson-py's strict decoder refuses them.
  nlohmann::json read_quoted_string() {
    const char quote = peek();
    const size_t open_at = at_++;
    std::string value;
    while (true) {
      if (at_end()) fail_at(open_at, std::string("this string is never closed with ") + quote);
      const char c = text_[at_++];
      if (c == quote) return value;
      if (static_cast<unsigned char>(c) < 0x20) {
        fail_at(at_ - 1, "a control character inside a string (write it as an escape)");
      }
      if (c != '\\') {
        value += c;
        continue;
      }
      if (at_end()) fail_at(open_at, "this string is never closed");
      const char escaped = text_[at_++];
      switch (escaped) {
        case '"': value += '"'; break;
        case '\'': value += '\''; break;
        case '\\': value += '\\'; break;
        case '/': value += '/'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'u': {
          const size_t escape_at = at_ - 2;
          uint32_t code_point = read_hex4();
          if (code_point >= 0xD800 && code_point <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
            at_ += 2;
            const uint32_t low = read_hex4();
            if (low < 0xDC00 || low > 0xDFFF) at_ -= 6;  // not a pair: the first stays alone
            else code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
          }
          // Python keeps a lone surrogate in a str; UTF-8 (and so nlohmann::json) cannot.
          if (code_point >= 0xD800 && code_point <= 0xDFFF) {
            fail_at(escape_at, "a \\u escape of a lone surrogate (half of a UTF-16 pair)");
          }
          append_utf8(value, code_point);
          break;
        }
        default:
          fail_at(at_ - 1, std::string("unknown escape \\") + escaped + " in a string");
      }
    }
  }

  // '''…''': the text between, without the first line break after the opening quotes and the
  // last one before the closing quotes, each line's indentation up to the opening quotes'
  // column removed (hjson-py's mlscanstring).
  nlohmann::json read_multiline_string() {
    const size_t line_start = text_.rfind('\n', at_ == 0 ? 0 : at_ - 1);
    const size_t indent = line_start == std::string::npos ? at_ : at_ - line_start - 1;
    const size_t open_at = at_;
    at_ += 3;
    const auto skip_indent = [&] {
      for (size_t skipped = 0; skipped < indent && (peek() == ' ' || peek() == '\t'); ++skipped) {
        ++at_;
      }
    };
    while (peek() == ' ' || peek() == '\t' || peek() == '\r') ++at_;
    if (peek() == '\n') {
      ++at_;
      skip_indent();
    }
    std::string value;
    int quotes = 0;
    while (true) {
      if (at_end()) fail_at(open_at, "this ''' string is never closed with '''");
      const char c = text_[at_];
      if (c == '\'') {
        ++at_;
        if (++quotes == 3) {
          if (!value.empty() && value.back() == '\n') value.pop_back();
          return value;
        }
        continue;
      }
      value.append(static_cast<size_t>(quotes), '\'');
      quotes = 0;
      ++at_;
      if (c == '\n') {
        value += c;
        skip_indent();
      } else if (c != '\r') {
        value += c;
      }
    }
  }

  // The number `text` spells, when it is all a JSON number; nothing otherwise.
  std::optional<nlohmann::json> number_of(std::string_view spelled, size_t offset) {
    size_t i = 0;
    const size_t n = spelled.size();
    if (i < n && spelled[i] == '-') ++i;
    if (i >= n || !std::isdigit(static_cast<unsigned char>(spelled[i]))) return std::nullopt;
    if (spelled[i] == '0') {
      ++i;
    } else {
      while (i < n && std::isdigit(static_cast<unsigned char>(spelled[i]))) ++i;
    }
    bool integral = true;
    if (i < n && spelled[i] == '.') {
      ++i;
      if (i >= n || !std::isdigit(static_cast<unsigned char>(spelled[i]))) return std::nullopt;
      while (i < n && std::isdigit(static_cast<unsigned char>(spelled[i]))) ++i;
      integral = false;
    }
    if (i < n && (spelled[i] == 'e' || spelled[i] == 'E')) {
      ++i;
      if (i < n && (spelled[i] == '+' || spelled[i] == '-')) ++i;
      if (i >= n || !std::isdigit(static_cast<unsigned char>(spelled[i]))) return std::nullopt;
      while (i < n && std::isdigit(static_cast<unsigned char>(spelled[i]))) ++i;
      integral = false;
    }
    if (i != n) return std::nullopt;
    const std::string digits(spelled);
    if (integral) {
      errno = 0;
      if (digits[0] == '-') {
        const long long value = std::strtoll(digits.c_str(), nullptr, 10);
        if (errno == 0) return nlohmann::json(static_cast<int64_t>(value));
      } else {
        const unsigned long long value = std::strtoull(digits.c_str(), nullptr, 10);
        if (errno == 0) {
          if (value <= static_cast<unsigned long long>(INT64_MAX)) {
            return nlohmann::json(static_cast<int64_t>(value));
          }
          return nlohmann::json(static_cast<uint64_t>(value));
        }
      }
      // Beyond 64 bits: read as a float, as the strict reader does.
    }
    const double value = std::strtod(digits.c_str(), nullptr);
    if (std::isinf(value)) {
      fail_at(offset, "the number " + digits + " is out of range (beyond a 64-bit float)");
    }
    // hjson-py turns a float that is a whole number below 1e10 into an int: DeepSpeed reads
    // "reduce_bucket_size": 5e8 from a file as the integer 500000000.
    if (!integral && value == std::floor(value) && std::fabs(value) < 1e10) {
      return nlohmann::json(static_cast<int64_t>(value));
    }
    return nlohmann::json(value);
  }

  static std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
    return text;
  }

  // true, false, null or a number when what precedes the next ',', '}', ']', comment or line end
  // is exactly that; otherwise a quoteless string running to the end of the line, commas and
  // braces included (hjson-py's scantfnns).
  nlohmann::json read_quoteless_value() {
    const size_t begin = at_;
    while (true) {
      const char c = peek();
      const bool line_ends = at_end() || c == '\n' || c == '\r';
      if (line_ends || c == ',' || c == '}' || c == ']' || c == '#' ||
          (c == '/' && (peek(1) == '/' || peek(1) == '*'))) {
        const std::string_view so_far =
            trimmed(std::string_view(text_).substr(begin, at_ - begin));
        if (so_far == "true") return true;
        if (so_far == "false") return false;
        if (so_far == "null") return nullptr;
        if (auto number = number_of(so_far, begin)) return *number;
        if (line_ends) return std::string(so_far);
      }
      ++at_;
    }
  }

  const std::string& text_;
  const std::string& path_;
  size_t max_depth_;
  KeyOrder* key_order_;  // null: not wanted
  size_t at_ = 0;
  size_t depth_ = 0;
};

}  // namespace

nlohmann::json parse_hjson(const std::string& text, const std::string& display_path,
                           size_t max_depth, KeyOrder* key_order) {
  return HjsonReader(text, display_path, max_depth, key_order).read_root();
}

}  // namespace trainrepro
