#include "llm_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../../common/error.h"
#include "../../common/output.h"
#include "../collective/allreduce_program.h"
#include "../decode/decode_program.h"
#include "../gemm/gemm_program.h"
#include "../../runtime/context.h"
#include "../../topology/fields.h"
#include "../../topology/spec.h"

namespace kb {

std::int64_t llm_vec_reference_ops(const LlmVecConfig& c) {
  // Per tile: the loads, at most five passes and the store; a PE's tiles at most its rows;
  // a norm's weights once a PE.
  const std::int64_t parts = c.hw.cubes_per_sip() * c.hw.pes_per_cube();
  return sat_mul(sat_mul(ceil_div(c.rows, parts), parts), llm_vec_inputs(c.kind) + 7) + parts;
}

namespace {

// The vector kernel's tensors (its weights or RoPE's table resident, data mode's values
// assigned) and launch in `ctx`; returns the tensor it writes.
Tensor vec_build(RuntimeContext& ctx, const LlmVecConfig& c, const KernelValues* data) {
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), parts = C * P;
  const int inputs = llm_vec_inputs(c.kind);
  const auto kind = static_cast<LlmKernelKind>(c.kind);
  const std::int64_t d = llm_vec_table_cols(c), wbytes = llm_vec_weight_bytes(c);
  Placement rep;  // every cube holds the tensors, shared by its PEs
  rep.cubes = C;
  Tensor in[2], extra;
  for (int i = 0; i < inputs; ++i) in[i] = ctx.zeros({c.rows, c.cols}, DType::f16, rep, i == 0 ? "x" : "y");
  // A norm's weights; RoPE's cos/sin rows.
  const DType wtype = c.weight_bytes == 1 ? DType::fp8 : DType::f16;
  if (wbytes > 0) extra = ctx.zeros({1, c.cols}, wtype, rep, "weights");
  if (d > 0) extra = ctx.zeros({c.rows, d}, DType::f16, rep, "cos_sin");
  if (extra.id >= 0) ctx.set_resident(extra);
  if (data) {
    const std::size_t given = static_cast<std::size_t>(inputs + (extra.id >= 0 ? 1 : 0));
    if (data->in.size() != given)
      throw InputError("llm vector kernel: " + std::to_string(given) + " input tensors, " + std::to_string(data->in.size()) + " given");
    for (int i = 0; i < inputs; ++i) ctx.assign(in[i], data->in[static_cast<std::size_t>(i)]);
    if (extra.id >= 0) ctx.assign(extra, data->in.back());
  }
  // The output overwrites the first input, or (converted to 8 bits) goes to a tensor of its own.
  const bool convert = llm_vec_out_bytes(c) == 1;
  const Tensor out = convert ? ctx.zeros({c.rows, c.cols}, DType::fp8, rep, "out") : in[0];
  const float inv_cols = 1.0f / static_cast<float>(c.cols);
  ctx.launch("llm_vector", LaunchGrid{1, C, P}, [&](PeProgram& p) {
    const std::int64_t g = p.rank().cube * P + p.rank().pe, rows = llm_vec_rows_of(c, g);
    if (rows == 0) return;
    const std::int64_t first = g * c.rows / parts, T = llm_vec_tile_rows(c, rows);
    SramBuf weights;
    OpId have_weights = engine::kNoOp;
    if (wbytes > 0) {
      weights = p.sram(wbytes, wtype);
      have_weights = p.load(extra, Region{0, 1, 0, c.cols}, weights);
    }
    SramBuf buf[2];
    for (int i = 0; i < inputs; ++i) buf[i] = p.sram(T * c.cols * 2, DType::f16);
    const SramBuf table = d > 0 ? p.sram(T * d * 2, DType::f16) : SramBuf{};
    const SramBuf narrow = convert ? p.sram(T * c.cols, DType::fp8) : SramBuf{};
    const SramBuf row = p.sram(T * 4, DType::f32);
    for (std::int64_t lo = 0; lo < rows; lo += T) {
      const std::int64_t t = std::min(T, rows - lo), n = t * c.cols;
      const Region reg{first + lo, t, 0, c.cols};
      const OpId a = p.load(in[0], reg, buf[0]);
      OpId loaded = inputs == 2 ? p.load(in[1], reg, buf[1]) : a;
      if (d > 0) loaded = p.load(extra, Region{first + lo, t, 0, d}, table);
      const SramBuf x = buf[0], y = inputs == 2 ? buf[1] : buf[0];
      OpId last = loaded;
      switch (kind) {
        case LlmKernelKind::norm:  // x / sqrt(mean(x^2) + eps) * weights, each row
          last = p.row_sumsq(row, x, t, c.cols, {loaded});
          last = p.vector_rsqrt(row, t, inv_cols, kLlmRmsNormEps, {last});
          last = p.row_mul(x, row, t, c.cols, {last});
          last = p.col_mul(x, weights, t, c.cols, {last, have_weights});
          break;
        case LlmKernelKind::l2_norm:  // x / sqrt(mean(x^2) + eps), each row (no weights)
          last = p.row_sumsq(row, x, t, c.cols, {loaded});
          last = p.vector_rsqrt(row, t, inv_cols, kLlmRmsNormEps, {last});
          last = p.row_mul(x, row, t, c.cols, {last});
          break;
        case LlmKernelKind::rope: last = p.rope(x, table, t, c.cols, d, {a, loaded}); break;
        case LlmKernelKind::silu_mul:
          last = p.vector_silu(x, n, {a, loaded});
          last = p.vector_mul(x, y, n, {last});
          break;
        case LlmKernelKind::residual: last = p.vector_add(x, y, n, {a, loaded}); break;
        default: break;  // kv_append: the tile goes back as it came
      }
      if (convert) {
        last = p.vector_copy(narrow, x, n, {last});
        p.store(narrow, out, reg, {last});
      } else {
        p.store(x, out, reg, {last});
      }
    }
  });
  return out;
}

}  // namespace

