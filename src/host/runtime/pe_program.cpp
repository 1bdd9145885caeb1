// PeProgram: the ops one PE's program issues (SRAM buffers, HBM loads and stores, matmuls,
// vector ops, copies over the network, signals), each added to the launch's op graph with
// its resource, duration and dependencies (the context itself: context.cpp).
#include "context.h"

#include "../../device/models/systolic.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "../common/error.h"

namespace kb {

using engine::OpKind;
using engine::ResourceClass;
using engine::ResourceId;

namespace {
// Visits the elements of a block of a tensor of padded dimensions `dim`, in row-major order:
// f(offset in the tensor, index in the block).
template <class F>
void for_each_element(const std::int64_t* dim, const Block& b, F&& f) {
  auto index = [dim](const std::int64_t* at) { return ((at[0] * dim[1] + at[1]) * dim[2] + at[2]) * dim[3] + at[3]; };
  std::int64_t at[kMaxDims], k = 0;
  for (at[0] = b.lo[0]; at[0] < b.lo[0] + b.len[0]; ++at[0])
    for (at[1] = b.lo[1]; at[1] < b.lo[1] + b.len[1]; ++at[1])
      for (at[2] = b.lo[2]; at[2] < b.lo[2] + b.len[2]; ++at[2])
        for (at[3] = b.lo[3]; at[3] < b.lo[3] + b.len[3]; ++at[3]) f(static_cast<std::size_t>(index(at)), static_cast<std::size_t>(k++));
}
}  // namespace

// ---- PeProgram ---------------------------------------------------------------------

namespace {
[[noreturn]] __attribute__((noinline, cold)) void transfer_overflows_error(std::int64_t bytes) {
  throw InputError("transfer of " + std::to_string(bytes) + " bytes: its time would overflow int64 picoseconds");
}
// A transfer whose time could not be represented in int64 picoseconds is refused.
inline void check_transfer(std::int64_t bytes) {
  if (transfer_overflows(bytes, 1)) transfer_overflows_error(bytes);
}
[[noreturn]] __attribute__((noinline, cold)) void region_of_nd_error(const std::string& name, std::size_t dims) {
  throw InputError("tensor '" + name + "' has " + std::to_string(dims) + " dimensions: address it with a Box, not a 2-D Region");
}
}  // namespace

const TopologySpec& PeProgram::topology() const { return ctx_.topo_; }

engine::Op PeProgram::base(OpKind kind, ResourceId res) const {
  engine::Op op = proto_;  // a copy (vector moves); a cleared Op is a string-instruction clear
  op.kind = kind;
  op.resource = res;
  op.issue = ctx_.issued_[static_cast<std::size_t>(ctx_.global_pe(rank_))]++;
  return op;
}

SramBuf PeProgram::sram(std::int64_t bytes, DType dtype) {
  const std::int32_t id = ctx_.add_buf(ctx_.global_pe(rank_), bytes, dtype, ctx_.rank_name(rank_) + ": kernel");
  ctx_.bufs_[static_cast<std::size_t>(id)].launch = ctx_.launches_;
  return SramBuf{id};
}

void PeProgram::free(SramBuf buf) {
  const auto& b = ctx_.use_buf(buf, rank_, 0, "free");
  if (b.base >= 0) throw InputError("free: the buffer is a slice of another; free that one");
  if (b.launch != ctx_.launches_)
    throw InputError("free: " + ctx_.rank_name(rank_) + " frees a buffer it did not allocate in this launch");
  ctx_.release(buf.id);
}

SramBuf PeProgram::local(SymBuf s) const { return at(s, rank_); }

SramBuf PeProgram::slice(SramBuf buf, std::int64_t offset, std::int64_t count) {
  if (buf.id < 0 || buf.id >= static_cast<std::int32_t>(ctx_.bufs_.size())) throw InputError("slice: not an SRAM buffer");
  const auto& b = ctx_.bufs_[static_cast<std::size_t>(buf.id)];
  const std::int64_t n = b.bytes / dtype_bytes(b.dtype);
  if (offset < 0 || count < 1 || offset > n || count > n - offset)
    throw InputError("slice: values " + std::to_string(offset) + ".." + std::to_string(offset + count) +
                     " do not lie in a buffer of " + std::to_string(n));
  RuntimeContext::BufInfo v{b.pe, count * dtype_bytes(b.dtype), b.dtype, {}};
  v.held = false;
  v.base = b.base >= 0 ? b.base : buf.id;
  v.offset = b.offset + offset;
  ctx_.bufs_.push_back(std::move(v));
  return SramBuf{static_cast<std::int32_t>(ctx_.bufs_.size() - 1)};
}

float* RuntimeContext::vals(std::int32_t buf) {
  BufInfo& b = bufs_[static_cast<std::size_t>(buf)];
  return b.base >= 0 ? bufs_[static_cast<std::size_t>(b.base)].data.data() + b.offset : b.data.data();
}

std::size_t RuntimeContext::nvals(std::int32_t buf) const {
  const BufInfo& b = bufs_[static_cast<std::size_t>(buf)];
  return static_cast<std::size_t>(b.bytes / dtype_bytes(b.dtype));
}

SramBuf PeProgram::at(SymBuf sym, const Rank& r) const {
  return SramBuf{ctx_.sym_instance(sym, r, "", true)};
}

OpId PeProgram::send(Channel ch, SramBuf src, const Rank& to, SramBuf dst, std::int64_t bytes, Deps deps) {
  if (ch.id < 0 || ch.id >= static_cast<std::int32_t>(ctx_.channels_.size())) throw InputError("send on an unknown channel");
  const OpId landed = copy(src, to, dst, bytes, deps);
  auto& end = ctx_.channel_ends_[{ch.id, ctx_.global_pe(rank_), ctx_.global_pe(to)}];
  if (end.signals_head < end.signals.size()) ctx_.graph_.add_dep(end.signals[end.signals_head++], landed);
  else end.sends.push_back(landed);
  return landed;
}

OpId PeProgram::recv(Channel ch, const Rank& from) {
  if (ch.id < 0 || ch.id >= static_cast<std::int32_t>(ctx_.channels_.size())) throw InputError("recv on an unknown channel");
  const auto& T = ctx_.topo_;
  if (from.sip < 0 || from.sip >= T.sips || from.cube < 0 || from.cube >= T.cubes_per_sip() || from.pe < 0 ||
      from.pe >= T.pes_per_cube())
    throw InputError("recv from " + ctx_.rank_name(from) + ", which does not exist");
  if (ctx_.global_pe(from) == ctx_.global_pe(rank_)) throw InputError("recv by " + ctx_.rank_name(rank_) + " from itself");
  auto& end = ctx_.channel_ends_[{ch.id, ctx_.global_pe(from), ctx_.global_pe(rank_)}];
  if (end.sends_head < end.sends.size()) return wait({end.sends[end.sends_head++]});
  // Not sent yet: a signal the matching send will raise.
  const std::size_t n = end.signals.size();
  const Signal s = ctx_.signal("channel " + ctx_.channels_[static_cast<std::size_t>(ch.id)] + " " +
                               ctx_.rank_name(from) + "->" + ctx_.rank_name(rank_) + " #" + std::to_string(n));
  end.signals.push_back(s.op);
  return wait({s.op});
}

Block PeProgram::block_of(Tensor t, const Region& r) const {
  const auto& info = ctx_.tensor(t);
  if (info.shape.size() > 2) region_of_nd_error(info.name, info.shape.size());
  Block b;
  b.lo[2] = r.row0, b.len[2] = r.rows, b.lo[3] = r.col0, b.len[3] = r.cols;
  return b;
}

Block PeProgram::block_of(Tensor t, const Box& box) const {
  const auto& info = ctx_.tensor(t);
  const std::size_t nd = info.shape.size();
  if (box.lo.size() != nd || box.len.size() != nd)
    throw InputError("tensor '" + info.name + "': a box needs " + std::to_string(nd) + " starts and extents");
  Block b;
  for (std::size_t d = 0; d < nd; ++d) {
    b.lo[kMaxDims - nd + d] = box.lo[d];
    b.len[kMaxDims - nd + d] = box.len[d];
  }
  return b;
}

OpId PeProgram::load(Tensor src, const Region& g, SramBuf dst, Deps deps) { return hbm_op(true, src, block_of(src, g), dst, deps); }
OpId PeProgram::store(SramBuf src, Tensor dst, const Region& g, Deps deps) { return hbm_op(false, dst, block_of(dst, g), src, deps); }
OpId PeProgram::load(Tensor src, const Box& b, SramBuf dst, Deps deps) { return hbm_op(true, src, block_of(src, b), dst, deps); }
OpId PeProgram::store(SramBuf src, Tensor dst, const Box& b, Deps deps) { return hbm_op(false, dst, block_of(dst, b), src, deps); }

// A load (HBM -> SRAM) or store on this PE's DMA queue; the block lies in a shard on its cube.
OpId PeProgram::hbm_op(bool load, Tensor tensor, const Block& g, SramBuf buf, Deps deps) {
  const auto& t = ctx_.tensor(tensor);
  ctx_.local_shard(t, rank_, g);
  const std::int64_t elements = g.elements(), bytes = elements * dtype_bytes(t.dtype);
  // The buffer holds the block's elements in its own type (loads round to it).
  const auto& info = ctx_.use_elements(buf, rank_, elements, load ? "load" : "store");
  check_transfer(bytes);  // at its HBM share, checked when the launch ends
  engine::Op op = base(load ? OpKind::dma_load : OpKind::dma_store, ctx_.pe_resource(rank_, ResourceClass::dma));
  op.bytes = bytes;
  (load ? op.sram_write : op.sram_read) = elements * dtype_bytes(info.dtype);  // the buffer's side
  op.latency_ps = ctx_.topo_.hbm_latency_ns * kPsPerNs;
  const OpId id = ctx_.graph_.add_op(op, deps);
  if (load) ctx_.gate_read(id, tensor);
  ctx_.hbm_access(id, op, rank_, 0);  // its time is set when the launch ends
  if (ctx_.opts_.enable_data) {
    ctx_.graph_.set_action(id, [&ctx = ctx_, load, tensor, buf, g]() {
      auto& T = ctx.tensors_[static_cast<std::size_t>(tensor.id)];
      const DType bt = ctx.bufs_[static_cast<std::size_t>(buf.id)].dtype;
      float* B = ctx.vals(buf.id);
      if (load) for_each_element(T.dim, g, [&](std::size_t at, std::size_t k) { B[k] = round_to(bt, T.data[at]); });
      else for_each_element(T.dim, g, [&](std::size_t at, std::size_t k) { T.data[at] = round_to(T.dtype, B[k]); });
    });
  }
  return id;
}

OpId PeProgram::matmul(SramBuf a, SramBuf b, SramBuf c, std::int64_t m, std::int64_t n, std::int64_t k,
                       bool accumulate, Deps deps, bool b_transposed) {
  if (m <= 0 || n <= 0 || k <= 0) throw InputError("matmul with an empty dimension");
  const DType ta = ctx_.use_elements(a, rank_, m * k, "matmul A").dtype;
  const DType tb = ctx_.use_elements(b, rank_, k * n, "matmul B").dtype;
  const DType tc = ctx_.use_elements(c, rank_, m * n, "matmul C").dtype;
  const auto& T = ctx_.topo_;
  engine::Op op = base(OpKind::matmul, ctx_.pe_resource(rank_, ResourceClass::matrix));
  auto& memo = ctx_.last_matmul_;
  if (memo.m != m || memo.n != n || memo.k != k) {
    memo.m = m, memo.n = n, memo.k = k;
    memo.cycles = systolic_cycles(m, n, k, T.matrix_rows, T.matrix_cols, T.dataflow);
    memo.busy_ps = cycles_ps(memo.cycles, T.clock_mhz);
  }
  op.cycles = memo.cycles;
  op.macs = m * n * k;
  const SramBytes sb = matmul_sram(m, n, k, dtype_bytes(ta), dtype_bytes(tb), dtype_bytes(tc), accumulate);
  op.sram_read = sb.read, op.sram_write = sb.write;
  op.busy_ps = memo.busy_ps;
  const OpId id = ctx_.graph_.add_op(op, deps);
  if (ctx_.opts_.enable_data) {
    ctx_.graph_.set_action(id, [&ctx = ctx_, a, b, c, m, n, k, accumulate, b_transposed]() {
      const float* A = ctx.vals(a.id);
      const float* B = ctx.vals(b.id);
      float* C = ctx.vals(c.id);
      const std::int64_t row = b_transposed ? 1 : n, col = b_transposed ? k : 1;  // B[q, j] at q row + j col
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          float acc = accumulate ? C[static_cast<std::size_t>(i * n + j)] : 0.0f;
          for (std::int64_t q = 0; q < k; ++q)
            acc += A[static_cast<std::size_t>(i * k + q)] * B[static_cast<std::size_t>(q * row + j * col)];
          C[static_cast<std::size_t>(i * n + j)] = acc;
        }
    });
  }
  return id;
}

