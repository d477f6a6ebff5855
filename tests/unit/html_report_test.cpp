// The report's data: counts and order as the results say, curves sampled with the failing step
// kept, and no scenario text able to break out of the page's script element.
#include <gtest/gtest.h>

#include "harness/report/html_report.h"

namespace trainrepro {
namespace {

ScenarioResult result_named(const std::string& name, Outcome outcome) {
  ScenarioResult result;
  result.name = name;
  result.file = "scenarios/theme/" + name + ".json";
  result.verdict.outcome = outcome;
  return result;
}

ReportInput input_of(std::vector<ScenarioResult> results) {
  ReportInput input;
  input.sources = {"results"};
  for (ScenarioResult& result : results) {
    input.results.push_back(std::move(result));
    input.provenances.push_back(RunProvenance{"2026-11-30T17:20:01Z", "ci-7", "2 CPUs", "abc",
                                              "trainrepro run scenarios", "0.1.0", "2.11.0", ""});
  }
  return input;
}

TEST(HtmlReport, CountsEveryOutcomeAndPutsWhatNeedsAttentionFirst) {
  const nlohmann::json data = report_data(input_of({result_named("a", Outcome::passed),
                                                    result_named("b", Outcome::reproduced),
                                                    result_named("c", Outcome::failed),
                                                    result_named("d", Outcome::error)}));
  EXPECT_EQ(data["totals"]["scenarios"], 4);
  EXPECT_EQ(data["totals"]["by_outcome"]["passed"], 1);
  EXPECT_EQ(data["totals"]["by_outcome"]["failed"], 1);
  EXPECT_EQ(data["totals"]["by_outcome"]["not-reproduced"], 0);
  EXPECT_EQ(data["totals"]["exit_code"], 3);  // the error is an infrastructure one by default
  EXPECT_EQ(data["scenarios"][0]["name"], "c");
  EXPECT_EQ(data["scenarios"][1]["name"], "d");
  EXPECT_EQ(data["scenarios"][2]["name"], "a");
  ASSERT_EQ(data["runs"].size(), 1u);
  EXPECT_EQ(data["runs"][0]["scenarios"], 4);
}

TEST(HtmlReport, LongRunsAreSampledAndKeepTheFirstFailingStep) {
  ScenarioResult result = result_named("long", Outcome::failed);
  TrainingJudgement training;
  for (int64_t step = 0; step < 1000; ++step) {
    StepJudgement judged;
    judged.step = step;
    judged.loss = 1.0 / (step + 1);
    TensorComparison comparison;
    comparison.name = "layers.0.weight";
    comparison.tolerance_used = step == 517 ? 3.0 : 0.123456789;
    judged.gradients.push_back(comparison);
    training.steps.push_back(judged);
  }
  training.first_gradient_mismatch = 517;
  result.training = training;
  const nlohmann::json gradients = report_data(input_of({result}))["scenarios"][0]["gradients"];
  const auto& steps = gradients["steps"];
  EXPECT_LE(steps.size(), kMostPointsPerCurve + 1);
  EXPECT_EQ(steps.front(), 0);
  EXPECT_EQ(steps.back(), 999);
  bool kept = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] == 517) {
      kept = true;
      EXPECT_DOUBLE_EQ(gradients["tensors"][0]["percent"][i].get<double>(), 300.0);
    }
  }
  EXPECT_TRUE(kept) << "the first failing step was sampled away";
  EXPECT_EQ(gradients["first_failure_step"], 517);
  // Six significant digits: enough for a chart, a third of the bytes.
  EXPECT_EQ(gradients["tensors"][0]["percent"][1].dump(), "12.3457");
}

TEST(HtmlReport, ScenarioTextCannotEndTheScriptElement) {
  ScenarioResult result = result_named("hostile", Outcome::failed);
  result.verdict.found = "</script><script>alert(1)</script><!--";
  const std::string page = html_report(input_of({result}));
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_EQ(page.find("{{data}}"), std::string::npos);
}

// A shared scenario's own text (description, tags, reference, a config key in a warning) with
// markup in it: in the page it is data only, every '<' written \u003c, so no element can start
// and the script element cannot end early (reports/report.js puts it into text nodes only).
TEST(HtmlReport, ScenarioTextWithMarkupStaysData) {
  ScenarioResult result = result_named("hostile", Outcome::passed);
  const std::string markup = "<img src=x onerror=alert(1)></script><script>alert(2)</script><!--";
  result.description = markup;
  result.tags = {markup};
  result.reference = BugReference{"https://x/" + markup, "deepspeed", markup, markup};
  result.warnings = {"scenarios/theme/hostile.json:/deepspeed/" + markup + ": not a setting"};
  const std::string page = html_report(input_of({result}));
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(page.find("<script>alert(2)"), std::string::npos);
  const std::string open = "<script id=\"report-data\" type=\"application/json\">";
  const size_t data = page.find(open);
  ASSERT_NE(data, std::string::npos);
  const size_t begin = data + open.size();
  const nlohmann::json read_back =
      nlohmann::json::parse(page.substr(begin, page.find("</script>", begin) - begin));
  EXPECT_EQ(read_back["scenarios"][0]["description"], markup);
  EXPECT_EQ(read_back["scenarios"][0]["tags"][0], markup);
}

}  // namespace
}  // namespace trainrepro
