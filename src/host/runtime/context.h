// The runtime front end of the reference path: tensors placed in cube HBM, kernels that
// run once per PE rank and issue ops, and a run that simulates them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../../device/models/vector.h"
#include "../engine/engine.h"
#include "../topology/spec.h"
#include "numeric.h"

namespace kb {

using engine::OpId;
using engine::Rank;

enum class Split : std::int32_t { replicate = 0, row_wise, col_wise };
const char* to_string(Split s);

// How a tensor is spread over the cubes of one SIP (cubes 0..cubes-1), and inside each
// cube's shard over its PEs (0..pes-1). Row and column splits are contiguous, in whole
// multiples of `granule` rows or columns. A PE-split shard still lives in its cube's HBM;
// each part belongs to one PE, and only that PE may load or store it.
// A split divides one dimension of the tensor: row_wise the first, col_wise the last, unless
// cube_dim / pe_dim name another (a KV cache [batch, heads, seq, d] split by heads: 1).
struct Placement {
  Split cube = Split::replicate;
  std::int64_t cubes = 1;
  std::int64_t granule = 1;
  std::int32_t sip = 0;
  Split pe = Split::replicate;
  std::int64_t pes = 1;
  std::int32_t cube_dim = -1, pe_dim = -1;  // -1: the dimension the Split implies
};

struct ContextOptions {
  bool enable_data = false;
};

// A block of a tensor of at most 2 dimensions.
struct Region {
  std::int64_t row0 = 0, rows = 0, col0 = 0, cols = 0;
  std::int64_t elements() const { return rows * cols; }
};

// A block of a tensor of up to 4 dimensions: from `lo`, `len` elements along each (one
// value per dimension of the tensor). Its elements are strided in HBM; in SRAM they are
// packed in row-major order.
constexpr int kMaxDims = 4;

// A block as the runtime holds it: four dimensions, the leading ones of extent 1.
struct Block {
  std::int64_t lo[kMaxDims] = {0, 0, 0, 0}, len[kMaxDims] = {1, 1, 1, 1};
  std::int64_t elements() const { return len[0] * len[1] * len[2] * len[3]; }
};

struct Box {
  std::vector<std::int64_t> lo, len;
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (std::int64_t l : len) n *= l;
    return n;
  }
};

struct Tensor {
  std::int32_t id = -1;
};

struct SramBuf {
  std::int32_t id = -1;
};

struct Signal {
  OpId op = engine::kNoOp;
};

// A buffer allocated on every rank of a grid before any kernel runs, at the same size on
// each: a rank can copy into its peer's instance without the peer's kernel having run.
// It lives until RuntimeContext::free.
struct SymBuf {
  std::int32_t id = -1;
};

// A point-to-point channel: the n-th send from rank A to rank B on a channel matches the
// n-th receive of B from A, whichever was issued first.
struct Channel {
  std::int32_t id = -1;
};

// Which ranks a launch runs on: SIPs 0..sips-1, in each cubes 0..cubes-1, in each PEs 0..pes-1.
struct LaunchGrid {
  std::int64_t sips = 1, cubes = 1, pes = 1;
};

// What one link direction carried in a run (the links a run used, in the order their first
// hop was issued).
struct LinkUse {
  std::int64_t link;  // id in src/device/common/network.h
  std::string name;   // e.g. "sip0.cube0->cube1"
  engine::ResourceClass cls;
  std::int64_t bytes;
  ps_t busy_ps;
};

struct RunReport {
  engine::Status status = engine::Status::ok;
  std::string message;
  engine::Summary summary;
  std::vector<std::int64_t> hbm_footprint_bytes;  // per cube, global cube index
  std::vector<LinkUse> links;
  engine::RunResult result;
};

class RuntimeContext;
using Deps = std::initializer_list<OpId>;

// What a kernel sees: its rank, and calls that issue ops. Ops on one engine execute in
// the order they are issued.
class PeProgram {
 public:
  const Rank& rank() const { return rank_; }
  const LaunchGrid& grid() const { return grid_; }
  const TopologySpec& topology() const;

