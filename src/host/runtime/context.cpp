// RuntimeContext: tensors and their placement over cubes and PEs, SRAM and symmetric buffers,
// launches (and the HBM share each PE gets when a launch ends), resources, and the run of
// the op graph (the ops a PE's program issues: pe_program.cpp).
#include "context.h"

#include "links.h"

#include "../../device/models/systolic.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "../common/error.h"
#include "../common/output.h"

namespace kb {

using engine::OpKind;
using engine::ResourceClass;
using engine::ResourceId;

const char* to_string(Split s) {
  return s == Split::replicate ? "replicate" : s == Split::row_wise ? "row_wise" : "col_wise";
}

RuntimeContext::RuntimeContext(const TopologySpec& topology, ContextOptions options)
    : topo_(topology), cubes_per_sip_(topology.cubes_per_sip()), pes_per_cube_(topology.pes_per_cube()), opts_(options) {
  hbm_used_.assign(static_cast<std::size_t>(topo_.total_cubes()), 0);
  sram_used_.assign(static_cast<std::size_t>(topo_.total_pes()), 0);
  issued_.assign(static_cast<std::size_t>(topo_.total_pes()), 0);
  hbm_user_.assign(static_cast<std::size_t>(2 * topo_.total_pes()), 0);
  links_.assign(static_cast<std::size_t>(net::link_count(topo_)), engine::kNoResource);
  pe_res_.assign(static_cast<std::size_t>(topo_.total_pes() * kPeSlots), engine::kNoResource);
}

std::string RuntimeContext::rank_name(const Rank& r) const {
  return "sip" + std::to_string(r.sip) + ".cube" + std::to_string(r.cube) + ".pe" + std::to_string(r.pe);
}

Tensor RuntimeContext::make(std::vector<std::int64_t> shape, DType dtype, Placement pl, const std::string& name) {
  if (shape.empty() || shape.size() > static_cast<std::size_t>(kMaxDims))
    throw InputError("tensor '" + name + "': shape must have 1 to 4 dimensions");
  std::int64_t elements = 1;
  for (auto d : shape) {
    if (d <= 0 || d > (INT64_C(1) << 31)) throw InputError("tensor '" + name + "': every dimension must be in 1..2^31");
    if (elements > (INT64_C(1) << 48) / d) throw InputError("tensor '" + name + "': more than 2^48 elements");
    elements *= d;
  }
  if (pl.cubes < 1 || pl.cubes > topo_.cubes_per_sip())
    throw InputError("tensor '" + name + "': placement spans " + std::to_string(pl.cubes) + " cubes; a SIP has " +
                     std::to_string(topo_.cubes_per_sip()));
  if (pl.sip < 0 || pl.sip >= topo_.sips) throw InputError("tensor '" + name + "': placement names a SIP that does not exist");
  if (pl.granule < 1) throw InputError("tensor '" + name + "': placement granule must be >= 1");

  if (pl.pes < 1 || pl.pes > topo_.pes_per_cube())
    throw InputError("tensor '" + name + "': placement spans " + std::to_string(pl.pes) + " PEs; a cube has " +
                     std::to_string(topo_.pes_per_cube()));

  const int nd = static_cast<int>(shape.size()), pad = kMaxDims - nd;
  // The padded dimension a split divides.
  auto axis_of = [&](Split how, std::int32_t dim, const char* which) {
    if (dim < 0) return how == Split::row_wise ? pad : kMaxDims - 1;
    if (dim >= nd)
      throw InputError("tensor '" + name + "': placement splits dimension " + std::to_string(dim) + " over " + which +
                       "; the tensor has " + std::to_string(nd));
    return pad + dim;
  };
  const int cube_axis = axis_of(pl.cube, pl.cube_dim, "cubes"), pe_axis = axis_of(pl.pe, pl.pe_dim, "PEs");
  // Part `i` of `parts` of block b along `axis`, in whole granules.
  auto part = [&](Block b, Split how, int axis, std::int64_t i, std::int64_t parts) {
    if (how == Split::replicate) return b;
    const std::int64_t extent = b.len[axis];
    const std::int64_t units = ceil_div(extent, pl.granule);
    const std::int64_t lo = imin(extent, (i * units / parts) * pl.granule);
    const std::int64_t hi = imin(extent, ((i + 1) * units / parts) * pl.granule);
    b.lo[axis] += lo;
    b.len[axis] = hi - lo;
    return b;
  };

  TensorInfo t{name, elements / shape.back(), shape.back(), dtype, {}, {}, shape, {1, 1, 1, 1}};
  for (int d = 0; d < nd; ++d) t.dim[pad + d] = shape[static_cast<std::size_t>(d)];
  Block whole;
  for (int d = 0; d < kMaxDims; ++d) whole.len[d] = t.dim[d];
  const std::int64_t esize = dtype_bytes(dtype);
  std::vector<std::int64_t> need(static_cast<std::size_t>(pl.cubes), 0);  // per cube of the placement, charged once all fit
  for (std::int64_t c = 0; c < pl.cubes; ++c) {
    const Block cube_block = part(whole, pl.cube, cube_axis, c, pl.cubes);
    const std::int64_t cube = pl.sip * topo_.cubes_per_sip() + c;
    // Replicated over PEs: one copy the cube's PEs share; split: one part per PE.
    const std::int64_t parts = pl.pe == Split::replicate ? 1 : pl.pes;
    for (std::int64_t q = 0; q < parts; ++q) {
      const Block b = part(cube_block, pl.pe, pe_axis, q, parts);
      if (b.elements() == 0) continue;
      const std::int64_t bytes = b.elements() * esize;
      const std::int64_t used = hbm_used_[static_cast<std::size_t>(cube)] + need[static_cast<std::size_t>(c)];
      if (used + bytes > topo_.hbm_capacity_bytes())
        throw InputError("out of HBM memory: tensor '" + name + "' needs " + std::to_string(bytes) + " bytes on sip" +
                         std::to_string(pl.sip) + ".cube" + std::to_string(c) + ", which has " +
                         std::to_string(topo_.hbm_capacity_bytes() - used) + " of " +
                         std::to_string(topo_.hbm_capacity_bytes()) + " bytes free");
      need[static_cast<std::size_t>(c)] += bytes;
      t.shards.push_back(Shard{cube, pl.pe == Split::replicate ? -1 : q, b, bytes});
    }
  }
  for (std::size_t c = 0; c < need.size(); ++c)
    hbm_used_[static_cast<std::size_t>(pl.sip * topo_.cubes_per_sip()) + c] += need[c];
  if (opts_.enable_data) t.data.assign(static_cast<std::size_t>(elements), 0.0f);
  tensors_.push_back(std::move(t));
  return Tensor{static_cast<std::int32_t>(tensors_.size() - 1)};
}

Tensor RuntimeContext::zeros(std::vector<std::int64_t> shape, DType dtype, Placement p, const std::string& name) {
  return make(std::move(shape), dtype, p, name);
}
Tensor RuntimeContext::empty(std::vector<std::int64_t> shape, DType dtype, Placement p, const std::string& name) {
  return make(std::move(shape), dtype, p, name);
}
Tensor RuntimeContext::random(std::vector<std::int64_t> shape, DType dtype, Placement p, const std::string& name,
                              std::uint64_t seed) {
  Tensor t = make(std::move(shape), dtype, p, name);
  auto& data = tensors_[static_cast<std::size_t>(t.id)].data;
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = round_to(dtype, uniform_pm1(seed, i));
  return t;
}

void RuntimeContext::not_a_tensor() { throw InputError("not a tensor of this context"); }

const std::vector<float>& RuntimeContext::values(Tensor t) const {
  if (!opts_.enable_data) throw InputError("tensor values are only kept with enable_data");
  return tensor(t).data;
}
OpId RuntimeContext::join(std::size_t from) {
  engine::Op op{};
  op.kind = OpKind::signal;
  op.resource = engine::kNoResource;
  op.label = graph_.add_label("join");
  const OpId id = graph_.add_op(op, {});
  for (std::size_t i = from; i < static_cast<std::size_t>(id); ++i) graph_.add_dep(id, static_cast<OpId>(i));
  return id;
}

void RuntimeContext::assign(Tensor t, const std::vector<float>& values) {
  if (!opts_.enable_data) throw InputError("tensor values are only kept with enable_data");
  tensor(t);  // throws for a tensor of another context
  TensorInfo& info = tensors_[static_cast<std::size_t>(t.id)];
  if (values.size() != info.data.size())
    throw InputError("tensor '" + info.name + "' holds " + std::to_string(info.data.size()) + " values; " +
                     std::to_string(values.size()) + " given");
  for (std::size_t i = 0; i < values.size(); ++i) info.data[i] = round_to(info.dtype, values[i]);
}
std::int64_t RuntimeContext::rows(Tensor t) const { return tensor(t).rows; }
std::int64_t RuntimeContext::cols(Tensor t) const { return tensor(t).cols; }
const std::vector<std::int64_t>& RuntimeContext::shape(Tensor t) const { return tensor(t).shape; }

Signal RuntimeContext::signal(const std::string& name) {
  engine::Op op{};
  op.kind = OpKind::signal;
  op.resource = engine::kNoResource;
  op.label = graph_.add_label("signal " + name);
  return Signal{graph_.add_op(op, {})};
}

std::int32_t RuntimeContext::begin_launch(const std::string& name, const LaunchGrid& grid) {
  if (grid.sips < 1 || grid.sips > topo_.sips)
    throw InputError("launch '" + name + "': " + std::to_string(grid.sips) + " SIPs requested; the topology has " +
                     std::to_string(topo_.sips));
  if (grid.cubes < 1 || grid.cubes > topo_.cubes_per_sip())
    throw InputError("launch '" + name + "': " + std::to_string(grid.cubes) + " cubes requested; a SIP has " +
                     std::to_string(topo_.cubes_per_sip()));
  if (grid.pes < 1 || grid.pes > topo_.pes_per_cube())
    throw InputError("launch '" + name + "': " + std::to_string(grid.pes) + " PEs per cube requested; a cube has " +
                     std::to_string(topo_.pes_per_cube()));
  grid_ = grid;
  ++launches_;
  first_buf_of_launch_ = bufs_.size();
  return graph_.add_label(name);
}

// A launch's buffers return to their PEs when it ends (their values stay readable to the
// ops already issued).
// HBM share (ADR 0002 as amended by ADR 0007): each cube's HBM bandwidth is split evenly over
// the PEs of the cube that access HBM in this launch, so a PE's rate is min(its DMA rate,
// HBM rate / those PEs). Known only once every kernel of the launch has run.
void RuntimeContext::end_launch() {
  for (std::size_t b = first_buf_of_launch_; b < bufs_.size(); ++b)
    if (bufs_[b].launch == launches_ && bufs_[b].held) release(static_cast<std::int32_t>(b));
  // Sharers per cube: its HBM ports (a PE's DMA queue, a PE's HBM write port) used in this
  // launch; a PE that both reads and is written to takes two shares.
  const std::int64_t ppc = pes_per_cube_;
  std::int64_t last_cube = -1, sharers = 0;
  // The times of the last few sizes on this cube (a kernel's transfers alternate between a
  // few sizes: A and B tiles, C stores).
  constexpr int kSizes = 4;
  std::int64_t sizes[kSizes] = {-1, -1, -1, -1};
  ps_t times[kSizes] = {};
  int next_size = 0;
  for (const HbmOp& h : hbm_ops_) {
    if (h.cube != last_cube) {
      last_cube = h.cube;
      for (std::int64_t& b : sizes) b = -1;
      sharers = 0;
      for (std::int64_t p = 0; p < 2 * ppc; ++p) sharers += hbm_user_[static_cast<std::size_t>(2 * h.cube * ppc + p)] == launches_;
      sharers *= topo_.tenants();  // identical launches on the cube's other PEs use as many ports
    }
    const std::int64_t bytes = h.bytes;
    int k = 0;
    while (k < kSizes && sizes[k] != bytes) ++k;
    if (k == kSizes) {
      k = next_size;
      next_size = (next_size + 1) % kSizes;
      sizes[k] = bytes;
      // A time past the int64 guard is left for the engine to report (time_overflow).
      times[k] = transfer_overflows(bytes, sharers)
                     ? kTimeLimitPs + 1
                     : shared_transfer_ps(bytes, topo_.dma_gbps(), topo_.hbm_bandwidth_gbps, sharers);
    }
    graph_.set_first_busy(h.op, h.resource, times[k]);
  }
  // Every hop of a copy with an HBM end is held for as long as its slowest hop (cut-through
  // streams at the pipeline's slowest stage; ADR 0007).
  for (const auto& chain : chains_) {
    ps_t slowest = 0;
    for (OpId id : chain) slowest = std::max(slowest, graph_.ops()[static_cast<std::size_t>(id)].busy_ps);
    for (OpId id : chain) graph_.set_busy(id, slowest);
  }
  chains_.clear();
  hbm_ops_.clear();
}

void RuntimeContext::hbm_access(OpId id, const engine::Op& op, const Rank& r, int port) {
  hbm_user_[static_cast<std::size_t>(2 * global_pe(r) + port)] = launches_;
  // Field by field (an HbmOp built on the stack is read back in one wider word: store
  // forwarding fails).
  HbmOp& h = hbm_ops_.emplace_back();
  h.op = id, h.cube = static_cast<std::int32_t>(global_cube(r)), h.bytes = op.bytes, h.resource = op.resource;
}

// held_buf's checks again, in their order, for the first that fails.
void RuntimeContext::bad_buf(SramBuf b, const Rank& owner, const char* what) const {
  if (b.id < 0 || b.id >= static_cast<std::int32_t>(bufs_.size())) throw InputError(std::string(what) + ": not an SRAM buffer");
  if (bufs_[static_cast<std::size_t>(b.id)].pe != global_pe(owner))
    throw InputError(std::string(what) + ": the buffer is on another PE than " + rank_name(owner));
  throw InputError(std::string(what) + ": the buffer was freed (or its launch has ended)");
}

void RuntimeContext::too_small(const BufInfo& info, std::int64_t bytes, const char* what) {
  throw InputError(std::string(what) + ": " + std::to_string(bytes) + " bytes do not fit the buffer's " +
                   std::to_string(info.bytes));
}

void RuntimeContext::release(std::int32_t buf) {
  BufInfo& b = bufs_.at(static_cast<std::size_t>(buf));
  if (!b.held) throw InputError("SRAM buffer " + std::to_string(buf) + " freed twice");
  b.held = false;
  sram_used_[static_cast<std::size_t>(b.pe)] -= b.bytes;
}

std::int32_t RuntimeContext::add_buf(std::int64_t pe, std::int64_t bytes, DType dtype, const std::string& who) {
  auto& used = sram_used_[static_cast<std::size_t>(pe)];
  if (bytes <= 0) throw InputError("SRAM buffer of " + std::to_string(bytes) + " bytes requested");
  if (used + bytes > topo_.sram_bytes())
    throw InputError("SRAM overflow on " + who + " needs " + std::to_string(used + bytes) + " bytes, the PE has " +
                     std::to_string(topo_.sram_bytes()));
  used += bytes;
  BufInfo b{pe, bytes, dtype, {}};
  if (opts_.enable_data) b.data.assign(static_cast<std::size_t>(bytes / dtype_bytes(dtype)), 0.0f);
  bufs_.push_back(std::move(b));
  return static_cast<std::int32_t>(bufs_.size() - 1);
}

SymBuf RuntimeContext::symmetric(std::int64_t bytes, DType dtype, LaunchGrid grid, const std::string& name) {
  if (grid.sips < 1 || grid.sips > topo_.sips || grid.cubes < 1 || grid.cubes > topo_.cubes_per_sip() || grid.pes < 1 ||
      grid.pes > topo_.pes_per_cube())
    throw InputError("symmetric buffer '" + name + "': its grid is larger than the machine");
  SymInfo s{name, grid, {}, false};
  try {
    for (std::int64_t a = 0; a < grid.sips; ++a)
      for (std::int64_t c = 0; c < grid.cubes; ++c)
        for (std::int64_t p = 0; p < grid.pes; ++p) {
          const Rank r{static_cast<std::int32_t>(a), static_cast<std::int32_t>(c), static_cast<std::int32_t>(p)};
          s.bufs.push_back(add_buf(global_pe(r), bytes, dtype, rank_name(r) + ": symmetric buffer '" + name + "'"));
        }
  } catch (...) {
    for (std::int32_t b : s.bufs) release(b);  // all or nothing
    throw;
  }
  syms_.push_back(std::move(s));
  return SymBuf{static_cast<std::int32_t>(syms_.size() - 1)};
}

void RuntimeContext::free(SymBuf sym) {
  if (sym.id < 0 || sym.id >= static_cast<std::int32_t>(syms_.size())) throw InputError("free: not a symmetric buffer");
  SymInfo& s = syms_[static_cast<std::size_t>(sym.id)];
  if (s.freed) throw InputError("symmetric buffer '" + s.name + "' freed twice");
  s.freed = true;
  for (std::int32_t b : s.bufs) release(b);
}

namespace {
const char* kNoData = "symmetric buffer values are only kept with enable_data";
}

void RuntimeContext::poke(SymBuf sym, const Rank& r, const std::vector<float>& src, std::int64_t offset, std::int64_t count) {
  if (!opts_.enable_data) throw InputError(kNoData);
  BufInfo& b = bufs_[static_cast<std::size_t>(sym_instance(sym, r, "poke: ", false))];
  const SymInfo& s = syms_[static_cast<std::size_t>(sym.id)];
  if (offset < 0 || count < 0 || offset + count > static_cast<std::int64_t>(src.size()) ||
      count > static_cast<std::int64_t>(b.data.size()))
    throw InputError("poke: " + std::to_string(count) + " values do not fit symmetric buffer '" + s.name + "'");
  for (std::int64_t i = 0; i < count; ++i)
    b.data[static_cast<std::size_t>(i)] = round_to(b.dtype, src[static_cast<std::size_t>(offset + i)]);
}

std::vector<float> RuntimeContext::peek(SymBuf sym, const Rank& r) const {
  if (!opts_.enable_data) throw InputError(kNoData);
  return bufs_[static_cast<std::size_t>(sym_instance(sym, r, "peek: ", false))].data;
}

std::int32_t RuntimeContext::sym_instance(SymBuf sym, const Rank& r, const std::string& what, bool live) const {
  if (sym.id < 0 || sym.id >= static_cast<std::int32_t>(syms_.size())) throw InputError(what + "not a symmetric buffer");
  const SymInfo& s = syms_[static_cast<std::size_t>(sym.id)];
  if (live && s.freed) throw InputError(what + "symmetric buffer '" + s.name + "' was freed");
  if (r.sip < 0 || r.sip >= s.grid.sips || r.cube < 0 || r.cube >= s.grid.cubes || r.pe < 0 || r.pe >= s.grid.pes)
    throw InputError(what + "symmetric buffer '" + s.name + "' has no instance on " + rank_name(r));
  return s.bufs[static_cast<std::size_t>((r.sip * s.grid.cubes + r.cube) * s.grid.pes + r.pe)];
}

Channel RuntimeContext::channel(const std::string& name) {
  channels_.push_back(name);
  return Channel{static_cast<std::int32_t>(channels_.size() - 1)};
}

ResourceId RuntimeContext::dma_in_resource(const Rank& r) {
  auto& id = pe_res_[pe_slot(r, kDmaInSlot)];
  // Written by other ranks' copies: served in the order they arrive.
  if (id == engine::kNoResource)
    id = graph_.add_resource(rank_name(r) + ".dma_in", ResourceClass::dma, r.sip, engine::Discipline::arbitrated);
  return id;
}

ResourceId RuntimeContext::add_pe_resource(const Rank& r, ResourceClass cls) {
  return pe_res_[pe_slot(r, cls)] = graph_.add_resource(rank_name(r) + "." + engine::to_string(cls), cls, r.sip);
}

ResourceId RuntimeContext::link_resource(std::int64_t link) {
  auto& id = links_.at(static_cast<std::size_t>(link));
  if (id != engine::kNoResource) return id;
  // Links and copy-queue ports are shared by many ranks: served in the order messages
  // reach them, not the order ranks were launched.
  const LinkInfo info = link_info(topo_, link);
  id = graph_.add_resource(info.name, info.cls, info.sip, engine::Discipline::arbitrated);
  link_of_.emplace_back(id, link);
  return id;
}

const RuntimeContext::Shard& RuntimeContext::find_shard(const TensorInfo& t, const Rank& r, const Block& g) const {
  for (int d = 0; d < kMaxDims; ++d)
    if (g.len[d] <= 0 || g.lo[d] < 0 || g.lo[d] + g.len[d] > t.dim[d]) outside(t);
  const std::int64_t cube = global_cube(r);
  for (std::size_t i = 0; i < t.shards.size(); ++i)
    if (shard_holds(t.shards[i], cube, r.pe, g)) {
      t.last_hit = i;
      return t.shards[i];
    }
  no_shard(t, r);
}

void RuntimeContext::outside(const TensorInfo& t) {
  throw InputError("tensor '" + t.name + "': region is outside the tensor");
}

void RuntimeContext::no_shard(const TensorInfo& t, const Rank& r) const {
  throw InputError("tensor '" + t.name + "': " + rank_name(r) + " reads or writes a region that no shard on its cube, owned by it or shared, holds");
}

void RuntimeContext::write_trace(const std::string& path, const RunReport& report) const {
  write_file_atomic(path, [&](std::ostream& os) { engine::write_chrome_trace(os, graph_, report.result); });
}

RunReport RuntimeContext::run_checked(const std::string& field, const std::string& program) {
  RunReport r = run();
  if (r.result.time_overflow) throw InputError(field + ": the simulated time would overflow int64 picoseconds");
  if (r.status != engine::Status::ok)
    throw InternalError(program + " run ended " + engine::to_string(r.status) + ": " + r.message, __FILE__, __LINE__);
  return r;
}

RunReport RuntimeContext::run() {
  RunReport rep;
  rep.result = engine::simulate(graph_);
  rep.status = rep.result.status;
  rep.message = rep.result.message;
  rep.summary = rep.result.summary;
  rep.hbm_footprint_bytes = hbm_used_;
  for (const auto& [res, link] : link_of_) {
    const auto r = static_cast<std::size_t>(res);
    rep.links.push_back(LinkUse{link, graph_.resources()[r].name, graph_.resources()[r].cls,
                                rep.result.resource_bytes.empty() ? 0 : rep.result.resource_bytes[r],
                                rep.result.resource_busy_ps.empty() ? 0 : rep.result.resource_busy_ps[r]});
  }
  return rep;
}

}  // namespace kb
