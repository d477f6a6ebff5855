# libFuzzer targets (tests/fuzz/README.md), built with clang (Debian's clang ships libFuzzer)
# beside the GCC build, with AddressSanitizer and UndefinedBehaviorSanitizer on the fuzzed code.
# CTest runs each briefly (label `fuzz`); scripts/fuzz runs them for millions of executions.
find_program(TRAINREPRO_CLANGXX NAMES clang++ clang++-14)
if(NOT TRAINREPRO_CLANGXX)
  message(STATUS "clang++ not found: the fuzz targets are not built")
  return()
endif()

# Everything a pasted config or scenario text reaches before training; none of it needs LibTorch.
set(config_fuzz_sources
    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/config_fuzz.cpp
    ${PROJECT_SOURCE_DIR}/harness/json/json_fields.cpp
    ${PROJECT_SOURCE_DIR}/harness/json/printable.cpp
    ${PROJECT_SOURCE_DIR}/harness/json/scenario_error.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/json_document.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_release.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/batch_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/config_error.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/resolve_plan.cpp)
set(config_fuzz ${CMAKE_CURRENT_BINARY_DIR}/config_fuzz)
add_custom_command(
  OUTPUT ${config_fuzz}
  COMMAND ${TRAINREPRO_CLANGXX} -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
          -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR} ${config_fuzz_sources}
          -o ${config_fuzz}
  DEPENDS ${config_fuzz_sources}
  COMMENT "Building the config fuzz target with clang (libFuzzer, ASan, UBSan)"
  VERBATIM)
add_custom_target(build_config_fuzz ALL DEPENDS ${config_fuzz})

# The scenario loader: the config target's sources and every section's reader and the zoos.
set(scenario_fuzz_sources
    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/scenario_fuzz.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/load_scenario.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/scenario_spellings.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/expectation.cpp
    ${PROJECT_SOURCE_DIR}/models/model_zoo.cpp
    ${PROJECT_SOURCE_DIR}/models/data_zoo.cpp
    ${PROJECT_SOURCE_DIR}/models/model_data_fit.cpp
    ${PROJECT_SOURCE_DIR}/models/options_json.cpp)
list(APPEND scenario_fuzz_sources ${config_fuzz_sources})
list(REMOVE_ITEM scenario_fuzz_sources ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/config_fuzz.cpp)
set(scenario_fuzz ${CMAKE_CURRENT_BINARY_DIR}/scenario_fuzz)
add_custom_command(
  OUTPUT ${scenario_fuzz}
  COMMAND ${TRAINREPRO_CLANGXX} -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
          -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR} ${scenario_fuzz_sources}
          -o ${scenario_fuzz}
  DEPENDS ${scenario_fuzz_sources}
  COMMENT "Building the scenario fuzz target with clang (libFuzzer, ASan, UBSan)"
  VERBATIM)
add_custom_target(build_scenario_fuzz ALL DEPENDS ${scenario_fuzz})

# A short run from the kept corpus; new inputs go to the build folder, never the source tree.
add_test(NAME fuzz/config-short
         COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                 ${config_fuzz} -runs=30000 -max_len=4096 -rss_limit_mb=2048 -timeout=10
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-config
                 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/config)
set_tests_properties(fuzz/config-short PROPERTIES LABELS fuzz TIMEOUT 600
                     FIXTURES_REQUIRED fuzz_corpus_folder)
# Seeded with every shipped scenario (libFuzzer reads corpus folders recursively).
add_test(NAME fuzz/scenario-short
         COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                 ${scenario_fuzz} -runs=30000 -max_len=8192 -rss_limit_mb=2048 -timeout=10
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-scenario ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(fuzz/scenario-short PROPERTIES LABELS fuzz TIMEOUT 600
                     FIXTURES_REQUIRED fuzz_corpus_folder)
add_test(NAME fuzz/make-corpus-folder
         COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-config
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-scenario)
set_tests_properties(fuzz/make-corpus-folder PROPERTIES LABELS fuzz
                     FIXTURES_SETUP fuzz_corpus_folder)
