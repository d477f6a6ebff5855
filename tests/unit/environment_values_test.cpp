#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "harness/files/environment_values.h"
#include "harness/files/install_locations.h"
#include "harness/json/printable.h"

namespace trainrepro {
namespace {

// Sets one variable for the test's length and restores what was there.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedVariable() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(EnvironmentSwitch, ReadsOnAndOffSpellingsAndRefusesOthers) {
  for (const char* on : {"1", "true", "TRUE", "yes", "Yes"}) {
    ScopedVariable offline("TRAINREPRO_OFFLINE", on);
    EXPECT_TRUE(offline_requested()) << on;
  }
  for (const char* off : {"", "0", "false", "no", "NO"}) {
    ScopedVariable offline("TRAINREPRO_OFFLINE", off);
    EXPECT_FALSE(offline_requested()) << off;
  }
  ScopedVariable unset("TRAINREPRO_OFFLINE", nullptr);
  EXPECT_FALSE(offline_requested());
  for (const char* bad : {"on", "2", "ture", " 1"}) {
    ScopedVariable offline("TRAINREPRO_OFFLINE", bad);
    EXPECT_THROW(offline_requested(), EnvironmentValueError) << bad;
  }
}

TEST(CacheDirectory, RefusesTrainreproCacheWithColonOrRelative) {
  for (const char* bad : {"/tmp/a:b", "cache", "./cache"}) {
    ScopedVariable cache("TRAINREPRO_CACHE", bad);
    EXPECT_THROW(trainrepro_cache_directory(), EnvironmentValueError) << bad;
  }
}

TEST(CacheDirectory, WithoutHomeUsesThePasswdEntryNeverTmp) {
  ScopedVariable cache("TRAINREPRO_CACHE", nullptr);
  ScopedVariable xdg("XDG_CACHE_HOME", nullptr);
  ScopedVariable home("HOME", nullptr);
  const std::string found = trainrepro_cache_directory();
  EXPECT_EQ(found.rfind("/tmp", 0), std::string::npos) << found;
  EXPECT_NE(found.find("/.cache/trainrepro"), std::string::npos) << found;
}

TEST(PrintableExcerpt, CutsLongTextAndSaysItsLength) {
  EXPECT_EQ(printable_excerpt("0.18.6"), "\"0.18.6\"");
  EXPECT_EQ(printable_excerpt(std::string(100, 'x'), 10), "\"xxxxxxxxxx\"... (100 characters)");
  EXPECT_EQ(printable_excerpt("a\x1b[2Jb"), "\"a\\x1b[2Jb\"");
}

}  // namespace
}  // namespace trainrepro
