// How many threads LibTorch may use in this process. Its intra-op pool defaults to every core
// of the machine; with several rank processes (or ctest -j, or anyone else) on a shared machine
// the pools oversubscribe the cores and one 40-step scenario ran 20x slower. The models judged
// here are small, so each rank process takes one thread unless told otherwise: measured on the
// loaded 2-core CI machine, a 40-step GPT scenario took 0.91 s with 1 thread and 2.6-5.4 s
// with 2 (its share of the cores).
#pragma once
#include <string>

namespace trainrepro {

// TRAINREPRO_THREADS when set (a positive integer), else one for this rank process.
// Throws std::invalid_argument naming the variable when TRAINREPRO_THREADS is not a positive
// integer.
int choose_intra_op_threads();

// Applies the choice to LibTorch (intra-op and inter-op pools); call before any tensor work.
void cap_torch_threads();

// The rank processes an MPI launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS),
// 1 when none did.
int launcher_world_size();

}  // namespace trainrepro
