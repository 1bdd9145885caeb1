#include "llm_program.h"

#include "../common/error.h"
#include "../runtime/context.h"
#include "../topology/spec.h"

namespace kb {

std::int64_t llm_vec_reference_ops(const LlmVecConfig& c) {
  // Per tile: the loads, at most five passes and the store; a PE's tiles at most its rows.
  const std::int64_t parts = c.hw.cubes_per_sip() * c.hw.pes_per_cube();
  return sat_mul(sat_mul(ceil_div(c.rows, parts), parts), llm_vec_inputs(c.kind) + 6);
}

LlmVecResult llm_vec_reference(const LlmVecConfig& c, const std::string* trace_path) {
  LlmVecResult r{};
  r.status = llm_vec_check(c);
  if (r.status != kLlmVecOk) throw InputError("llm vector kernel: invalid config (status " + std::to_string(r.status) + ")");
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), parts = C * P;
  const int inputs = llm_vec_inputs(c.kind);
  const auto kind = static_cast<LlmKernelKind>(c.kind);
  RuntimeContext ctx(topology_of(c.hw), ContextOptions{false});
  ctx.limit_ops(llm_vec_reference_ops(c));
  try {
    Placement rep;  // every cube holds the tensors, shared by its PEs
    rep.cubes = C;
    Tensor in[2];
    for (int i = 0; i < inputs; ++i) in[i] = ctx.zeros({c.rows, c.cols}, DType::f16, rep, i == 0 ? "x" : "y");
    ctx.launch("llm_vector", LaunchGrid{1, C, P}, [&](PeProgram& p) {
      const std::int64_t g = p.rank().cube * P + p.rank().pe, rows = llm_vec_rows_of(c, g);
      if (rows == 0) return;
      const std::int64_t first = g * c.rows / parts, T = llm_vec_tile_rows(c, rows);
      SramBuf buf[2];
      for (int i = 0; i < inputs; ++i) buf[i] = p.sram(T * c.cols * 2, DType::f16);
      const SramBuf row = p.sram(T * 4, DType::f32);
      for (std::int64_t lo = 0; lo < rows; lo += T) {
        const std::int64_t t = std::min(T, rows - lo), n = t * c.cols;
        const Region reg{first + lo, t, 0, c.cols};
        const OpId a = p.load(in[0], reg, buf[0]);
        const OpId loaded = inputs == 2 ? p.load(in[1], reg, buf[1]) : a;
        const SramBuf x = buf[0], y = inputs == 2 ? buf[1] : buf[0];
        OpId last = loaded;
        switch (kind) {
          case LlmKernelKind::norm:
            last = p.vector_mul(x, x, n, {loaded});
            last = p.row_sum(row, x, t, c.cols, {last});
            last = p.vector_exp(row, t, {last});
            last = p.row_mul(x, row, t, c.cols, {last});
            last = p.vector_mul(x, x, n, {last});
            break;
          case LlmKernelKind::rope:
            last = p.vector_mul(x, x, n, {loaded});
            last = p.vector_mul(x, x, n, {last});
            last = p.vector_add(x, x, n, {last});
            break;
          case LlmKernelKind::silu_mul:
            last = p.vector_exp(x, n, {a, loaded});
            last = p.vector_add(x, x, n, {last});
            last = p.row_div(x, row, t, c.cols, {last});
            last = p.vector_mul(x, x, n, {last});
            last = p.vector_mul(x, y, n, {last});
            break;
          case LlmKernelKind::residual: last = p.vector_add(x, y, n, {a, loaded}); break;
          default: break;  // kv_append: the tile goes back as it came
        }
        p.store(x, in[0], reg, {last});
      }
    });
  } catch (const InputError& e) {
    throw InternalError(std::string("the llm vector kernel was rejected by the runtime: ") + e.what(), __FILE__, __LINE__);
  }
  const RunReport report = ctx.run_checked("llm", "llm vector kernel");
  if (trace_path) ctx.write_trace(*trace_path, report);
  const engine::Summary& s = report.summary;
  r.latency_ps = s.latency_ps;
  r.vector_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::vector)];
  r.dma_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  return r;
}

}  // namespace kb
