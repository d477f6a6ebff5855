#include "harness/report/junit_reporter.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "harness/files/atomic_write.h"

namespace trainrepro {
namespace {

// How many bytes of `text` from `at` form one UTF-8 character that XML 1.0 allows (U+FFFE and
// U+FFFF are not XML characters); 0 when they do not. The file is declared UTF-8, so a byte that
// is not (a Linux file name is bytes) would make the whole report unreadable to a CI server.
size_t xml_character_length(const std::string& text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
  if (lead < 0xc2 || lead > 0xf4 || at + length > text.size()) return 0;
  uint32_t code_point = lead & (0x7f >> length);
  for (size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[at + i]);
    if ((byte & 0xc0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte & 0x3f);
  }
  const uint32_t smallest = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  if (code_point < smallest || code_point > 0x10ffff ||
      (code_point >= 0xd800 && code_point <= 0xdfff) || code_point == 0xfffe ||
      code_point == 0xffff) {
    return 0;
  }
  return length;
}

}  // namespace

// Text as XML 1.0 allows it in attributes and elements: the five markup characters escaped,
// and control characters and bytes that are not UTF-8 (not allowed at all, even escaped)
// shown as \xNN.
std::string xml_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default: {
        const size_t length = byte < 0x80 ? 1 : xml_character_length(text, i);
        if (byte < 0x20 || byte == 0x7f || length == 0) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\x%02x", byte);
          out += escape;
        } else {
          out.append(text, i, length);
          i += length - 1;
        }
      }
    }
  }
  return out;
}

// Element text keeps its line breaks readable.
std::string xml_text(const std::string& text) {
  std::string escaped = xml_escaped(text);
  std::string out;
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped.compare(i, 5, "&#10;") == 0) {
      out += '\n';
      i += 4;
    } else {
      out += escaped[i];
    }
  }
  return out;
}

namespace {

// The schema's time: digits and at most three decimals, no exponent.
std::string junit_time(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", seconds > 0 ? seconds : 0.0);
  return text;
}

std::string folder_of(const ScenarioResult& result) {
  const std::string folder = std::filesystem::path(result.file).parent_path().string();
  return folder.empty() ? "." : folder;
}

std::string classname_of(const std::string& folder) {
  std::string name = folder;
  for (char& c : name) c = c == '/' ? '.' : c;
  return name;
}

std::string case_name(const ScenarioResult& result) {
  return result.name.empty() ? std::filesystem::path(result.file).filename().string()
                             : result.name;
}

// Expected, found and the diagnosis, one per line: the failure's text.
std::string verdict_text(const Verdict& verdict) {
  std::string text = "outcome: " + std::string(outcome_name(verdict.outcome));
  if (!verdict.expected.empty()) text += "\nexpected: " + verdict.expected;
  if (!verdict.found.empty()) text += "\nfound: " + verdict.found;
  if (!verdict.diagnosis.empty()) text += "\ndiagnosis: " + verdict.diagnosis;
  return text;
}

// A failure's message attribute: its first line, short enough for a CI summary.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 300) line = line.substr(0, 297) + "...";
  return line;
}

void write_case(std::ostringstream& xml, const ScenarioResult& result,
                const std::string& classname) {
  const Verdict& verdict = result.verdict;
  xml << "    <testcase name=\"" << xml_escaped(case_name(result)) << "\" classname=\""
      << xml_escaped(classname) << "\" time=\"" << junit_time(result.seconds) << "\"";
  const std::string text = verdict_text(verdict);
  const std::string message = first_line(
      verdict.diagnosis.empty() ? verdict.found : verdict.diagnosis);
  switch (verdict.outcome) {
    case Outcome::passed:
    case Outcome::reproduced:
      xml << ">\n      <system-out>" << xml_text(text) << "</system-out>\n";
      break;
    case Outcome::skipped:
      xml << ">\n      <skipped message=\"" << xml_escaped(message) << "\"/>\n";
      break;
    case Outcome::failed:
    case Outcome::not_reproduced:
      xml << ">\n      <failure type=\"" << outcome_name(verdict.outcome) << "\" message=\""
          << xml_escaped(message) << "\">" << xml_text(text) << "</failure>\n";
      break;
    case Outcome::error:
      xml << ">\n      <error type=\"" << error_source_name(verdict.error_source)
          << "\" message=\"" << xml_escaped(message) << "\">" << xml_text(text) << "</error>\n";
      break;
  }
  xml << "    </testcase>\n";
}

