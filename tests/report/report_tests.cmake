# The run's CI formats and the HTML report (label `report`).
set(report_work ${CMAKE_CURRENT_BINARY_DIR}/report)

# run --junit: valid against Jenkins' JUnit schema and in agreement with the results files, over
# every outcome: an error (a file that does not load), failed and not-reproduced expectations,
# a reproduction, a two-rank pass and a scenario skipped for want of a GPU.
add_test(NAME report/junit-valid-and-agrees-with-results
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/report/check_junit.py
                 $<TARGET_FILE:trainrepro> ${report_work}/junit
                 tests/data/mixed_scenarios tests/data/unmet_scenarios
                 scenarios/accumulation/gas-missing.json
                 scenarios/zero/matrix-stage0-ws2-gas1-sgd.json
                 scenarios/memory/gpt-keep-outputs-moved-to-cpu.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(report/junit-valid-and-agrees-with-results PROPERTIES
                     LABELS "report;cli" TIMEOUT 300 PROCESSORS 2)

# trainrepro report: bad input is named, and nothing is written.
set(data tests/data)
add_cli_test(report-of-a-missing-folder-is-bad-input 2
  [=[trainrepro report: tests/data/no-such-results: no such results file or folder]=]
  report ${data}/no-such-results -o @RESULTS@/report.html)
add_cli_test(report-of-scenario-files-is-not-a-report 2
  [=[skipped tests/data/mixed_scenarios/a_bad\.json:/format: missing.*skipped tests/data/mixed_scenarios/b_good\.json:/format: missing \(is this a trainrepro results file of format version 3\?\).*no results files found in tests/data/mixed_scenarios .*nothing written]=]
  report ${data}/mixed_scenarios -o @RESULTS@/report.html)
