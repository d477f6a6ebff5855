// Goldens in the safetensors format: exact round trips of every supported dtype, the byte layout
// the specification asks for, and corrupt or truncated files that must fail in words, not crash.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/files/safetensors.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Names deliberately out of alphabetical order, so that "file order" cannot pass by accident.
NamedTensors every_dtype_sample() {
  const at::Tensor counting = at::arange(12, at::kDouble) * 0.5 - 3;  // exact in every float type
  return {
      {"step0/grad/layers.0.weight", counting.reshape({3, 4})},
      {"f32", counting.to(at::kFloat).reshape({2, 6})},
      {"f16", counting.to(at::kHalf)},
      {"bf16", counting.to(at::kBFloat16).reshape({2, 2, 3})},
      {"i64", at::tensor({int64_t{-9223372036854775807 - 1}, int64_t{0}, int64_t{1} << 62})},
      {"i32", at::arange(-3, 3, at::kInt).reshape({3, 2})},
      {"i16", at::tensor({-32768, 32767}, at::kShort)},
      {"i8", at::tensor({-128, 0, 127}, at::kChar)},
      {"u8", at::tensor({0, 128, 255}, at::kByte)},
      {"bool", at::arange(6) % 3 == 0},
      {"loss", at::scalar_tensor(2.75, at::kFloat)},      // 0-dim: shape []
      {"empty", at::empty({0}, at::kDouble)},             // data_offsets [x, x]
      {"empty_matrix", at::empty({2, 0, 3}, at::kHalf)},  // zero-sized, but not 1-d
      {"scalar_flag", at::scalar_tensor(true, at::kBool)},
  };
}