void llm_vec_compose(RuntimeContext& ctx, const LlmVecConfig& c) {
  if (llm_vec_check(c) != kLlmVecOk) throw InputError("llm vector kernel: invalid config");
  vec_build(ctx, c, nullptr);
}

LlmVecResult llm_vec_reference(const LlmVecConfig& c, const std::string* trace_path, KernelValues* data) {
  LlmVecResult r{};
  r.status = llm_vec_check(c);
  if (r.status != kLlmVecOk) throw InputError("llm vector kernel: invalid config (status " + std::to_string(r.status) + ")");
  RuntimeContext ctx(topology_of(c.hw), ContextOptions{data != nullptr});
  ctx.limit_ops(llm_vec_reference_ops(c));
  Tensor out;
  try {
    out = vec_build(ctx, c, data);
  } catch (const InputError& e) {
    throw InternalError(std::string("the llm vector kernel was rejected by the runtime: ") + e.what(), __FILE__, __LINE__);
  }
  const RunReport report = ctx.run_checked("llm", "llm vector kernel");
  if (trace_path) ctx.write_trace(*trace_path, report);
  if (data) data->out = ctx.values(out);
  const engine::Summary& s = report.summary;
  r.latency_ps = s.latency_ps;
  r.vector_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::vector)];
  r.dma_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  r.vector_ops = s.vector_ops, r.sram_read_bytes = s.sram_read_bytes, r.sram_write_bytes = s.sram_write_bytes;
  return r;
}

std::int64_t llm_attn_reference_ops(const LlmAttnConfig& c) {
  // Per item: the query load, per chunk two loads, two matmuls, five vector ops and a merge
  // of 13, then the division and the store. Unit u's tiles hold 1 .. tiles chunks.
  // After `prior` cached positions, every tile has ceil(prior / tile) chunks more at most.
  const std::int64_t nb = llm_attn_tiles(c), before = c.prior > 0 ? sat_mul(nb, ceil_div(c.prior, c.tile) + 1) : 0;
  return sat_mul(llm_attn_units(c), sat_add(sat_mul(3, nb), sat_mul(22, sat_add(sat_mul(nb, nb + 1) / 2, before))));
}