void write_property(std::ostringstream& xml, const std::string& name, const std::string& value) {
  xml << "      <property name=\"" << xml_escaped(name) << "\" value=\"" << xml_escaped(value)
      << "\"/>\n";
}

}  // namespace

std::string junit_xml(const std::vector<ScenarioResult>& results, const RunProvenance& provenance,
                      double seconds) {
  std::map<std::string, std::vector<const ScenarioResult*>> by_folder;
  for (const ScenarioResult& result : results) by_folder[folder_of(result)].push_back(&result);

  int64_t failures = 0, errors = 0;
  for (const ScenarioResult& result : results) {
    const Outcome outcome = result.verdict.outcome;
    failures += outcome == Outcome::failed || outcome == Outcome::not_reproduced;
    errors += outcome == Outcome::error;
  }
  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"trainrepro\" tests=\"" << results.size() << "\" failures=\""
      << failures << "\" errors=\"" << errors << "\" time=\"" << junit_time(seconds) << "\">\n";
  for (const auto& [folder, members] : by_folder) {
    int64_t suite_failures = 0, suite_errors = 0, suite_skipped = 0;
    double suite_seconds = 0.0;
    for (const ScenarioResult* result : members) {
      const Outcome outcome = result->verdict.outcome;
      suite_failures += outcome == Outcome::failed || outcome == Outcome::not_reproduced;
      suite_errors += outcome == Outcome::error;
      suite_skipped += outcome == Outcome::skipped;
      suite_seconds += result->seconds;
    }
    xml << "  <testsuite name=\"" << xml_escaped(folder) << "\" tests=\"" << members.size()
        << "\" failures=\"" << suite_failures << "\" errors=\"" << suite_errors
        << "\" skipped=\"" << suite_skipped << "\" time=\"" << junit_time(suite_seconds)
        << "\" timestamp=\"" << xml_escaped(provenance.started_at) << "\" hostname=\""
        << xml_escaped(provenance.host) << "\">\n";
    xml << "    <properties>\n";
    write_property(xml, "git_commit", provenance.git_commit);
    write_property(xml, "command_line", provenance.command_line);
    write_property(xml, "trainrepro_version", provenance.trainrepro_version);
    write_property(xml, "torch_version", provenance.torch_version);
    write_property(xml, "cuda_version", provenance.cuda_version);
    // The schema has no properties on a test case: each scenario's outcome, DeepSpeed release
    // and diagnosis are suite properties named after it.
    for (const ScenarioResult* result : members) {
      const std::string name = case_name(*result);
      write_property(xml, name + ".outcome", outcome_name(result->verdict.outcome));
      if (!result->deepspeed_version.empty()) {
        write_property(xml, name + ".deepspeed_version", result->deepspeed_version);
      }
      if (result->engine != kReferenceEngine) {
        write_property(xml, name + ".engine", result->engine);
        if (!result->release_expectation.empty()) {
          write_property(xml, name + ".release_expectation", result->release_expectation);
        }
      }
      if (!result->verdict.diagnosis.empty()) {
        write_property(xml, name + ".diagnosis", result->verdict.diagnosis);
      }
    }
    xml << "    </properties>\n";
    const std::string classname = classname_of(folder);
    for (const ScenarioResult* result : members) write_case(xml, *result, classname);
    xml << "  </testsuite>\n";
  }
  xml << "</testsuites>\n";
  return xml.str();
}

void JunitReporter::report_summary(const std::vector<ScenarioResult>& results, double seconds) {
  write_file_atomically(file_, junit_xml(results, provenance_, seconds));
}

}  // namespace trainrepro
