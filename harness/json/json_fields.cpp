#include "harness/json/json_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/json/scenario_error.h"

namespace trainrepro {
namespace {

const nlohmann::json& empty_object() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}

// 32.0 is refused: DeepSpeed would carry it as a float into its batch arithmetic.
bool is_integer(const nlohmann::json& value) { return value.is_number_integer(); }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string pointer_suffix(const std::string& key, size_t index) {
  return "/" + escape_pointer_token(key) + "/" + std::to_string(index);
}

}  // namespace

std::string describe_json_value(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string:
      return "the string " + value.dump();
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "the number " + value.dump();
    case nlohmann::json::value_t::array:
      return "an array of " + std::to_string(value.size()) + " values";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "an unsupported JSON value";
  }
}

std::string closest_spelling(const std::string& written,
                             const std::vector<std::string>& candidates) {
  std::string closest;
  size_t closest_distance = 4;  // further than this is a different word, not a typo
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(written, candidate);
    if (distance < closest_distance) {
      closest_distance = distance;
      closest = candidate;
    }
  }
  return closest;
}

std::string escape_pointer_token(const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

ObjectReader::ObjectReader(const nlohmann::json& value, std::string file, std::string pointer,
                           const KeyOrder* key_order)
    : object_(&value), file_(std::move(file)), pointer_(std::move(pointer)), key_order_(key_order) {
  if (!value.is_object()) {
    throw ScenarioError(file_, pointer_, "expected an object, found " + describe_json_value(value));
  }
}

std::string ObjectReader::pointer_to(const std::string& key) const {
  return key.empty() ? pointer_ : pointer_ + "/" + escape_pointer_token(key);
}

bool ObjectReader::has(const std::string& key) const { return object_->contains(key); }

std::vector<std::string> ObjectReader::keys_in_file_order() const {
  std::vector<std::string> keys;
  if (key_order_ != nullptr) {
    const auto written = key_order_->find(pointer_);
    if (written != key_order_->end()) {
      for (const std::string& key : written->second) {
        if (object_->contains(key)) keys.push_back(key);
      }
    }
  }
  // Keys the file did not write (filled in since, or no order known) follow, sorted.
  for (const auto& item : object_->items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) keys.push_back(item.key());
  }
  return keys;
}

void ObjectReader::note_known(const std::string& key) { read_keys_.insert(key); }

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  throw ScenarioError(file_, pointer_to(key), message);
}

void ObjectReader::fail_at(const std::string& relative_pointer, const std::string& message) const {
  throw ScenarioError(file_, pointer_ + relative_pointer, message);
}

void ObjectReader::fail_expected(const std::string& key, const std::string& expected,
                                 const nlohmann::json& found) const {
  fail(key, "expected " + expected + ", found " + describe_json_value(found));
}

const nlohmann::json& ObjectReader::value_of(const std::string& key) {
  read_keys_.insert(key);
  auto it = object_->find(key);
  if (it == object_->end()) fail(key, "required key is missing");
  return *it;
}

const nlohmann::json& ObjectReader::required_value(const std::string& key) { return value_of(key); }

std::string ObjectReader::required_string(const std::string& key) {
  const nlohmann::json& value = value_of(key);
  if (!value.is_string()) fail_expected(key, "a string", value);
  return value.get<std::string>();
}

std::string ObjectReader::optional_string(const std::string& key,
                                          const std::string& default_value) {
  note_known(key);
  return has(key) ? required_string(key) : default_value;
}

int64_t ObjectReader::required_int(const std::string& key, int64_t minimum) {
  const nlohmann::json& value = value_of(key);
  // Without a lower bound (a value whose range the caller checks with its own message) the
  // bound is not worth printing.
  const std::string expected = minimum == 1 ? "a positive integer"
                               : minimum == std::numeric_limits<int64_t>::min()
                                   ? "an integer"
                                   : "an integer >= " + std::to_string(minimum);
  if (!is_integer(value)) fail_expected(key, expected, value);
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail_expected(key, expected + " that fits in 64 bits", value);
  }
  const int64_t number = value.get<int64_t>();
  if (number < minimum) fail_expected(key, expected, value);
  return number;
}

