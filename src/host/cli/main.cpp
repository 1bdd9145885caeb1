#include "commands.h"
#include "mpi.h"

int main(int argc, char** argv) {
  kb::mpi_start(&argc, &argv);  // a rank of an MPI job when mpirun started it; else nothing
  const int rc = kb::cli_main(argc, argv);
  kb::mpi_stop();
  return rc;
}
