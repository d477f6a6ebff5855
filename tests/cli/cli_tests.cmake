# CLI tests: add_cli_test(NAME EXIT REGEX ARGS…)
