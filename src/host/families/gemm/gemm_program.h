// Reference GEMM kernel: C[M,N] = A[M,K] x B[K,N] as explicit DMA / matmul ops per PE.
#pragma once

#include <string>

#include "../../../device/models/gemm/gemm_model.h"
#include "../../runtime/context.h"
#include "../../kernels/kernel_values.h"

namespace kb {

// A GEMM request's defaults: 128-square tiles, one PE of one cube, two buffer sets, the
// split automatic, fp16 B; the shape and the machine (gemm_config) are the caller's.
GemmConfig gemm_request(std::int64_t m = 0, std::int64_t n = 0, std::int64_t k = 0);
// The type B's values are held in.
inline DType gemm_b_dtype(const GemmConfig& c) { return gemm_b_bytes(c) == 1 ? DType::fp8 : DType::f16; }

// `c` on this topology's machine, its split resolved as every output reports it.
GemmConfig gemm_config(const TopologySpec& topo, GemmConfig c);
// Throws InputError naming the problem when the request cannot run (the validity check
// only: nothing of the batched model's timing).
void validate_gemm(const TopologySpec& topo, const GemmConfig& c);
std::string gemm_status_message(std::int32_t status, const GemmConfig& c);

struct GemmTensors {
  Tensor a, b, c;
  std::int64_t split = kGemmSplitRows;  // resolved (gemm_split_of)
  bool split_k = false;  // with split-K: each PE's partial-sum slots, and the channel they travel on
  SymBuf partials;
  Channel sums;
};

// Places A and B (replicated in each used cube) and C (over the used cubes in whole tile
// rows or tile columns, as the split says), random inputs when `seed` is non-zero; with
// split-K, allocates the partial-sum slots (gemm_k_slots) on every PE of the launch.
GemmTensors gemm_tensors(RuntimeContext& ctx, const GemmConfig& p, std::uint64_t seed);
// The program of one PE rank.
void gemm_kernel(PeProgram& prog, const GemmConfig& p, const GemmTensors& t);

struct GemmReference {
  RunReport report;
};
// Builds, launches and simulates the GEMM on the reference engine.
// With `data`: in data mode, A and B from data->in[0] and [1] (row-major [m, k], [k, n]), and
// C [m, n] left in data->out.
GemmReference run_gemm_reference(const TopologySpec& topo, const GemmConfig& c, const std::string* trace_path = nullptr,
                                 KernelValues* data = nullptr);
// The family's reference program: the figures of a config from the reference engine (and
// its closed-form roofline), as a GemmResult; a Chrome trace when `trace` is not null.
GemmResult gemm_reference(const GemmConfig& c, const std::string* trace_path = nullptr, KernelValues* data = nullptr);
// The kernel of `c` built into `ctx`, a context of `c`'s machine that holds other kernels
// too: its tensors (B, the weights, resident) and its launch (no run).
void gemm_compose(RuntimeContext& ctx, const GemmConfig& c);

// The ops the reference program builds for `p` (tiles auto-resolved), at most: per output
// tile a load pair and a matmul per K step and a store, and with split-K each PE's partial
// sent (two port copies, a signal, a wait, an add).
std::int64_t gemm_graph_ops(const GemmConfig& p);
std::int64_t gemm_reference_ops(const GemmConfig& c);

}  // namespace kb
