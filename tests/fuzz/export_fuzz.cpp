// libFuzzer target: `trainrepro export --python` keeps whatever a scenario holds as data. An input
// starting with '{' is a whole scenario file; any other input is text put into every free-text
// field of a fixed exportable scenario (description, a tag, the reference, a DeepSpeed config key
// and value) and used as the scenario's file name. When the export succeeds, the script must be
// the frame (trainrepro's own text, built without the scenario) byte for byte, with only string
// literals where the data goes, each read here by a decoder stricter than Python's tokenizer;
// read back, they must be the scenario's JSON exactly. So the script's syntax tree is the
// template's, with one string constant (tests/cli/check_export_security.py and
// tests/fuzz/export_property_test.py check the tree itself with Python's ast).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/cli/repro_script.h"
#include "harness/json/scenario_error.h"
#include "harness/scenario/json_document.h"
#include "harness/scenario/load_scenario.h"

using namespace trainrepro;

namespace {

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "export_fuzz: %s\n%s\n", what.c_str(), detail.substr(0, 4000).c_str());
  std::abort();
}

// scenarios/accumulation/gas-missing.json, shortened: exportable as it is.
const char kBaseScenario[] = R"({
  "name": "gas-missing",
  "description": "only train_micro_batch_size_per_gpu is given",
  "tags": ["reproduction"],
  "model": {"name": "mlp", "options": {"dims": [16, 32, 4], "activation": "tanh"}, "seed": 11},
  "data": {"name": "classification", "options": {"features": 16, "classes": 4}, "seed": 7},
  "deepspeed": {"train_micro_batch_size_per_gpu": 8,
                "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}},
  "golden": {"train_batch_size": 32, "steps": 3},
  "expect": {"outcome": "diagnosis", "diagnosis": "no_accumulation"}
})";

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xc0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xe0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
}

// The data's lines, each `    '…'`: one single-quoted literal of printable ASCII whose only
// escapes are \\ \' \n \t \r \xNN \uNNNN \UNNNNNNNN and which ends at the line's last
// character. Python reads such a literal as one string token with exactly the value decoded
// here, and adjacent ones inside the frame's parentheses as one string. Anything else is a
// finding.
std::string read_literal_lines(const std::string& region) {
  if (region.empty()) finding("no data literal", region);
  std::string value;
  size_t begin = 0;
  while (begin <= region.size()) {
    size_t end = region.find('\n', begin);
    if (end == std::string::npos) end = region.size();
    const std::string line = region.substr(begin, end - begin);
    if (line.size() < 6 || line.compare(0, 5, "    '") != 0 || line.back() != '\'') {
      finding("a data line is not one indented '…' literal", line);
    }
    for (size_t i = 5; i + 1 < line.size(); ++i) {
      const char c = line[i];
      if (c == '\'') finding("a quote ends a data literal early", line);
      if (c < 0x20 || c > 0x7e)
        finding("a data line holds a byte that is not printable ASCII", line);
      if (c != '\\') {
        value += c;
        continue;
      }
      const char kind = i + 2 < line.size() ? line[i + 1] : '\0';
      if (kind == '\\' || kind == '\'' || kind == 'n' || kind == 't' || kind == 'r') {
        value += kind == 'n' ? '\n' : kind == 't' ? '\t' : kind == 'r' ? '\r' : kind;
        ++i;
        continue;
      }
      const size_t digits = kind == 'x' ? 2 : kind == 'u' ? 4 : kind == 'U' ? 8 : 0;
      if (digits == 0 || i + 2 + digits >= line.size()) {
        finding("a backslash that is not \\\\, \\', \\n, \\t, \\r, \\x, \\u or \\U", line);
      }
      const std::string hex = line.substr(i + 2, digits);
      for (char h : hex) {
        if (!is_hex(h)) finding("an escape without its hex digits", line);
      }
      const uint32_t code_point = static_cast<uint32_t>(std::stoul(hex, nullptr, 16));
      if (code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff)) {
        finding("an escape of a surrogate or beyond U+10FFFF", line);
      }
      append_utf8(value, code_point);
      i += 1 + digits;
    }
    begin = end + 1;
  }
  return value;
}

// Exports as `trainrepro export` does, then checks the script. Returns quietly on a refusal.
void check_export(const nlohmann::json& raw, const std::string& source_file) {
  Scenario scenario;
  try {
    scenario = load_scenario_document(raw, source_file);
  } catch (const ScenarioError&) {
    return;
  }
  if (not_exportable(scenario, raw)) return;
  const nlohmann::json data = exported_data(scenario, raw, source_file);
  const std::string script = repro_script(data);

  static const std::string frame = repro_script_frame();
  static const size_t at = frame.find(kExportedDataPlaceholder);
  static const std::string head = frame.substr(0, at);
  static const std::string tail = frame.substr(at + std::string(kExportedDataPlaceholder).size());
  if (head.size() < 23 || head.compare(head.size() - 23, 23, "EXPORTED = json.loads(\n") != 0 ||
      tail.compare(0, 2, "\n)") != 0) {
    finding("the frame does not hold its data inside `EXPORTED = json.loads(` … `)`", head);
  }
  if (script.size() < head.size() + tail.size() || script.compare(0, head.size(), head) != 0 ||
      script.compare(script.size() - tail.size(), tail.size(), tail) != 0) {
    finding("the script's text outside the data differs from the frame", script);
  }
  const std::string decoded =
      read_literal_lines(script.substr(head.size(), script.size() - head.size() - tail.size()));
  const nlohmann::json read_back = nlohmann::json::parse(decoded, nullptr, false);
  if (read_back.is_discarded() || read_back != data || read_back.at("scenario") != raw) {
    finding("the data literals do not read back as the scenario", decoded);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!text.empty() && text[0] == '{') {
    nlohmann::json raw;
    try {
      raw = parse_json_text(text, "fuzz.json");
    } catch (const ScenarioError&) {
      return 0;
    }
    check_export(raw, "fuzz.json");
    return 0;
  }
  // The text in every free-text field; the loader refuses text that is not UTF-8 (the JSON
  // parser does), so such text goes only into the file name, which is bytes on Linux.
  nlohmann::json raw = nlohmann::json::parse(kBaseScenario);
  try {
    (void)nlohmann::json(text).dump();
    raw["description"] = text;
    raw["tags"].push_back(text);
    raw["reference"] = {
        {"url", "https://" + text}, {"project", "deepspeed"}, {"affected", text}, {"fixed", text}};
    raw["deepspeed"][text] = text;
  } catch (const nlohmann::json::type_error&) {
  }
  check_export(raw, text);
  return 0;
}
