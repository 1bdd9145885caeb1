// `model list` and `model show`: the shipped whole models, and what a model's config gives
// (its dimensions, parameters, weight and KV cache bytes, and the work of a token).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cmd_family.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "device/models/llm/llm_layer.h"
#include "device/models/llm/llm_mapping.h"
#include "host/families/llm/llm_program.h"
#include "host/llm/model_file.h"
#include "host/topology/load.h"
#include "host/topology/fields.h"

namespace kb {

void add_model_commands(CLI::App& app, ModelArgs& a) {
  a.cmd = app.add_subcommand("model", "whole models (LLaMA, from Hugging Face config.json files)");
  a.cmd->require_subcommand(1);
  a.list = a.cmd->add_subcommand("list", "the shipped models (models/*.json)");
  a.show = a.cmd->add_subcommand("show", "a model's dimensions, parameters, weight and KV cache bytes, and work per token");
  a.show->add_option("model", a.model, "NAME of a shipped model, or the path of a config.json")->required();
  a.show->add_option("--weight-bytes", a.weight_bytes,
                     "bytes per weight: 2 (fp16) or 1 (8-bit); the default is the file's (fp8 quantization_config: 1), else 2");
  a.show->add_option("--kv-bytes", a.kv_bytes, "bytes per KV cache value: 2 (fp16, the default) or 1 (8-bit)");
  a.show->add_option("--context", a.context,
                     "KV positions a decoded token attends to, its own included (default 4096), 1.." +
                         std::to_string(kLlmMaxContext));
  a.show->add_flag("--json", a.json, "machine-readable output");

  a.place = a.cmd->add_subcommand(
      "place", "where a mapping puts a model's weights, KV cache and activations, whether each cube's HBM holds them, "
               "and the step's compute and memory bounds");
  a.place->add_option("model", a.model, "NAME of a shipped model, or the path of a config.json")->required();
  a.place->add_option("--phase", a.phase, "decode (one new token per sequence) or prefill (whole prompts)");
  a.place->add_option("--batch", a.batch, "sequences, 1.." + std::to_string(kLlmMaxBatch) + " (default 1)");
  a.place->add_option("--context", a.context, "decode: KV positions a new token attends to, its own included (default 4096)");
  a.place->add_option("--prompt", a.prompt, "prefill: tokens of each prompt, 1.." + std::to_string(kLlmMaxPrompt) + " (default 2048)");
  a.place->add_option("--tp", a.tp, "tensor-parallel ranks (default 1)");
  a.place->add_option("--tp-level", a.tp_level,
                      "what a rank is: pe (PEs of a cube), cube (cubes of a SIP, the default), sip, or hier (every PE of "
                      "some cubes or SIPs)");
  a.pp_given = a.place->add_option("--pp", a.pp, "pipeline stages, each its own SIPs (default 1, or --pp-layers' count)");
  a.pp_layers_given =
      a.place->add_option("--pp-layers", a.pp_layers, "each stage's layers, e.g. 21,20,20,19 (default: an even split)");
  a.place->add_option("--weight-bytes", a.weight_bytes, "bytes per weight: 2 (fp16, the default) or 1 (8-bit)");
  a.place->add_option("--kv-bytes", a.kv_bytes, "bytes per KV cache value: 2 (fp16, the default) or 1 (8-bit)");
  a.topo.add(a.place, false);
  a.place->add_flag("--json", a.json, "machine-readable output");
}

namespace {

void place(const ModelArgs& a) {
  const LlmModelFile model = load_llm_model(a.model, "model");
  require_dense(model, "model");
  const TopologySpec topo = a.topo.load();
  const HwConfig& h = topo.hw();
  LlmRun r{};
  if (a.phase == "decode") r.phase = static_cast<std::int64_t>(LlmPhase::decode);
  else if (a.phase == "prefill") r.phase = static_cast<std::int64_t>(LlmPhase::prefill);
  else throw InputError("--phase " + (a.phase.empty() ? std::string("''") : a.phase) + ": expected decode or prefill");
  r.tp_level = -1;
  for (std::int64_t l = 0; l < kCollLevels; ++l)
    if (a.tp_level == kCollLevelNames[l]) r.tp_level = l;
  if (r.tp_level < 0) throw InputError("--tp-level " + (a.tp_level.empty() ? std::string("''") : a.tp_level) + ": expected pe, cube, sip or hier");
  r.batch = parse_int_flag("--batch", a.batch, 1, kLlmMaxBatch);
  r.context = parse_int_flag("--context", a.context, 1, kLlmMaxContext);
  r.prompt = parse_int_flag("--prompt", a.prompt, 1, kLlmMaxPrompt);
  r.tp = parse_int_flag("--tp", a.tp, 1, kCollMaxHierRanks);
  std::int16_t split[kLlmMaxStages] = {};
  r.pp = parse_int_flag("--pp", a.pp, 1, kLlmMaxStages);
  if (a.pp_layers_given->count() != 0) {
    const std::int64_t n = llm_parse_stage_layers("--pp-layers", a.pp_layers, split);
    if (a.pp_given->count() == 0) r.pp = n;
    r.stage_layers = split;
  }
  r.weight_bytes = a.weight_bytes.empty() ? 2 : parse_int_flag("--weight-bytes", a.weight_bytes, 1, 2);
  r.kv_bytes = parse_int_flag("--kv-bytes", a.kv_bytes, 1, 2);
  const LlmShape& m = model.shape;
  const std::int32_t status = llm_place_check(h, m, r);
  if (status != kLlmOk) throw InputError(model.name + " on " + topo.name + ": " + llm_place_message(status, h, m, r));
  const LlmRanks k = llm_ranks(h, r);
  const LlmCubeBytes c = llm_fullest_cube(h, m, r);
  const LlmBounds b = llm_bounds(h, m, r);
  nlohmann::ordered_json j;
  j["model"] = model.name;
  j["topology"] = topo.name;
  j["phase"] = a.phase;
  j["batch"] = r.batch;
  if (r.phase == static_cast<std::int64_t>(LlmPhase::decode)) j["context"] = r.context;
  else j["prompt"] = r.prompt;
  j["mapping"] = {{"tp", r.tp}, {"tp_level", kCollLevelNames[r.tp_level]}, {"pp", r.pp},
                  {"sips_per_stage", k.sips_per_stage}, {"pes_per_rank", k.pes_per_rank}, {"cubes_used", k.cubes_used}};
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (std::int64_t s = 0; s < r.pp; ++s) {
    const LlmRankBytes rb = llm_rank_bytes(m, r, s);
    stages.push_back({{"layers", llm_stage_layers(m, r, s)}, {"rank_weight_bytes", rb.weights}, {"rank_kv_bytes", rb.kv},
                      {"rank_activation_bytes", rb.activations}});
  }
  j["stages"] = stages;
  j["fullest_cube"] = {{"stage", c.stage}, {"weight_bytes", c.weights}, {"kv_bytes", c.kv}, {"activation_bytes", c.activations},
                       {"total_bytes", c.total}, {"hbm_capacity_bytes", h.hbm_capacity_bytes()}};
  nlohmann::ordered_json program = nlohmann::ordered_json::array();
  LlmKernel layer[kLlmLayerKernels], head[kLlmHeadKernels];
  const int nl = llm_layer_program(h, m, r, layer), nh = llm_head_program(h, m, r, head);
  auto kernel_json = [](const LlmKernel& k, const char* where) {
    nlohmann::ordered_json o = {{"name", k.name}, {"kind", kLlmKernelKindNames[static_cast<int>(k.kind)]}, {"in", where}};
    if (k.kind == LlmKernelKind::gemm) o["m"] = k.m, o["k"] = k.k, o["n"] = k.n;
    else o["rows"] = k.rows, o["cols"] = k.cols;
    if (k.vector_cycles) o["vector_cycles"] = k.vector_cycles;
    if (k.bytes) o["bytes"] = k.bytes;
    o["macs"] = k.macs, o["hbm_read_bytes"] = k.hbm_read, o["hbm_write_bytes"] = k.hbm_write;
    return o;
  };
  for (int i = 0; i < nl; ++i) program.push_back(kernel_json(layer[i], "layer"));
  for (int i = 0; i < nh; ++i) program.push_back(kernel_json(head[i], "head"));
  j["rank_program"] = program;
  j["bounds"] = {{"macs", b.macs}, {"read_bytes", b.read_bytes}, {"compute_ps", b.compute_ps}, {"memory_ps", b.memory_ps},
                 {"bound", b.compute_ps >= b.memory_ps ? "compute" : "memory"}};
  if (a.json) {
    cli_out() << j.dump(2) << "\n";
    return;
  }
  cli_printf("%s on %s: %s, batch %lld, %s %lld; tp %lld at level %s, pp %lld (%lld SIP(s) a stage, %lld cubes in use)\n",
              model.name.c_str(), topo.name.c_str(), a.phase.c_str(), (long long)r.batch,
              r.phase == 0 ? "context" : "prompt", (long long)llm_positions(r), (long long)r.tp, kCollLevelNames[r.tp_level],
              (long long)r.pp, (long long)k.sips_per_stage, (long long)k.cubes_used);
  for (std::int64_t s = 0; s < r.pp; ++s) {
    const LlmRankBytes rb = llm_rank_bytes(m, r, s);
    cli_printf("  stage %lld: %lld layers; a rank holds %.3f GB of weights, %.3f GB of KV cache, %.3f GB of activations\n",
                (long long)s, (long long)llm_stage_layers(m, r, s), rb.weights / 1e9, rb.kv / 1e9, rb.activations / 1e9);
  }
  cli_printf("  fullest cube (stage %lld): %.3f GB of %.3f GB HBM (%.1f %%)\n", (long long)c.stage, c.total / 1e9,
              h.hbm_capacity_bytes() / 1e9, 100.0 * static_cast<double>(c.total) / static_cast<double>(h.hbm_capacity_bytes()));
  cli_printf("  a rank's program, each layer then after the last (shapes, MACs, HBM bytes read and written):\n");
  for (int i = 0; i < nl + nh; ++i) {
    const LlmKernel& k = i < nl ? layer[i] : head[i - nl];
    const std::string shape = k.kind == LlmKernelKind::gemm
                                  ? std::to_string(k.m) + " x " + std::to_string(k.k) + " x " + std::to_string(k.n)
                                  : std::to_string(k.rows) + " x " + std::to_string(k.cols);
    cli_printf("    %-15s %-10s %-22s %12.4g MACs %12.4g B read %12.4g B written\n", k.name,
                kLlmKernelKindNames[static_cast<int>(k.kind)], shape.c_str(), static_cast<double>(k.macs),
                static_cast<double>(k.hbm_read), static_cast<double>(k.hbm_write));
  }
  cli_printf("  bounds of the step: compute %.3f us (%.4g MACs at every used PE's peak), memory %.3f us (%.4g bytes at every "
              "used cube's HBM bandwidth): %s-bound\n",
              b.compute_ps / 1e6, static_cast<double>(b.macs), b.memory_ps / 1e6, static_cast<double>(b.read_bytes),
              b.compute_ps >= b.memory_ps ? "compute" : "memory");
}

// A model's shape in `model show --json`.
nlohmann::ordered_json shape_json(const LlmShape& s) {
  nlohmann::ordered_json j = {{"hidden_size", s.hidden},     {"intermediate_size", s.intermediate}, {"num_attention_heads", s.heads},
                              {"num_key_value_heads", s.kv_heads}, {"head_dim", s.head_dim},       {"num_hidden_layers", s.layers},
                              {"vocab_size", s.vocab},      {"tie_word_embeddings", s.tied != 0}};
  if (llm_mla(s)) {  // latent attention
    j["kv_lora_rank"] = s.kv_lora, j["q_lora_rank"] = s.q_lora, j["qk_rope_head_dim"] = s.rope_dim;
    j["qk_nope_head_dim"] = s.head_dim - s.rope_dim, j["v_head_dim"] = s.v_head;
  }
  if (s.nope_every > 0) j["nope_every"] = s.nope_every, j["nope_layers"] = llm_nope_layers(s);  // Llama 4
  if (s.attn_chunk > 0) j["attention_chunk_size"] = s.attn_chunk, j["chunked_layers"] = llm_chunked_layers(s);
  return j;
}

// A sequence's KV cache of `ctx` positions (chunked layers hold at most a chunk of them).
std::int64_t kv_sequence(const LlmShape& s, std::int64_t kvb, std::int64_t ctx) {
  return llm_kv_bytes(s, kvb, s.layers, llm_chunked_layers(s), ctx);
}

// Its weight bytes and KV cache bytes (a token's, and a sequence's of `ctx` positions).
void put_bytes(nlohmann::ordered_json& j, std::int64_t params, std::int64_t wb, const LlmShape& s, std::int64_t kvb,
               std::int64_t ctx) {
  j["weight_bytes_per_param"] = wb;
  j["weight_bytes"] = params * wb;
  j["kv_bytes_per_value"] = kvb;
  j["kv_bytes_per_token"] = llm_kv_bytes_per_token(s, kvb);
  j["context"] = ctx;
  j["kv_bytes_per_sequence"] = kv_sequence(s, kvb, ctx);
}

// `model show` of a mixture-of-experts model: its shape, experts and parameters (total and
// active), weights and KV cache; false for a dense model (shown below).
bool show_moe(const ModelArgs& a, const LlmModelFile& m, std::int64_t wb, std::int64_t kvb, std::int64_t ctx) {
  if (m.moe.experts == 0) return false;
  const LlmShape& s = m.shape;
  const LlmModelParams p = llm_model_params(m);
  const LlmParams d = llm_params(s);
  const std::int64_t kv_token = llm_kv_bytes_per_token(s, kvb);
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["path"] = m.path;
  j["architecture"] = m.moe.architecture;
  j["shape"] = shape_json(s);
  j["experts"] = {{"routed", m.moe.experts},
                  {"per_token", m.moe.top_k},
                  {"intermediate_size", m.moe.expert_intermediate},
                  {"moe_layers", p.moe_layers},
                  {"shared_intermediate_size", m.moe.shared_intermediate},
                  {"groups", m.moe.expert_groups},
                  {"topk_groups", m.moe.topk_groups},
                  {"scoring", m.moe.scoring},
                  {"qk_norm", m.moe.qk_norm}};
  if (m.moe.qk_l2) j["experts"]["qk_norm_l2"] = true;  // Llama 4's: no weights, on the layers with RoPE
  j["params"] = {{"embedding", d.embedding},
                 {"per_layer", {{"attention", p.attention}, {"norms", d.norms}, {"router", p.router}, {"expert", p.expert},
                                {"dense_mlp", p.dense_mlp}}},
                 {"final_norm", d.final_norm},
                 {"lm_head", d.lm_head},
                 {"total", p.total},
                 {"active", p.active}};
  put_bytes(j, p.total, wb, s, kvb, ctx);
  if (a.json) {
    cli_out() << j.dump(2) << "\n";
    return true;
  }
  cli_printf("%s (%s), %s\n", m.name.c_str(), m.path.c_str(), m.moe.architecture.c_str());
  if (llm_mla(s))
    cli_printf("  hidden %lld, %lld heads of latent attention (q and k %lld = %lld + %lld rotated, v %lld; KV latent %lld, "
               "query latent %lld), %lld layers, vocab %lld%s\n",
               (long long)s.hidden, (long long)s.heads, (long long)s.head_dim, (long long)(s.head_dim - s.rope_dim),
               (long long)s.rope_dim, (long long)s.v_head, (long long)s.kv_lora, (long long)s.q_lora, (long long)s.layers,
               (long long)s.vocab, s.tied ? ", LM head tied to the embedding" : "");
  else
    cli_printf("  hidden %lld, %lld heads of %lld, %lld KV heads (groups of %lld)%s, %lld layers, vocab %lld%s\n",
               (long long)s.hidden, (long long)s.heads, (long long)s.head_dim, (long long)s.kv_heads, (long long)llm_group(s),
               m.moe.qk_norm ? (m.moe.qk_l2 ? ", q and k L2-normed a head" : ", q and k normed a head") : "", (long long)s.layers, (long long)s.vocab,
               s.tied ? ", LM head tied to the embedding" : "");
  cli_printf("  %lld MoE layers of %lld experts, %lld a token, each of intermediate %lld", (long long)p.moe_layers,
             (long long)m.moe.experts, (long long)m.moe.top_k, (long long)m.moe.expert_intermediate);
  if (m.moe.shared_intermediate > 0) cli_printf(", a shared expert of %lld", (long long)m.moe.shared_intermediate);
  if (m.moe.expert_groups > 1)
    cli_printf(", routed in %lld groups (a token's best %lld)", (long long)m.moe.expert_groups, (long long)m.moe.topk_groups);
  if (p.moe_layers < s.layers)
    cli_printf("; %lld dense layers of intermediate %lld", (long long)(s.layers - p.moe_layers), (long long)s.intermediate);
  if (s.nope_every > 0)
    cli_printf("\n  %lld layers without RoPE (every %lld%s), attending to every position", (long long)llm_nope_layers(s),
               (long long)s.nope_every, s.nope_every == 2 ? "nd" : s.nope_every == 3 ? "rd" : "th");
  if (s.attn_chunk > 0)
    cli_printf("%s%lld layers of chunked attention (chunks of %lld positions)", s.nope_every > 0 ? "; " : "\n  ",
               (long long)llm_chunked_layers(s), (long long)s.attn_chunk);
  cli_printf("\n  parameters %lld (%.2f B), %lld active a token (%.2f B): a layer's attention %lld, router %lld, an expert %lld\n",
             (long long)p.total, static_cast<double>(p.total) / 1e9, (long long)p.active, static_cast<double>(p.active) / 1e9,
             (long long)p.attention, (long long)p.router, (long long)p.expert);
  cli_printf("  weights %.2f GB at %lld byte%s a weight; KV cache %lld bytes a token at %lld byte%s a value, %.2f GB a sequence of %lld\n",
             static_cast<double>(p.total * wb) / 1e9, (long long)wb, wb == 1 ? "" : "s", (long long)kv_token, (long long)kvb,
             kvb == 1 ? "" : "s", static_cast<double>(kv_sequence(s, kvb, ctx)) / 1e9, (long long)ctx);
  cli_printf("  eval llm and sweep llm run it (expert-parallel over the tp ranks: --ep, --routing; docs/model.md section 13.11); model place places dense models only\n");
  return true;
}

}  // namespace

void cmd_model(const ModelArgs& a) {
  if (a.place->parsed()) {
    place(a);
    return;
  }
  if (a.list->parsed()) {
    const std::vector<std::string> names = shipped_llm_models();
    std::size_t width = 0;  // the names in one column
    for (const std::string& n : names) width = std::max(width, n.size());
    for (const std::string& n : names) {
      const LlmModelFile m = load_llm_model(n);
      const LlmModelParams p = llm_model_params(m);
      cli_printf("%-*s %6.1f B parameters, %lld layers", static_cast<int>(width), n.c_str(), static_cast<double>(p.total) / 1e9,
                 static_cast<long long>(m.shape.layers));
      if (m.moe.experts > 0)
        cli_printf(", %lld experts, %lld a token (%.1f B active)", static_cast<long long>(m.moe.experts),
                   static_cast<long long>(m.moe.top_k), static_cast<double>(p.active) / 1e9);
      cli_printf("\n");
    }
    return;
  }
  const std::int64_t kvb = parse_int_flag("--kv-bytes", a.kv_bytes, 1, 2);
  const std::int64_t ctx = parse_int_flag("--context", a.context, 1, kLlmMaxContext);
  std::int64_t wb = a.weight_bytes.empty() ? 0 : parse_int_flag("--weight-bytes", a.weight_bytes, 1, 2);
  const LlmModelFile m = load_llm_model(a.model, "model");
  if (wb == 0) wb = m.weight_bytes > 0 ? m.weight_bytes : 2;  // the file's quantized weights, else fp16
  if (show_moe(a, m, wb, kvb, ctx)) return;
  const LlmShape& s = m.shape;
  const LlmParams p = llm_params(s);
  const std::int64_t kv_token = llm_kv_bytes_per_token(s, kvb);
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["path"] = m.path;
  j["shape"] = shape_json(s);
  j["params"] = {{"embedding", p.embedding},
                 {"per_layer", {{"attention", p.attention}, {"mlp", p.mlp}, {"norms", p.norms}, {"total", p.layer}}},
                 {"final_norm", p.final_norm},
                 {"lm_head", p.lm_head},
                 {"total", p.total},
                 {"matmul", p.matmul}};
  put_bytes(j, p.total, wb, s, kvb, ctx);
  j["decode_flops_per_token"] = 2 * llm_token_macs(s, ctx - 1);
  if (a.json) {
    cli_out() << j.dump(2) << "\n";
    return;
  }
  cli_printf("%s (%s)\n", m.name.c_str(), m.path.c_str());
  cli_printf("  hidden %lld, intermediate %lld, %lld heads of %lld, %lld KV heads (groups of %lld), %lld layers, vocab %lld%s\n",
              (long long)s.hidden, (long long)s.intermediate, (long long)s.heads, (long long)s.head_dim, (long long)s.kv_heads,
              (long long)llm_group(s), (long long)s.layers, (long long)s.vocab, s.tied ? ", LM head tied to the embedding" : "");
  cli_printf("  parameters %lld (%.2f B): embedding %lld, per layer %lld (attention %lld, MLP %lld, norms %lld), LM head %lld\n",
              (long long)p.total, static_cast<double>(p.total) / 1e9, (long long)p.embedding, (long long)p.layer,
              (long long)p.attention, (long long)p.mlp, (long long)p.norms, (long long)p.lm_head);
  cli_printf("  weights %.2f GB at %lld byte%s a weight; KV cache %lld bytes a token at %lld byte%s a value, %.2f GB a sequence of %lld\n",
              static_cast<double>(p.total * wb) / 1e9, (long long)wb, wb == 1 ? "" : "s", (long long)kv_token, (long long)kvb,
              kvb == 1 ? "" : "s", static_cast<double>(kv_sequence(s, kvb, ctx)) / 1e9, (long long)ctx);
  cli_printf("  a decoded token at context %lld: %.3f GFLOP\n", (long long)ctx,
              static_cast<double>(2 * llm_token_macs(s, ctx - 1)) / 1e9);
}

}  // namespace kb
