#include "mpi.h"

#include <cstdlib>

#ifdef KB_HAVE_MPI
#include <mpi.h>
#endif

namespace kb {

namespace {
bool g_active = false;
int g_rank = 0, g_size = 1, g_local = 0;
}  // namespace

bool mpi_built() {
#ifdef KB_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void mpi_start(int* argc, char*** argv) {
#ifdef KB_HAVE_MPI
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMIX_RANK") && !std::getenv("PMI_SIZE")) return;
  MPI_Init(argc, argv);
  g_active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &g_local);
  MPI_Comm_free(&node);
#else
  (void)argc, (void)argv;
#endif
}

void mpi_stop() {
#ifdef KB_HAVE_MPI
  if (g_active) MPI_Finalize();
#endif
  g_active = false;
}

int mpi_rank() { return g_rank; }
int mpi_size() { return g_size; }
int mpi_local_rank() { return g_local; }

std::vector<std::string> mpi_gather(const std::string& mine) {
#ifdef KB_HAVE_MPI
  if (g_active && g_size > 1) {
    const int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<std::size_t>(g_size)), at(static_cast<std::size_t>(g_size));
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (g_rank == 0) {
      int total = 0;
      for (int r = 0; r < g_size; ++r) at[static_cast<std::size_t>(r)] = total, total += lens[static_cast<std::size_t>(r)];
      all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), at.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    if (g_rank == 0)
      for (int r = 0; r < g_size; ++r)
        out.push_back(all.substr(static_cast<std::size_t>(at[static_cast<std::size_t>(r)]),
                                 static_cast<std::size_t>(lens[static_cast<std::size_t>(r)])));
    return out;
  }
#endif
  return {mine};
}

double mpi_max(double v) {
#ifdef KB_HAVE_MPI
  if (g_active && g_size > 1) {
    double out = v;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
#endif
  return v;
}

}  // namespace kb