// A file with a hand-written header, to build exactly the corruption a test needs.
std::string raw_safetensors(const std::string& header, const std::string& buffer) {
  const uint64_t length = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &length, 8);
  return bytes + header + buffer;
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ =
        fs::temp_directory_path() / ("trainrepro-safetensors-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string write_bytes(const std::string& bytes, const std::string& name = "file.safetensors") {
    const std::string path = (directory_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  // The message of the error that reading `bytes` from a file raises, checked to start with the
  // file's path; "" (and a test failure) when reading does not fail.
  std::string read_error(const std::string& bytes) {
    const std::string path = write_bytes(bytes, "corrupt.safetensors");
    try {
      read_safetensors(path);
    } catch (const std::runtime_error& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
      return message.substr(path.size() + 2);
    }
    ADD_FAILURE() << "reading did not fail";
    return "";
  }

  fs::path directory_;
};

void expect_same_tensor(const at::Tensor& expected, const at::Tensor& actual,
                        const std::string& name) {
  SCOPED_TRACE(name);
  EXPECT_EQ(actual.scalar_type(), expected.scalar_type());
  EXPECT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(actual.device().is_cpu());
  EXPECT_TRUE(actual.is_contiguous());
  EXPECT_TRUE(at::equal(actual, expected.contiguous()));
}

TEST_F(Safetensors, RoundTripKeepsNamesOrderDtypesAndValues) {
  const NamedTensors sample = every_dtype_sample();
  const std::string path = (directory_ / "nested" / "sample.safetensors").string();
  write_safetensors(path, sample, {});
  const SafetensorsFile file = read_safetensors(path);

  std::vector<std::string> written_order;
  for (const auto& [name, tensor] : sample) written_order.push_back(name);
  EXPECT_EQ(file.names, written_order);
  ASSERT_EQ(file.tensors.size(), sample.size());
  for (const auto& [name, tensor] : sample) expect_same_tensor(tensor, file.tensors.at(name), name);
  EXPECT_TRUE(file.metadata.empty());
}

TEST_F(Safetensors, RoundTripKeepsMetadata) {
  const std::map<std::string, std::string> metadata = {
      {"format", "trainrepro-golden"},
      {"format_version", "1"},
      {"regenerate", "scripts/generate_goldens --scenario \"x\"\n"},  // quotes, newline
      {"note",
       "gr\xc3\xbc\xc3\x9f"
       "e"},  // UTF-8
      {"empty", ""},
  };
  const std::string path = (directory_ / "meta.safetensors").string();
  write_safetensors(path, {{"x", at::ones({2})}}, metadata);
  EXPECT_EQ(read_safetensors(path).metadata, metadata);
}

TEST_F(Safetensors, EmptyFileWithoutTensorsRoundTrips) {
  const std::string path = (directory_ / "nothing.safetensors").string();
  write_safetensors(path, {}, {{"k", "v"}});
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_TRUE(file.names.empty());
  EXPECT_TRUE(file.tensors.empty());
  EXPECT_EQ(file.metadata.at("k"), "v");
}

TEST_F(Safetensors, NonContiguousTensorsAreWrittenAsTheirValues) {
  const at::Tensor matrix = at::arange(12, at::kFloat).reshape({3, 4});
  const NamedTensors views = {
      {"transposed", matrix.t()},
      {"every_other_column", matrix.slice(/*dim=*/1, /*start=*/0, /*end=*/4, /*step=*/2)},
      {"broadcast", at::scalar_tensor(7.0).expand({2, 3})},  // stride 0
  };
  const std::string path = (directory_ / "views.safetensors").string();
  write_safetensors(path, views, {});
  const SafetensorsFile file = read_safetensors(path);
  for (const auto& [name, tensor] : views) expect_same_tensor(tensor, file.tensors.at(name), name);
}

// The bytes the specification asks for: u64 little-endian header length, compact JSON with the
// tensors in the given order, space padding to a multiple of 8, raw little-endian data.
TEST_F(Safetensors, FileLayoutFollowsTheSpecification) {
  const std::string bytes = encode_safetensors(
      {{"b", at::tensor({1.0f, -2.0f})}, {"a", at::tensor({int16_t{258}}, at::kShort)}},
      {{"k", "v"}});
  const std::string header =
      R"({"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"I16","shape":[1],"data_offsets":[8,10]}})";
  const std::string padded_header = header + std::string((8 - header.size() % 8) % 8, ' ');
  const uint64_t length = padded_header.size();
  ASSERT_EQ(bytes.size(), 8 + length + 10);
  EXPECT_EQ(std::memcmp(bytes.data(), &length, 8), 0);
  EXPECT_EQ(bytes.substr(8, length), padded_header);
  EXPECT_EQ(bytes.substr(8 + length), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x02\x01", 10));
}

TEST_F(Safetensors, NamesComeInDataOffsetOrderNotHeaderOrder) {
  const std::string path =
      write_bytes(raw_safetensors(R"({"second":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                                  R"("first":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                                  "\x07\x09"));
  const SafetensorsFile file = read_safetensors(path);
  EXPECT_EQ(file.names, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(file.tensors.at("second").item<uint8_t>(), 9);
}

TEST_F(Safetensors, WriterRejectsWhatTheFormatCannotHold) {
  const at::Tensor x = at::ones({2});
  EXPECT_THROW(encode_safetensors({{"x", x}, {"y", x}, {"x", x}}), std::invalid_argument);
  EXPECT_THROW(encode_safetensors({{"__metadata__", x}}), std::invalid_argument);
  EXPECT_THROW(encode_safetensors({{"c", at::ones({2}, at::kComplexFloat)}}),
               std::invalid_argument);
  EXPECT_THROW(encode_safetensors({{"undefined", at::Tensor()}}), std::invalid_argument);
  EXPECT_THROW(encode_safetensors({{"bad\xff", x}}), std::invalid_argument);
  EXPECT_THROW(encode_safetensors({{"x", x}}, {{"k", "bad\xff"}}), std::invalid_argument);
}

TEST_F(Safetensors, RepeatedNameMessageNamesTheTensor) {
  try {
    encode_safetensors({{"w", at::ones({1})}, {"w", at::ones({1})}});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("\"w\""), std::string::npos) << error.what();
  }
}

TEST_F(Safetensors, MissingFileFailsWithThePathAndTheReason) {
  const std::string path = (directory_ / "absent.safetensors").string();
  try {
    read_safetensors(path);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), path + ": cannot read: No such file or directory");
  }
}