namespace {

// The causal attention kernel's tensors (data mode's values assigned) and launch in `ctx`;
// returns the tensor it writes.
Tensor attn_build(RuntimeContext& ctx, const LlmAttnConfig& c, const KernelValues* data) {
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), T = c.prompt, T0 = c.prior;
  const std::int64_t G = llm_attn_group(c), d = c.head_dim, dv = llm_attn_dv(c), t = c.tile, h = c.heads, S = G / h, Rm = t * h;
  const std::int64_t KV = c.batch * c.kv_heads;  // (sequence, KV head) pairs, each S streams
  Placement rep;  // every cube holds the tensors, shared by its PEs
  rep.cubes = C;
  // Per (sequence, KV head): its queries [T, G, d] and answers [T, G, dv], K transposed
  // [d, T0 + T] and V [T0 + T, dv] (the T0 positions cached before the prompt first), as the
  // decode kernel keeps them.
  const Tensor q = ctx.zeros({KV, T, G, d}, DType::f16, rep, "q");
  const Tensor k = ctx.zeros({KV, d, T0 + T}, DType::f16, rep, "k");
  const Tensor v = ctx.zeros({KV, T0 + T, dv}, DType::f16, rep, "v");
  const Tensor o = ctx.zeros({KV, T, G, dv}, DType::f16, rep, "o");
  if (data) {
    if (data->in.size() != 3) throw InputError("llm attention: 3 input tensors, " + std::to_string(data->in.size()) + " given");
    ctx.assign(q, data->in[0]);
    ctx.assign(k, data->in[1]);
    ctx.assign(v, data->in[2]);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  ctx.launch("llm_attention", LaunchGrid{1, C, P}, [&](PeProgram& p) {
    const std::int64_t g = p.rank().cube * P + p.rank().pe;
    if (llm_attn_item_of(c, g, 0) < 0) return;
    const SramBuf qb = p.sram(Rm * d * 2, DType::f16);
    const SramBuf kb[2] = {p.sram(d * t * 2, DType::f16), p.sram(d * t * 2, DType::f16)};
    const SramBuf vb[2] = {p.sram(t * dv * 2, DType::f16), p.sram(t * dv * 2, DType::f16)};
    const SramBuf sb = p.sram(Rm * t * 4, DType::f32);
    const SramBuf oc = p.sram(Rm * dv * 4, DType::f32), mc = p.sram(Rm * 4, DType::f32), lc = p.sram(Rm * 4, DType::f32);
    const SramBuf m = p.sram(Rm * 4, DType::f32), l = p.sram(Rm * 4, DType::f32), ob = p.sram(Rm * dv * 4, DType::f32);
    const SramBuf tmp = p.sram(Rm * 4, DType::f32);
    for (std::int64_t round = 0;; ++round) {
      const std::int64_t item = llm_attn_item_of(c, g, round);
      if (item < 0) break;
      const LlmAttnItem it = llm_attn_item(c, item);
      const std::int64_t R = it.tokens * h, J = ceil_div(it.positions, t), u = it.unit / S;
      const Box rows{{u, it.first, (it.unit % S) * h, 0}, {1, it.tokens, h, d}}, outs{{u, it.first, (it.unit % S) * h, 0}, {1, it.tokens, h, dv}};
      const SramBuf qs = p.slice(qb, 0, R * d);
      const OpId lq = p.load(q, rows, qs);
      FlashChunks chain;
      chain.dv = dv;
      for (std::int64_t j = 0; j < J; ++j) {
        const std::int64_t n = j + 1 < J ? t : it.positions - (J - 1) * t, pos = j * t;
        const int slot = static_cast<int>(j % 2);
        const SramBuf kj = p.slice(kb[slot], 0, d * n), vj = p.slice(vb[slot], 0, n * dv), sj = p.slice(sb, 0, R * n);
        const OpId ldk = p.load(k, Box{{u, 0, pos}, {1, d, n}}, kj, {chain.k_free(slot)});
        const OpId ldv = p.load(v, Box{{u, pos, 0}, {1, n, dv}}, vj, {chain.v_free(slot)});
        // The causal mask of the blocks the diagonal crosses rides on the scaling pass (timed
        // alike): token i of the tile is at position T0 + first + i.
        FlashCausal mask;
        if (pos + n - 1 > T0 + it.first) mask = FlashCausal{true, T0 + it.first, h, pos};
        chain.step(p, slot, j == 0, lq, ldk, ldv, qs, kj, vj, sj, R, n, d, scale, FlashBufs{m, l, ob, tmp, mc, lc, oc}, mask);
      }
      const OpId div = p.row_div(ob, l, R, dv, {chain.last_vec, chain.last_mm});
      p.store(p.slice(ob, 0, R * dv), o, outs, {div});
    }
  });
  return o;
}

}  // namespace

void llm_attn_compose(RuntimeContext& ctx, const LlmAttnConfig& c) {
  if (llm_attn_check(c) != kLlmAttnOk) throw InputError("llm attention kernel: invalid config");
  attn_build(ctx, c, nullptr);
}

LlmAttnResult llm_attn_reference(const LlmAttnConfig& c, const std::string* trace_path, KernelValues* data) {
  LlmAttnResult r{};
  r.status = llm_attn_check(c);
  if (r.status != kLlmAttnOk) throw InputError("llm attention kernel: invalid config (status " + std::to_string(r.status) + ")");
  const std::int64_t G = llm_attn_group(c), d = c.head_dim, KV = c.batch * c.kv_heads;
  RuntimeContext ctx(topology_of(c.hw), ContextOptions{data != nullptr});
  ctx.limit_ops(llm_attn_reference_ops(c));
  Tensor answer;
  try {
    answer = attn_build(ctx, c, data);
  } catch (const InputError& e) {
    throw InternalError(std::string("the llm attention kernel was rejected by the runtime: ") + e.what(), __FILE__, __LINE__);
  }
  const RunReport report = ctx.run_checked("llm", "llm attention kernel");
  if (trace_path) ctx.write_trace(*trace_path, report);
  if (data) data->out = ctx.values(answer);
  const engine::Summary& s = report.summary;
  r.latency_ps = s.latency_ps;
  r.matrix_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::matrix)];
  r.vector_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::vector)];
  r.dma_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  r.macs = KV * G * (d + llm_attn_dv(c)) * llm_attn_pairs(c);  // the causal pairs' (a count, not a time)
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  r.vector_ops = s.vector_ops, r.sram_read_bytes = s.sram_read_bytes, r.sram_write_bytes = s.sram_write_bytes;
  return r;
}

