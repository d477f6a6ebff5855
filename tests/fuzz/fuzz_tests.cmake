# libFuzzer targets (tests/fuzz/README.md), built with clang (Debian's clang ships libFuzzer)
# beside the GCC build, with AddressSanitizer and UndefinedBehaviorSanitizer on the fuzzed code.
# CTest runs each briefly (label `fuzz`); scripts/fuzz runs them for millions of executions.
find_program(TRAINREPRO_CLANGXX NAMES clang++ clang++-14)
if(NOT TRAINREPRO_CLANGXX)
  message(STATUS "clang++ not found: the fuzz targets are not built")
  return()
endif()

# One fuzz target: tests/fuzz/<name>_fuzz.cpp and the harness sources it reaches, compiled by
# clang into ${CMAKE_CURRENT_BINARY_DIR}/<name>_fuzz (target build_<name>_fuzz). With TORCH it
# also links LibTorch's headers and CPU libraries as shipped (not instrumented; our code is),
# found where find_package(Torch) found them. With COVERAGE <list>, only the sources that list
# names guide the fuzzer (every source keeps ASan and UBSan). DEFINE: one -D flag for the compile.
function(add_fuzz_target name)
  cmake_parse_arguments(FUZZ "TORCH" "COVERAGE;DEFINE" "" ${ARGN})
  set(sources ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/${name}_fuzz.cpp ${FUZZ_UNPARSED_ARGUMENTS})
  set(binary ${CMAKE_CURRENT_BINARY_DIR}/${name}_fuzz)
  set(torch_flags)
  if(FUZZ_TORCH)
    set(torch_flags -isystem ${TORCH_INSTALL_PREFIX}/include
        -isystem ${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include
        -L${TORCH_INSTALL_PREFIX}/lib -Wl,-rpath,${TORCH_INSTALL_PREFIX}/lib -ltorch_cpu -lc10)
  endif()
  set(coverage_flags)
  if(FUZZ_COVERAGE)
    set(coverage_flags -fsanitize-coverage-allowlist=${FUZZ_COVERAGE})
  endif()
  add_custom_command(
    OUTPUT ${binary}
    COMMAND ${TRAINREPRO_CLANGXX} -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined ${coverage_flags} ${FUZZ_DEFINE}
            -I${PROJECT_SOURCE_DIR} ${sources}
            ${torch_flags} -o ${binary}
    DEPENDS ${sources} ${FUZZ_COVERAGE}
    COMMENT "Building the ${name} fuzz target with clang (libFuzzer, ASan, UBSan)"
    VERBATIM)
  add_custom_target(build_${name}_fuzz ALL DEPENDS ${binary})
endfunction()

# Everything a pasted config or scenario text reaches before training; none of it needs LibTorch.
set(config_input_sources
    ${PROJECT_SOURCE_DIR}/harness/json/hjson_reader.cpp
    ${PROJECT_SOURCE_DIR}/harness/json/json_fields.cpp
    ${PROJECT_SOURCE_DIR}/harness/json/printable.cpp
    ${PROJECT_SOURCE_DIR}/harness/json/scenario_error.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/json_document.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_optimizer_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_scheduler_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_zero_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_precision_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_schema_check.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/pydantic_error.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/lr_schedule.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/deepspeed_release.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/batch_config.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/config_error.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/resolve_plan.cpp)
add_fuzz_target(config ${config_input_sources})
set(config_fuzz ${CMAKE_CURRENT_BINARY_DIR}/config_fuzz)

# The safetensors reader (goldens, and a user's samples).
set(safetensors_sources
    ${PROJECT_SOURCE_DIR}/harness/files/safetensors.cpp
    ${PROJECT_SOURCE_DIR}/harness/files/atomic_write.cpp
    ${PROJECT_SOURCE_DIR}/harness/files/file_chunks.cpp)

# The scenario loader: every section's reader and the zoos, on top of the config's sources.
# A user's own model and samples are files the loader reads with LibTorch, hence TORCH.
set(scenario_loader_sources
    ${PROJECT_SOURCE_DIR}/harness/scenario/load_scenario.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/memory_judging_steps.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/hf_trainer.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/hf_trainer_release.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/client_optimizer.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/parameter_groups.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/performance_section.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/scenario_spellings.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/expectation.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/release_outcomes.cpp
    ${PROJECT_SOURCE_DIR}/models/model_zoo.cpp
    ${PROJECT_SOURCE_DIR}/models/data_zoo.cpp
    ${PROJECT_SOURCE_DIR}/models/model_data_fit.cpp
    ${PROJECT_SOURCE_DIR}/models/parameter_names.cpp
    ${PROJECT_SOURCE_DIR}/models/options_json.cpp
    ${PROJECT_SOURCE_DIR}/models/user_file_path.cpp
    ${PROJECT_SOURCE_DIR}/models/sample_file.cpp
    ${PROJECT_SOURCE_DIR}/models/torchscript_file.cpp
    ${PROJECT_SOURCE_DIR}/harness/files/sha256.cpp
    ${safetensors_sources}
    ${config_input_sources})
add_fuzz_target(scenario TORCH ${scenario_loader_sources})
set(scenario_fuzz ${CMAKE_CURRENT_BINARY_DIR}/scenario_fuzz)

# The golden readers: safetensors decoding alone, then the manifest and the golden loader.
add_fuzz_target(safetensors TORCH ${safetensors_sources})
add_fuzz_target(golden TORCH COVERAGE ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/golden_coverage.txt
    ${PROJECT_SOURCE_DIR}/harness/golden/golden_store.cpp
    ${PROJECT_SOURCE_DIR}/harness/golden/golden_key.cpp
    ${PROJECT_SOURCE_DIR}/harness/engine/runtime_info.cpp
    ${scenario_loader_sources})

# The exporter on top of the loader: the script it writes holds a scenario's text only as
# string literals that read back as the scenario. It compiles in the sources the export embeds
# (generated with the trainrepro library, hence the dependency).
add_fuzz_target(export TORCH DEFINE -DTRAINREPRO_VERSION="fuzz"
    ${PROJECT_SOURCE_DIR}/harness/cli/repro_script.cpp
    ${PROJECT_SOURCE_DIR}/harness/cli/python_literal.cpp
    ${PROJECT_SOURCE_DIR}/harness/scenario/settings_acting_outside_the_run.cpp
    ${export_sources_cpp}
    ${scenario_loader_sources})
add_dependencies(build_export_fuzz trainrepro_core)
set(export_fuzz ${CMAKE_CURRENT_BINARY_DIR}/export_fuzz)

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
# Seeded with every shipped scenario and hostile texts (corpus/export), with a dictionary of
# what ends a Python string or docstring. Each execution writes and reads back a whole script
# (~300 executions/s on a busy 2-core machine), hence fewer runs.
add_test(NAME fuzz/export-short
         COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                 ${export_fuzz} -runs=10000 -max_len=8192 -rss_limit_mb=2048 -timeout=10
                 -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/export.dict
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-export
                 ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/export ${PROJECT_SOURCE_DIR}/scenarios)
set_tests_properties(fuzz/export-short PROPERTIES LABELS fuzz TIMEOUT 600
                     FIXTURES_REQUIRED fuzz_corpus_folder)
# The golden target writes files per execution (~1,700/s): fewer runs keep it near ten seconds.
set(short_runs_safetensors 30000)
set(short_runs_golden 20000)
foreach(target safetensors golden)
  add_test(NAME fuzz/${target}-short
           COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
                   ${CMAKE_CURRENT_BINARY_DIR}/${target}_fuzz -runs=${short_runs_${target}}
                   -max_len=8192
                   -rss_limit_mb=2048 -timeout=10 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-${target}
                   ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${target})
  set_tests_properties(fuzz/${target}-short PROPERTIES LABELS fuzz TIMEOUT 600
                       FIXTURES_REQUIRED fuzz_corpus_folder)
endforeach()
add_test(NAME fuzz/make-corpus-folder
         COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-config
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-scenario
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-export
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-safetensors
                 ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-golden)
set_tests_properties(fuzz/make-corpus-folder PROPERTIES LABELS fuzz
                     FIXTURES_SETUP fuzz_corpus_folder)
