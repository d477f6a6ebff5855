// Open MPI's lifetime in a trainrepro process, and whether this process was started by an MPI
// launcher (mpirun, srun) so that it uses the ranks it was given instead of launching its own.
#pragma once

namespace trainrepro {

// True when the environment says an MPI launcher started this process.
bool launched_by_mpi();

// Whether ranks can be had: already inside a launcher, or mpirun on the PATH.
bool mpi_available();

// This process's rank as the launcher's environment gives it (0 when not launched by MPI), known
// before MPI is initialised: under `mpirun -np N trainrepro run …` only rank 0 reports.
int rank_from_launcher_environment();

// Initialises MPI once (thread level "funneled") and finalises it at exit.
void ensure_mpi_initialized();

}  // namespace trainrepro