TEST_F(Safetensors, TruncatedHeaderSaysHowLongItShouldBe) {
  std::string bytes(100, ' ');
  const uint64_t claimed = 4096;
  std::memcpy(bytes.data(), &claimed, 8);
  EXPECT_EQ(read_error(bytes),
            "truncated: the header says 4096 bytes but the file has 92 after the 8-byte length");
  EXPECT_EQ(read_error("abc"), "truncated: 3 bytes, too short for the 8-byte header length");
}

// A scenario may name any file the user can read as its samples: the error about a file that is
// not safetensors must not show its first 8 bytes (here a token's), not even as a number.
TEST_F(Safetensors, AFileThatIsNotSafetensorsIsNotQuotedInTheError) {
  const std::string secret = "hf_SECRETtokenXXXXXXXXXXXXXXXXXXXXXXXX\n";
  uint64_t first_bytes = 0;
  std::memcpy(&first_bytes, secret.data(), 8);
  const std::string error = read_error(secret);
  EXPECT_NE(error.find("not safetensors"), std::string::npos) << error;
  EXPECT_EQ(error.find(std::to_string(first_bytes)), std::string::npos) << error;
  EXPECT_EQ(error.find("SECRE"), std::string::npos) << error;
}

TEST_F(Safetensors, OffsetsThatDoNotMatchTheShapeAreNamed) {
  EXPECT_EQ(read_error(raw_safetensors(R"({"step0/grad/layers.0.weight":{"dtype":"F64",)"
                                       R"("shape":[4,16],"data_offsets":[0,100]}})",
                                       std::string(100, '\0'))),
            "tensor \"step0/grad/layers.0.weight\": data_offsets [0, 100] do not match shape "
            "[4, 16] of F64 (512 bytes)");
}

