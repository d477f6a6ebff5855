// Reading JSON text strictly: syntax errors located by line and column, repeated keys refused
// with the JSON pointer of the repeat (arrays included).
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/scenario/json_document.h"
#include "harness/json/scenario_error.h"

namespace trainrepro {
namespace {

std::string json_parse_error_of(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "";
}

// nlohmann::json sorts keys; the order the file wrote them is kept beside it, for both
// dialects, and a document can be written back in it.
TEST(JsonDocument, KeyOrderIsTheFilesInBothDialects) {
  const std::string text = R"({"zeta": 1, "alpha": {"y": [{"b": 1, "a": 2}], "x": 2}, "mid": 3})";
  for (const JsonDialect dialect : {JsonDialect::strict, JsonDialect::deepspeed_config}) {
    KeyOrder order;
    const nlohmann::json value = parse_json_text(text, "f.json", dialect, &order);
    EXPECT_EQ(order[""], (std::vector<std::string>{"zeta", "alpha", "mid"}));
    EXPECT_EQ(order["/alpha"], (std::vector<std::string>{"y", "x"}));
    EXPECT_EQ(order["/alpha/y/0"], (std::vector<std::string>{"b", "a"}));
    EXPECT_EQ(in_file_order(value, order).dump(), nlohmann::ordered_json::parse(text).dump());
  }
  // hjson without root braces, retried as members: the order is the members'.
  KeyOrder order;
  parse_json_text("b: 1\na: 2\n", "f.json", JsonDialect::deepspeed_config, &order);
  EXPECT_EQ(order[""], (std::vector<std::string>{"b", "a"}));
}

TEST(JsonDocument, TrailingCommaIsLocatedByLineAndColumn) {
  EXPECT_EQ(json_parse_error_of("{\n  \"a\": 1,\n}"),
            "f.json:3:1: invalid JSON: syntax error while parsing object key - unexpected '}'; "
            "expected string literal");
}

TEST(JsonDocument, EmptyFileIsAnError) {
  EXPECT_EQ(json_parse_error_of("").rfind("f.json:1:1: invalid JSON:", 0), 0u) << json_parse_error_of("");
}

TEST(JsonDocument, RepeatedKeyInsideAnArrayElementIsLocated) {
  EXPECT_EQ(json_parse_error_of(R"({"a": [1, {"b": 1}, {"c": 1, "c": 2}]})"),
            "f.json:/a/2/c: key \"c\" appears twice in the same object; JSON keeps only the last "
            "one, so remove one of them");
}

TEST(JsonDocument, SameKeyInSiblingObjectsIsFine) {
  EXPECT_EQ(json_parse_error_of(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})"), "");
}

TEST(JsonDocument, KeysWithSlashAreEscapedInPointers) {
  EXPECT_EQ(json_parse_error_of(R"({"a/b": {"k": 1, "k": 1}})").rfind("f.json:/a~1b/k: key", 0), 0u);
}

// 100,000 nested arrays in 200 KB once cost gigabytes (one pointer string per level); now the
// first level past the limit is refused, in memory that does not grow with the depth.
TEST(JsonDocument, DeepNestingIsRefusedAtTheLimit) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const std::string error = json_parse_error_of(deep);
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(error, "f.json:/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/"
                   "0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0: nested more than 64 "
                   "levels deep; no scenario or DeepSpeed config needs that many");
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);  // KiB: well under 64 MiB
  EXPECT_EQ(json_parse_error_of(std::string(64, '[') + std::string(64, ']')), "");
}

TEST(JsonDocument, NumberBeyondDoubleIsBadInputWithItsPosition) {
  EXPECT_EQ(json_parse_error_of("{\n  \"lr\": 1e400\n}"),
            "f.json:2:9: invalid JSON: the number 1e400 is out of range (beyond a 64-bit float)");
}

// An escape byte in a file name or value once reached the terminal raw.
TEST(JsonDocument, ControlBytesInMessagesAreEscaped) {
  try {
    parse_json_text(R"({"a": 1, "a": 2})", std::string("evil\x1b[2J.json"));
    FAIL() << "expected an error";
  } catch (const ScenarioError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("evil\\x1b[2J.json:/a: key", 0), 0u) << error.what();
  }
}

class JsonFile : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = std::filesystem::temp_directory_path() /
              ("trainrepro-json-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }
  std::string error_reading(const std::string& path) {
    try {
      read_json_file(path);
    } catch (const ScenarioError& error) {
      return error.what();
    }
    return "";
  }
  std::filesystem::path folder_;
};

// A FIFO once blocked the loader forever, and /dev/zero read until memory ran out.
TEST_F(JsonFile, OnlyRegularFilesOfBoundedSizeAreRead) {
  const std::string fifo = (folder_ / "scenario.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_reading(fifo),
            fifo + ": is not a regular file (a FIFO, socket or device); give a .json file");
  EXPECT_EQ(error_reading("/dev/zero"),
            "/dev/zero: is not a regular file (a FIFO, socket or device); give a .json file");
  const std::string big = (folder_ / "big.json").string();
  std::ofstream(big) << std::string((16 << 20) + 1, ' ');
  EXPECT_EQ(error_reading(big), big + ": is 16777217 bytes; a scenario or DeepSpeed config is at "
                                      "most 16777216 bytes");
}

}  // namespace
}  // namespace trainrepro
