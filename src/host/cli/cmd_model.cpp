// `model list` and `model show`: the shipped whole models, and what a model's config gives
// (its dimensions, parameters, weight and KV cache bytes, and the work of a token).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "cmd_family.h"
#include "host/common/error.h"
#include "host/common/table.h"
#include "host/llm/model_file.h"
#include "host/topology/fields.h"

namespace kb {

namespace {

std::int64_t int_arg(const char* flag, const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(text, lo, hi, &v, &why)) throw InputError(std::string(flag) + " " + (text.empty() ? "''" : text) + ": " + why);
  return v;
}

}  // namespace

void add_model_commands(CLI::App& app, ModelArgs& a) {
  a.cmd = app.add_subcommand("model", "whole models (LLaMA, from Hugging Face config.json files)");
  a.cmd->require_subcommand(1);
  a.list = a.cmd->add_subcommand("list", "the shipped models (models/*.json)");
  a.show = a.cmd->add_subcommand("show", "a model's dimensions, parameters, weight and KV cache bytes, and work per token");
  a.show->add_option("model", a.model, "NAME of a shipped model, or the path of a config.json")->required();
  a.show->add_option("--weight-bytes", a.weight_bytes, "bytes per weight: 2 (fp16, the default) or 1 (8-bit)");
  a.show->add_option("--kv-bytes", a.kv_bytes, "bytes per KV cache value: 2 (fp16, the default) or 1 (8-bit)");
  a.show->add_option("--context", a.context,
                     "KV positions a decoded token attends to, its own included (default 4096), 1.." +
                         std::to_string(kLlmMaxContext));
  a.show->add_flag("--json", a.json, "machine-readable output");
}

void cmd_model(const ModelArgs& a) {
  if (a.list->parsed()) {
    for (const std::string& n : shipped_llm_models()) {
      const LlmModel m = load_llm_model(n);
      std::printf("%-16s %6.1f B parameters, %lld layers\n", n.c_str(), static_cast<double>(llm_params(m.shape).total) / 1e9,
                  static_cast<long long>(m.shape.layers));
    }
    return;
  }
  const std::int64_t wb = int_arg("--weight-bytes", a.weight_bytes, 1, 2), kvb = int_arg("--kv-bytes", a.kv_bytes, 1, 2);
  const std::int64_t ctx = int_arg("--context", a.context, 1, kLlmMaxContext);
  const LlmModel m = load_llm_model(a.model, "model");
  const LlmShape& s = m.shape;
  const LlmParams p = llm_params(s);
  const std::int64_t kv_token = llm_kv_bytes_per_token(s, kvb);
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["path"] = m.path;
  j["shape"] = {{"hidden_size", s.hidden},     {"intermediate_size", s.intermediate}, {"num_attention_heads", s.heads},
                {"num_key_value_heads", s.kv_heads}, {"head_dim", s.head_dim},       {"num_hidden_layers", s.layers},
                {"vocab_size", s.vocab},      {"tie_word_embeddings", s.tied != 0}};
  j["params"] = {{"embedding", p.embedding},
                 {"per_layer", {{"attention", p.attention}, {"mlp", p.mlp}, {"norms", p.norms}, {"total", p.layer}}},
                 {"final_norm", p.final_norm},
                 {"lm_head", p.lm_head},
                 {"total", p.total},
                 {"matmul", p.matmul}};
  j["weight_bytes_per_param"] = wb;
  j["weight_bytes"] = p.total * wb;
  j["kv_bytes_per_value"] = kvb;
  j["kv_bytes_per_token"] = kv_token;
  j["context"] = ctx;
  j["kv_bytes_per_sequence"] = kv_token * ctx;
  j["decode_flops_per_token"] = 2 * llm_token_macs(s, ctx - 1);
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s (%s)\n", m.name.c_str(), m.path.c_str());
  std::printf("  hidden %lld, intermediate %lld, %lld heads of %lld, %lld KV heads (groups of %lld), %lld layers, vocab %lld%s\n",
              (long long)s.hidden, (long long)s.intermediate, (long long)s.heads, (long long)s.head_dim, (long long)s.kv_heads,
              (long long)llm_group(s), (long long)s.layers, (long long)s.vocab, s.tied ? ", LM head tied to the embedding" : "");
  std::printf("  parameters %lld (%.2f B): embedding %lld, per layer %lld (attention %lld, MLP %lld, norms %lld), LM head %lld\n",
              (long long)p.total, static_cast<double>(p.total) / 1e9, (long long)p.embedding, (long long)p.layer,
              (long long)p.attention, (long long)p.mlp, (long long)p.norms, (long long)p.lm_head);
  std::printf("  weights %.2f GB at %lld byte%s a weight; KV cache %lld bytes a token at %lld byte%s a value, %.2f GB a sequence of %lld\n",
              static_cast<double>(p.total * wb) / 1e9, (long long)wb, wb == 1 ? "" : "s", (long long)kv_token, (long long)kvb,
              kvb == 1 ? "" : "s", static_cast<double>(kv_token * ctx) / 1e9, (long long)ctx);
  std::printf("  a decoded token at context %lld: %.3f GFLOP\n", (long long)ctx,
              static_cast<double>(2 * llm_token_macs(s, ctx - 1)) / 1e9);
}

}  // namespace kb
