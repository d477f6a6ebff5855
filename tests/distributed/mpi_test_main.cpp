// The entry point of the test binaries run under mpirun: MPI is initialised once per process
// before any test, and finalised at exit (mpi_session.h).
#include <gtest/gtest.h>

#include "harness/distributed/mpi_session.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  trainrepro::ensure_mpi_initialized();
  return RUN_ALL_TESTS();
}