LlmSendResult llm_send_reference(const LlmSendConfig& c, const std::string* trace_path) {
  LlmSendResult r{};
  r.status = llm_send_check(c);
  if (r.status != kLlmSendOk) throw InputError("llm stage transfer: invalid config (status " + std::to_string(r.status) + ")");
  const HwConfig& h = c.hw;
  RuntimeContext ctx(topology_of(h), ContextOptions{false});
  ctx.limit_ops(4 * c.ranks * (h.sips + 4));
  try {
    // The activation on the sender's SIP, and a copy of it on every SIP of the next stage.
    auto on = [&](std::int64_t sip) {
      Placement at;
      at.cubes = h.cubes_per_sip(), at.sip = static_cast<std::int32_t>(sip);
      return at;
    };
    const net::Node from = llm_send_from(c);
    const Tensor src = ctx.zeros({1, c.bytes / 2}, DType::f16, on(from.sip), "activation");
    std::vector<Tensor> dst;
    for (std::int64_t s = 0; s < c.stage_sips; ++s)
      dst.push_back(ctx.zeros({1, c.bytes / 2}, DType::f16, on(c.stage_sips + s), "next_stage"));
    ctx.launch("llm_stage_transfer", LaunchGrid{h.sips, h.cubes_per_sip(), h.pes_per_cube()}, [&](PeProgram& p) {
      const Rank me = p.rank();
      if (me.sip != from.sip || me.cube != from.cube || me.pe != from.pe) return;
      OpId last = engine::kNoOp;
      for (std::int64_t i = 0; i < c.ranks; ++i) {  // one rank after another
        const net::Node to = llm_send_to(c, i);
        const Rank dest{static_cast<std::int32_t>(to.sip), static_cast<std::int32_t>(to.cube), static_cast<std::int32_t>(to.pe)};
        const Region all{0, 1, 0, c.bytes / 2};
        last = p.copy(src, all, dest, dst[static_cast<std::size_t>(to.sip - c.stage_sips)], all, {last});
      }
    });
  } catch (const InputError& e) {
    throw InternalError(std::string("the llm stage transfer was rejected by the runtime: ") + e.what(), __FILE__, __LINE__);
  }
  const RunReport report = ctx.run_checked("llm", "llm stage transfer");
  if (trace_path) ctx.write_trace(*trace_path, report);
  const engine::Summary& s = report.summary;
  r.latency_ps = s.latency_ps;
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  for (const LinkUse& u : report.links) r.link_bytes += u.bytes;
  r.link_bytes_pe = s.link_bytes[0], r.link_bytes_cube = s.link_bytes[1], r.link_bytes_sip = s.link_bytes[2];
  return r;
}

namespace {
// A tensor-parallel allreduce as the reference runs it: channels auto (0) completed to the
// count the batched model finds (AllreduceModel::complete), as a config the host completes.
AllreduceConfig channels_of(const AllreduceConfig& a) {
  AllreduceConfig x = a;
  AllreduceModel::complete(x);
  return x;
}
}  // namespace

std::int64_t llm_reference_ops(const LlmConfig& c) {
  struct Ops {
    std::int64_t most = 0;
    void gemm(const GemmConfig& g, const LlmKernel&, bool) { most = std::max(most, gemm_reference_ops(g)); }
    void attention(const DecodeConfig& d, const LlmKernel&, bool) { most = std::max(most, decode_reference_ops(d)); }
    void attention(const LlmAttnConfig& x, const LlmKernel&, bool) { most = std::max(most, llm_attn_reference_ops(x)); }
    void allreduce(const AllreduceConfig& a, const LlmKernel&, bool) { most = std::max(most, allreduce_reference_ops(channels_of(a))); }
    void vector(const LlmVecConfig& x, const LlmKernel&, bool) { most = std::max(most, llm_vec_reference_ops(x)); }
    void transfer(const LlmSendConfig&) {}
  } ops;
  if (llm_check(c) == kLlmOk) llm_for_each_kernel(c, ops);
  return ops.most;
}

