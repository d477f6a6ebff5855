// The hjson reader for DeepSpeed config files: what pasted configs do (commas left out, no root
// braces, placeholders), the integers hjson-py makes of whole floats, and located errors. The
// corners of the syntax are compared with hjson-py itself in tests/json/hjson_cross_check.py.
#include <gtest/gtest.h>

#include <string>

#include "harness/json/hjson_reader.h"
#include "harness/json/scenario_error.h"

namespace trainrepro {
namespace {

nlohmann::json read(const std::string& text) { return parse_hjson(text, "ds.json", 64); }

std::string hjson_error_of(const std::string& text) {
  try {
    read(text);
  } catch (const ScenarioError& error) {
    return error.what();
  }
  return "(read without an error)";
}

TEST(HjsonReader, ReadsWhatPastedConfigsDo) {
  const nlohmann::json missing_comma = read("{\n \"train_batch_size\": 8\n \"fp16\": {\"enabled\": true}\n}");
  EXPECT_EQ(missing_comma["train_batch_size"], 8);
  EXPECT_EQ(missing_comma["fp16"]["enabled"], true);
  const nlohmann::json fragment = read("// a fragment\n\"optimizer\": {type: \"Adam\"}\nzero: 2\n");
  EXPECT_EQ(fragment["optimizer"]["type"], "Adam");
  EXPECT_EQ(fragment["zero"], 2);
  // A template placeholder is a quoteless string to the end of its line, comma included.
  EXPECT_EQ(read("{\n \"train_batch_size\": GBSIZE,\n}")["train_batch_size"], "GBSIZE,");
}

TEST(HjsonReader, WholeFloatsBelowTenBillionAreIntegersAsInHjsonPy) {
  const nlohmann::json numbers = read("{a: 5e8, b: 1.0, c: 2.5, d: 2e10, e: 007\n}");
  EXPECT_TRUE(numbers["a"].is_number_integer());
  EXPECT_EQ(numbers["a"], 500000000);
  EXPECT_TRUE(numbers["b"].is_number_integer());
  EXPECT_TRUE(numbers["c"].is_number_float());
  EXPECT_TRUE(numbers["d"].is_number_float());
  EXPECT_EQ(numbers["e"], "007");  // not a number: a quoteless string to the line's end
  // A quoteless value takes the rest of its line, a closing brace included: "{type: Adam}"
  // leaves the object open (hjson-py says so too).
  EXPECT_NE(hjson_error_of("{type: Adam}").find("a closing '}' is missing"), std::string::npos);
}

TEST(HjsonReader, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(hjson_error_of("{\n  \"a\": 1,\n  \"b\": \"open\n}"),
            "ds.json:3:13: invalid hjson (DeepSpeed reads config files with hjson): a control "
            "character inside a string (write it as an escape)");
  EXPECT_NE(hjson_error_of("{\"a\": 1, \"a\": 2}").find("ds.json:/a: key \"a\" appears twice"),
            std::string::npos);
  EXPECT_NE(hjson_error_of("{\"a\": 1e400}").find("1:7: invalid hjson"), std::string::npos);
  EXPECT_NE(hjson_error_of(std::string(100, '[')).find("nested more than 64 levels"), std::string::npos);
}

}  // namespace
}  // namespace trainrepro
