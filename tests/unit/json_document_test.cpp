// Reading JSON text strictly: syntax errors located by line and column, repeated keys refused
// with the JSON pointer of the repeat (arrays included).
#include <gtest/gtest.h>

#include "harness/scenario/json_document.h"
#include "harness/scenario/scenario_error.h"

namespace trainrepro {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

TEST(JsonDocument, TrailingCommaIsLocatedByLineAndColumn) {
  EXPECT_EQ(error_of("{\n  \"a\": 1,\n}"),
            "f.json:3:1: invalid JSON: syntax error while parsing object key - unexpected '}'; "
            "expected string literal");
}

TEST(JsonDocument, EmptyFileIsAnError) {
  EXPECT_EQ(error_of("").rfind("f.json:1:1: invalid JSON:", 0), 0u) << error_of("");
}

TEST(JsonDocument, RepeatedKeyInsideAnArrayElementIsLocated) {
  EXPECT_EQ(error_of(R"({"a": [1, {"b": 1}, {"c": 1, "c": 2}]})"),
            "f.json:/a/2/c: key \"c\" appears twice in the same object; JSON keeps only the last "
            "one, so remove one of them");
}

TEST(JsonDocument, SameKeyInSiblingObjectsIsFine) {
  EXPECT_EQ(error_of(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})"), "");
}

TEST(JsonDocument, KeysWithSlashAreEscapedInPointers) {
  EXPECT_EQ(error_of(R"({"a/b": {"k": 1, "k": 1}})").rfind("f.json:/a~1b/k: key", 0), 0u);
}

}  // namespace
}  // namespace trainrepro
