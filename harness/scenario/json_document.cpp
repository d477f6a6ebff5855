#include "harness/scenario/json_document.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "harness/json/hjson_reader.h"
#include "harness/json/json_fields.h"
#include "harness/json/scenario_error.h"

namespace trainrepro {
namespace {

// Real scenarios and DeepSpeed configs nest a handful of levels and weigh a few KiB. The limits
// keep a hostile file from costing more than its size: without them, 100,000 nested arrays in
// 200 KB cost gigabytes (a pointer string per open level).
constexpr size_t kMaxNestingDepth = 64;
constexpr std::streamsize kMaxFileBytes = 16 << 20;

// nlohmann::json keeps the last of two equal keys without a word. A scenario where
// "gradient_accumulation_steps" appears twice is almost certainly a paste error, so we track
// the keys of every open object while parsing and stop at the first repeat.
class DuplicateKeyGuard {
 public:
  DuplicateKeyGuard(std::string display_path, KeyOrder* key_order)
      : display_path_(std::move(display_path)), key_order_(key_order) {}

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
        open_container(/*is_array=*/false);
        break;
      case Event::array_start:
        open_container(/*is_array=*/true);
        break;
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        break;
      case Event::key: {
        Frame& frame = frames_.back();
        const std::string key = parsed.get<std::string>();
        if (!frame.keys.insert(key).second) {
          throw ScenarioError(display_path_, frame.pointer + "/" + escape_pointer_token(key),
                              "key \"" + key +
                                  "\" appears twice in the same object; "
                                  "JSON keeps only the last one, so remove one of them");
        }
        frame.current_key = key;
        if (key_order_ != nullptr) (*key_order_)[frame.pointer].push_back(key);
        break;
      }
      case Event::value:
        if (!frames_.empty() && frames_.back().is_array) ++frames_.back().next_index;
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_array = false;
    std::string pointer;
    std::set<std::string> keys;
    std::string current_key;
    size_t next_index = 0;
  };

  void open_container(bool is_array) {
    if (frames_.size() >= kMaxNestingDepth) {
      throw ScenarioError(display_path_, frames_.back().pointer,
                          "nested more than " + std::to_string(kMaxNestingDepth) +
                              " levels deep; no scenario or DeepSpeed config needs that many");
    }
    Frame frame;
    frame.is_array = is_array;
    if (!frames_.empty()) {
      Frame& parent = frames_.back();
      frame.pointer = parent.pointer + "/" +
                      (parent.is_array ? std::to_string(parent.next_index++)
                                       : escape_pointer_token(parent.current_key));
    }
    frames_.push_back(std::move(frame));
  }

  std::string display_path_;
  KeyOrder* key_order_;  // null: not wanted
  std::vector<Frame> frames_;
};

// "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error …" → the part
// after the position, which says what the parser expected.
std::string parser_explanation(const std::string& what) {
  const size_t colon = what.find(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& raw_text, const std::string& display_path,
                               JsonDialect dialect, KeyOrder* key_order) {
  if (dialect == JsonDialect::deepspeed_config) {
    return parse_hjson(raw_text, display_path, kMaxNestingDepth, key_order);
  }
  const std::string& text = raw_text;
  DuplicateKeyGuard guard(display_path, key_order);
  try {
    return nlohmann::json::parse(text, std::ref(guard), /*allow_exceptions=*/true,
                                 /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& error) {
    // byte is 1-based and points just past the offending character.
    const size_t offset = error.byte == 0 ? 0 : error.byte - 1;
    throw ScenarioError(display_path, line_and_column(text, offset),
                        "invalid JSON: " + parser_explanation(error.what()));
  } catch (const nlohmann::json::out_of_range& error) {
    // "number overflow parsing '1e400'": no position from the parser, so find the number.
    const std::string what = error.what();
    const size_t open = what.find('\''), close = what.rfind('\'');
    const std::string number =
        open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "";
    const size_t at = number.empty() ? std::string::npos : text.find(number);
    throw ScenarioError(display_path, at == std::string::npos ? "" : line_and_column(text, at),
                        "invalid JSON: the number " + number +
                            " is out of range (beyond a 64-bit float)");
  }
}

nlohmann::json read_json_file(const std::string& display_path, JsonDialect dialect,
                              KeyOrder* key_order) {
  // Regular files only: a FIFO would block forever and /dev/zero never ends.
  struct stat status {};
  if (::stat(display_path.c_str(), &status) != 0) {
    throw ScenarioError(display_path, "",
                        std::string("cannot open the file: ") + std::strerror(errno));
  }
  if (!S_ISREG(status.st_mode)) {
    throw ScenarioError(display_path, "",
                        S_ISDIR(status.st_mode)
                            ? "is a folder; give a .json file, or use it with `trainrepro run`"
                            : "is not a regular file (a FIFO, socket or device); give a .json file");
  }
  if (status.st_size > kMaxFileBytes) {
    throw ScenarioError(display_path, "",
                        "is " + std::to_string(status.st_size) + " bytes; a scenario or DeepSpeed "
                        "config is at most " + std::to_string(kMaxFileBytes) + " bytes");
  }
  std::ifstream in(display_path, std::ios::binary);
  if (!in) {
    throw ScenarioError(display_path, "",
                        std::string("cannot open the file: ") + std::strerror(errno));
  }
  std::string text(static_cast<size_t>(status.st_size), '\0');
  in.read(text.data(), status.st_size);
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) {
    throw ScenarioError(display_path, "",
                        std::string("cannot read the file: ") + std::strerror(errno));
  }
  return parse_json_text(text, display_path, dialect, key_order);
}

nlohmann::ordered_json in_file_order(const nlohmann::json& value, const KeyOrder& key_order,
                                     const std::string& pointer) {
  if (value.is_array()) {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    for (size_t i = 0; i < value.size(); ++i) {
      array.push_back(in_file_order(value[i], key_order, pointer + "/" + std::to_string(i)));
    }
    return array;
  }
  if (!value.is_object()) return nlohmann::ordered_json(value);  // a scalar
  const ObjectReader reader(value, "", pointer, &key_order);
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const std::string& key : reader.keys_in_file_order()) {
    object[key] = in_file_order(value.at(key), key_order, pointer + "/" + escape_pointer_token(key));
  }
  return object;
}

}  // namespace trainrepro
