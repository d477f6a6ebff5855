// A shared scenario's text on its way out: into an exported Python script (as a string literal
// Python reads back unchanged), onto the terminal (control characters escaped) and into JUnit
// XML (markup escaped, the file still UTF-8).
#include <gtest/gtest.h>

#include <sstream>

#include "harness/cli/python_literal.h"
#include "harness/json/printable.h"
#include "harness/report/console_reporter.h"
#include "harness/report/junit_reporter.h"

namespace trainrepro {
namespace {

// The expected literals follow Python 3's rules for a single-quoted, non-raw string literal
// (Doc/reference/lexical_analysis.rst, "Escape sequences").
TEST(PythonStringLiteral, EscapesQuotesAndBackslashesAndKeepsPrintableAscii) {
  EXPECT_EQ(python_string_literal(""), "''");
  EXPECT_EQ(python_string_literal("a \"b\" {c} #d"), "'a \"b\" {c} #d'");
  EXPECT_EQ(python_string_literal("'''"), "'\\'\\'\\''");
  EXPECT_EQ(python_string_literal("x\\"), "'x\\\\'");  // a backslash at the end
  EXPECT_EQ(python_string_literal("\\N{BULLET}"), "'\\\\N{BULLET}'");
}

TEST(PythonStringLiteral, WritesEveryOtherCharacterAsAnAsciiEscape) {
  EXPECT_EQ(python_string_literal(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(python_string_literal("\n\r\t\x1b\x7f\x0b"), "'\\n\\r\\t\\x1b\\x7f\\x0b'");
  EXPECT_EQ(python_string_literal("\xc3\xa9"), "'\\xe9'");                // U+00E9
  EXPECT_EQ(python_string_literal("\xe2\x80\xa8"), "'\\u2028'");          // line separator
  EXPECT_EQ(python_string_literal("\xe2\x80\xae"), "'\\u202e'");          // right-to-left override
  EXPECT_EQ(python_string_literal("\xef\xbb\xbf"), "'\\ufeff'");          // BOM
  EXPECT_EQ(python_string_literal("\xf0\x9f\x98\x80"), "'\\U0001f600'");  // astral
}

TEST(PythonStringLiteral, RefusesTextThatIsNotUtf8) {
  EXPECT_THROW(python_string_literal("\xff"), std::invalid_argument);
  EXPECT_THROW(python_string_literal("\xc3"), std::invalid_argument);              // cut short
  EXPECT_THROW(python_string_literal("\xc3("), std::invalid_argument);             // not continued
  EXPECT_THROW(python_string_literal("\xc0\xaf"), std::invalid_argument);          // overlong '/'
  EXPECT_THROW(python_string_literal("\xed\xa0\x80"), std::invalid_argument);      // surrogate
  EXPECT_THROW(python_string_literal("\xf4\x90\x80\x80"), std::invalid_argument);  // > U+10FFFF
}

TEST(Printable, EscapesControlCharactersC1IncludedAndKeepsLineBreaksWhenAsked) {
  EXPECT_EQ(printable("a\x1b[31mb\n"), "a\\x1b[31mb\\x0a");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m \xc3\xa9"),
            "\\u009b31m \xc3\xa9");  // CSI as UTF-8
  EXPECT_EQ(printable("one\ntwo\x07", LineBreaks::kept), "one\ntwo\\x07");
}

ScenarioResult hostile_result() {
  ScenarioResult result;
  result.name = "hostile";
  result.file = "scenarios/\xff\xfe/hostile.json";  // a file name that is not UTF-8
  result.verdict.outcome = Outcome::failed;
  result.verdict.expected = "pass";
  result.verdict.found = "</failure><script>x</script> \x1b]0;title\x07 \xef\xbf\xbe";
  result.reference = BugReference{"https://x/\x1b[2J", "deepspeed", "0.1\x1b[31m", "\xc2\x9b"};
  result.warnings = {"scenarios/hostile.json:/deepspeed/\x1b[8m: not a DeepSpeed setting"};
  return result;
}

TEST(ConsoleReporter, ShowsAScenarioTextsControlCharactersEscaped) {
  std::ostringstream out;
  ConsoleReporter(out).report_scenario(hostile_result());
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find('\x07'), std::string::npos);
  EXPECT_EQ(out.str().find("\xc2\x9b"), std::string::npos);
  EXPECT_NE(out.str().find("reported:  https://x/\\x1b[2J (deepspeed 0.1\\x1b[31m; fixed: "
                           "\\u009b)"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("warning: scenarios/hostile.json:/deepspeed/\\x1b[8m: not"),
            std::string::npos);
}

// Every byte of the XML is markup we wrote or UTF-8 text that XML 1.0 allows.
bool is_xml_utf8(const std::string& xml) {
  for (size_t i = 0; i < xml.size(); ++i) {
    const auto byte = static_cast<unsigned char>(xml[i]);
    if (byte < 0x80) {
      if (byte < 0x20 && byte != '\n' && byte != '\t' && byte != '\r') return false;
      continue;
    }
    const size_t length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    if (byte < 0xc2 || byte > 0xf4 || i + length > xml.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(xml[i + k]) & 0xc0) != 0x80) return false;
    }
    if (xml.compare(i, 3, "\xef\xbf\xbe") == 0 || xml.compare(i, 3, "\xef\xbf\xbf") == 0) {
      return false;
    }
    i += length - 1;
  }
  return true;
}

TEST(JunitXml, EscapesMarkupAndKeepsTheFileUtf8) {
  const std::string xml = junit_xml({hostile_result()}, RunProvenance{}, 1.0);
  EXPECT_TRUE(is_xml_utf8(xml)) << xml;
  EXPECT_EQ(xml.find("<script>"), std::string::npos);
  EXPECT_NE(xml.find("&lt;/failure&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_NE(xml.find("scenarios/\\xff\\xfe"), std::string::npos) << xml;
  EXPECT_NE(xml.find("\\xef\\xbf\\xbe"), std::string::npos);  // U+FFFE is no XML character
}

}  // namespace
}  // namespace trainrepro