  // A buffer in this PE's SRAM; the PE's capacity is enforced. It is returned when the
  // launch ends, or earlier by free().
  SramBuf sram(std::int64_t bytes, DType dtype);
  void free(SramBuf buf);
  // This rank's instance of a symmetric buffer, and a peer's.
  SramBuf local(SymBuf s) const;
  SramBuf at(SymBuf s, const Rank& peer) const;
  // `count` values of `buf` from value `offset`, as a buffer of its own (a view: it holds no
  // SRAM and lives as long as `buf`); `buf` may be a peer's (from at()) or a view.
  SramBuf slice(SramBuf buf, std::int64_t offset, std::int64_t count);
  // HBM (this PE's cube) -> SRAM, and back; the region must lie in a shard on this cube.
  OpId load(Tensor src, const Region& region, SramBuf dst, Deps deps = {});
  OpId store(SramBuf src, Tensor dst, const Region& region, Deps deps = {});
  OpId load(Tensor src, const Box& box, SramBuf dst, Deps deps = {});
  OpId store(SramBuf src, Tensor dst, const Box& box, Deps deps = {});
  // c[m,n] (+)= a[m,k] * b[k,n] on the matrix engine (f32 accumulate); b_transposed: b held
  // as [n,k] (timed alike: the engine streams either).
  OpId matmul(SramBuf a, SramBuf b, SramBuf c, std::int64_t m, std::int64_t n, std::int64_t k, bool accumulate,
              Deps deps = {}, bool b_transposed = false);
  // Vector engine (cycles: src/device/models/vector.h). In data mode values are computed in
  // f32 and stored rounded to the destination's type.
  // dst[i] += src[i], *= src[i], = max(dst[i], src[i]) for `elements` values;
  OpId vector_add(SramBuf dst, SramBuf src, std::int64_t elements, Deps deps = {});
  OpId vector_mul(SramBuf dst, SramBuf src, std::int64_t elements, Deps deps = {});
  OpId vector_max(SramBuf dst, SramBuf src, std::int64_t elements, Deps deps = {});
  // dst[i] *= s, and dst[i] = exp(dst[i]);
  OpId vector_scale(SramBuf dst, std::int64_t elements, float s, Deps deps = {});
  OpId vector_exp(SramBuf dst, std::int64_t elements, Deps deps = {});
  // dst[i] = src[i], and dst[i] -= src[i];
  OpId vector_copy(SramBuf dst, SramBuf src, std::int64_t elements, Deps deps = {});
  OpId vector_sub(SramBuf dst, SramBuf src, std::int64_t elements, Deps deps = {});
  // dst[r * cols + c] -= src[r], *= src[r], /= src[r]: one value per row, for `rows` rows;
  OpId row_sub(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  OpId row_mul(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  OpId row_div(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  // dst[r] = sum over c (or max over c) of src[r * cols + c], for `rows` rows; sums are
  // accumulated left to right in f32.
  OpId row_sum(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  OpId row_max(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  // The layer program's (docs/model.md section 13.4): dst[r] = sum over c of src[r * cols + c]^2
  // (f32, left to right); dst[i] = 1 / sqrt(dst[i] s + eps); dst[r * cols + c] *= src[c];
  // rotary embedding: each head of `head_dim` values of row r, halves (x1, x2), becomes
  // (x1 cos - x2 sin, x2 cos + x1 sin), with table row r holding head_dim / 2 cosines then
  // as many sines; dst[i] = dst[i] / (1 + exp(-dst[i])) (SiLU).
  OpId row_sumsq(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  OpId vector_rsqrt(SramBuf dst, std::int64_t n, float s, float eps, Deps deps = {});
  OpId col_mul(SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, Deps deps = {});
  OpId rope(SramBuf dst, SramBuf table, std::int64_t rows, std::int64_t cols, std::int64_t head_dim, Deps deps = {});
  OpId vector_silu(SramBuf dst, std::int64_t n, Deps deps = {});
  // vector_scale of a rows x cols block of scores whose row r is query token
  // first_token + r / heads and column c position pos0 + c; in data mode a score of a later
  // position than its token becomes -inf (the causal mask, timed as the scale it rides on).
  OpId causal_scale(SramBuf dst, std::int64_t rows, std::int64_t cols, float s, std::int64_t first_token,
                    std::int64_t heads, std::int64_t pos0, Deps deps = {});
  // SRAM -> SRAM of another rank, over PE copy queues, cube links and SIP links.
  OpId copy(SramBuf src, const Rank& to, SramBuf dst, std::int64_t bytes, Deps deps = {});
  // Copies whose source or destination is a region of a tensor in HBM (this rank's cube for
  // the source, `to`'s cube for the destination; local or remote): a DMA read on this PE's
  // queue, the route, and a DMA write through `to`'s HBM write port (ADR 0007).
  OpId copy(Tensor src, const Region& region, const Rank& to, SramBuf dst, Deps deps = {});
  OpId copy(SramBuf src, const Rank& to, Tensor dst, const Region& region, Deps deps = {});
  OpId copy(Tensor src, const Region& src_region, const Rank& to, Tensor dst, const Region& dst_region, Deps deps = {});
  OpId copy(Tensor src, const Box& box, const Rank& to, SramBuf dst, Deps deps = {});
  OpId copy(SramBuf src, const Rank& to, Tensor dst, const Box& box, Deps deps = {});
  OpId copy(Tensor src, const Box& src_box, const Rank& to, Tensor dst, const Box& dst_box, Deps deps = {});
  // dst[dst_box] += src[src_box], both in this PE's cube HBM, streamed through the PE: a DMA
  // read of both operands on its queue, the vector engine's add and the write of the sum
  // through its HBM write port, one cut-through chain held for its slowest stage (ADR 0007).
  OpId add_hbm(Tensor dst, const Box& dst_box, Tensor src, const Box& src_box, Deps deps = {});
  // A copy to `to` on channel `ch`; and an op that completes when the matching send from
  // `from` has landed here.
  OpId send(Channel ch, SramBuf src, const Rank& to, SramBuf dst, std::int64_t bytes, Deps deps = {});
  OpId recv(Channel ch, const Rank& from);
  // A synchronisation point that completes when all deps do.
  OpId wait(Deps deps);
  // Make `s` complete once `op` does (signals may be raised by any rank).
  void raise(Signal s, OpId op);

 private:
  friend class RuntimeContext;
  PeProgram(RuntimeContext& ctx, Rank rank, LaunchGrid grid, std::int32_t label)
      : ctx_(ctx), rank_(rank), grid_(grid), label_(label) {
    proto_.rank = rank;
    proto_.label = label;
  }
  engine::Op base(engine::OpKind kind, engine::ResourceId res) const;
  OpId vector_op(VecOp op, SramBuf dst, SramBuf src, std::int64_t rows, std::int64_t cols, float s, Deps deps,
                 float s2 = 0.0f, std::int64_t period = 0);
  // One end of a copy: an SRAM buffer, or a region of a tensor in HBM.
  struct CopyEnd {
    SramBuf buf;
    Tensor tensor;
    Block block;
    bool hbm() const { return tensor.id >= 0; }
  };
  Block block_of(Tensor t, const Region& r) const;
  Block block_of(Tensor t, const Box& b) const;
  OpId hbm_op(bool load, Tensor t, const Block& b, SramBuf buf, Deps deps);
  OpId transfer(const CopyEnd& src, const Rank& to, const CopyEnd& dst, std::int64_t bytes, Deps deps);
  // A copy's bytes, its ends checked (InputError); `bytes` < 0: the HBM end's.
  std::int64_t transfer_bytes(const CopyEnd& src, const Rank& to, const CopyEnd& dst, std::int64_t bytes);
  // Data mode: the source read when the first op completes, written at the destination when
  // the last one does.
  void transfer_values(const CopyEnd& src, const CopyEnd& dst, std::int64_t bytes, OpId first, OpId last);

  RuntimeContext& ctx_;
  Rank rank_;
  LaunchGrid grid_;
  std::int32_t label_;
  engine::Op proto_;  // what every op of this rank starts from: its rank and label set
};

class RuntimeContext {
 public:
  explicit RuntimeContext(const TopologySpec& topology, ContextOptions options = {});

  const TopologySpec& topology() const { return topo_; }
  bool data_enabled() const { return opts_.enable_data; }

  Tensor zeros(std::vector<std::int64_t> shape, DType dtype, Placement placement, const std::string& name);
  Tensor empty(std::vector<std::int64_t> shape, DType dtype, Placement placement, const std::string& name);
  Tensor random(std::vector<std::int64_t> shape, DType dtype, Placement placement, const std::string& name,
                std::uint64_t seed);
  // The values of a tensor (data mode only), row-major.
  const std::vector<float>& values(Tensor t) const;
  // Data mode: sets every value of a tensor (row-major, rounded to its type) before run().
  void assign(Tensor t, const std::vector<float>& values);
  // rows: the product of every dimension but the last; cols: the last.
  std::int64_t rows(Tensor t) const;
  std::int64_t cols(Tensor t) const;
  const std::vector<std::int64_t>& shape(Tensor t) const;

  Signal signal(const std::string& name);
  // `bytes` of SRAM on every rank of `grid` (SIPs, cubes, PEs from 0), enforced per PE.
  SymBuf symmetric(std::int64_t bytes, DType dtype, LaunchGrid grid, const std::string& name);
  void free(SymBuf s);
  // Data mode: writes values (rounded to its type) into a rank's instance of a symmetric
  // buffer before run(), from src[offset, offset + count); and reads an instance back.
  void poke(SymBuf s, const Rank& r, const std::vector<float>& src, std::int64_t offset, std::int64_t count);
  std::vector<float> peek(SymBuf s, const Rank& r) const;
  Channel channel(const std::string& name);

  template <class Kernel, class... Args>
  void launch(const std::string& name, LaunchGrid grid, Kernel&& kernel, Args&&... args) {
    const std::int32_t label = begin_launch(name, grid);
    try {
      for (std::int64_t s = 0; s < grid.sips; ++s)
        for (std::int64_t c = 0; c < grid.cubes; ++c)
          for (std::int64_t p = 0; p < grid.pes; ++p) {
            PeProgram prog(*this,
                           Rank{static_cast<std::int32_t>(s), static_cast<std::int32_t>(c), static_cast<std::int32_t>(p)},
                           grid, label);
            kernel(prog, args...);
          }
    } catch (...) {
      end_launch();  // a kernel that throws still returns its launch's SRAM
      throw;
    }
    end_launch();
  }

  // Composing kernels without a barrier (docs/adr/0019): from now on every read of a tensor
  // in HBM (a load, or a copy from it) waits for `gate` unless the tensor is resident
  // (weights, tables: marked before the kernel that reads them is built); kNoOp lifts the
  // gate. join(from) is an op that
  // completes when every op from index `from` on has (a kernel's end: its first op's index
  // is graph().ops().size() before its launch).
  void set_resident(Tensor t) {
    tensor(t);  // throws for a tensor of another context
    tensors_[static_cast<std::size_t>(t.id)].resident = true;
  }
  void set_gate(OpId gate) { gate_ = gate; }
  OpId join(std::size_t from);
  // Room for `ops` ops with `deps` dependencies in all (a hint: saves regrowing).
  void reserve(std::size_t ops, std::size_t deps) {
    graph_.reserve(ops, deps);
    hbm_ops_.reserve(ops);
  }
  // At most `ops` ops in the graph (signals included); one more throws InputError.
  void limit_ops(std::int64_t ops) { graph_.limit_ops(ops); }
  RunReport run();
  // run(), with a time overflow as the user's error ("FIELD: the simulated time would
  // overflow int64 picoseconds") and any other unfinished run as an internal error of the
  // shipped `program`.
  RunReport run_checked(const std::string& field, const std::string& program);
  std::string trace_json(const RunReport& report) const { return engine::chrome_trace_json(graph_, report.result); }
  // The trace written to `path` (atomically), event by event.
  void write_trace(const std::string& path, const RunReport& report) const;
  const engine::Graph& graph() const { return graph_; }

 private:
  friend class PeProgram;

  struct Shard {
    std::int64_t cube;  // global cube index
    std::int64_t pe;    // owning PE inside the cube; -1: every PE of the cube
    Block block;
    std::int64_t bytes;
  };
  struct TensorInfo {
    std::string name;
    std::int64_t rows, cols;
    DType dtype;
    std::vector<Shard> shards;
    std::vector<float> data;  // full logical tensor (data mode)
    std::vector<std::int64_t> shape;  // as given
    std::int64_t dim[kMaxDims];       // padded at the front with ones
    mutable std::size_t last_hit = 0;  // the shard local_shard found last (ranks reuse theirs)
    bool resident = false;             // its reads never wait for the gate (set_gate)
  };
  struct BufInfo {
    std::int64_t pe;  // global PE index
    std::int64_t bytes;
    DType dtype;
    std::vector<float> data;
    std::int32_t launch = -1;  // the launch it belongs to (-1: symmetric)
    bool held = true;          // its bytes still count against the PE's SRAM
    std::int32_t base = -1;    // a view (PeProgram::slice): the buffer it lies in; it holds no SRAM of its own
    std::int64_t offset = 0;   // a view's first value in its base
  };
  // A buffer's values (data mode): its own, or its base's from the view's offset.
  float* vals(std::int32_t buf);
  std::size_t nvals(std::int32_t buf) const;
  struct SymInfo {
    std::string name;
    LaunchGrid grid;
    std::vector<std::int32_t> bufs;  // per rank of the grid, (sip, cube, pe) row-major
    bool freed = false;
  };
  struct ChannelEnd {
    std::vector<OpId> sends;    // unmatched sends' last hops, oldest first
    std::vector<OpId> signals;  // unmatched receives' signals, oldest first
    std::size_t sends_head = 0, signals_head = 0;
  };

  Tensor make(std::vector<std::int64_t> shape, DType dtype, Placement placement, const std::string& name);
  std::int32_t begin_launch(const std::string& name, const LaunchGrid& grid);
  void end_launch();
  void release(std::int32_t buf);
  // A buffer an op of `owner` uses for `bytes`: it must exist, be on that PE and be held.
  const BufInfo& use_buf(SramBuf b, const Rank& owner, std::int64_t bytes, const char* what) const {
    const BufInfo& info = held_buf(b, owner, what);
    fits(info, bytes, what);
    return info;
  }
  // use_buf for `elements` values of the buffer's own type.
  const BufInfo& use_elements(SramBuf b, const Rank& owner, std::int64_t elements, const char* what) const {
    const BufInfo& info = held_buf(b, owner, what);  // its type is known only once the buffer is
    fits(info, elements * dtype_bytes(info.dtype), what);
    return info;
  }
  // The two halves of use_buf: the buffer exists, is `owner`'s and is held; `bytes` fit it.
  // Every op checks its buffers, so the checks are inline and their failures out of line.
  const BufInfo& held_buf(SramBuf b, const Rank& owner, const char* what) const {
    if (b.id < 0 || b.id >= static_cast<std::int32_t>(bufs_.size())) bad_buf(b, owner, what);
    const BufInfo& info = bufs_[static_cast<std::size_t>(b.id)];
    if (info.pe != global_pe(owner) || !(info.base >= 0 ? bufs_[static_cast<std::size_t>(info.base)] : info).held)
      bad_buf(b, owner, what);
    return info;
  }
  static void fits(const BufInfo& info, std::int64_t bytes, const char* what) {
    if (bytes > info.bytes) too_small(info, bytes, what);
  }
  // Throw held_buf's and fits' errors.
  [[noreturn]] __attribute__((cold)) void bad_buf(SramBuf b, const Rank& owner, const char* what) const;
  [[noreturn]] __attribute__((cold)) static void too_small(const BufInfo& info, std::int64_t bytes, const char* what);
  const TensorInfo& tensor(Tensor t) const {
    if (t.id < 0 || t.id >= static_cast<std::int32_t>(tensors_.size())) not_a_tensor();
    return tensors_[static_cast<std::size_t>(t.id)];
  }
  [[noreturn]] __attribute__((cold)) static void not_a_tensor();
  std::int32_t add_buf(std::int64_t pe, std::int64_t bytes, DType dtype, const std::string& who);
  std::int64_t global_cube(const Rank& r) const { return r.sip * cubes_per_sip_ + r.cube; }
  std::int64_t global_pe(const Rank& r) const { return global_cube(r) * pes_per_cube_ + r.pe; }
  std::string rank_name(const Rank& r) const;
  // The buffer id of `sym`'s instance on `r`; errors start with `what`, and a freed buffer
  // is one where `live`.
  std::int32_t sym_instance(SymBuf sym, const Rank& r, const std::string& what, bool live) const;
  // A PE's matrix, vector or DMA engine (added on first use).
  engine::ResourceId pe_resource(const Rank& r, engine::ResourceClass cls) {
    const engine::ResourceId id = pe_res_[pe_slot(r, cls)];
    return id != engine::kNoResource ? id : add_pe_resource(r, cls);
  }
  // A PE's resources in pe_res_: its matrix, vector and DMA engines, and its DMA-in queue.
  enum PeSlot : int { kMatrixSlot, kVectorSlot, kDmaSlot, kDmaInSlot, kPeSlots };
  std::size_t pe_slot(const Rank& r, int slot) const { return static_cast<std::size_t>(global_pe(r) * kPeSlots + slot); }
  std::size_t pe_slot(const Rank& r, engine::ResourceClass cls) const {
    return pe_slot(r, cls == engine::ResourceClass::matrix ? kMatrixSlot : cls == engine::ResourceClass::vector ? kVectorSlot : kDmaSlot);
  }
  engine::ResourceId add_pe_resource(const Rank& r, engine::ResourceClass cls);
  engine::ResourceId dma_in_resource(const Rank& r);
  engine::ResourceId link_resource(std::int64_t link);
  // The shard on r's cube (owned by r or shared) that holds `block`, or an InputError. The
  // shard found last is asked first, inline (ranks reuse theirs): every shard lies in its
  // tensor (make() cuts them from it), so a non-empty block that one holds lies in it too.
  const Shard& local_shard(const TensorInfo& t, const Rank& r, const Block& block) const {
    if (t.last_hit < t.shards.size()) {
      const Shard& s = t.shards[t.last_hit];
      if (shard_holds(s, global_cube(r), r.pe, block) && block.len[0] > 0 && block.len[1] > 0 && block.len[2] > 0 &&
          block.len[3] > 0)
        return s;
    }
    return find_shard(t, r, block);
  }
  static bool shard_holds(const Shard& s, std::int64_t cube, std::int64_t pe, const Block& g) {
    if (s.cube != cube || (s.pe >= 0 && s.pe != pe)) return false;
    int d = 0;
    while (d < kMaxDims && g.lo[d] >= s.block.lo[d] && g.lo[d] + g.len[d] <= s.block.lo[d] + s.block.len[d]) ++d;
    return d == kMaxDims;
  }
  const Shard& find_shard(const TensorInfo& t, const Rank& r, const Block& block) const;  // local_shard's search
  [[noreturn]] __attribute__((cold)) static void outside(const TensorInfo& t);  // local_shard's errors
  [[noreturn]] __attribute__((cold)) void no_shard(const TensorInfo& t, const Rank& r) const;

  TopologySpec topo_;
  std::int64_t cubes_per_sip_, pes_per_cube_;  // topo_'s, for the global indices every op takes
  ContextOptions opts_;
  engine::Graph graph_;
  std::vector<TensorInfo> tensors_;
  std::vector<BufInfo> bufs_;
  std::vector<SymInfo> syms_;
  std::vector<std::string> channels_;
  std::map<std::tuple<std::int32_t, std::int64_t, std::int64_t>, ChannelEnd> channel_ends_;  // (channel, from, to)
  std::int32_t launches_ = 0;
  struct HbmOp {
    OpId op;
    std::int32_t cube;  // whose HBM share it uses (global cube index; at most 2^24 PEs)
    std::int64_t bytes;  // the op's
    engine::ResourceId resource;  // the op's
  };
  // Records an HBM read or write by rank r (its time is set when the launch ends).
  // port 0: its DMA queue; 1: its HBM write port. `op` is the op added as `id`.
  void hbm_access(OpId id, const engine::Op& op, const Rank& r, int port);
  std::vector<std::int32_t> hbm_user_;  // per global PE and port: the last launch that used it
  std::size_t first_buf_of_launch_ = 0;
  std::vector<HbmOp> hbm_ops_;  // the current launch's HBM reads and writes
  std::vector<std::vector<OpId>> chains_;  // the current launch's copies with an HBM end, hop by hop
  std::vector<std::int64_t> hbm_used_;   // per global cube
  std::vector<std::int64_t> sram_used_;  // per global PE
  std::vector<std::int32_t> issued_;     // per global PE: ops issued so far
  // The last matmul shape timed and its cycles and busy time (a kernel's tiles mostly
  // repeat one shape; the topology is fixed).
  struct MatmulTime {
    std::int64_t m = 0, n = 0, k = 0, cycles = 0;
    ps_t busy_ps = 0;
  } last_matmul_;
  std::vector<engine::ResourceId> pe_res_;  // per PE, kPeSlots of them (pe_slot)
  std::vector<engine::ResourceId> links_;  // per link id of the network; kNoResource until used
  std::vector<std::pair<engine::ResourceId, std::int64_t>> link_of_;  // the links used
  LaunchGrid grid_;  // of the current launch: sets the HBM share of each PE
  OpId gate_ = engine::kNoOp;  // what reads of non-resident tensors wait for (set_gate)
  void gate_read(OpId op, Tensor t) {
    if (gate_ != engine::kNoOp && !tensors_[static_cast<std::size_t>(t.id)].resident) graph_.add_dep(op, gate_);
  }
};

}  // namespace kb
