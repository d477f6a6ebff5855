// `run --junit FILE`: the run as JUnit XML, for CI systems (Jenkins, GitLab, GitHub Actions
// test reporters). Valid against the Jenkins xunit JUnit schema (tests/report/junit-10.xsd):
// one <testsuite> per scenario folder, classname = the folder with "/" written ".", one
// <testcase> per scenario. A reproduced bug is a passing test whose outcome says "reproduced"
// (a suite property "<name>.outcome" and its <system-out>), failed and not-reproduced are
// <failure>s, errors are <error>s typed by their source, skipped is <skipped>. Written
// atomically when the run ends.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "harness/report/reporter.h"
#include "harness/report/run_provenance.h"

namespace trainrepro {

std::string junit_xml(const std::vector<ScenarioResult>& results, const RunProvenance& provenance,
                      double seconds);

// Text as XML 1.0 allows it in attributes (markup and line breaks escaped, what XML cannot hold
// written as \xNN), and in elements (line breaks kept).
std::string xml_escaped(const std::string& text);
std::string xml_text(const std::string& text);

class JunitReporter : public Reporter {
 public:
  JunitReporter(std::filesystem::path file, RunProvenance provenance)
      : file_(std::move(file)), provenance_(std::move(provenance)) {}
  void report_scenario(const ScenarioResult& result) override {}
  void report_summary(const std::vector<ScenarioResult>& results, double seconds) override;

 private:
  std::filesystem::path file_;
  RunProvenance provenance_;
};

}  // namespace trainrepro
