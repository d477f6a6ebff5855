# CLI tests: the real binary, its exit code and its words. add_cli_test(NAME EXIT REGEX ARGS…)
# "@RESULTS@" in ARGS is a fresh empty folder; after an exit 2 it must still be empty.
set(data tests/data)

# --- config resolve ------------------------------------------------------------------------
add_cli_test(config-resolve-computes-gas 0
  [=[^\{"train_batch_size":32,"train_micro_batch_size_per_gpu":4,"gradient_accumulation_steps":4,"world_size":2,"deepspeed_version":"0\.19\.8"\}]=]
  config resolve ${data}/ds_configs/tb_and_micro.json --world-size 2)
add_cli_test(config-resolve-warns-about-unimplemented-keys 0
  [=[warning: tests/data/ds_configs/tb_and_micro.json:/activation_checkpointing: configures deepspeed\.checkpointing\.checkpoint, which only the model's own code calls: by itself it checkpoints nothing]=]
  config resolve ${data}/ds_configs/tb_and_micro.json)
add_cli_test(config-resolve-prints-deepspeed-mismatch-message 2
  [=[tests/data/ds_configs/inconsistent.json: Check batch related parameters\. train_batch_size is not equal to micro_batch_per_gpu \* gradient_acc_step \* world_size 33 != 17 \* 2 \* 2]=]
  config resolve ${data}/ds_configs/inconsistent.json --world-size 2)
add_cli_test(config-resolve-needs-a-batch-size 2
  [=[Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided]=]
  config resolve ${data}/ds_configs/only_gas.json)
add_cli_test(config-resolve-rejects-negative-micro-batch 2
  [=[Train batch size: -16 has to be greater than 0]=]
  config resolve ${data}/ds_configs/negative_micro.json --world-size 2)
add_cli_test(config-resolve-locates-syntax-errors 2
  [=[tests/data/ds_configs/unclosed\.json:5:1: invalid hjson \(DeepSpeed reads config files with hjson\): the text ends inside an object: a closing '}' is missing]=]
  config resolve ${data}/ds_configs/unclosed.json)
# A comma left out at a line's end is not JSON, but DeepSpeed reads config files with hjson.
add_cli_test(config-resolve-reads-hjson-as-deepspeed-does 0
  [=[\{"train_batch_size":32,"train_micro_batch_size_per_gpu":8,"gradient_accumulation_steps":4]=]
  config resolve ${data}/ds_configs/missing_comma.json)
add_cli_test(config-resolve-reports-missing-file 2
  [=[tests/data/ds_configs/absent\.json: cannot open the file: No such file or directory]=]
  config resolve ${data}/ds_configs/absent.json)
add_cli_test(config-resolve-rejects-zero-world-size 2
  [=[--world-size: Value 0 not in range 1 to 1048576]=]
  config resolve ${data}/ds_configs/tb_and_micro.json --world-size 0)
# int64 arithmetic once wrapped: this world size was accepted for tb 2, mb 3, and mb 2^40 x
# GAS 2^24 reported "Train batch size: 0".
add_cli_test(config-resolve-rejects-absurd-world-size 2
  [=[--world-size: Value 6148914691236517206 not in range 1 to 1048576]=]
  config resolve ${data}/ds_configs/tb_and_micro.json --world-size 6148914691236517206)
add_cli_test(config-resolve-refuses-a-batch-product-beyond-int64 2
  [=[batch_product_overflows\.json: the batch arithmetic gives train_micro_batch_size_per_gpu \* gradient_accumulation_steps \* world_size 1099511627776 \* 16777216 \* 1 = 18446744073709551616 samples per optimizer step, beyond the 2\^62]=]
  config resolve ${data}/ds_configs/batch_product_overflows.json)
# 1e400 once ended in "internal error … number overflow" (exit 3).
add_cli_test(config-resolve-locates-a-number-out-of-range 2
  [=[number_out_of_range\.json:3:51: invalid hjson \(DeepSpeed reads config files with hjson\): the number 1e400 is out of range]=]
  config resolve ${data}/ds_configs/number_out_of_range.json)

# --- run: bad scenarios are errors (exit 2) and write nothing -------------------------------
add_cli_test(run-malformed-json 2
  [=[error +\(not loaded\).*malformed\.json:9:1: invalid JSON: syntax error while parsing object key]=]
  run ${data}/bad_scenarios/malformed.json --results @RESULTS@)
add_cli_test(run-wrong-type 2
  [=[wrong_type\.json:/golden/train_batch_size: expected a positive integer, found the string "32"]=]
  run ${data}/bad_scenarios/wrong_type.json --results @RESULTS@)
add_cli_test(run-unknown-key 2
  [=[unknown_key\.json:/golden/stpes: unknown key "stpes" \(did you mean "steps"\?\)]=]
  run ${data}/bad_scenarios/unknown_key.json --results @RESULTS@)
add_cli_test(run-unknown-model 2
  [=[unknown_model\.json:/model/name: unknown model "resnet50". available: "mlp", "gpt"]=]
  run ${data}/bad_scenarios/unknown_model.json --results @RESULTS@)
add_cli_test(run-zero-golden-batch 2
  [=[zero_golden_batch\.json:/golden/train_batch_size: expected a positive integer, found the number 0]=]
  run ${data}/bad_scenarios/zero_golden_batch.json --results @RESULTS@)
add_cli_test(run-negative-world-size 2
  [=[negative_world_size\.json:/world_size: expected a positive integer, found the number -1]=]
  run ${data}/bad_scenarios/negative_world_size.json --results @RESULTS@)
add_cli_test(run-unknown-expectation 2
  [=[unknown_expectation\.json:/expect/error: expected one of "batch_size_missing", .*found "batch_mismatch"]=]
  run ${data}/bad_scenarios/unknown_expectation.json --results @RESULTS@)
add_cli_test(run-missing-file 2
  [=[tests/data/bad_scenarios/absent\.json: no such file or folder]=]
  run ${data}/bad_scenarios/absent.json --results @RESULTS@)
add_cli_test(run-reports-bad-scenario-and-goes-on 2
  [=[error +\(not loaded\).*a_bad\.json.*reproduced +batch-mismatch-tb-mb-gas.*2 scenarios: 0 passed, 1 reproduced, 0 failed, 0 not-reproduced, 1 error]=]
  run ${data}/mixed_scenarios)

# --- run: expectations not met (exit 1) ---------------------------------------------------
add_cli_test(run-expected-config-error-not-reproduced 1
  [=[not-reproduced.*expected:  config error batch_size_mismatch.*found: +the config resolves without error: train_batch_size=32, train_micro_batch_size_per_gpu=8, gradient_accumulation_steps=4]=]
  run ${data}/unmet_scenarios/expects-error-but-config-is-valid.json)
add_cli_test(run-unexpected-config-error-fails 1
  [=[failed.*expected:  pass.*found: +config error batch_size_mismatch: Check batch related parameters\. .* 30 != 8 \* 3 \* 1]=]
  run ${data}/unmet_scenarios/expects-pass-but-config-is-invalid.json)

# --- usage ---------------------------------------------------------------------------------
add_cli_test(run-help-documents-exit-codes 0
  [=[Exit codes:.*0  every expectation met.*1  an expectation was not met.*2  bad scenario.*3  infrastructure]=]
  run --help)
add_cli_test(bisect-help-documents-skipped-releases 0
  [=[is skipped with its reason, as git bisect.*3  infrastructure: .*fewer than two.*releases of the range could run]=]
  bisect --help)
add_cli_test(no-subcommand-is-usage-error 2 [=[subcommand]=])
add_cli_test(unknown-option-is-usage-error 2
  [=[--frobnicate]=]
  run scenarios --frobnicate)
add_cli_test(filter-that-matches-nothing-is-usage-error 2
  [=[no scenario matched --filter "no-such-scenario"]=]
  run scenarios --filter no-such-scenario)
add_cli_test(run-writes-results-file 0
  [=[reproduced +batch-mismatch-tb-mb-gas]=]
  run scenarios/accumulation/batch-mismatch-tb-mb-gas.json --results @RESULTS@)

# --- golden ----------------------------------------------------------------------------------
add_cli_test(golden-needs-update-or-check 2 [=[say --update or --check]=] golden)
add_cli_test(golden-update-and-check-exclude-each-other 2 [=[excludes]=] golden --update --check)
add_cli_test(run-with-missing-golden-names-the-regenerate-command 2
  [=[no golden for this scenario's key.*regenerate it with: build/trainrepro golden --update scenarios/accumulation/gas-missing\.json]=]
  run scenarios/accumulation/gas-missing.json --golden-dir @RESULTS@)
add_cli_test(run-writes-per-step-comparisons 0
  [=[reproduced +gas-missing.*diagnosis: effective batch is 8, not 32: gradient_accumulation_steps is not set]=]
  run scenarios/accumulation/gas-missing.json --results @RESULTS@)

# --- multi-rank faults: a dead or hung rank ends the run with a clear error, never a hang ----
add_cli_test(killed-rank-ends-the-run-naming-it 3
  [=[2 ranks ended \(mpirun exit code [0-9]+\) before rank 0 wrote a result.*rank 1]=]
  run scenarios/zero/stage0-2ranks-gas4-sgd.json)
set_tests_properties(cli/killed-rank-ends-the-run-naming-it PROPERTIES
                     ENVIRONMENT "TRAINREPRO_FAULT_KILL_RANK=1:1" LABELS "cli;distributed"
                     TIMEOUT 120)
add_cli_test(hung-rank-is-killed-after-the-timeout 3
  [=[2 ranks did not finish within 5 s \(a rank hangs or died mid-collective\); all were killed]=]
  run scenarios/zero/stage0-2ranks-gas4-sgd.json --rank-timeout 5)
set_tests_properties(cli/hung-rank-is-killed-after-the-timeout PROPERTIES
                     ENVIRONMENT "TRAINREPRO_FAULT_HANG_RANK=1:1" LABELS "cli;distributed"
                     TIMEOUT 120)
# A fault that can never fire once passed silently (step 0: optimizer steps count from 1).
add_cli_test(fault-that-cannot-fire-is-an-error 3
  [=[TRAINREPRO_FAULT_HANG_RANK="1:0": expected RANK:STEP with RANK >= 0 and STEP >= 1]=]
  run scenarios/zero/stage0-2ranks-gas4-sgd.json --rank-timeout 60)
set_tests_properties(cli/fault-that-cannot-fire-is-an-error PROPERTIES
                     ENVIRONMENT "TRAINREPRO_FAULT_HANG_RANK=1:0" LABELS "cli;distributed"
                     TIMEOUT 120)
add_cli_test(killed-rank-mid-gather-at-zero-stage-3-ends-the-run 3
  [=[4 ranks ended \(mpirun exit code [0-9]+\) before rank 0 wrote a result.*rank 2]=]
  run scenarios/zero/matrix-stage3-ws4-gas4-sgd.json)
set_tests_properties(cli/killed-rank-mid-gather-at-zero-stage-3-ends-the-run PROPERTIES
                     ENVIRONMENT "TRAINREPRO_FAULT_KILL_RANK=2:1" LABELS "cli;distributed"
                     TIMEOUT 120)

# --- run: ZeRO ----------------------------------------------------------------------------
add_cli_test(run-refuses-loop-habit-around-the-engine-at-zero-stage-2 2
  [=[zero_grad_never_at_stage_2\.json:/loop/zero_grad: this loop habit works on gradients or the optimizer around the engine, which the reference engine supports at ZeRO stage 0 only \(this scenario uses stage 2\)]=]
  run ${data}/bad_scenarios/zero_grad_never_at_stage_2.json)
add_cli_test(run-shows-zero-model-states-against-the-formula 0
  [=[ZeRO stage 3, 4 rank\(s\): model states [0-9.]+ KiB, expected [0-9.]+ KiB \(1\.000x\); collectives \(ring model\) [0-9.]+ KiB/step, expected [0-9.]+ KiB \(1\.00[0-9]x\)]=]
  run scenarios/zero/matrix-stage3-ws4-gas4-adamw.json)

# DeepSpeed releases: config files are hjson, batch sizes need no optimizer, removed keys are
# refused by 0.19.8 and read by 0.16.9, and an unknown release is named with the known ones.
add_cli_test(config-resolve-reads-hjson-and-needs-no-optimizer 0
  [=[^\{"train_batch_size":16,"train_micro_batch_size_per_gpu":4,"gradient_accumulation_steps":2,"world_size":2,"deepspeed_version":"0\.19\.8"\}]=]
  config resolve ${data}/ds_configs/hjson_with_lamb.json --world-size 2)
add_cli_test(config-resolve-refuses-removed-key-in-0.19.8 2
  [=[removed_elasticity\.json: DeepSpeedConfigError: Elastic training has been removed]=]
  config resolve ${data}/ds_configs/removed_elasticity.json)
add_cli_test(config-resolve-reads-removed-key-in-0.16.9 0
  [=["deepspeed_version":"0\.16\.9"]=]
  config resolve ${data}/ds_configs/removed_elasticity.json --deepspeed-version 0.16.9)
add_cli_test(config-resolve-names-known-releases 2
  [=[--deepspeed-version: expected a DeepSpeed release this harness knows \(0\.16\.9 \(also used for 0\.16\.x\), 0\.19\.8\), found "0\.18\.0"]=]
  config resolve ${data}/ds_configs/removed_elasticity.json --deepspeed-version 0.18.0)

# --- stopping: SIGTERM / SIGINT to the parent while ranks run leaves nothing behind ----------
add_test(NAME cli/stopped-or-killed-ranks-leave-nothing-behind
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/stop_signal_test.py
                 $<TARGET_FILE:trainrepro> scenarios/zero/stage0-2ranks-gas4-sgd.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/stopped-or-killed-ranks-leave-nothing-behind PROPERTIES
                     LABELS "cli;distributed" TIMEOUT 240 PROCESSORS 2)

# --- discovery: one bad entry is that entry's error; the good scenario beside it still runs ---
add_cli_test(symlink-loop-and-dangling-link-do-not-stop-the-others 2
  [=[dangling\.json: a symbolic link to nothing \(dangling\); not read.*loop\.json: a symbolic link loop; not read.*reproduced +discovery-good]=]
  run ${data}/discovery)
add_cli_test(same-file-given-twice-runs-once 0
  [=[1 scenario: 0 passed, 1 reproduced.*discovery/good\.json: given twice \(as tests/data/discovery/good\.json\); it runs once]=]
  run ${data}/discovery/good.json ${data}/discovery/../discovery/good.json)

# --- resource bombs: refused before anything is allocated, with the key to change --------------
add_cli_test(huge-model-is-refused-before-it-is-built 2
  [=[huge-model\.json:/model/options: this scenario needs about [0-9.]+ [KMGT]iB of RAM across 1 rank \(per rank: model states [0-9.]+ GiB for 10001100010 parameters.*mostly the model .*\), this machine has .*pass --allow-large]=]
  run ${data}/resource_bombs/huge-model.json)
add_cli_test(huge-micro-batch-is-refused 2
  [=[huge-micro-batch\.json:/deepspeed/train_micro_batch_size_per_gpu: this scenario needs about .*mostly one micro-batch's activations]=]
  run ${data}/resource_bombs/huge-micro-batch.json)
add_cli_test(billion-steps-are-refused 2
  [=[billion-steps\.json:/golden/steps: this scenario needs about .*mostly the golden and the recorded steps]=]
  run ${data}/resource_bombs/billion-steps.json)
add_cli_test(thousand-ranks-are-refused 2
  [=[thousand-ranks\.json:/world_size: 1000 ranks would start 1001 processes on [0-9]+ cores; at most [0-9]+ ranks \(4 per core\) run here]=]
  run ${data}/resource_bombs/thousand-ranks.json)
add_cli_test(golden-update-refuses-a-huge-model 2
  [=[huge-model\.json:/model/options: this scenario needs about]=]
  golden --update ${data}/resource_bombs/huge-model.json --golden-dir @RESULTS@)

# --- new: a script that passes its own optimizer (--client-optimizer, --param-groups) ---------
# Each bad value is named by its option, exit 2, nothing written; the good paths (new, then run)
# are in new_options_test.py.
set(no_optimizer ${data}/ds_configs/megatron_no_optimizer.json)
add_cli_test(new-without-optimizer-names-the-client-optimizer-option 2
  [=[/deepspeed/optimizer: required key is missing: DeepSpeed builds no optimizer without one \(if your script passes its own optimizer to deepspeed\.initialize, describe it: `trainrepro new --client-optimizer 'AdamW lr=0\.001'`]=]
  new --ds-config ${no_optimizer} -o @RESULTS@/s.json)
add_cli_test(new-client-optimizer-betas-expects-two-numbers 2
  [=[--client-optimizer: 'betas' expects two numbers, found '0\.9']=]
  new --ds-config ${no_optimizer} --client-optimizer "AdamW lr=3e-4 betas=0.9" -o @RESULTS@/s.json)
add_cli_test(new-client-optimizer-value-checked-at-load-names-the-option 2
  [=[--client-optimizer: 'betas=0\.9,1\.5': expected two numbers in \[0, 1\), found \[0\.9,1\.5\]]=]
  new --ds-config ${no_optimizer} --client-optimizer "AdamW betas=0.9,1.5" -o @RESULTS@/s.json)
add_cli_test(new-client-optimizer-unknown-class-names-the-option 2
  [=[--client-optimizer: 'Adamw': expected a torch\.optim class the reference engine implements]=]
  new --ds-config ${no_optimizer} --client-optimizer "Adamw lr=0.001" -o @RESULTS@/s.json)
add_cli_test(new-client-optimizer-number-expected 2
  [=[--client-optimizer: 'lr' expects a number, found 'fast']=]
  new --ds-config ${no_optimizer} --client-optimizer "AdamW lr=fast" -o @RESULTS@/s.json)
add_cli_test(new-client-optimizer-json-file-error-names-file-and-pointer 2
  [=[--client-optimizer tests/data/new_options/client_optimizer_typo\.json:/params/lrr: unknown key "lrr" \(did you mean "lr"\?\)]=]
  new --ds-config ${no_optimizer} --client-optimizer ${data}/new_options/client_optimizer_typo.json
      -o @RESULTS@/s.json)
add_cli_test(new-param-groups-expects-the-no-decay-spelling 2
  [=[--param-groups: expected no_decay=SUBSTRING,… .*found 'bias,LayerNorm\.weight']=]
  new --ds-config ${no_optimizer} --client-optimizer AdamW --param-groups bias,LayerNorm.weight
      -o @RESULTS@/s.json)
add_cli_test(new-param-groups-that-select-nothing-names-the-option 2
  [=[--param-groups: 'no_decay=LayerNorm\.weight': this group holds no trainable parameter]=]
  new --ds-config ${no_optimizer} --client-optimizer AdamW --param-groups no_decay=LayerNorm.weight
      -o @RESULTS@/s.json)

# --- new: a config DeepSpeed refuses says what --intended-batch would (and would not) do ------
add_cli_test(new-on-a-refused-config-says-what-intended-batch-does 2
  [=[refuses this config: Check batch related parameters.*nothing written: DeepSpeed refuses this config \(above\), so no batch trains.*Fix the config and run `new` again\. To keep the refusal itself as a scenario.*pass --intended-batch N.*"expect" to \{"outcome": "config_error", "error": "batch_size_mismatch"\}]=]
  new --ds-config ${data}/ds_configs/inconsistent.json --world-size 2 --client-optimizer AdamW
      -o @RESULTS@/s.json)

# --- pydantic: every error of a section, in the file's order (DeepSpeed 0.19.8's text) --------
add_cli_test(config-resolve-lists-every-pydantic-error-in-the-files-order 2
  [=[5 validation errors for DeepSpeedBF16Config: loss_scale: Extra inputs are not permitted \[type=extra_forbidden, input_value=0, input_type=int\]: loss_scale_window: [^:]*: hysteresis: [^:]*: min_loss_scale: [^:]*: initial_scale_power: Extra inputs are not permitted \[type=extra_forbidden, input_value=16, input_type=int\] \(at ]=]
  config resolve ${data}/ds_configs/bf16_with_fp16_keys.json)

# The new-and-run paths of --client-optimizer / --param-groups, and `golden --update FOLDER`
# with one bad file (the others' goldens are written).
add_test(NAME cli/new-client-optimizer-then-run
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/new_options_test.py
                 $<TARGET_FILE:trainrepro>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/new-client-optimizer-then-run PROPERTIES LABELS cli TIMEOUT 300)
add_test(NAME cli/new-fp16-predicts-calibration-then-run
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/new_fp16_calibration_test.py
                 $<TARGET_FILE:trainrepro>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/new-fp16-predicts-calibration-then-run PROPERTIES LABELS cli TIMEOUT 300)
add_test(NAME cli/golden-update-folder-writes-the-others
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/golden_update_folder_test.py
                 $<TARGET_FILE:trainrepro>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/golden-update-folder-writes-the-others PROPERTIES LABELS cli TIMEOUT 300)
# --- export --python: a shared scenario's text is data in the script, never code (issue 32) ---
# Hostile text in every field (the issue's exact docstring injection among it): the script's
# syntax tree is the template's, its data reads back as the scenario, running it writes nothing.
add_test(NAME cli/export-keeps-scenario-text-as-data
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_export_security.py
                 $<TARGET_FILE:trainrepro> scenarios/accumulation/gas-missing.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/export-keeps-scenario-text-as-data PROPERTIES LABELS cli TIMEOUT 300)
# The same checks over 100 random cases of hostile text in random fields and file names (a
# seeded generator: --seed reproduces a failure), beside tests/fuzz/export_fuzz.cpp.
add_test(NAME cli/export-random-hostile-text
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/export_property_test.py
                 $<TARGET_FILE:trainrepro> scenarios/accumulation/gas-missing.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/export-random-hostile-text PROPERTIES LABELS cli TIMEOUT 600)
# --- a shared scenario must not make the real DeepSpeed act outside the run (issue 50) --------
# Every hostile file of tests/data/outside_the_run (import a module, write where the config or its
# default says, log online, NVMe swap files): `run` and `perf run --engine deepspeed` (a stand-in
# Python: refused before any worker), `bisect` and `export` exit 2 naming the key; the reference
# engine runs each (exit 0); nothing appears in the folder they run in.
add_test(NAME cli/outside-the-run-refused
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_outside_the_run.py
                 $<TARGET_FILE:trainrepro>
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli/outside-the-run-refused PROPERTIES LABELS cli TIMEOUT 600)