namespace {

// One trace of a layer: each kernel's own trace (a launch of its own) shifted to where the
// kernel ran in the step, its resources matched by name, and a track of the kernels.
class LayerTrace {
 public:
  explicit LayerTrace(std::string path) : path_(std::move(path)) {}
  LayerTrace(const LayerTrace&) = delete;
  LayerTrace& operator=(const LayerTrace&) = delete;
  ~LayerTrace() {  // no part is left behind, whatever happened
    for (std::size_t i = 0; i <= parts_; ++i) std::remove(part(i).c_str());
  }
  // The temporary file kernel i writes its trace to (in the system's temporary folder).
  std::string part(std::size_t i) {
    parts_ = std::max(parts_, i);
    static const std::string dir = std::filesystem::temp_directory_path().string();
    return dir + "/kernbench_llm_trace_" + std::to_string(static_cast<long long>(::getpid())) + "_" + std::to_string(i) +
           ".json";
  }
  // Adds kernel `name`'s trace (written to part(i)), which ran from `start` for `latency`.
  void add(std::size_t i, const std::string& name, ps_t start, ps_t latency) {
    const std::string file = part(i);
    std::ifstream in(file, std::ios::binary);
    nlohmann::json t = nlohmann::json::parse(in, nullptr, false);
    in.close();
    std::remove(file.c_str());
    if (t.is_discarded() || !t.contains("traceEvents"))
      throw InternalError("the trace of kernel " + name + " could not be read back", __FILE__, __LINE__);
    std::map<std::int64_t, std::int64_t> tid;  // the kernel's resource -> the layer's
    for (nlohmann::json& e : t["traceEvents"]) {
      if (e["ph"] == "M") {
        const std::string res = e["args"]["name"];
        auto it = by_name_.find(res);
        if (it == by_name_.end()) {
          it = by_name_.emplace(res, static_cast<std::int64_t>(by_name_.size()) + 1).first;
          events_.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", e["pid"]}, {"tid", it->second}, {"args", {{"name", res}}}});
        }
        tid[e["tid"].get<std::int64_t>()] = it->second;
        continue;
      }
      e["tid"] = tid.at(e["tid"].get<std::int64_t>());
      e["ts"] = e["ts"].get<double>() + static_cast<double>(start) / 1e6;
      e["args"]["start_ps"] = e["args"]["start_ps"].get<std::int64_t>() + start;
      e["cat"] = name + "/" + e["cat"].get<std::string>();
      events_.push_back(std::move(e));
    }
    kernels_.push_back({{"ph", "X"}, {"name", name}, {"cat", "layer"}, {"pid", 0}, {"tid", 0},
                        {"ts", static_cast<double>(start) / 1e6}, {"dur", static_cast<double>(latency) / 1e6},
                        {"args", {{"start_ps", start}, {"latency_ps", latency}}}});
  }
  void write() {
    nlohmann::json all = nlohmann::json::array();
    all.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "layer kernels"}}}});
    for (nlohmann::json& e : kernels_) all.push_back(std::move(e));
    for (nlohmann::json& e : events_) all.push_back(std::move(e));
    write_file_atomic(path_, nlohmann::json{{"traceEvents", all}, {"displayTimeUnit", "ns"}}.dump());
  }

 private:
  std::string path_;
  std::size_t parts_ = 0;
  std::map<std::string, std::int64_t> by_name_;
  std::vector<nlohmann::json> events_, kernels_;
};

}  // namespace

LlmResult llm_reference(const LlmConfig& c, const std::string* trace_path) {
  const std::int32_t st = llm_check(c);
  if (st != kLlmOk) throw InputError(llm_status_message(st, c));
  // Each layer runs its kernels in turn; every layer must come out as the first of its kind
  // did (they are identical), which is what lets the model count one layer `layers` times.
  // Stage 0 runs `run` layers, its first: those of the second kind (llm_alt_layers) timed as
  // their own.
  const std::int64_t run = c.layers_run ? c.layers_run : c.layers;
  const std::int64_t dense_run = llm_stage_alt_layers(llm_shape_of(c), llm_run_of(c), 0, run), main_run = run - dense_run;
  struct Time {
    LlmTally t;
    std::int64_t tp;
    LayerTrace* trace = nullptr;  // the first layer's kernels, traced
    std::size_t traced = 0;
    bool first = true;       // the first pass: the first layer of each kind and the head, tallied
    bool dense = false;      // the kernels now given are a MoE model's dense layer's
    bool want[2] = {true, true};   // the pass runs a (MoE or only) layer, a dense layer
    bool count[2] = {true, true};  // the layer it runs is one of the step's (`ran`)
    ps_t layer_latency[2] = {0, 0};  // the pass's layer of each kind
    ps_t ran = 0;            // every kernel of the step run, summed
    void layer_kind(bool d) { dense = d; t.layer_kind(d); }
    // Whether to run this kernel: a pass runs the layers it wants, the first pass the head's too.
    bool runs(bool layer) const { return layer ? want[dense] : first; }
    // Where kernel k of the first layer writes its trace (none for later ones and the head).
    std::string trace_file{};
    const std::string* to(bool layer) {
      if (!trace || !first || !layer) return nullptr;
      trace_file = trace->part(traced);
      return &trace_file;
    }
    void add(bool layer, LlmTally::Kind k, ps_t latency, const Actions& a, std::int64_t times, std::int64_t link,
             const LlmKernel& kernel) {
      // A kernel repeated (a rank's routed experts, alike) runs once, and counts its repeats.
      if (trace && first && layer) trace->add(traced++, kernel.name, ran, latency);
      const ps_t all = sat_mul(kernel.repeat, latency);
      if (!layer || count[dense]) ran = sat_add(ran, all);
      if (layer) layer_latency[dense] += all;
      if (first) t.add(layer, k, latency, a, times, link, kernel);
    }
    void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
      if (!runs(layer)) return;
      const GemmResult r = gemm_reference(g, to(layer));
      add(layer, LlmTally::kGemm, r.latency_ps, GemmModel::actions(g, r), tp, 0, k);
    }
    void attention(const DecodeConfig& d, const LlmKernel& k, bool layer) {
      if (!runs(layer)) return;
      const DecodeResult r = decode_reference(d, to(layer));
      add(layer, LlmTally::kAttention, r.latency_ps, DecodeModel::actions(d, r), tp, 0, k);
    }
    void attention(const LlmAttnConfig& x, const LlmKernel& k, bool layer) {
      if (!runs(layer)) return;
      const LlmAttnResult r = llm_attn_reference(x, to(layer));
      add(layer, LlmTally::kAttention, r.latency_ps, llm_attn_actions(r), tp, 0, k);
    }
    void allreduce(const AllreduceConfig& a, const LlmKernel& k, bool layer) {
      if (!runs(layer)) return;
      const AllreduceResult r = allreduce_reference(channels_of(a), to(layer));
      add(layer, LlmTally::kAllreduce, r.latency_ps, AllreduceModel::actions(a, r), 1,
          r.link_bytes_pe + r.link_bytes_cube + r.link_bytes_sip, k);
    }
    void vector(const LlmVecConfig& x, const LlmKernel& k, bool layer) {
      if (!runs(layer)) return;
      const LlmVecResult r = llm_vec_reference(x, to(layer));
      add(layer, LlmTally::kVector, r.latency_ps, llm_vec_actions(r), tp, 0, k);
    }
    void transfer(const LlmSendConfig& x) {
      if (!first) return;
      const LlmSendResult r = llm_send_reference(x);
      ran = sat_add(ran, r.latency_ps);
      t.add_transfer(r.latency_ps, llm_send_actions(r), r.link_bytes);
    }
  } time{LlmTally{}, c.tp};
  std::unique_ptr<LayerTrace> trace;
  if (trace_path) trace = std::make_unique<LayerTrace>(*trace_path), time.trace = trace.get();
  // The first pass runs the first layer of each kind and the head; each further pass one
  // more layer of one kind.
  time.count[0] = main_run > 0, time.count[1] = dense_run > 0;
  llm_for_each_kernel(c, time);
  const ps_t first[2] = {time.layer_latency[0], time.layer_latency[1]};
  time.first = false;
  time.count[0] = time.count[1] = true;
  for (int kind = 0; kind < 2; ++kind) {
    time.want[0] = kind == 0, time.want[1] = kind == 1;
    for (std::int64_t l = 1; l < (kind == 0 ? main_run : dense_run); ++l) {
      time.layer_latency[kind] = 0;
      llm_for_each_kernel(c, time);
      if (time.layer_latency[kind] != first[kind])
        throw InternalError(std::string(kind ? "second-kind " : "") + "layer " + std::to_string(l) + " of the step took " +
                                std::to_string(time.layer_latency[kind]) + " ps, the first " + std::to_string(first[kind]) +
                                " ps: identical layers differ",
                            __FILE__, __LINE__);
    }
  }
  // The step from what ran: one pipeline stage's kernels in turn (every kernel the engine
  // ran, at pp = 1 and one micro-batch), or the schedule of stages and micro-batches.
  LlmResult out = time.t.finish(c);
  if (out.status != kLlmOk) throw InputError(llm_status_message(out.status, c));
  if (c.pp == 1 && c.microbatches == 1 && out.latency_ps != time.ran)
    throw InternalError("the step took " + std::to_string(time.ran) + " ps to run, its tally says " +
                            std::to_string(out.latency_ps),
                        __FILE__, __LINE__);
  if (trace) trace->write();  // only once the step is known good: no partial output
  return out;
}

