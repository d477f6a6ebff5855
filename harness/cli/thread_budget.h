// How many threads LibTorch may use in this process. Its intra-op pool defaults to every core
// of the machine; with several rank processes (or ctest -j) on a shared machine the pools
// oversubscribe the cores and one 40-step scenario ran 20x slower. So each process takes its
// share: the cores it may run on divided by the rank processes sharing them.
#pragma once
#include <string>

namespace trainrepro {

// TRAINREPRO_THREADS when set (a positive integer), else max(1, usable cores / rank_processes).
// Throws std::invalid_argument naming the variable when TRAINREPRO_THREADS is not a positive
// integer.
int choose_intra_op_threads(int rank_processes);

// Applies the choice to LibTorch (intra-op and inter-op pools); call before any tensor work.
void cap_torch_threads(int rank_processes);

// The rank processes an MPI launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS),
// 1 when none did.
int launcher_world_size();

}  // namespace trainrepro
