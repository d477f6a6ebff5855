// "deepspeed_releases": strict reading (every key, every release, each error at its JSON
// pointer) and the expectation the installed release chooses.
#include <gtest/gtest.h>

#include "harness/json/scenario_error.h"
#include "harness/scenario/load_scenario.h"
#include "harness/scenario/release_outcomes.h"
#include "tests/unit/scenario_file_fixture.h"

namespace trainrepro {
namespace {

class ReleaseOutcomesLoading : public ScenarioFileTest {
 protected:
  void SetUp() override {
    ScenarioFileTest::SetUp();
    path_ = (directory_ / "scenario.json").string();
  }
  static nlohmann::json with_releases() {
    nlohmann::json scenario = valid_scenario();
    scenario["deepspeed_releases"] = nlohmann::json::parse(R"({
      "reproduces_on": ["0.18.5"],
      "passes_on": ["0.18.6", "0.19.8"],
      "reproduced_as": {"outcome": "failed"}
    })");
    return scenario;
  }
  std::string error_of(const nlohmann::json& scenario) {
    write("scenario.json", scenario.dump(2));
    try {
      load_scenario(path_);
    } catch (const ScenarioError& error) {
      return error.what();
    }
    return "";
  }
  std::string path_;
};

TEST_F(ReleaseOutcomesLoading, ValidSectionIsReadWholly) {
  const Scenario scenario = load_scenario(write("s.json", with_releases().dump()));
  ASSERT_TRUE(scenario.deepspeed_releases.has_value());
  EXPECT_EQ(scenario.deepspeed_releases->reproduces_on, std::vector<std::string>{"0.18.5"});
  EXPECT_EQ(scenario.deepspeed_releases->passes_on, (std::vector<std::string>{"0.18.6", "0.19.8"}));
  EXPECT_EQ(scenario.deepspeed_releases->reproduced_as.outcome, ExpectedOutcome::failure);
  EXPECT_EQ(scenario.expect.outcome, ExpectedOutcome::pass);
}

TEST_F(ReleaseOutcomesLoading, AbsentSectionIsNone) {
  EXPECT_FALSE(load_scenario(write("s.json", valid_scenario().dump())).deepspeed_releases);
}

TEST_F(ReleaseOutcomesLoading, NamedDiagnosisIsRead) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["reproduced_as"] = {{"outcome", "diagnosis"},
                                                     {"diagnosis", "never_zeroed"}};
  const Scenario loaded = load_scenario(write("s.json", scenario.dump()));
  EXPECT_EQ(loaded.deepspeed_releases->reproduced_as.outcome, ExpectedOutcome::diagnosis);
  EXPECT_EQ(loaded.deepspeed_releases->reproduced_as.diagnosis, DiagnosisKind::never_zeroed);
}

TEST_F(ReleaseOutcomesLoading, MissingListIsLocated) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"].erase("passes_on");
  EXPECT_EQ(error_of(scenario), path_ + ":/deepspeed_releases/passes_on: required key is missing");
}

TEST_F(ReleaseOutcomesLoading, EmptyListIsRejected) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["reproduces_on"] = nlohmann::json::array();
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/deepspeed_releases/reproduces_on: expected at least one "
                                    "DeepSpeed release (\"0.18.5\"), found an empty array");
}

TEST_F(ReleaseOutcomesLoading, ReleaseNotWrittenAsThreeNumbersIsLocated) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["passes_on"] = {"0.18.6", "0.19"};
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/deepspeed_releases/passes_on/1: expected a DeepSpeed "
                                    "release as MAJOR.MINOR.PATCH (\"0.18.5\"), found \"0.19\"");
}

TEST_F(ReleaseOutcomesLoading, ReleaseThatIsNotAStringIsLocated) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["reproduces_on"] = {0.185};
  EXPECT_EQ(error_of(scenario).rfind(path_ + ":/deepspeed_releases/reproduces_on/0: expected a "
                                             "string",
                                     0),
            0u)
      << error_of(scenario);
}

TEST_F(ReleaseOutcomesLoading, ReleaseListedTwiceIsLocated) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["passes_on"] = {"0.18.6", "0.19.8", "0.18.6"};
  EXPECT_EQ(error_of(scenario),
            path_ + ":/deepspeed_releases/passes_on/2: \"0.18.6\" is listed twice");
}

TEST_F(ReleaseOutcomesLoading, ReleaseInBothListsIsRejected) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["passes_on"] = {"0.19.8", "0.18.5"};
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/deepspeed_releases/passes_on/1: \"0.18.5\" is also in "
                                    "reproduces_on: a release either has the bug or does not");
}