std::string llm_place_message(std::int32_t status, const HwConfig& h, const LlmShape& m, const LlmRun& r) {
  switch (status) {
    case kLlmBadTp:
      return "--tp " + std::to_string(r.tp) + ": a mapping needs 1.." + std::to_string(coll_level_size(h, r.tp_level)) +
             " ranks at level " + kCollLevelNames[r.tp_level] +
             (r.tp_level == static_cast<std::int64_t>(CollLevel::hier)
                  ? " (part of one cube's " + std::to_string(h.pes_per_cube()) + " PEs, whole cubes of one SIP, or whole SIPs)"
                  : std::string()) +
             ", dividing num_attention_heads (" + std::to_string(m.heads) +
             ") and dividing or divided by num_key_value_heads (" + std::to_string(m.kv_heads) + ")";
    case kLlmBadPp:
      if (r.pp >= 1 && r.pp <= kLlmMaxStages && !llm_split_fits(m, r)) {
        std::int64_t n = 0, sum = 0;
        while (n < kLlmMaxStages && r.stage_layers[n] != 0) sum += r.stage_layers[n++];
        std::string given;
        for (std::int64_t s = 0; s < n; ++s) given += (s ? "," : "") + std::to_string(r.stage_layers[s]);
        return "--pp-layers " + given + ": " + std::to_string(n) + " stages of " + std::to_string(sum) +
               " layers in all; the mapping has " + std::to_string(r.pp) + " stages (--pp) and the model " +
               std::to_string(m.layers) + " layers";
      }
      return "--pp " + std::to_string(r.pp) + ": " + std::to_string(r.pp) + " stages of " +
             std::to_string(llm_ranks(h, r).sips_per_stage) + " SIP(s) each need more SIPs than the topology's " +
             std::to_string(h.sips) + " (or more stages than the model's " + std::to_string(m.layers) + " layers, or than " +
             std::to_string(kLlmMaxStages) + ")";
    case kLlmTooLarge: return "the step's FLOPs, bytes or time pass int64: fewer sequences, shorter prompts or fewer micro-batches";
    case kLlmHbmOverflow: {
      const LlmCubeBytes c = llm_fullest_cube(h, m, r);
      return "hbm_overflow: the fullest cube (stage " + std::to_string(c.stage) + ") needs " + std::to_string(c.total) +
             " bytes (weights " + std::to_string(c.weights) + ", KV cache " + std::to_string(c.kv) + ", activations " +
             std::to_string(c.activations) + ") against its HBM's " + std::to_string(h.hbm_capacity_bytes()) +
             " bytes: more ranks, more stages, or 8-bit weights";
    }
    default: return std::string("invalid mapping (") + kLlmPlaceStatusNames[status] + ")";
  }
}