TEST_F(Safetensors, CorruptHeadersFailInWords) {
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  const struct {
    const char* what;
    std::string bytes;
    std::string expected_fragment;
  } cases[] = {
      {"not JSON", raw_safetensors("{\"x\": ", ""), "header is not valid JSON: "},
      {"not an object", raw_safetensors("[1, 2]", ""), "header does not start with '{'"},
      {"trailing garbage", raw_safetensors("{} }", ""), "header is not valid JSON: "},
      {"absurd header length", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}      ", 16),
       "more than the 100000000 safetensors allows"},
      {"unsupported dtype",
       raw_safetensors(R"({"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "\x01"),
       "tensor \"x\": unsupported dtype \"F8_E4M3\""},
      {"outside the buffer",
       raw_safetensors(R"({"x":{)" + f32x2 + R"(,"data_offsets":[0,8]}})", std::string(4, '\0')),
       "tensor \"x\": data_offsets [0, 8]: offsets outside the data buffer of 4 bytes"},
      {"overlap",
       raw_safetensors(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"b":{)" + f32x2 +
                           R"(,"data_offsets":[4,12]}})",
                       std::string(12, '\0')),
       "tensor \"b\" (data_offsets [4, 12]) overlaps tensor \"a\""},
      {"gap",
       raw_safetensors(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"b":{)" + f32x2 +
                           R"(,"data_offsets":[12,20]}})",
                       std::string(20, '\0')),
       "tensor \"b\" (data_offsets [12, 20]) is not contiguous"},
      {"trailing bytes",
       raw_safetensors(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]}})", std::string(12, '\0')),
       "bytes [8, 12) at the end of the data buffer belong to no tensor"},
      {"end before begin",
       raw_safetensors(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", "1234"),
       "data_offsets [4, 0] end before they begin"},
      {"repeated tensor",
       raw_safetensors(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"a":{)" + f32x2 +
                           R"(,"data_offsets":[0,8]}})",
                       std::string(8, '\0')),
       "key \"a\" appears twice"},
      {"negative size",
       raw_safetensors(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", ""),
       "tensor \"a\": shape: expected non-negative integers, found [-1]"},
      {"fractional offset",
       raw_safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}})", "1"),
       "tensor \"a\": data_offsets: expected non-negative integers"},
      {"three offsets",
       raw_safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", "1"),
       "tensor \"a\": data_offsets: expected [begin, end], found [0,1,2]"},
      {"missing dtype", raw_safetensors(R"({"a":{"shape":[1],"data_offsets":[0,1]}})", "1"),
       "tensor \"a\": missing \"dtype\""},
      {"unknown key",
       raw_safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"sharding":1}})",
                       "1"),
       "tensor \"a\": unknown key \"sharding\""},
      {"tensor not an object", raw_safetensors(R"({"a":[1]})", ""),
       "tensor \"a\": expected an object with dtype, shape and data_offsets, found array"},
      {"overflowing shape",
       raw_safetensors(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],)"
                       R"("data_offsets":[0,0]}})",
                       ""),
       "tensor \"a\": shape [4294967296, 4294967296] is too large"},
      {"metadata value not a string", raw_safetensors(R"({"__metadata__":{"epoch":3}})", ""),
       "__metadata__ \"epoch\": expected a string, found number 3"},
      {"bool byte other than 0 or 1",
       raw_safetensors(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                       std::string("\x01\x00\x05", 3)),
       "tensor \"m\": BOOL element 2 is stored as byte 5, not 0 or 1"},
  };
  for (const auto& corrupt : cases) {
    SCOPED_TRACE(corrupt.what);
    const std::string message = read_error(corrupt.bytes);
    EXPECT_NE(message.find(corrupt.expected_fragment), std::string::npos) << message;
  }
}

// A golden cut short by a full disk or an interrupted copy: every prefix must fail cleanly.
TEST_F(Safetensors, TruncatedAtAnyByteThrowsRuntimeError) {
  const std::string bytes = encode_safetensors(every_dtype_sample(), {{"format_version", "1"}});
  for (size_t length = 0; length < bytes.size(); length += 7) {
    const std::string path = write_bytes(bytes.substr(0, length));
    EXPECT_THROW(read_safetensors(path), std::runtime_error) << "cut at byte " << length;
  }
}

// Flipped header bytes may still make a valid file (a letter of a name changes); what must never
// happen is a crash, an out-of-bounds read, or an exception of another type (c10::Error,
// nlohmann::json's) escaping. In memory rather than through files: the same parser, faster.
TEST_F(Safetensors, FlippedHeaderBytesThrowRuntimeErrorOrReadCleanly) {
  const std::string bytes = encode_safetensors(every_dtype_sample(), {{"format_version", "1"}});
  uint64_t header_length = 0;
  std::memcpy(&header_length, bytes.data(), 8);
  size_t failures = 0, reads = 0;
  for (size_t position = 0; position < 8 + header_length; ++position) {
    for (const unsigned char flip : {0x01, 0x10, 0x80, 0xff}) {
      std::string corrupt = bytes;
      corrupt[position] = static_cast<char>(corrupt[position] ^ flip);
      try {
        decode_safetensors(corrupt, "fuzzed");
        ++reads;
      } catch (const std::runtime_error&) {
        ++failures;
      } catch (const std::exception& error) {
        ADD_FAILURE() << "byte " << position << " ^ " << int{flip} << ": " << error.what();
      }
    }
  }
  EXPECT_GT(failures, 0u);
  EXPECT_GT(reads, 0u);
}

}  // namespace
}  // namespace trainrepro
