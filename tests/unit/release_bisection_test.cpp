// `trainrepro bisect`'s search, with probes that are plain functions of the release (no
// DeepSpeed): which releases it probes, in what order, and what it concludes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "harness/pipeline/release_bisection.h"
#include "harness/worker/managed_release.h"

namespace trainrepro {
namespace {

std::vector<std::string> releases(int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back("0.18." + std::to_string(i));
  return names;
}

// A probe that fails from release index `first_bad` on; records what it was asked.
struct FakeProbes {
  int first_bad = 0;
  Outcome bad_outcome = Outcome::failed;
  std::set<int> cannot_run = {};  // release indexes that give no outcome (an error)
  std::vector<std::string> asked = {};
  ScenarioResult operator()(const std::string& release) {
    asked.push_back(release);
    const int index = std::stoi(release.substr(release.rfind('.') + 1));
    ScenarioResult result;
    result.verdict.outcome = index >= first_bad ? bad_outcome : Outcome::passed;
    if (cannot_run.count(index) != 0) {
      result.verdict.outcome = Outcome::error;
      result.verdict.found = "deepspeed 0.18." + std::to_string(index) + " does not import";
    }
    return result;
  }
};

ReleaseBisection search(FakeProbes& probes, int count) {
  return bisect_releases(
      releases(count), [&](const std::string& r) { return probes(r); }, [](const ReleaseProbe&) {});
}

TEST(ReleaseBisection, FindsEveryPossibleFirstBadReleaseInLogarithmicProbes) {
  for (int count : {2, 3, 5, 9, 17}) {
    for (int first_bad = 1; first_bad < count; ++first_bad) {
      FakeProbes probes{first_bad};
      const ReleaseBisection found = search(probes, count);
      ASSERT_TRUE(found.first_bad) << count << " " << first_bad;
      EXPECT_EQ(*found.first_bad, "0.18." + std::to_string(first_bad));
      EXPECT_EQ(*found.last_good, "0.18." + std::to_string(first_bad - 1));
      EXPECT_EQ(probes.asked.front(), "0.18.0");  // the ends first
      EXPECT_EQ(probes.asked[1], "0.18." + std::to_string(count - 1));
      EXPECT_LE(found.probes.size(), 2 + static_cast<size_t>(std::ceil(std::log2(count - 1))));
      EXPECT_EQ(found.probes.size(), probes.asked.size());
    }
  }
}

TEST(ReleaseBisection, SameOutcomeAtBothEndsSearchesNothing) {
  FakeProbes probes{100};
  const ReleaseBisection found = search(probes, 9);
  EXPECT_FALSE(found.first_bad);
  EXPECT_TRUE(found.skipped.empty());
  EXPECT_EQ(probes.asked.size(), 2u);
}

TEST(ReleaseBisection, ADifferentOutcomeIsBadWhateverItIs) {
  FakeProbes probes{3, Outcome::reproduced};
  const ReleaseBisection found = search(probes, 8);
  ASSERT_TRUE(found.first_bad);
  EXPECT_EQ(*found.first_bad, "0.18.3");
}

std::vector<std::string> named(std::initializer_list<int> indexes) {
  std::vector<std::string> names;
  for (const int i : indexes) names.push_back("0.18." + std::to_string(i));
  return names;
}

// Like `git bisect skip`: a release in the middle that cannot run is skipped and the search
// narrows around it to the exact release, for every place the change can be.
TEST(ReleaseBisection, AnUnrunnableReleaseInTheMiddleIsSkippedAndTheSearchGoesOn) {
  for (int first_bad = 1; first_bad < 9; ++first_bad) {
    FakeProbes probes{first_bad};
    probes.cannot_run = {4};
    const ReleaseBisection found = search(probes, 9);
    ASSERT_TRUE(found.first_bad) << first_bad;
    if (first_bad == 4 || first_bad == 5) {
      // 0.18.4 stands between the last good and the first bad release: either may be it.
      EXPECT_EQ(*found.last_good, "0.18.3") << first_bad;
      EXPECT_EQ(*found.first_bad, "0.18.5") << first_bad;
      EXPECT_EQ(found.undecided, named({4})) << first_bad;
    } else {
      EXPECT_EQ(*found.first_bad, "0.18." + std::to_string(first_bad));
      EXPECT_EQ(*found.last_good, "0.18." + std::to_string(first_bad - 1));
      EXPECT_TRUE(found.undecided.empty()) << first_bad;
    }
    EXPECT_EQ(found.good_end, "0.18.0");
    EXPECT_EQ(found.bad_end, "0.18.8");
    // 0.18.4 is the first middle probed: skipped once, never asked again.
    EXPECT_EQ(std::count(probes.asked.begin(), probes.asked.end(), "0.18.4"), 1) << first_bad;
    EXPECT_EQ(found.skipped, named({4})) << first_bad;
  }
}

TEST(ReleaseBisection, SeveralUnrunnableReleasesNarrowTheAnswerToThem) {
  FakeProbes probes{5};
  probes.cannot_run = {2, 3, 4};
  const ReleaseBisection found = search(probes, 9);
  ASSERT_TRUE(found.first_bad);
  EXPECT_EQ(*found.last_good, "0.18.1");
  EXPECT_EQ(*found.first_bad, "0.18.5");
  EXPECT_EQ(found.undecided, named({2, 3, 4}));
  EXPECT_EQ(found.skipped.size(), 3u);
}

TEST(ReleaseBisection, AnEndThatCannotRunIsReplacedByTheNearestReleaseInside) {
  FakeProbes probes{6};
  probes.cannot_run = {0, 1, 8};
  const ReleaseBisection found = search(probes, 9);
  EXPECT_EQ(found.good_end, "0.18.2");
  EXPECT_EQ(found.bad_end, "0.18.7");
  ASSERT_TRUE(found.first_bad);
  EXPECT_EQ(*found.first_bad, "0.18.6");
  EXPECT_EQ(*found.last_good, "0.18.5");
  EXPECT_EQ(found.skipped, named({0, 1, 8}));
}

TEST(ReleaseBisection, NoTwoReleasesThatRunGiveNoEnds) {
  FakeProbes none{3};
  none.cannot_run = {0, 1, 2, 3};
  const ReleaseBisection nothing = search(none, 4);
  EXPECT_FALSE(nothing.good_end);
  EXPECT_FALSE(nothing.first_bad);
  EXPECT_EQ(nothing.skipped.size(), 4u);
  EXPECT_EQ(none.asked.size(), 4u);  // each asked once

  FakeProbes one{3};
  one.cannot_run = {0, 1, 2};
  const ReleaseBisection alone = search(one, 4);
  EXPECT_EQ(alone.good_end, "0.18.3");
  EXPECT_FALSE(alone.bad_end);
  EXPECT_EQ(one.asked.size(), 4u);
}

// --good newer than --bad: the releases run newest first and the search finds the fix.
TEST(ReleaseBisection, NewestFirstFindsTheReleaseThatFixedIt) {
  for (int fixed_in = 1; fixed_in < 9; ++fixed_in) {
    std::vector<std::string> newest_first = releases(9);
    std::reverse(newest_first.begin(), newest_first.end());
    auto probe = [&](const std::string& release) {
      ScenarioResult result;
      const int index = std::stoi(release.substr(release.rfind('.') + 1));
      result.verdict.outcome = index >= fixed_in ? Outcome::passed : Outcome::reproduced;
      return result;
    };
    const ReleaseBisection found = bisect_releases(newest_first, probe, [](const ReleaseProbe&) {});
    ASSERT_TRUE(found.first_bad) << fixed_in;
    EXPECT_EQ(*found.last_good, "0.18." + std::to_string(fixed_in));      // the fix
    EXPECT_EQ(*found.first_bad, "0.18." + std::to_string(fixed_in - 1));  // the last bad
  }
}

TEST(ReleaseBisection, NeedsTwoReleases) {
  FakeProbes probes{1};
  EXPECT_THROW(search(probes, 1), std::invalid_argument);
}

TEST(EngineChoice, ReadsTheThreeSpellingsAndRefusesOthers) {
  EXPECT_FALSE(parse_engine_choice("reference").deepspeed);
  EXPECT_TRUE(parse_engine_choice("deepspeed").deepspeed);
  EXPECT_FALSE(parse_engine_choice("deepspeed").release);
  EXPECT_EQ(parse_engine_choice("deepspeed==0.18.6").release, "0.18.6");
  for (const char* bad : {"deepspeed=0.18.6", "deepspeed==0.18", "deepspeed==latest", "DeepSpeed",
                          "deepspeed==0.18.6 ", ""}) {
    EXPECT_THROW(parse_engine_choice(bad), std::invalid_argument) << bad;
  }
}

TEST(EngineChoice, ReleasesAreAsciiDigitsOfBoundedLength) {
  EXPECT_TRUE(is_release_text("0.18.10"));
  EXPECT_TRUE(is_release_text("123456.0.1"));
  for (const std::string& bad : std::vector<std::string>{
           "\u0660.\u0661\u0669.\u0668", "0.18.6.1", "0..6", ".18.6", "0.18.", "1234567.0.1",
           "0.18.6\n", "0.1e1.6", "0." + std::string(10000, '1') + ".8"}) {
    EXPECT_FALSE(is_release_text(bad)) << bad.substr(0, 20);
  }
  try {
    parse_engine_choice("deepspeed==0." + std::string(10000, '1') + ".8");
    ADD_FAILURE() << "a 10,000-character release was accepted";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
    EXPECT_NE(message.find("(10015 characters)"), std::string::npos) << message.substr(0, 400);
  }
}

TEST(EngineChoice, OrdersReleasesByNumberNotText) {
  EXPECT_TRUE(release_older("0.9.5", "0.18.6"));
  EXPECT_TRUE(release_older("0.18.6", "0.18.10"));
  EXPECT_FALSE(release_older("0.18.6", "0.18.6"));
  EXPECT_TRUE(release_older("0.19.8", "1.0.0"));
}

}  // namespace
}  // namespace trainrepro
