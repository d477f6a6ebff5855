// SHA-256 against the FIPS 180-4 example vectors and Python's hashlib, for bytes and for files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/files/sha256.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, MatchesFips180ExampleVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),  // 448 bits
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjkl"
                       "mnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),  // 896 bits
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionLettersAMatchesFips180Vector) {
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Padding needs a second block from 56 bytes on: the lengths either side of 56 and of the
// 64-byte block are where a hand-written SHA-256 goes wrong. Digests from Python's hashlib.
TEST(Sha256, LengthsAroundThePaddingBoundariesMatchHashlib) {
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto& [length, digest] : cases) {
    EXPECT_EQ(sha256_hex(std::string(length, 'a')), digest) << length << " bytes";
  }
}

class Sha256File : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("trainrepro-sha256-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  fs::path directory_;
};

// One million bytes is not a multiple of the read chunk, so blocks straddle reads.
TEST_F(Sha256File, FileDigestEqualsTheDigestOfItsBytes) {
  const fs::path path = directory_ / "million-a.bin";
  std::ofstream(path, std::ios::binary) << std::string(1'000'000, 'a');
  EXPECT_EQ(sha256_of_file(path.string()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_F(Sha256File, MissingFileFailsWithThePathAndTheReason) {
  const std::string path = (directory_ / "absent.safetensors").string();
  try {
    sha256_of_file(path);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), path + ": cannot read: No such file or directory");
  }
}

TEST_F(Sha256File, FolderFailsAsUnreadable) {
  EXPECT_THROW(sha256_of_file(directory_.string()), std::runtime_error);
}

}  // namespace
}  // namespace trainrepro
