# The DeepSpeed oracle (tests/deepspeed_oracle/README.md): the real DeepSpeed engine, installed
# by tests/deepspeed_oracle/install_deepspeed.sh into the cache outside the clone, checked against
# trainrepro's expectations. Every test is labelled `oracle`; scripts/test leaves them out and
# scripts/oracle runs them (`ctest -L oracle`).
set(oracle ${CMAKE_CURRENT_SOURCE_DIR}/deepspeed_oracle/oracle)

# Installs DeepSpeed if missing and compiles its CPU ops once (minutes the first time).
add_test(NAME oracle/prepare COMMAND ${oracle} prepare WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(oracle/prepare PROPERTIES LABELS oracle FIXTURES_SETUP deepspeed_oracle
                     TIMEOUT 1800)

# One test per scenario in scope (the folders below, written for the release the oracle
# installs, 0.19.8, the default): the same list as `oracle list`.
file(GLOB oracle_scenarios CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/accumulation/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/zero/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/deepspeed-versions/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/schedulers/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/checkpointing/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/frozen/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/parameter-groups/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/precision/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/hf-trainer/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/catalogue/*.json)
foreach(scenario_file IN LISTS oracle_scenarios)
  file(READ ${scenario_file} content)
  string(JSON version ERROR_VARIABLE no_version GET "${content}" deepspeed_version)
  if(NOT no_version AND NOT version STREQUAL "0.19.8")
    continue()
  endif()
  string(JSON stage ERROR_VARIABLE no_stage GET "${content}" deepspeed zero_optimization stage)
  if(no_stage)
    # Absent, or the legacy boolean form: true is stage 1.
    string(JSON legacy ERROR_VARIABLE no_legacy GET "${content}" deepspeed zero_optimization)
    if(NOT no_legacy AND legacy)
      set(stage 1)
    else()
      set(stage 0)
    endif()
  endif()
  # A Hugging Face Trainer scenario's config holds "auto", which the Trainer fills: the oracle
  # does not run the Trainer.
  string(JSON trainer ERROR_VARIABLE no_trainer GET "${content}" hf_trainer)
  if(NOT no_trainer)
    continue()
  endif()
  string(JSON outcome ERROR_VARIABLE no_outcome GET "${content}" expect outcome)
  # fp16 is refused on this CPU by DeepSpeed itself: out of scope (oracle.py fp16_enabled).
  string(JSON fp16 ERROR_VARIABLE no_fp16 GET "${content}" deepspeed fp16 enabled)
  if(NOT no_fp16 AND fp16)
    continue()
  endif()
  # The oracle compares gradients and parameters; a leak is judged from memory, which it does
  # not measure (the catalogue's leak entries).
  string(JSON expected_diagnosis ERROR_VARIABLE no_expected_diagnosis GET "${content}" expect
         diagnosis)
  if(expected_diagnosis MATCHES "^(host_memory_leak|tensor_memory_leak|memory_over_budget)$")
    continue()
  endif()
  # A refused config is compared at any stage; training at stage 0, and at stages 1-3 where
  # DeepSpeed trains it on this CPU as the oracle drives it (oracle.py trains_under_zero_here):
  # the config's optimizer or the client's, not Lamb, not a diagnosis of the ZeRO judge
  # (ZERO_JUDGE_DIAGNOSES).
  if(NOT stage EQUAL 0 AND NOT outcome STREQUAL "config_error")
    string(JSON type ERROR_VARIABLE no_type GET "${content}" deepspeed optimizer type)
    string(TOLOWER "${type}" type)
    string(JSON diagnosis ERROR_VARIABLE no_diagnosis GET "${content}" expect diagnosis)
    if(type STREQUAL "lamb" OR diagnosis MATCHES
       "^(gathered_parameters_kept|model_states_differ_from_zero|traffic_differs_from_zero)$")
      continue()
    endif()
  endif()
  string(JSON ranks ERROR_VARIABLE no_ranks GET "${content}" world_size)
  if(no_ranks)
    set(ranks 1)
  endif()
  file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR}/scenarios ${scenario_file})
  string(REGEX REPLACE "\\.json$" "" test_name ${relative})
  add_test(NAME oracle/${test_name}
           COMMAND ${oracle} scenario --trainrepro $<TARGET_FILE:trainrepro> scenarios/${relative}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(oracle/${test_name} PROPERTIES LABELS oracle
                       FIXTURES_REQUIRED deepspeed_oracle PROCESSORS ${ranks} TIMEOUT 1200
                       SKIP_RETURN_CODE 77)
endforeach()

# `trainrepro export --python`: each exportable accumulation, catalogue and 2-rank stage-0
# scenario's script run with the real DeepSpeed shows what trainrepro expects (REPRODUCED or
# AGREES); the others are listed with why they cannot be exported.
file(GLOB export_scenarios CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/accumulation/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/catalogue/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/zero/stage0-2ranks-*.json)
add_test(NAME oracle/exports COMMAND ${oracle} exports $<TARGET_FILE:trainrepro> ${export_scenarios}
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(oracle/exports PROPERTIES LABELS oracle FIXTURES_REQUIRED deepspeed_oracle
                     PROCESSORS 2 TIMEOUT 1800)

# DeepSpeed's DeepSpeedConfig against `trainrepro config resolve` on 656 batch configurations.
add_test(NAME oracle/batch-table
         COMMAND ${oracle} batch-table --trainrepro $<TARGET_FILE:trainrepro>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(oracle/batch-table PROPERTIES LABELS oracle
                     FIXTURES_REQUIRED deepspeed_oracle TIMEOUT 1800)

# The Hugging Face Trainer oracle (real_trainer.py): every Trainer scenario the real Trainer of
# transformers 5.24.0 runs as it stands (not the catalogue's loss_scaling habits, which model
# older releases; no fp16), trained by the real transformers + accelerate (the scenario's
# release) + DeepSpeed 0.19.8 on the CPU. Each test skips (77) with the command that installs
# the stack when its cache is absent (tests/deepspeed_oracle/install_hf_trainer.sh VERSION).
set(real_trainer ${CMAKE_CURRENT_SOURCE_DIR}/deepspeed_oracle/real-trainer)
file(GLOB trainer_scenarios CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/hf-trainer/*.json
     ${PROJECT_SOURCE_DIR}/scenarios/catalogue/*.json)
foreach(scenario_file IN LISTS trainer_scenarios)
  file(READ ${scenario_file} content)
  string(JSON trainer ERROR_VARIABLE no_trainer GET "${content}" hf_trainer)
  if(no_trainer)
    continue()
  endif()
  string(JSON version ERROR_VARIABLE no_version GET "${content}" deepspeed_version)
  string(JSON scaling ERROR_VARIABLE no_scaling GET "${content}" loop loss_scaling)
  string(JSON trainer_fp16 ERROR_VARIABLE no_trainer_fp16 GET "${content}" hf_trainer fp16)
  if((NOT no_version AND NOT version STREQUAL "0.19.8") OR
     (NOT no_scaling AND NOT scaling STREQUAL "engine") OR (NOT no_trainer_fp16 AND trainer_fp16))
    continue()
  endif()
  string(JSON ranks ERROR_VARIABLE no_ranks GET "${content}" world_size)
  if(no_ranks)
    set(ranks 1)
  endif()
  file(RELATIVE_PATH relative ${PROJECT_SOURCE_DIR}/scenarios ${scenario_file})
  string(REGEX REPLACE "\\.json$" "" test_name ${relative})
  add_test(NAME oracle/real-trainer/${test_name}
           COMMAND ${real_trainer} --trainrepro $<TARGET_FILE:trainrepro> scenarios/${relative}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(oracle/real-trainer/${test_name} PROPERTIES LABELS oracle
                       PROCESSORS ${ranks} TIMEOUT 1800 SKIP_RETURN_CODE 77)
endforeach()