TEST_F(ReleaseOutcomesLoading, ReproducedAsPassIsRejected) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["reproduced_as"] = {{"outcome", "pass"}};
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/deepspeed_releases/reproduced_as/outcome: expected one of "
                                    "\"failed\", \"diagnosis\", found \"pass\"");
}

TEST_F(ReleaseOutcomesLoading, UnknownDiagnosisIsLocated) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["reproduced_as"] = {{"outcome", "diagnosis"},
                                                     {"diagnosis", "boundary_not_reduced"}};
  EXPECT_EQ(error_of(scenario).rfind(
                path_ + ":/deepspeed_releases/reproduced_as/diagnosis: expected one of", 0),
            0u)
      << error_of(scenario);
}

TEST_F(ReleaseOutcomesLoading, UnknownKeysAreRejectedAtEveryLevel) {
  nlohmann::json scenario = with_releases();
  scenario["deepspeed_releases"]["fixed_in"] = "0.18.6";
  EXPECT_NE(error_of(scenario).find(path_ + ":/deepspeed_releases/fixed_in"), std::string::npos)
      << error_of(scenario);
  scenario = with_releases();
  scenario["deepspeed_releases"]["reproduced_as"]["diagnosis"] = "never_zeroed";
  EXPECT_NE(error_of(scenario).find(path_ + ":/deepspeed_releases/reproduced_as/diagnosis"),
            std::string::npos)
      << error_of(scenario);
}

TEST_F(ReleaseOutcomesLoading, ScenarioThatDoesNotExpectPassIsRejected) {
  nlohmann::json scenario = with_releases();
  scenario["expect"] = {{"outcome", "diagnosis"}, {"diagnosis", "never_zeroed"}};
  EXPECT_EQ(error_of(scenario).rfind(path_ + ":/deepspeed_releases: a scenario of a DeepSpeed "
                                             "implementation bug describes a correct setup",
                                     0),
            0u)
      << error_of(scenario);
}

TEST_F(ReleaseOutcomesLoading, FailedIsNotAnExpectOutcome) {
  nlohmann::json scenario = valid_scenario();
  scenario["expect"] = {{"outcome", "failed"}};
  EXPECT_EQ(error_of(scenario), path_ +
                                    ":/expect/outcome: expected one of \"pass\", "
                                    "\"config_error\", \"diagnosis\", found \"failed\"");
}

ReleaseOutcomes outcomes() {
  ReleaseOutcomes outcomes;
  outcomes.reproduces_on = {"0.18.5"};
  outcomes.passes_on = {"0.18.6", "0.19.8"};
  outcomes.reproduced_as = {ExpectedOutcome::diagnosis, std::nullopt, DiagnosisKind::never_zeroed};
  return outcomes;
}

TEST(ReleaseExpectation, ReleaseWithTheBugExpectsItsReproduction) {
  const ReleaseExpectation chosen = expectation_on_release(outcomes(), Expectation{}, "0.18.5");
  EXPECT_TRUE(chosen.listed);
  EXPECT_EQ(chosen.expect.outcome, ExpectedOutcome::diagnosis);
  EXPECT_EQ(chosen.expect.diagnosis, DiagnosisKind::never_zeroed);
  EXPECT_EQ(chosen.said,
            "DeepSpeed 0.18.5 is in /deepspeed_releases/reproduces_on: the bug is expected "
            "(diagnosis never_zeroed)");
}

TEST(ReleaseExpectation, ReleaseThatPassesExpectsAPass) {
  const ReleaseExpectation chosen = expectation_on_release(outcomes(), Expectation{}, "0.19.8");
  EXPECT_TRUE(chosen.listed);
  EXPECT_EQ(chosen.expect.outcome, ExpectedOutcome::pass);
  EXPECT_EQ(chosen.said,
            "DeepSpeed 0.19.8 is in /deepspeed_releases/passes_on: a pass is expected");
}

TEST(ReleaseExpectation, UnlistedReleaseKeepsTheScenariosOwnExpectAndSaysSo) {
  const ReleaseExpectation chosen = expectation_on_release(outcomes(), Expectation{}, "0.17.0");
  EXPECT_FALSE(chosen.listed);
  EXPECT_EQ(chosen.expect.outcome, ExpectedOutcome::pass);
  EXPECT_EQ(chosen.said,
            "DeepSpeed 0.17.0 is not listed in /deepspeed_releases (neither reproduces_on nor "
            "passes_on): the scenario's own expect applies (pass)");
}

}  // namespace
}  // namespace trainrepro
