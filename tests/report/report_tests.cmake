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
                     LABELS "report;cli" TIMEOUT 300 PROCESSORS 2 SKIP_RETURN_CODE 77)

# trainrepro report: bad input is named, and nothing is written.
set(data tests/data)
add_cli_test(report-of-a-missing-folder-is-bad-input 2
  [=[trainrepro report: tests/data/no-such-results: no such results file or folder]=]
  report ${data}/no-such-results -o @RESULTS@/report.html)
add_cli_test(report-of-scenario-files-is-not-a-report 2
  [=[skipped tests/data/mixed_scenarios/a_bad\.json:/format: missing.*skipped tests/data/mixed_scenarios/b_good\.json:/format: missing \(is this a trainrepro results file of format version 3\?\).*no readable results files in tests/data/mixed_scenarios \(2 skipped, above\); .*nothing written]=]
  report ${data}/mixed_scenarios -o @RESULTS@/report.html)

# A CPU leak's memory snapshots open with PyTorch's memory viewer tools (Python with torch).
add_test(NAME report/cpu-memory-snapshot-opens-in-pytorch-viewer
         COMMAND ${TRAINREPRO_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/report/check_cpu_snapshot.py
                 $<TARGET_FILE:trainrepro> ${report_work}/cpu-snapshot
                 scenarios/memory/mlp-keep-loss-with-graph.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(report/cpu-memory-snapshot-opens-in-pytorch-viewer PROPERTIES
                     LABELS "report;memory" TIMEOUT 300)

# The HTML report in a real browser (headless Chromium): real results of every outcome (an error,
# failed and not-reproduced expectations, a mis-accumulation, a leak, a diverged run, ZeRO across
# 3 ranks, a skipped CUDA scenario), the page loaded with every chart drawn: no script or console
# error, the summary's counts equal the results files', a chart for every scenario with samples.
# Then the same results copied to 500 scenarios: the page stays under 5 MB and renders cleanly.
# Screenshots stay in reports/out/browser-test*/ for a person to look at.
add_test(NAME report/html-report-in-headless-chromium
         COMMAND bash -c [[set -e; rm -rf "$2"; "$1" run "${@:4}" --results "$2" > /dev/null || [ $? -le 2 ]
                           "$3" tests/report/browser_test.py --trainrepro "$1" --results "$2" \
                               --out reports/out/browser-test --scenario gas-missing --skip-without-chromium
                           "$3" tests/report/make_many_results.py "$2" "$2-500" 500
                           "$3" tests/report/browser_test.py --trainrepro "$1" --results "$2-500" \
                               --out reports/out/browser-test-500 --scenario gas-missing-copy0 --skip-without-chromium]]
                 browser-test $<TARGET_FILE:trainrepro> ${report_work}/browser-results
                 ${Python3_EXECUTABLE}
                 tests/data/mixed_scenarios tests/data/unmet_scenarios
                 scenarios/accumulation/gas-missing.json
                 scenarios/memory/mlp-keep-loss-with-graph.json
                 scenarios/memory/gpt-eval-loss-summed-without-no-grad.json
                 scenarios/varieties/adam-betas-out-of-range-diverges.json
                 scenarios/varieties/gas6-3ranks.json
                 scenarios/memory/gpt-keep-outputs-moved-to-cpu.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(report/html-report-in-headless-chromium PROPERTIES
                     LABELS "report;browser" TIMEOUT 400 PROCESSORS 2 SKIP_RETURN_CODE 77)
