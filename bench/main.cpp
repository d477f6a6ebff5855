// The entry point of trainrepro_bench: every suite in bench/ registers itself.
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
