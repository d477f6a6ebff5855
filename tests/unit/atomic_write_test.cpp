// Results and goldens are written whole or not at all.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/files/atomic_write.h"

namespace trainrepro {
namespace {

namespace fs = std::filesystem;

class AtomicWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("trainrepro-atomic-" + std::to_string(::getpid()));
    fs::remove_all(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  fs::path directory_;
};

TEST_F(AtomicWrite, CreatesFoldersAndLeavesNoTemporaryFile) {
  const fs::path target = directory_ / "nested" / "result.json";
  write_file_atomically(target, "{\"ok\": true}\n");
  EXPECT_EQ(read(target), "{\"ok\": true}\n");
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(target.parent_path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

// The old temporary name was predictable (<name>.tmp.<pid>): a link planted there redirected the
// write outside the folder. Now the temporary is created exclusively under a random name, and a
// link at the target itself is replaced, never followed.
TEST_F(AtomicWrite, NeverWritesThroughAPlantedSymlink) {
  fs::create_directories(directory_ / "results");
  const fs::path outside = directory_ / "outside.txt";
  write_file_atomically(outside, "precious");
  const fs::path target = directory_ / "results" / "result.json";
  fs::create_symlink(outside, target.string() + ".tmp." + std::to_string(::getpid()));
  fs::create_symlink(outside, target);
  write_file_atomically(target, "new result");
  EXPECT_EQ(read(outside), "precious");
  EXPECT_FALSE(fs::is_symlink(target));
  EXPECT_EQ(read(target), "new result");
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST_F(AtomicWrite, ReplacesExistingContentWhole) {
  const fs::path target = directory_ / "result.json";
  write_file_atomically(target, std::string(100000, 'a'));
  write_file_atomically(target, "short");
  EXPECT_EQ(read(target), "short");
}

TEST_F(AtomicWrite, UnwritableFolderFailsWithThePath) {
  fs::create_directories(directory_);
  const fs::path blocker = directory_ / "file";
  write_file_atomically(blocker, "x");
  try {
    write_file_atomically(blocker / "below.json", "y");  // a file cannot hold a folder
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()).rfind((blocker / "below.json").string() + ":", 0), 0u)
        << error.what();
  }
  EXPECT_EQ(read(blocker), "x");
}

}  // namespace
}  // namespace trainrepro
