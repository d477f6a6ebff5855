// Open MPI's lifetime in a trainrepro process, and whether this process was started by an MPI
// launcher (mpirun, srun) so that it uses the ranks it was given instead of launching its own.
#pragma once

namespace trainrepro {

// True when the environment says an MPI launcher started this process.
bool launched_by_mpi();

// Initialises MPI once (thread level "funneled") and finalises it at exit.
void ensure_mpi_initialized();

}  // namespace trainrepro
