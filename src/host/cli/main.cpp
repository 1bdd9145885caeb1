#include <csignal>

#include "commands.h"
#include "host/api/mpi.h"

int main(int argc, char** argv) {
  // A write past the file-size limit (ulimit -f) fails with EFBIG and is reported, instead
  // of the kernel ending the process part-way through a file.
  std::signal(SIGXFSZ, SIG_IGN);
  kb::mpi_start(&argc, &argv);  // a rank of an MPI job when mpirun started it; else nothing
  const int rc = kb::cli_main(argc, argv);
  kb::mpi_stop();
  return rc;
}