int64_t ObjectReader::optional_int(const std::string& key, int64_t default_value, int64_t minimum) {
  note_known(key);
  return has(key) ? required_int(key, minimum) : default_value;
}

double ObjectReader::optional_number(const std::string& key, double default_value, double minimum) {
  note_known(key);
  if (!has(key)) return default_value;
  const nlohmann::json& value = value_of(key);
  // A minimum of -infinity is no bound at all (any number DeepSpeed's Python takes).
  const std::string expected =
      std::isinf(minimum) ? "a number" : "a number >= " + nlohmann::json(minimum).dump();
  if (!value.is_number()) fail_expected(key, expected, value);
  const double number = value.get<double>();
  if (!(number >= minimum)) fail_expected(key, expected, value);
  return number;
}

bool ObjectReader::optional_bool(const std::string& key, bool default_value) {
  note_known(key);
  if (!has(key)) return default_value;
  const nlohmann::json& value = value_of(key);
  if (!value.is_boolean()) fail_expected(key, "true or false", value);
  return value.get<bool>();
}

std::vector<std::string> ObjectReader::optional_string_list(const std::string& key) {
  note_known(key);
  if (!has(key)) return {};
  const nlohmann::json& value = value_of(key);
  if (!value.is_array()) fail_expected(key, "an array of strings", value);
  std::vector<std::string> strings;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) {
      fail_at(pointer_suffix(key, i), "expected a string, found " + describe_json_value(value[i]));
    }
    strings.push_back(value[i].get<std::string>());
  }
  return strings;
}

std::vector<int64_t> ObjectReader::required_int_list(const std::string& key, size_t min_length,
                                                     int64_t minimum) {
  const nlohmann::json& value = value_of(key);
  const std::string expected = "an array of at least " + std::to_string(min_length) +
                               " integers >= " + std::to_string(minimum);
  if (!value.is_array() || value.size() < min_length) fail_expected(key, expected, value);
  std::vector<int64_t> numbers;
  for (size_t i = 0; i < value.size(); ++i) {
    const nlohmann::json& element = value[i];
    if (!is_integer(element) || element.get<int64_t>() < minimum) {
      fail_at(pointer_suffix(key, i), "expected an integer >= " + std::to_string(minimum) +
                                          ", found " + describe_json_value(element));
    }
    numbers.push_back(element.get<int64_t>());
  }
  return numbers;
}

ObjectReader ObjectReader::required_object(const std::string& key) {
  return ObjectReader(value_of(key), file_, pointer_to(key), key_order_);
}

ObjectReader ObjectReader::optional_object(const std::string& key) {
  note_known(key);
  if (!has(key)) return ObjectReader(empty_object(), file_, pointer_to(key), key_order_);
  return required_object(key);
}

std::vector<std::string> ObjectReader::unknown_keys() const {
  std::vector<std::string> unknown;
  for (const auto& item : object_->items()) {
    if (read_keys_.count(item.key()) == 0) unknown.push_back(item.key());
  }
  return unknown;
}

void ObjectReader::reject_unknown_keys() const {
  for (const auto& item : object_->items()) {
    if (read_keys_.count(item.key()) != 0) continue;
    std::string known;
    for (const std::string& key : read_keys_) known += (known.empty() ? "\"" : ", \"") + key + "\"";
    const std::string closest =
        closest_spelling(item.key(), std::vector<std::string>(read_keys_.begin(), read_keys_.end()));
    std::string message = "unknown key \"" + item.key() + "\"";
    if (!closest.empty()) message += " (did you mean \"" + closest + "\"?)";
    message += known.empty() ? "; this object takes no keys" : "; known keys here: " + known;
    fail(item.key(), message);
  }
}

}  // namespace trainrepro
