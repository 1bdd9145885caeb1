// Open MPI for sweeps across machines (ADR 0011), when the build has it: a process started
// by mpirun is one rank of the job. Without MPI, or outside mpirun, a process is rank 0 of 1.
#pragma once

#include <string>
#include <vector>

namespace kb {

// Joins the MPI job when the process was started by an MPI launcher (mpirun sets
// OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE); otherwise does nothing.
void mpi_start(int* argc, char*** argv);
void mpi_stop();
int mpi_rank();
int mpi_size();
int mpi_local_rank();  // among the ranks on this node
bool mpi_built();
// Rank 0 gets every rank's string, in rank order; the others an empty vector.
std::vector<std::string> mpi_gather(const std::string& mine);
double mpi_max(double v);

}  // namespace kb
