// The entry point of trainrepro_bench: every suite in bench/ registers itself. LibTorch runs on
// one thread here: on a shared 2-core machine its thread pool makes timings swing by 20-30 %.
#include <benchmark/benchmark.h>

#include <ATen/Parallel.h>

int main(int argc, char** argv) {
  at::set_num_threads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
