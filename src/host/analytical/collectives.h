// The alpha-beta-gamma cost model of collectives (Thakur, Rabenseifner and Gropp, "Optimization
// of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005), kept apart from both
// engines: the curve simulated latencies are compared with. For p ranks and n bytes:
//   ring  2(p-1)a + 2((p-1)/p) n b + ((p-1)/p) n c
//   hd    2 lg(p) a + 2((p-1)/p) n b + ((p-1)/p) n c        (p a power of two)
//   tree  2 ceil(lg p) (a + n b) + ceil(lg p) n c
// and, derived the same way (docs/model.md section 11), for p = rows x cols ranks on a grid:
//   mesh2d  rows' ring reduce-scatter, columns' ring allreduce of 1/cols of the data, rows'
//           all-gather: 2(cols-1)a + 2(rows-1)a + 2((p-1)/p) n b + ((p-1)/p) n c
//   root    chains toward the centre (rows/2, cols/2), L = max(c0, cols-1-c0) + max(r0, rows-1-r0)
//           steps of a whole message: 2 L (a + n b) + L n c
// For a reduce to one rank (op reduce): ring and hd reduce-scatter then gather the p - 1
// other pieces into the root (one step; its (p-1)/p n bytes arrive one after another);
// tree and root run only their reduce half; mesh2d reduce-scatters rows and columns, then gathers.
// a: the latency of one step (ps), b: ps per byte moved, c: ps per byte reduced.
#pragma once

#include <cstdint>
#include <string>

#include "../../device/models/collective/collective.h"

namespace kb::analytical {

// The algorithms are the collective library's (one enumeration, with its names): each has a
// formula here, and a switch without a default makes a new one fail to compile until it has.
using AllreduceAlgo = ::kb::CollAlgo;

struct StepCosts {
  double alpha_ps;          // a
  double beta_ps_per_byte;  // b
  double gamma_ps_per_byte; // c
};

// The model's latency in picoseconds, rounded to the nearest. Throws InputError for p < 2,
// n < 1, or hd on a rank count that is not a power of two.
std::int64_t allreduce_ps(AllreduceAlgo algo, std::int64_t ranks, std::int64_t bytes, const StepCosts& k);

// Any algorithm, allreduce or (reduce = true) reduce to one rank; rows x cols = ranks is the
// grid of mesh2d and root (ignored by the others).
std::int64_t collective_ps(AllreduceAlgo algo, bool reduce, std::int64_t rows, std::int64_t cols, std::int64_t bytes,
                           const StepCosts& k);

// Any config's op: allreduce and reduce as collective_ps; for the single-level ops of their
// own (n: the bytes of a rank's whole buffer, as nccl-tests counts them),
//   allgather      ring (p-1)a + ((p-1)/p) n b,        hd lg(p) a + ((p-1)/p) n b
//   reducescatter  ring (p-1)a + ((p-1)/p) n (b + c),  hd lg(p) a + ((p-1)/p) n (b + c)
//   alltoall       pairwise (p-1)(a + b n / p)
std::int64_t collective_op_ps(CollOp op, AllreduceAlgo algo, std::int64_t rows, std::int64_t cols, std::int64_t bytes,
                              const StepCosts& k);

// nccl-tests' bandwidths: algbw = bytes / time; busbw = algbw x 2(p-1)/p for allreduce,
// algbw x (p-1)/p for allgather, reducescatter and alltoall, algbw for reduce.
double busbw_gbps(CollOp op, std::int64_t bytes, std::int64_t latency_ps, std::int64_t ranks);
double algbw_gbps(std::int64_t bytes, std::int64_t latency_ps);
double allreduce_busbw_gbps(std::int64_t bytes, std::int64_t latency_ps, std::int64_t ranks);

}  // namespace kb::analytical