namespace {

// A vector op's values (data mode): D = op(D, S) in f32, stored rounded to the type `dt`.
void vector_values(VecOp kind, DType dt, float* D, const float* S, std::int64_t rows, std::int64_t cols, float s, float s2,
                   std::int64_t period) {
  auto at = [](float* v, std::int64_t i) -> float& { return v[i]; };
  auto in = [&](std::int64_t i) { return S[i]; };
  if (kind == VecOp::row_sum || kind == VecOp::row_max || kind == VecOp::row_sumsq) {
    for (std::int64_t r = 0; r < rows; ++r) {
      float acc = kind == VecOp::row_sumsq ? 0.0f : in(r * cols);
      for (std::int64_t c = kind == VecOp::row_sumsq ? 0 : 1; c < cols; ++c) {
        const float x = in(r * cols + c);
        acc = kind == VecOp::row_sum ? acc + x : kind == VecOp::row_sumsq ? acc + x * x : std::max(acc, x);
      }
      at(D, r) = round_to(dt, acc);
    }
    return;
  }
  if (kind == VecOp::rope) {  // each head's halves (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)
    const std::int64_t half = period / 2;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t h = 0; h < cols; h += period)
        for (std::int64_t i = 0; i < half; ++i) {
          float& a = at(D, r * cols + h + i);
          float& b = at(D, r * cols + h + half + i);
          const float cs = in(r * period + i), sn = in(r * period + half + i), x1 = a, x2 = b;
          a = round_to(dt, x1 * cs - x2 * sn);
          b = round_to(dt, x2 * cs + x1 * sn);
        }
    return;
  }
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    float& d = at(D, i);
    float v = 0.0f;
    switch (kind) {
      case VecOp::add: v = d + in(i); break;
      case VecOp::mul: v = d * in(i); break;
      case VecOp::max: v = std::max(d, in(i)); break;
      case VecOp::scale: v = d * s; break;
      case VecOp::exp: v = std::exp(d); break;
      case VecOp::copy: v = in(i); break;
      case VecOp::sub: v = d - in(i); break;
      case VecOp::row_sub: v = d - in(i / cols); break;
      case VecOp::row_mul: v = d * in(i / cols); break;
      case VecOp::row_div: v = d / in(i / cols); break;
      case VecOp::rsqrt: v = 1.0f / std::sqrt(d * s + s2); break;
      case VecOp::col_mul: v = d * in(i % cols); break;
      case VecOp::silu: v = d / (1.0f + std::exp(-d)); break;
      default: break;
    }
    d = round_to(dt, v);
  }
}

}  // namespace