std::int64_t llm_parse_stage_layers(const std::string& flag, const std::string& text, std::int16_t out[kLlmMaxStages]) {
  std::fill(out, out + kLlmMaxStages, std::int16_t{0});
  const std::string usage = flag + " " + text + ": expected each pipeline stage's layers, 1.." +
                            std::to_string(kLlmMaxLayers) + " each, 1.." + std::to_string(kLlmMaxStages) +
                            " stages, separated by commas (e.g. 21,20,20,19)";
  std::int64_t n = 0;
  std::size_t at = 0;
  for (;;) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    std::string why;
    if (item.size() > 4 || !integer_text_ok(item, false, &why)) throw InputError(usage);
    const std::int64_t v = std::stoll(item);
    if (v < 1 || v > kLlmMaxLayers || n == kLlmMaxStages) throw InputError(usage);
    out[n++] = static_cast<std::int16_t>(v);
    if (end == text.size()) break;
    at = end + 1;
  }
  return n;
}

std::string llm_stage_layers_text(const LlmShape& m, const LlmRun& r) {
  std::string s;
  for (std::int64_t i = 0; i < r.pp && i < kLlmMaxStages; ++i) s += (i ? "," : "") + std::to_string(llm_stage_layers(m, r, i));
  return s;
}

namespace {
// kLlmBadField's reason: the tensor-parallel allreduce's algorithm or channels, else a range.
std::string bad_field_message(const LlmConfig& c) {
  if (c.tp_algo >= 0 && c.tp_algo < kCollAlgos && !coll_algo_runs(c.tp_algo, static_cast<std::int64_t>(CollOp::allreduce)))
    return std::string("tp-algo: ") + kCollAlgoNames[c.tp_algo] + " does not run an allreduce (ring, hd, tree, mesh2d or root)";
  if (c.tp_channels < 0 || c.tp_channels > kCollMaxChannels ||
      (c.tp > 1 && c.tp_channels > 1 && c.tp_level >= 0 && c.tp_level < kCollLevels &&
       !coll_channels_fit(c.hw, c.tp_level, c.tp_channels)))
    return "tp-channels: " + std::to_string(c.tp_channels) + " channels do not fit tp-level " +
           (c.tp_level >= 0 && c.tp_level < kCollLevels ? kCollLevelNames[c.tp_level] : "?") +
           " (channels run at the cube and sip levels, up to a cube's PEs or a SIP's cubes and PEs, at most " +
           std::to_string(kCollMaxChannels) + ")";
  if (!llm_moe_fields_fit(c))
    return "a mixture-of-experts field is out of range (experts 1.." + std::to_string(kMoeMaxExperts) +
           ", top_k 1..experts, moe_intermediate >= 1, --attention dp and --redundant-experts with experts only), or "
           "the routed tokens are not the step's tokens x top_k";
  if (!llm_mla_fields_fit(c))
    return "a latent-attention field is out of range (kv_lora >= 1 and kv_lora + rope_dim at most " +
           std::to_string(kLlmMaxHeadDim) + ", rope_dim even and below head_dim, v_head 1.." + std::to_string(kLlmMaxHeadDim) +
           ", kv_heads equal to heads, no --qk-norm; q_lora, rope_dim and v_head 0 without kv_lora)";
  if (!llm_nope_fields_fit(c))
    return "--nope-every " + std::to_string(c.nope_every) + " --attn-chunk " + std::to_string(c.attn_chunk) +
           ": layers without RoPE every 0..layers (" + std::to_string(c.layers) + ") layers, chunks of 0.." +
           std::to_string(kLlmMaxContext) + " positions, neither with latent attention or --dense-layers, and "
           "--nope-every with --qk-norm no or l2 (a layer without RoPE has no q/k norm)";
  if (!llm_prior_fits(c))
    return "--prior " + std::to_string(c.prior) + ": positions cached before a prompt are a prefill's (--phase prefill), "
           "0 or more, and not with latent attention or --attn-chunk";
  return "a field is out of range (the model's dimensions as docs/model.md section 13.1 allows, layers 0..the "
         "model's, tp-algo, attention case 1..4, micro-batches dividing the batch, at most 64 stages, or the hardware)";
}
}  // namespace

