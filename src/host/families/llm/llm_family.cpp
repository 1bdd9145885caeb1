// The llm family's descriptor: one step of a whole LLaMA model under a tensor-parallel
// mapping, composed from the families' kernels (docs/model.md section 13.5).
#include <cstddef>
#include <cstdio>

#include "llm_data.h"
#include "llm_moe_desc.h"
#include "llm_program.h"
#include "../../llm/model_file.h"
#include "../family.h"

namespace kb {

namespace {

using C = LlmConfig;
using R = LlmResult;

template <class F>
std::function<nlohmann::json(const void*, const void*)> col(F f) {
  return typed_getter<C, R>(f);
}
// The algorithms that run an allreduce (the tensor-parallel one's candidates).
std::string allreduce_algos() {
  std::string s;
  for (std::int64_t a = 0; a < kCollAlgos; ++a)
    if (coll_algo_runs(a, static_cast<std::int64_t>(CollOp::allreduce))) s += (s.empty() ? "" : ",") + std::string(kCollAlgoNames[a]);
  return s;
}
bool is_prefill(const C& c) { return c.phase == static_cast<std::int64_t>(LlmPhase::prefill); }
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// The peak MACs a picosecond of every PE the mapping uses, and the HBM bytes a picosecond
// of every cube it uses.
double peak_macs_per_ps(const C& c) {
  const LlmRanks k = llm_ranks(c.hw, llm_run_of(c));
  return static_cast<double>(c.tp * k.pes_per_rank * c.pp) * static_cast<double>(c.hw.matrix_rows * c.hw.matrix_cols) *
         static_cast<double>(c.hw.clock_mhz) / 1e6;
}
double peak_bytes_per_ps(const C& c) {
  return static_cast<double>(llm_ranks(c.hw, llm_run_of(c)).cubes_used * c.hw.hbm_bandwidth_gbps) / 1e3;
}

// The axes: the model's shape, the step, and the mapping.
std::vector<AxisDesc> llm_axes() {
  std::vector<AxisDesc> axes = {
      axis("hidden", "--hidden", "hidden_size", offsetof(C, hidden)).range(1, kLlmMaxHidden).default_to("4096").defines_problem(),
      axis("intermediate", "--intermediate", "intermediate_size", offsetof(C, intermediate))
          .range(1, kLlmMaxIntermediate).default_to("14336").defines_problem(),
      axis("heads", "--heads", "num_attention_heads", offsetof(C, heads)).range(1, kLlmMaxHeads).default_to("32").defines_problem(),
      axis("kv_heads", "--kv-heads", "num_key_value_heads", offsetof(C, kv_heads))
          .range(1, kLlmMaxHeads).default_to("8").defines_problem(),
      axis("head_dim", "--head-dim", "head_dim", offsetof(C, head_dim)).range(1, kLlmMaxHeadDim).default_to("128").defines_problem(),
      axis("layers", "--num-layers", "num_hidden_layers", offsetof(C, layers)).range(1, kLlmMaxLayers).default_to("32").defines_problem(),
      axis("vocab", "--vocab", "vocab_size", offsetof(C, vocab)).range(1, kLlmMaxVocab).default_to("128256").defines_problem(),
      axis("tied", "--tied", "tie_word_embeddings", offsetof(C, tied)).choices({"no", "yes"}).default_to("no").defines_problem(),
      axis("weight_bytes", "--weight-bytes", "bytes a weight (2: fp16; 1: 8-bit, fp8 e4m3, multiplied as fp16)",
           offsetof(C, weight_bytes)).range(1, 2).default_to("2"),
      axis("kv_bytes", "--kv-bytes", "bytes a KV cache value (2: fp16; 1: 8-bit, fp8 e4m3)",
           offsetof(C, kv_bytes)).range(1, 2).default_to("2"),
      axis("phase", "--phase", "decode (one new token a sequence, after --context positions) or prefill (--prompt tokens a sequence, causal)",
           offsetof(C, phase)).choices({"decode", "prefill"}).default_to("decode").defines_problem(),
      axis("batch", "--batch", "sequences", offsetof(C, batch)).range(1, kLlmMaxBatch).default_to("1").defines_problem(),
      axis("context", "--context", "KV positions a new token attends to, its own included", offsetof(C, context))
          .range(1, kLlmMaxContext).default_to("4096").defines_problem(),
      axis("prompt", "--prompt", "prefill: tokens a prompt", offsetof(C, prompt)).range(1, kLlmMaxPrompt).default_to("2048").defines_problem(),
      axis("prior", "--prior",
           "prefill: positions of each sequence cached before its prompt's tokens, attended to (chunked prefill's later "
           "chunks; 0: none)",
           offsetof(C, prior)).range(0, kLlmMaxContext).default_to("0").defines_problem().only_with("prior"),
      axis("tp", "--tp", "tensor-parallel ranks", offsetof(C, tp)).range(1, kCollMaxHierRanks).best_of("1:64").default_to("best"),
      axis("tp_level", "--tp-level", "what a rank is: pe (a PE of one cube), cube (a cube of SIP 0), sip (a SIP), or hier "
                                     "(a PE, over the first tp PEs of the stage)",
           offsetof(C, tp_level)).choices(name_list(kCollLevelNames)).best_of("cube,sip").default_to("best"),
      axis("pp", "--pp", "pipeline stages, each its own SIPs, the layers split evenly or by --pp-layers (docs/model.md section 13.8)",
           offsetof(C, pp)).range(1, kLlmMaxStages).best_of("1,2,4,8").default_to("best"),
      axis("tp_algo", "--tp-algo", "the tensor-parallel allreduce's algorithm (" + allreduce_algos() + ")", offsetof(C, tp_algo))
          .choices(name_list(kCollAlgoNames)).best_of(allreduce_algos()).default_to("best"),
      axis("attention_case", "--attention-case",
           "KV sharding inside a rank, as the decode family's cases: 1 cube-SP / PE-TP, 2 cube-replicate / PE-TP, "
           "3 cube-replicate / PE-SP, 4 cube-SP / PE-SP",
           offsetof(C, attention_case)).range(1, 4).best_of("1,2,3,4").default_to("best"),
      axis("microbatches", "--microbatches", "equal micro-batches the batch goes through the stages in (dividing --batch)",
           offsetof(C, microbatches)).range(1, kLlmMaxBatch).default_to("1"),
      axis("kernel_tuning", "--kernel-tuning",
           "each GEMM kernel's tiles, split and buffers, and each attention kernel's chunk or tile: best (of least "
           "latency on the rank's machine, as a tuned software stack runs them) or auto (the families' automatic ones)",
           offsetof(C, kernel_tuning)).choices(name_list(kLlmKernelTuningNames)).default_to("best"),
      axis("tp_channels", "--tp-channels",
           "channels of the tensor-parallel allreduce (cube and sip levels: copies side by side over their own PEs and "
           "cubes, sharing the links; docs/model.md section 11.14); auto: the count of least latency",
           offsetof(C, tp_channels)).range(1, kCollMaxChannels).default_to("1").auto_means(0),
      axis("layers_run", "--layers", "layers the step runs on both engines (auto: every layer; the rest follows, "
                                     "docs/model.md section 13.5)",
           offsetof(C, layers_run)).range(1, kLlmMaxLayers).default_to("auto").auto_means(0),
  };
  for (AxisDesc& a : llm_moe_axes()) axes.push_back(std::move(a));
  for (AxisDesc& a : llm_mla_axes()) axes.push_back(std::move(a));
  for (AxisDesc& a : llm_nope_axes()) axes.push_back(std::move(a));
  return axes;
}

// --model (a shipped or Hugging Face model's dimensions) and --pp-layers (each stage's layers).
std::vector<PresetDesc> llm_presets() {
  std::vector<PresetDesc> presets = {{"--model", "a shipped model's NAME (model list) or a Hugging Face config.json: its dimensions",
                [](const std::string& value) {
                  const LlmModelFile m = load_llm_model(value);
                  const LlmShape& s = m.shape;
                  std::vector<std::pair<std::string, std::string>> v{
                      {"hidden", std::to_string(s.hidden)},     {"intermediate", std::to_string(s.intermediate)},
                      {"heads", std::to_string(s.heads)},       {"kv_heads", std::to_string(s.kv_heads)},
                      {"head_dim", std::to_string(s.head_dim)}, {"layers", std::to_string(s.layers)},
                      {"vocab", std::to_string(s.vocab)},       {"tied", s.tied ? "yes" : "no"}};
                  for (auto& p : llm_moe_model_values(m)) v.push_back(std::move(p));
                  for (auto& p : llm_mla_model_values(m)) v.push_back(std::move(p));
                  for (auto& p : llm_nope_model_values(m)) v.push_back(std::move(p));
                  if (m.weight_bytes > 0) v.emplace_back("weight_bytes", std::to_string(m.weight_bytes));  // fp8 weights
                  return v;
                },
                nullptr}};
  presets.push_back(
      {"--pp-layers", "each pipeline stage's layers, e.g. 21,20,20,19 (the stages: --pp, which defaults to their count); "
                      "an even split when not given",
       [](const std::string& value) {
         std::int16_t split[kLlmMaxStages];
         return std::vector<std::pair<std::string, std::string>>{
             {"pp", std::to_string(llm_parse_stage_layers("--pp-layers", value, split))}};
       },
       [](const std::string& value, void* config) {
         llm_parse_stage_layers("--pp-layers", value, static_cast<C*>(config)->stage_layers);
       }});
  for (PresetDesc& p : llm_moe_presets()) presets.push_back(std::move(p));
  return presets;
}

// The columns: the step and its parts, its shares, counts, bounds and the fullest cube.
std::vector<ColumnDesc> llm_columns() {
  auto figure = [](const char* name, const char* unit, const char* help, std::int64_t R::*m, bool terminal = false) {
    return parity_figure<C, R>(name, unit, help, m, terminal);
  };
  auto share = [](const char* name, const char* help, std::int64_t R::*m) {
    return ColumnDesc{name, "", help, ColType::real, col([m](const C&, const R& r) {
                        return ratio(static_cast<double>(r.*m), static_cast<double>(r.model_latency_ps));
                      }), false, false};
  };
  auto bounds = [](const C& c) { return llm_bounds(c.hw, llm_shape_of(c), llm_run_of(c)); };
  std::vector<ColumnDesc> cols = {
      figure("latency_ps", "ps", "the step as run: --layers layers a stage and the head", &R::latency_ps),
      figure("step_ps", "ps", "the whole model's step: every layer and the head (a decode step, or the prefill)",
             &R::model_latency_ps, true),
      {"tpot_ps", "ps", "decode: time per output token, the step (null for prefill)", ColType::integer,
       col([](const C& c, const R& r) { return is_prefill(c) ? nlohmann::json() : nlohmann::json(r.model_latency_ps); }),
       false, false},
      {"ttft_ps", "ps", "prefill: time to first token, the step (null for decode)", ColType::integer,
       col([](const C& c, const R& r) { return is_prefill(c) ? nlohmann::json(r.model_latency_ps) : nlohmann::json(); }),
       false, false},
      {"tokens_per_s", "1/s", "tokens the step produces (decode: batch) or reads (prefill: batch x prompt) a second",
       ColType::real, col([](const C& c, const R& r) {
         const double tokens = static_cast<double>(c.batch) * static_cast<double>(is_prefill(c) ? c.prompt : 1);
         return ratio(tokens * 1e12, static_cast<double>(r.model_latency_ps));
       }), false, true},
      figure("layer_ps", "ps", "one layer of one micro-batch", &R::layer_ps),
      figure("head_ps", "ps", "the final norm and the LM head", &R::head_ps),
      figure("gemm_ps", "ps", "the step's GEMMs (projections and LM head) on its critical path", &R::gemm_ps),
      figure("attention_ps", "ps", "the step's attention kernels", &R::attention_ps),
      figure("vector_ps", "ps", "the step's vector kernels (norms, RoPE, SiLU x up, residuals, KV appends)", &R::vector_ps),
      figure("allreduce_ps", "ps", "the step's tensor-parallel allreduces", &R::allreduce_ps),
      figure("transfer_ps", "ps", "the step's activation transfers between pipeline stages", &R::transfer_ps),
      share("gemm_share", "GEMMs' share of the step's critical path (kernels in turn; stages and micro-batches by the schedule)", &R::gemm_ps),
      share("attention_share", "attention's share of the step", &R::attention_ps),
      share("vector_share", "vector kernels' share of the step", &R::vector_ps),
      share("allreduce_share", "allreduces' share of the step", &R::allreduce_ps),
      share("transfer_share", "stage transfers' share of the step", &R::transfer_ps),
      figure("macs", "", "multiply-accumulates of the step, every rank", &R::macs),
      figure("hbm_read_bytes", "bytes", "HBM bytes read in the step, every rank", &R::hbm_read_bytes),
      figure("hbm_write_bytes", "bytes", "HBM bytes written in the step, every rank", &R::hbm_write_bytes),
      figure("link_bytes", "bytes", "the allreduces' bytes over links, every level", &R::link_bytes),
      {"mfu", "", "MACs / (the used PEs' peak x the step)", ColType::real, col([](const C& c, const R& r) {
         return ratio(static_cast<double>(r.macs), peak_macs_per_ps(c) * static_cast<double>(r.model_latency_ps));
       }), false, true},
      {"mbu", "", "HBM bytes moved / (the used cubes' bandwidth x the step)", ColType::real, col([](const C& c, const R& r) {
         return ratio(static_cast<double>(r.hbm_read_bytes + r.hbm_write_bytes),
                      peak_bytes_per_ps(c) * static_cast<double>(r.model_latency_ps));
       }), false, true},
      {"compute_bound_ps", "ps", "the MACs that must be done at the used PEs' peak (docs/model.md section 13.2)",
       ColType::integer, col([bounds](const C& c, const R&) { return bounds(c).compute_ps; }), false, false},
      {"memory_bound_ps", "ps", "the bytes that must be read at the used cubes' HBM bandwidth", ColType::integer,
       col([bounds](const C& c, const R&) { return bounds(c).memory_ps; }), false, false},
      {"x_bound", "", "the step / the larger bound", ColType::real, col([bounds](const C& c, const R& r) {
         const LlmBounds b = bounds(c);
         return ratio(static_cast<double>(r.model_latency_ps), static_cast<double>(b.compute_ps > b.memory_ps ? b.compute_ps : b.memory_ps));
       }), false, true},
      {"stage_layers", "", "each pipeline stage's layers (--pp-layers, or the even split)", ColType::text,
       col([](const C& c, const R&) {
         return c.pp >= 1 && c.pp <= kLlmMaxStages && llm_split_fits(llm_shape_of(c), llm_run_of(c))
                    ? llm_stage_layers_text(llm_shape_of(c), llm_run_of(c))
                    : std::string();
       }), false, false},
      {"cube_weight_bytes", "bytes", "weights in the fullest cube's HBM", ColType::integer,
       col([](const C& c, const R&) { return llm_fullest_cube(c.hw, llm_shape_of(c), llm_run_of(c)).weights; }), false, false},
      {"cube_kv_bytes", "bytes", "KV cache in the fullest cube's HBM", ColType::integer,
       col([](const C& c, const R&) { return llm_fullest_cube(c.hw, llm_shape_of(c), llm_run_of(c)).kv; }), false, false},
      {"cube_activation_bytes", "bytes", "activations in the fullest cube's HBM (an upper bound)", ColType::integer,
       col([](const C& c, const R&) { return llm_fullest_cube(c.hw, llm_shape_of(c), llm_run_of(c)).activations; }), false,
       false},
  };
  for (ColumnDesc& d : llm_moe_columns()) cols.push_back(std::move(d));
  return cols;
}

// The kernels a valid config runs that have a choice made for them: each GEMM of a layer and
// of the head with its tiling (--kernel-tuning best: the tuned one), each prefill attention
// with its tile and heads an item, each decode attention wave with its sequences and chunk (waves alike
// once, with their count); and a MoE step's dispatch and combine (all-to-alls, or the combine's
// allreduce) with their algorithm, level and a rank's bytes.
nlohmann::json llm_kernels_json(const void* cfg) {
  const C& c = *static_cast<const C*>(cfg);
  nlohmann::json out = nlohmann::json::array();
  if (llm_check(c) != kLlmOk) return out;
  struct List {
    nlohmann::json* out;
    const char* alt;     // the second kind of layer (llm_alt_layers)
    bool dense = false;  // the kernels now given are a layer's of the second kind
    void layer_kind(bool d) { dense = d; }
    const char* part(bool layer) const { return layer ? (dense ? alt : "layer") : "head"; }
    void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
      out->push_back({{"name", k.name}, {"kind", "gemm"}, {"part", part(layer)}, {"m", g.m}, {"n", g.n},
                      {"k", g.k}, {"tile_m", g.tile_m}, {"tile_n", g.tile_n}, {"tile_k", g.tile_k},
                      {"split", kGemmSplitNames[g.split]}, {"buffers", g.buffers}, {"latency_ps", gemm_model(g).latency_ps}});
      if (k.repeat > 1) out->back()["repeat"] = k.repeat;  // a rank's routed experts, one after another
    }
    void attention(const LlmAttnConfig& x, const LlmKernel& k, bool layer) {
      out->push_back({{"name", k.name}, {"kind", "attention"}, {"part", part(layer)}, {"tile", x.tile},
                      {"heads", x.heads}, {"latency_ps", llm_attn_model(x).latency_ps}});
      if (k.k > 0) out->back()["batch"] = x.batch, out->back()["prompt"] = x.prompt;  // a chunked layer's: chunks as prompts
    }
    void attention(const DecodeConfig& d, const LlmKernel& k, bool layer) {  // waves alike listed once, counted
      if (!out->empty() && out->back()["name"] == k.name && out->back().contains("chunk") &&
          out->back()["batch"] == d.batch && out->back()["chunk"] == d.chunk) {
        out->back()["waves"] = out->back()["waves"].get<std::int64_t>() + 1;
        return;
      }
      out->push_back({{"name", k.name}, {"kind", "attention"}, {"part", part(layer)}, {"batch", d.batch},
                      {"chunk", d.chunk}, {"waves", 1}, {"latency_ps", decode_model(d).latency_ps}});
    }
    void allreduce(const AllreduceConfig& a, const LlmKernel& k, bool layer) {  // bytes: a rank's
      if (k.role == kLlmRoleNone) return;  // the tensor-parallel allreduces: no choice made for them
      const AllreduceResult r = AllreduceModel::evaluate(a);
      out->push_back({{"name", k.name}, {"kind", "collective"}, {"part", part(layer)}, {"op", kCollOpNames[a.op]},
                      {"algo", kCollAlgoNames[a.algo]}, {"level", kCollLevelNames[a.level]}, {"ranks", a.ranks},
                      {"bytes", a.bytes}, {"latency_ps", r.latency_ps}});
    }
    void vector(const LlmVecConfig&, const LlmKernel&, bool) {}
    void transfer(const LlmSendConfig&) {}
  } list{&out, c.nope_every > 0 ? "nope_layer" : "dense_layer"};
  llm_for_each_kernel(c, list);
  return out;
}

// Data mode: the logits of a float64 forward pass against the reference engine's.
nlohmann::json llm_data_json(const void* cfg, std::uint64_t seed, std::string* line) {
  const C& c = *static_cast<const C*>(cfg);
  const LlmDataReport d = llm_data_run(c, seed);
  const double rel = ratio(d.max_abs_error, d.max_abs_logit);
  char text[400];
  std::snprintf(text, sizeof text,
                "logits of %lld sequence(s) x %lld against a float64 forward pass (seed %llu): max |error| %.3g, "
                "max |logit| %.3g (error %.2g of it, %.2g fp16 half-ulps), rms error %.3g; %lld kernels in data mode, "
                "%s %lld ps as timed",
                static_cast<long long>(d.sequences), static_cast<long long>(d.vocab), static_cast<unsigned long long>(seed),
                d.max_abs_error, d.max_abs_logit, rel, rel / 0x1p-11, d.rms_error, static_cast<long long>(d.kernels),
                c.experts > 0 ? "each layer with its router's routing, the first MoE layer" : "each layer",
                static_cast<long long>(d.layer_ps));
  *line = text;
  if (c.experts > 0) {
    char more[160];
    std::snprintf(more, sizeof more, "; %lld row(s) routed otherwise by the float64 pass (near ties, widest gap %.2g)",
                  static_cast<long long>(d.routing_flips), d.routing_flip_gap);
    *line += more;
  }
  nlohmann::json out{{"seed", seed},
                        {"sequences", d.sequences},
                        {"vocab", d.vocab},
                        {"max_abs_error", d.max_abs_error},
                        {"max_abs_logit", d.max_abs_logit},
                        {"relative_error", rel},
                        {"rms_error", d.rms_error},
                        {"hidden_max_abs_error", d.hidden_max_abs_error},
                        {"hidden_max_abs", d.hidden_max_abs},
                        {"kernels", d.kernels},
                        {"layer_ps", d.layer_ps},
                        {"head_ps", d.head_ps}};
  if (c.experts > 0) {
    out["layers_ps"] = d.layers_ps;
    out["dense_layer_ps"] = d.dense_layer_ps;
    out["routing_flips"] = d.routing_flips;
    out["routing_flip_gap"] = d.routing_flip_gap;
  }
  return out;
}

Family make() {
  Family f;
  f.name = "llm";
  f.description = "one decode step or prefill of a whole LLaMA model (a Hugging Face config) under a tensor- and pipeline-parallel mapping";
  f.id = batched::Family::llm;
  f.hw_offset = offsetof(C, hw);
  f.axes = llm_axes();
  f.presets = llm_presets();
  f.default_group = "hidden,intermediate,heads,kv_heads,head_dim,layers,vocab,tied,phase,batch,context,prompt";
  f.statuses = name_list(kLlmPlaceStatusNames);
  f.status_message = [](std::int32_t s, const void* c) { return llm_status_message(s, *static_cast<const C*>(c)); };
  f.costs = {{"pes", "PEs the mapping uses"}, {"hbm", "HBM bytes read and written"}};
  f.objective = "step_ps";  // the whole model's step, whatever --layers the engines run
  f.default_cost = "pes";
  f.columns = llm_columns();
  set_engines<C, R>(
      f, [](const C& c) { return llm_check(c); },
      [](const C& c, const std::string* trace_path) { return llm_reference(c, trace_path); },
      [](const C& c) { return llm_reference_ops(c); });
  f.data_refusal = [](const void* c) { return llm_data_refusal(*static_cast<const C*>(c)); };
  f.data_run = llm_data_json;
  f.kernels = llm_kernels_json;
  llm_moe_set_prepare(f);
  add_energy<LlmModel>(f);
  return f;
}

}  // namespace

const Family& llm_family() {
  static const Family f = make();
  return f;
}

}  // namespace kb