OpId PeProgram::vector_op(VecOp kind, SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, float s,
                          Deps deps, float s2, std::int64_t period) {
  if (rows <= 0 || cols <= 0) throw InputError("vector op with no elements");
  const bool reduce = kind == VecOp::row_sum || kind == VecOp::row_max || kind == VecOp::row_sumsq;
  const bool unary = kind == VecOp::scale || kind == VecOp::exp || kind == VecOp::rsqrt || kind == VecOp::silu;
  const bool broadcast = kind == VecOp::row_sub || kind == VecOp::row_mul || kind == VecOp::row_div;
  if (kind == VecOp::rope && (period < 2 || period % 2 != 0 || cols % period != 0))
    throw InputError("rope on " + ctx_.rank_name(rank_) + ": heads of " + std::to_string(period) +
                     " values (even, at least 2) must tile rows of " + std::to_string(cols));
  auto elements_of = [&](SramBuf b) {
    const auto& info = ctx_.use_buf(b, rank_, 0, "vector op");
    return info.bytes / dtype_bytes(info.dtype);
  };
  auto value_bytes = [&](SramBuf b) { return dtype_bytes(ctx_.use_buf(b, rank_, 0, "vector op").dtype); };
  const std::int64_t src_need = broadcast ? rows : kind == VecOp::col_mul ? cols : kind == VecOp::rope ? rows * period : rows * cols;
  if (elements_of(dst) < (reduce ? rows : rows * cols) || (!unary && elements_of(src) < src_need))
    throw InputError("vector op on " + ctx_.rank_name(rank_) + ": " + std::to_string(rows * cols) +
                     " elements do not fit its buffers");
  engine::Op op = base(OpKind::vector, ctx_.pe_resource(rank_, ResourceClass::vector));
  op.cycles = vector_cycles(kind, rows, cols, ctx_.topo_.vector_lanes);
  op.busy_ps = cycles_ps(op.cycles, ctx_.topo_.clock_mhz);
  op.vector_ops = vector_element_ops(kind, rows, cols);
  const SramBytes sb = vector_sram(kind, rows, cols, value_bytes(dst), unary ? 0 : value_bytes(src), period);
  op.sram_read = sb.read, op.sram_write = sb.write;
  const OpId id = ctx_.graph_.add_op(op, deps);
  if (ctx_.opts_.enable_data) {
    ctx_.graph_.set_action(id, [&ctx = ctx_, kind, dst, src, rows, cols, s, s2, period, unary]() {
      const DType dt = ctx.bufs_[static_cast<std::size_t>(dst.id)].dtype;
      vector_values(kind, dt, ctx.vals(dst.id), unary ? nullptr : ctx.vals(src.id), rows, cols, s, s2, period);
    });
  }
  return id;
}