namespace {
// kLlmBadExperts's reason: the placement of the experts, or the sequences over the ranks.
std::string moe_status_message(const LlmConfig& c) {
  const std::int64_t copies = c.experts + c.redundant_experts;
  switch (moe_place_check(c.experts, c.tp, c.redundant_experts)) {
    case kMoePlaceOk: break;
    case kMoePlaceBadRanks:
      return "--tp " + std::to_string(c.tp) + ": " + std::to_string(c.tp) + " expert-parallel ranks for " + std::to_string(copies) +
             " expert copies (" + std::to_string(c.experts) + " experts, " + std::to_string(c.redundant_experts) +
             " redundant): a rank holds one copy or more";
    case kMoePlaceTooMany:
      return "--redundant-experts " + std::to_string(c.redundant_experts) + ": at most one copy of an expert a rank, so at most " +
             std::to_string(c.experts * (c.tp - 1)) + " over " + std::to_string(c.tp) + " ranks";
    case kMoePlaceUneven:
      return "--redundant-experts " + std::to_string(c.redundant_experts) + ": " + std::to_string(copies) +
             " expert copies do not split evenly over " + std::to_string(c.tp) + " ranks";
    default: return "--redundant-experts " + std::to_string(c.redundant_experts) + ": outside 0.." + std::to_string(kMoeMaxRedundant);
  }
  if (c.attention_dp && c.tp >= 1 && (c.batch / c.microbatches) % c.tp != 0)
    return "--attention dp: a micro-batch's " + std::to_string(c.batch / c.microbatches) + " sequences do not split evenly over " +
           std::to_string(c.tp) + " ranks (a batch a multiple of the ranks)";
  return "the experts' tokens are not routed";
}
}  // namespace

std::string llm_status_message(std::int32_t status, const LlmConfig& c) {
  const LlmShape m = llm_shape_of(c);
  const LlmRun r = llm_run_of(c);
  // The figures below divide by these: a config whose fields are not even in range gets the
  // status's plain meaning.
  const bool sane = c.tp >= 1 && c.pp >= 1 && c.heads >= 1 && c.kv_heads >= 1 && c.layers >= 1 && c.head_dim >= 1 &&
                    c.tp_level >= 0 && c.tp_level < kCollLevels && hw_fits(c.hw);
  if (!sane && status != kLlmOk && status != kLlmBadField && status != kLlmTooLarge && status != kLlmUnsupported)
    return std::string("invalid mapping (") + kLlmPlaceStatusNames[status] + ")";
  switch (status) {
    case kLlmOk: return "valid";
    case kLlmBadField: return bad_field_message(c);
    case kLlmBadTp:
    case kLlmBadPp:
    case kLlmTooLarge:
    case kLlmHbmOverflow: return llm_place_message(status, c.hw, m, r);
    case kLlmUnsupported: return "unsupported";
    case kLlmBadExperts: return moe_status_message(c);
    case kLlmBadKernel: {
      std::int32_t bad = -1, ks = 0;
      llm_check(c, &bad, &ks);
      // The kernel the check refused: the visit that many calls in (waves and the stage
      // transfer are calls of their own), with its family's reason.
      struct Why {
        std::int32_t index = 0, want, status;
        std::string out, name = "?";
        bool at(const LlmKernel* k) {
          if (index++ != want) return false;
          if (k) name = std::string(k->name) + " (" + kLlmKernelKindNames[static_cast<int>(k->kind)] + ")";
          return true;
        }
        bool tuned;
        void gemm(const GemmConfig& g, const LlmKernel& k, bool) {
          if (!at(&k)) return;
          out = std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + " GEMM: " +
                (tuned ? "no tiling of the gemm family's space is valid on the rank's machine; the automatic one: " : "") +
                gemm_status_message(status, g);
        }
        void attention(const DecodeConfig& d, const LlmKernel& k, bool) { if (at(&k)) out = decode_status_message(status, d); }
        void attention(const LlmAttnConfig&, const LlmKernel& k, bool) {
          if (at(&k))
            out = status == kLlmAttnSramOverflow ? "a query tile's buffers do not fit a PE's SRAM"
                  : status == kLlmAttnTooLarge   ? "more query tiles than a model walks (2^24)"
                  : status == kLlmAttnTimeOverflow ? "times could pass int64 picoseconds"
                                                   : "invalid";
        }
        void allreduce(const AllreduceConfig&, const LlmKernel& k, bool) { if (at(&k)) out = kArStatusNames[status]; }
        void vector(const LlmVecConfig&, const LlmKernel& k, bool) {
          if (at(&k)) out = status == kLlmVecSramOverflow ? "a row of its buffers does not fit a PE's SRAM" : "invalid";
        }
        void transfer(const LlmSendConfig&) {
          if (at(nullptr)) name = "stage_transfer", out = status == kLlmSendTimeOverflow ? "times could pass int64 picoseconds" : "invalid";
        }
      } w{0, bad, ks, "status " + std::to_string(ks), "?", c.kernel_tuning == static_cast<std::int64_t>(LlmKernelTuning::best)};
      llm_for_each_kernel(c, w);
      return "kernel " + w.name + ": " + w.out;
    }
    default: return "invalid";
  }
}

}  // namespace kb
