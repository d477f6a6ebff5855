#include "harness/distributed/mpi_session.h"

#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace trainrepro {

bool launched_by_mpi() {
  // Open MPI's mpirun, PMIx-based launchers, and Slurm's srun each leave one of these.
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

bool mpi_available() {
  if (launched_by_mpi()) return true;
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    if (!folder.empty() && ::access((folder + "/mpirun").c_str(), X_OK) == 0) return true;
  }
  return false;
}

int rank_from_launcher_environment() {
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(variable)) return std::atoi(value);
  }
  return 0;
}

void ensure_mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    throw std::runtime_error("MPI_Init_thread failed");
  }
  // A rank that dies must end the job rather than leave the others waiting forever.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

}  // namespace trainrepro
