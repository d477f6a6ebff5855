// Strict reading of the JSON objects we own (scenario sections, model options). It lives below
// both scenario/ and models/, which read their sections with it, so neither includes the other.
// Every read
// checks the type and range and records the key; `reject_unknown_keys()` then refuses any key
// nobody read, so a typo such as "gradient_acumulation_steps" fails loudly instead of silently
// falling back to a default. Every error names the file and the JSON pointer of the value.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainrepro {

// The spellings of an enum in scenario files. Unknown spellings are errors naming these.
template <typename Enum>
using EnumSpellings = std::vector<std::pair<Enum, const char*>>;

// "a string \"auto\"", "the number 32.5", "an array of 3 values": for "found …" in messages.
std::string describe_json_value(const nlohmann::json& value);

// The candidate `written` is most likely a typo of (at most 3 edits away), or "" when none is.
std::string closest_spelling(const std::string& written, const std::vector<std::string>& candidates);

// RFC 6901: "~" → "~0", "/" → "~1".
std::string escape_pointer_token(const std::string& key);

// The keys of every object of a parsed file in the order the file writes them, by the object's
// JSON pointer ("" for the root). nlohmann::json keeps an object's keys sorted; where a message
// follows the file's order (pydantic lists a section's forbidden keys in it), this says what
// that order was.
using KeyOrder = std::map<std::string, std::vector<std::string>>;

class ObjectReader {
 public:
  // Throws ScenarioError unless `value` is an object. `value` must outlive the reader, and
  // `key_order` (the file's, in the same pointers; may be null) too. Readers of its members
  // share it.
  ObjectReader(const nlohmann::json& value, std::string file, std::string pointer,
               const KeyOrder* key_order = nullptr);

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  std::string pointer_to(const std::string& key) const;
  bool has(const std::string& key) const;
  // This object's keys in the file's order where it is known, else sorted.
  std::vector<std::string> keys_in_file_order() const;

  // Throws a ScenarioError located at `key` (or at this object when `key` is empty).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // The same for a deeper value: `relative_pointer` is already escaped ("/requires/1").
  [[noreturn]] void fail_at(const std::string& relative_pointer, const std::string& message) const;

  std::string required_string(const std::string& key);
  std::string optional_string(const std::string& key, const std::string& default_value);
  int64_t required_int(const std::string& key, int64_t minimum);
  int64_t optional_int(const std::string& key, int64_t default_value, int64_t minimum);
  double optional_number(const std::string& key, double default_value, double minimum);
  bool optional_bool(const std::string& key, bool default_value);
  std::vector<std::string> optional_string_list(const std::string& key);
  std::vector<int64_t> required_int_list(const std::string& key, size_t min_length,
                                         int64_t minimum);
  ObjectReader required_object(const std::string& key);
  // An absent key reads as an empty object, so its own optional keys take their defaults.
  ObjectReader optional_object(const std::string& key);
  // The raw value, for sections read by other rules (the verbatim DeepSpeed config).
  const nlohmann::json& required_value(const std::string& key);

  template <typename Enum>
  Enum required_enum(const std::string& key, const EnumSpellings<Enum>& spellings) {
    return enum_from(key, required_string(key), spellings);
  }
  template <typename Enum>
  Enum optional_enum(const std::string& key, Enum default_value,
                     const EnumSpellings<Enum>& spellings) {
    note_known(key);
    if (!has(key)) return default_value;
    return enum_from(key, required_string(key), spellings);
  }

  // Marks a key as known without reading it. Optional keys count as known even when absent,
  // for the "known keys here" list and typo hints.
  void note_known(const std::string& key);

  // Call after reading every key this section knows.
  void reject_unknown_keys() const;
  // For sections we read tolerantly (the verbatim DeepSpeed config): the keys nobody read.
  std::vector<std::string> unknown_keys() const;

 private:
  const nlohmann::json& value_of(const std::string& key);
  [[noreturn]] void fail_expected(const std::string& key, const std::string& expected,
                                  const nlohmann::json& found) const;

  template <typename Enum>
  Enum enum_from(const std::string& key, const std::string& spelling,
                 const EnumSpellings<Enum>& spellings) const {
    std::string allowed;
    for (const auto& [value, name] : spellings) {
      if (spelling == name) return value;
      allowed += (allowed.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    }
    fail(key, "expected one of " + allowed + ", found \"" + spelling + "\"");
  }

  const nlohmann::json* object_;
  std::string file_;
  std::string pointer_;
  const KeyOrder* key_order_;
  std::set<std::string> read_keys_;
};

// The spelling of an enum value, for messages and results files.
template <typename Enum>
const char* spelling_of(Enum value, const EnumSpellings<Enum>& spellings) {
  for (const auto& [candidate, name] : spellings) {
    if (candidate == value) return name;
  }
  return "?";
}

}  // namespace trainrepro