OpId PeProgram::vector_add(SramBuf dst, SramBuf src, std::int64_t n, Deps deps) {
  return vector_op(VecOp::add, dst, src, 1, n, 0.0f, deps);
}
OpId PeProgram::vector_mul(SramBuf dst, SramBuf src, std::int64_t n, Deps deps) {
  return vector_op(VecOp::mul, dst, src, 1, n, 0.0f, deps);
}
OpId PeProgram::vector_max(SramBuf dst, SramBuf src, std::int64_t n, Deps deps) {
  return vector_op(VecOp::max, dst, src, 1, n, 0.0f, deps);
}
OpId PeProgram::vector_scale(SramBuf dst, std::int64_t n, float s, Deps deps) {
  return vector_op(VecOp::scale, dst, dst, 1, n, s, deps);
}
OpId PeProgram::vector_exp(SramBuf dst, std::int64_t n, Deps deps) { return vector_op(VecOp::exp, dst, dst, 1, n, 0.0f, deps); }
OpId PeProgram::vector_copy(SramBuf dst, SramBuf src, std::int64_t n, Deps deps) {
  return vector_op(VecOp::copy, dst, src, 1, n, 0.0f, deps);
}
OpId PeProgram::vector_sub(SramBuf dst, SramBuf src, std::int64_t n, Deps deps) {
  return vector_op(VecOp::sub, dst, src, 1, n, 0.0f, deps);
}
OpId PeProgram::row_sub(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::row_sub, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::row_mul(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::row_mul, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::row_div(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::row_div, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::row_sum(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::row_sum, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::row_max(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::row_max, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::row_sumsq(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::row_sumsq, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::vector_rsqrt(SramBuf dst, std::int64_t n, float s, float eps, Deps deps) {
  return vector_op(VecOp::rsqrt, dst, dst, 1, n, s, deps, eps);
}
OpId PeProgram::col_mul(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps) {
  return vector_op(VecOp::col_mul, dst, src, rows, cols, 0.0f, deps);
}
OpId PeProgram::rope(SramBuf dst, SramBuf table, std::int64_t rows, std::int64_t cols, std::int64_t head_dim, Deps deps) {
  return vector_op(VecOp::rope, dst, table, rows, cols, 0.0f, deps, 0.0f, head_dim);
}
OpId PeProgram::vector_silu(SramBuf dst, std::int64_t n, Deps deps) { return vector_op(VecOp::silu, dst, dst, 1, n, 0.0f, deps); }
OpId PeProgram::causal_scale(SramBuf dst, std::int64_t rows, std::int64_t cols, float s, std::int64_t first_token,
                             std::int64_t heads, std::int64_t pos0, Deps deps) {
  const OpId id = vector_op(VecOp::scale, dst, dst, 1, rows * cols, s, deps);
  if (ctx_.opts_.enable_data)
    ctx_.graph_.set_action(id, [&ctx = ctx_, dst, rows, cols, s, first_token, heads, pos0]() {
      const DType dt = ctx.bufs_[static_cast<std::size_t>(dst.id)].dtype;
      float* D = ctx.vals(dst.id);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
          float& v = D[r * cols + c];
          v = pos0 + c > first_token + r / heads ? -INFINITY : round_to(dt, v * s);
        }
    });
  return id;
}

OpId PeProgram::copy(SramBuf src, const Rank& to, SramBuf dst, std::int64_t bytes, Deps deps) {
  return transfer(CopyEnd{src, {}, {}}, to, CopyEnd{dst, {}, {}}, bytes, deps);
}
OpId PeProgram::copy(Tensor src, const Region& region, const Rank& to, SramBuf dst, Deps deps) {
  return transfer(CopyEnd{{}, src, block_of(src, region)}, to, CopyEnd{dst, {}, {}}, -1, deps);
}
OpId PeProgram::copy(SramBuf src, const Rank& to, Tensor dst, const Region& region, Deps deps) {
  return transfer(CopyEnd{src, {}, {}}, to, CopyEnd{{}, dst, block_of(dst, region)}, -1, deps);
}
OpId PeProgram::copy(Tensor src, const Region& src_region, const Rank& to, Tensor dst, const Region& dst_region, Deps deps) {
  return transfer(CopyEnd{{}, src, block_of(src, src_region)}, to, CopyEnd{{}, dst, block_of(dst, dst_region)}, -1, deps);
}
OpId PeProgram::copy(Tensor src, const Box& box, const Rank& to, SramBuf dst, Deps deps) {
  return transfer(CopyEnd{{}, src, block_of(src, box)}, to, CopyEnd{dst, {}, {}}, -1, deps);
}
OpId PeProgram::copy(Tensor src, const Box& src_box, const Rank& to, Tensor dst, const Box& dst_box, Deps deps) {
  return transfer(CopyEnd{{}, src, block_of(src, src_box)}, to, CopyEnd{{}, dst, block_of(dst, dst_box)}, -1, deps);
}
OpId PeProgram::copy(SramBuf src, const Rank& to, Tensor dst, const Box& box, Deps deps) {
  return transfer(CopyEnd{src, {}, {}}, to, CopyEnd{{}, dst, block_of(dst, box)}, -1, deps);
}

// A copy is a chain of hops, each an op, each starting once the message's head has crossed
// the one before (cut-through, ADR 0007): a DMA read on this PE's queue when the source is
// in HBM, the route's links and ports (src/device/common/network.h), and a DMA write on the
// destination PE's HBM write port when the destination is in HBM.
std::int64_t PeProgram::transfer_bytes(const CopyEnd& src, const Rank& to, const CopyEnd& dst, std::int64_t bytes) {
  const auto& T = ctx_.topo_;
  if (to.sip < 0 || to.sip >= T.sips || to.cube < 0 || to.cube >= T.cubes_per_sip() || to.pe < 0 ||
      to.pe >= T.pes_per_cube())
    throw InputError("copy to " + ctx_.rank_name(to) + ", which does not exist");
  const Rank& from = rank_;
  const bool same = from.sip == to.sip && from.cube == to.cube && from.pe == to.pe;
  auto tensor_bytes = [&](const CopyEnd& e, const Rank& at) {
    const auto& t = ctx_.tensor(e.tensor);
    ctx_.local_shard(t, at, e.block);  // it must lie in a shard on that rank's cube
    return e.block.elements() * dtype_bytes(t.dtype);
  };
  if (src.hbm()) bytes = tensor_bytes(src, from);
  if (dst.hbm()) {
    const std::int64_t b = tensor_bytes(dst, to);
    if (bytes >= 0 && b != bytes)
      throw InputError("copy: the destination region holds " + std::to_string(b) + " bytes, the source " +
                       std::to_string(bytes));
    bytes = b;
  }
  if (bytes <= 0) throw InputError("copy of " + std::to_string(bytes) + " bytes");
  check_transfer(bytes);  // hops at an HBM share are checked when the launch ends
  if (same && !src.hbm() && !dst.hbm()) throw InputError("copy from " + ctx_.rank_name(from) + " to itself");
  // SRAM ends: the source on this PE, the destination on `to`, the bytes fitting both, and
  // one element type, so that data moves as it is timed.
  if (!src.hbm()) ctx_.use_buf(src.buf, from, bytes, "copy source");
  if (!dst.hbm()) ctx_.use_buf(dst.buf, to, bytes, "copy destination");
  auto type_of = [&](const CopyEnd& e) {
    return e.hbm() ? ctx_.tensor(e.tensor).dtype : ctx_.bufs_[static_cast<std::size_t>(e.buf.id)].dtype;
  };
  if (type_of(src) != type_of(dst))
    throw InputError(std::string("copy: the source holds ") + to_string(type_of(src)) + " and the destination " +
                     to_string(type_of(dst)) + " values");
  if (bytes % dtype_bytes(type_of(src)) != 0)
    throw InputError("copy of " + std::to_string(bytes) + " bytes: not a whole number of " + to_string(type_of(src)) + " values");

  return bytes;
}

OpId PeProgram::transfer(const CopyEnd& src, const Rank& to, const CopyEnd& dst, std::int64_t bytes, Deps deps) {
  bytes = transfer_bytes(src, to, dst, bytes);
  const auto& T = ctx_.topo_;
  const Rank& from = rank_;
  const bool same = from.sip == to.sip && from.cube == to.cube && from.pe == to.pe;
  OpId prev = engine::kNoOp, first = engine::kNoOp;
  std::vector<OpId> first_deps(deps);
  if (src.hbm() && ctx_.gate_ != engine::kNoOp && !ctx_.tensor(src.tensor).resident) first_deps.push_back(ctx_.gate_);
  std::vector<OpId> chain;
  auto add_hop = [&](const engine::Op& op) {
    chain.push_back(static_cast<OpId>(ctx_.graph_.ops().size()));
    if (prev == engine::kNoOp) {
      prev = ctx_.graph_.add_op(op, first_deps.data(), first_deps.size());
      first = prev;
    } else {
      const OpId next = ctx_.graph_.add_op(op, {});
      ctx_.graph_.add_head_dep(next, prev);
      prev = next;
    }
    return prev;
  };
  const ps_t hbm_latency = T.hbm_latency_ns * kPsPerNs;
  if (src.hbm()) {  // read on this PE's DMA queue, at its HBM share (set when the launch ends)
    engine::Op op = base(OpKind::dma_load, ctx_.pe_resource(rank_, ResourceClass::dma));
    op.bytes = bytes;
    op.latency_ps = hbm_latency;
    ctx_.hbm_access(add_hop(op), op, from, 0);
  }
  if (!same)
    net::for_each_hop(T, net::Node{from.sip, from.cube, from.pe}, net::Node{to.sip, to.cube, to.pe}, [&](const net::Hop& h) {
      engine::Op op = base(OpKind::copy, ctx_.link_resource(h.link));
      op.bytes = bytes;
      op.level = h.kind == net::LinkKind::cube_link  ? engine::LinkLevel::cube
                 : h.kind == net::LinkKind::sip_link ? engine::LinkLevel::sip
                                                     : engine::LinkLevel::pe;
      op.busy_ps = transfer_ps(bytes, h.bandwidth_gbps);
      op.latency_ps = h.latency_ns * kPsPerNs;
      add_hop(op);
    });
  if (dst.hbm()) {  // written through the destination PE's HBM write port, at its HBM share
    engine::Op op = base(OpKind::dma_store, ctx_.dma_in_resource(to));
    op.bytes = bytes;
    op.latency_ps = hbm_latency;
    ctx_.hbm_access(add_hop(op), op, to, 1);
  }
  // Its SRAM ends: the source read as the first hop leaves, the destination written by the last.
  if (!src.hbm()) ctx_.graph_.add_sram(first, bytes, 0);
  if (!dst.hbm()) ctx_.graph_.add_sram(prev, 0, bytes);
  // A chain streams at its slowest hop; with an HBM end that is known when the launch ends.
  if (src.hbm() || dst.hbm()) ctx_.chains_.push_back(std::move(chain));
  if (ctx_.opts_.enable_data) transfer_values(src, dst, bytes, first, prev);
  return prev;
}

void PeProgram::transfer_values(const CopyEnd& src, const CopyEnd& dst, std::int64_t bytes, OpId first, OpId last) {
  // The source is read when the first hop completes and written at the destination when
  // the last one does (both ends hold one type).
  auto snapshot = std::make_shared<std::vector<float>>();
  RuntimeContext& ctx = ctx_;
  auto read = [&ctx, src, snapshot, bytes]() {
    if (src.hbm()) {
      const auto& t = ctx.tensors_[static_cast<std::size_t>(src.tensor.id)];
      snapshot->assign(static_cast<std::size_t>(src.block.elements()), 0.0f);
      for_each_element(t.dim, src.block, [&](std::size_t at, std::size_t k) { (*snapshot)[k] = t.data[at]; });
    } else {
      const auto& b = ctx.bufs_[static_cast<std::size_t>(src.buf.id)];
      const auto n = std::min(static_cast<std::size_t>(bytes / dtype_bytes(b.dtype)), ctx.nvals(src.buf.id));
      const float* v = ctx.vals(src.buf.id);
      snapshot->assign(v, v + n);
    }
  };
  auto write = [&ctx, dst, snapshot]() {
    if (dst.hbm()) {
      auto& t = ctx.tensors_[static_cast<std::size_t>(dst.tensor.id)];
      for_each_element(t.dim, dst.block, [&](std::size_t at, std::size_t k) {
        if (k < snapshot->size()) t.data[at] = round_to(t.dtype, (*snapshot)[k]);
      });
    } else {
      const DType bt = ctx.bufs_[static_cast<std::size_t>(dst.buf.id)].dtype;
      float* v = ctx.vals(dst.buf.id);
      for (std::size_t i = 0; i < snapshot->size() && i < ctx.nvals(dst.buf.id); ++i) v[i] = round_to(bt, (*snapshot)[i]);
    }
  };
  if (first == last) {
    ctx_.graph_.set_action(first, [read, write]() {
      read();
      write();
    });
  } else {
    ctx_.graph_.set_action(first, read);
    ctx_.graph_.set_action(last, write);
  }
}

OpId PeProgram::add_hbm(Tensor dst, const Box& dst_box, Tensor src, const Box& src_box, Deps deps) {
  const auto& T = ctx_.topo_;
  const Block bd = block_of(dst, dst_box), bs = block_of(src, src_box);
  const auto& td = ctx_.tensor(dst);
  const auto& ts = ctx_.tensor(src);
  ctx_.local_shard(td, rank_, bd);
  ctx_.local_shard(ts, rank_, bs);
  if (bd.elements() != bs.elements())
    throw InputError("add_hbm: the destination holds " + std::to_string(bd.elements()) + " values, the source " +
                     std::to_string(bs.elements()));
  if (td.dtype != ts.dtype) throw InputError("add_hbm: the operands hold different types");
  const std::int64_t elements = bd.elements(), bytes = elements * dtype_bytes(td.dtype);
  check_transfer(2 * bytes);
  const ps_t hbm_latency = T.hbm_latency_ns * kPsPerNs;
  engine::Op rd = base(OpKind::dma_load, ctx_.pe_resource(rank_, ResourceClass::dma));
  rd.bytes = 2 * bytes;
  rd.latency_ps = hbm_latency;
  const OpId r = ctx_.graph_.add_op(rd, deps);
  ctx_.hbm_access(r, rd, rank_, 0);
  engine::Op ad = base(OpKind::vector, ctx_.pe_resource(rank_, ResourceClass::vector));
  ad.cycles = vector_cycles(VecOp::add, 1, elements, T.vector_lanes);
  ad.busy_ps = cycles_ps(ad.cycles, T.clock_mhz);
  ad.vector_ops = vector_element_ops(VecOp::add, 1, elements);  // streamed HBM to HBM: no SRAM
  const OpId a = ctx_.graph_.add_op(ad, {});
  ctx_.graph_.add_head_dep(a, r);
  engine::Op wr = base(OpKind::dma_store, ctx_.dma_in_resource(rank_));
  wr.bytes = bytes;
  wr.latency_ps = hbm_latency;
  const OpId w = ctx_.graph_.add_op(wr, {});
  ctx_.graph_.add_head_dep(w, a);
  ctx_.hbm_access(w, wr, rank_, 1);
  ctx_.chains_.push_back({r, a, w});
  if (ctx_.opts_.enable_data) {
    ctx_.graph_.set_action(w, [&ctx = ctx_, dst, src, bd, bs]() {
      auto& D = ctx.tensors_[static_cast<std::size_t>(dst.id)];
      const auto& S = ctx.tensors_[static_cast<std::size_t>(src.id)];
      std::vector<float> in(static_cast<std::size_t>(bs.elements()));
      for_each_element(S.dim, bs, [&](std::size_t at, std::size_t k) { in[k] = S.data[at]; });
      for_each_element(D.dim, bd, [&](std::size_t at, std::size_t k) { D.data[at] = round_to(D.dtype, D.data[at] + in[k]); });
    });
  }
  return w;
}

OpId PeProgram::wait(Deps deps) {
  engine::Op op = base(OpKind::wait, engine::kNoResource);
  return ctx_.graph_.add_op(op, deps);
}

void PeProgram::raise(Signal s, OpId op) { ctx_.graph_.add_dep(s.op, op); }

}  // namespace kb
