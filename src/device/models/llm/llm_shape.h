// A decoder-only transformer of the LLaMA architecture, as a Hugging Face config.json
// describes it (src/host/llm/model_file.h reads one): its dimensions, what its weights and
// KV cache hold, and the work one token costs. Pure integer arithmetic, for both engines and
// the batched model of whole-model inference (docs/model.md section 13).
//
// A layer: RMSNorm, QKV projection (hidden -> (heads + 2 kv_heads) x head_dim), RoPE on Q and
// K, attention over the KV cache, O projection (heads x head_dim -> hidden), residual add,
// RMSNorm, gate and up projections (hidden -> intermediate, each), SiLU(gate) x up, down
// projection (intermediate -> hidden), residual add. No biases (attention_bias and mlp_bias
// false). After the last layer: a final RMSNorm and the LM head (hidden -> vocab), which
// shares the embedding's matrix when tie_word_embeddings is true.
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"

namespace kb {

// Every field an int64 (as the families' configs).
struct LlmShape {
  std::int64_t hidden;        // hidden_size
  std::int64_t intermediate;  // intermediate_size
  std::int64_t heads;         // num_attention_heads
  std::int64_t kv_heads;      // num_key_value_heads
  std::int64_t head_dim;      // head_dim, or hidden / heads
  std::int64_t layers;        // num_hidden_layers
  std::int64_t vocab;         // vocab_size
  std::int64_t tied;          // tie_word_embeddings: 1 when the LM head is the embedding
  // Mixture of experts (docs/model.md section 13.11; experts == 0: a dense model): every
  // layer's MLP is a router (hidden -> experts) and `experts` SiLU-gated experts of
  // `moe_intermediate`, `top_k` a token, beside a shared expert of `shared_intermediate`
  // (0: none) that every token goes through. qk_norm: an RMSNorm over each head's q and k.
  // The first `dense_layers` layers are dense (the LLaMA MLP of `intermediate`), as
  // DeepSeek-V3's first_k_dense_replace makes them.
  std::int64_t experts = 0, top_k = 0, moe_intermediate = 0, shared_intermediate = 0, qk_norm = 0, dense_layers = 0;
  // Multi-head latent attention (DeepSeek-V3; docs/model.md section 13.12; kv_lora 0: none).
  // A token's K and V come from one latent of kv_lora values (hidden -> kv_lora + rope_dim,
  // RMSNorm over the latent), and its queries from one of q_lora (0: projected from hidden
  // directly); a head's q and k are head_dim = qk_nope + rope_dim values, the last rope_dim
  // of them rotated (k's shared by every head), its v v_head values. The cache holds the
  // latent and the rotated k: kv_lora + rope_dim values a token, for every head.
  std::int64_t q_lora = 0, kv_lora = 0, rope_dim = 0, v_head = 0;
  // Llama 4's attention (docs/model.md section 13.14; 0, 0: neither): every nope_every-th
  // layer (layer i with (i + 1) % nope_every == 0) has no RoPE and no q/k norm and attends to
  // every position; the others attend within chunks of attn_chunk positions (a token to the
  // positions of its own chunk up to itself). qk_norm 2: the q/k norm is an L2 norm with no
  // weights (Llama 4's), 1: an RMSNorm with head_dim weights each (Qwen3's).
  std::int64_t nope_every = 0, attn_chunk = 0;
};

KB_HD constexpr bool llm_mla(const LlmShape& m) { return m.kv_lora > 0; }

// Llama 4's layers without RoPE (global attention), and those with chunked attention.
KB_HD constexpr std::int64_t llm_nope_layers(const LlmShape& m) { return m.nope_every > 0 ? m.layers / m.nope_every : 0; }
KB_HD constexpr std::int64_t llm_chunked_layers(const LlmShape& m) { return m.attn_chunk > 0 ? m.layers - llm_nope_layers(m) : 0; }
// Positions a decoded token attends to at context C (itself included) through chunks of W
// (0: every position): those of its own chunk up to itself.
KB_HD constexpr std::int64_t llm_window_positions(std::int64_t C, std::int64_t W) { return W > 0 && C > W ? (C - 1) % W + 1 : C; }
// Query-key pairs of a causal prompt of P through chunks of W (0: one chunk): each chunk's
// token i (from 1) with the i positions of its chunk up to it.
KB_HD constexpr std::int64_t llm_window_pairs(std::int64_t P, std::int64_t W) {
  return W > 0 && P > W ? (P / W) * (W * (W + 1) / 2) + (P % W) * (P % W + 1) / 2 : P * (P + 1) / 2;
}
// Positions a layer's cache holds for a sequence of P: at most a chunk under chunked attention.
KB_HD constexpr std::int64_t llm_window_held(std::int64_t P, std::int64_t W) { return W > 0 && P > W ? W : P; }
// Positions summed over `layers` layers, `chunked` of them with chunked attention: those
// a decoded token at context C attends to (seen), and those the cache holds for a sequence
// of P (held).
KB_HD constexpr std::int64_t llm_layers_seen(std::int64_t layers, std::int64_t chunked, std::int64_t C, std::int64_t W) {
  return (layers - chunked) * C + chunked * llm_window_positions(C, W);
}
KB_HD constexpr std::int64_t llm_layers_held(std::int64_t layers, std::int64_t chunked, std::int64_t P, std::int64_t W) {
  return (layers - chunked) * P + chunked * llm_window_held(P, W);
}
// Layers of the second kind, each timed once beside the first (section 13.11): a MoE model's
// first dense layers, or the layers without RoPE.
KB_HD constexpr std::int64_t llm_alt_layers(const LlmShape& m) {
  return m.experts > 0 && m.dense_layers > 0 ? m.dense_layers : llm_nope_layers(m);
}

// Layers of the model whose MLP is a MoE one (every layer of a dense model is dense).
KB_HD constexpr std::int64_t llm_moe_layers(const LlmShape& m) { return m.experts > 0 ? m.layers - m.dense_layers : 0; }

// The ranges a model file may give (src/host/llm/model_file.cpp checks them): generous
// beyond every published LLaMA (405B: hidden 16384, intermediate 53248, 128 heads, 126
// layers, vocab 128256), and small enough that every count below stays far inside int64.
constexpr std::int64_t kLlmMaxHidden = INT64_C(1) << 17;
constexpr std::int64_t kLlmMaxIntermediate = INT64_C(1) << 19;
constexpr std::int64_t kLlmMaxHeads = 1024;
constexpr std::int64_t kLlmMaxHeadDim = 1024;
constexpr std::int64_t kLlmMaxLayers = 1024;
constexpr std::int64_t kLlmMaxVocab = INT64_C(1) << 22;
constexpr std::int64_t kLlmMaxContext = INT64_C(1) << 24;  // KV positions of one sequence

// Width of the attention's query and output projections, and of K (or V).
KB_HD constexpr std::int64_t llm_q_width(const LlmShape& m) { return m.heads * m.head_dim; }
KB_HD constexpr std::int64_t llm_kv_width(const LlmShape& m) { return m.kv_heads * m.head_dim; }
// Latent attention: a head's value width, the cache's values a token and layer (the latent
// and the rotated k), and the attention's weights by part: replicated on every
// tensor-parallel rank (the latent and q_lora down-projections; their norms are with the
// layer's norms) and split by heads (the q up-projection, kv_b's k and v up-projections, O).
KB_HD constexpr std::int64_t llm_v_head(const LlmShape& m) { return llm_mla(m) ? m.v_head : m.head_dim; }
KB_HD constexpr std::int64_t llm_latent_width(const LlmShape& m) { return m.kv_lora + m.rope_dim; }
KB_HD constexpr std::int64_t llm_mla_replicated(const LlmShape& m) {
  return m.hidden * (m.q_lora + llm_latent_width(m));
}
KB_HD constexpr std::int64_t llm_mla_split(const LlmShape& m) {
  return (m.q_lora > 0 ? m.q_lora : m.hidden) * llm_q_width(m) + m.kv_lora * m.heads * (m.head_dim - m.rope_dim + m.v_head) +
         m.heads * m.v_head * m.hidden;
}
// Multiply-accumulates of one query token against one position, every head: Q.K^T and P.V.
// Latent attention's decode runs absorbed (each head's query against the cached latent and
// rotated k, its output in the latent), its prefill expanded (heads of head_dim and v_head).
KB_HD constexpr std::int64_t llm_pair_macs(const LlmShape& m, bool decode) {
  return !llm_mla(m) ? 2 * llm_q_width(m)
         : decode    ? m.heads * (llm_latent_width(m) + m.kv_lora)
                     : m.heads * (m.head_dim + m.v_head);
}
// Query heads per KV head (GQA's group).
KB_HD constexpr std::int64_t llm_group(const LlmShape& m) { return m.kv_heads > 0 ? m.heads / m.kv_heads : 0; }

// Parameters, by part.
struct LlmParams {
  std::int64_t embedding;  // vocab x hidden
  std::int64_t attention;  // per layer: Q, K, V and O projections
  std::int64_t mlp;        // per layer: gate, up and down projections
  std::int64_t norms;      // per layer: the two RMSNorm weight vectors
  std::int64_t layer;      // per layer: attention + mlp + norms
  std::int64_t final_norm;
  std::int64_t lm_head;  // 0 when tied to the embedding
  std::int64_t total;
  std::int64_t matmul;  // the weights a token multiplies by: every layer's projections and the LM head
};

// A MoE layer's router, one routed expert, and the shared expert (0 for a dense model).
KB_HD constexpr std::int64_t llm_router_params(const LlmShape& m) { return m.hidden * m.experts; }
KB_HD constexpr std::int64_t llm_expert_params(const LlmShape& m) { return 3 * m.hidden * m.moe_intermediate; }
KB_HD constexpr std::int64_t llm_shared_params(const LlmShape& m) { return 3 * m.hidden * m.shared_intermediate; }

KB_HD inline LlmParams llm_params(const LlmShape& m) {
  LlmParams p{};
  p.embedding = m.vocab * m.hidden;
  p.attention = llm_mla(m) ? llm_mla_replicated(m) + llm_mla_split(m)
                           : m.hidden * llm_q_width(m) + 2 * m.hidden * llm_kv_width(m) + llm_q_width(m) * m.hidden;
  // A MoE layer's MLP (`mlp`, `layer`): its router, every routed expert and the shared one;
  // a token multiplies by the router, top_k experts and the shared one. A MoE model's first
  // dense_layers layers have the dense MLP.
  const bool moe = m.experts > 0;
  const std::int64_t dense_mlp = 3 * m.hidden * m.intermediate, moe_layers = llm_moe_layers(m), dense_layers = m.layers - moe_layers;
  p.mlp = moe ? llm_router_params(m) + m.experts * llm_expert_params(m) + llm_shared_params(m) : dense_mlp;
  const std::int64_t mlp_used = moe ? llm_router_params(m) + m.top_k * llm_expert_params(m) + llm_shared_params(m) : p.mlp;
  p.norms = 2 * m.hidden + (m.qk_norm == 1 ? 2 * m.head_dim : 0) + (llm_mla(m) ? m.q_lora + m.kv_lora : 0);
  p.layer = p.attention + p.mlp + p.norms;
  p.final_norm = m.hidden;
  p.lm_head = m.tied ? 0 : m.vocab * m.hidden;
  p.total = p.embedding + moe_layers * p.layer + dense_layers * (p.attention + dense_mlp + p.norms) + p.final_norm + p.lm_head;
  p.matmul = moe_layers * (p.attention + mlp_used) + dense_layers * (p.attention + dense_mlp) + m.vocab * m.hidden;
  return p;
}

// KV cache bytes one token adds, over every layer, at `kv_bytes` per value (chunked layers:
// while its chunk lasts; llm_kv_bytes gives a sequence's).
KB_HD inline std::int64_t llm_kv_bytes_per_token(const LlmShape& m, std::int64_t kv_bytes) {
  return m.layers * (llm_mla(m) ? llm_latent_width(m) : 2 * llm_kv_width(m)) * kv_bytes;
}
// KV cache bytes of `layers` layers, `chunked` of them with chunked attention, holding a
// sequence of `positions`.
KB_HD inline std::int64_t llm_kv_bytes(const LlmShape& m, std::int64_t kv_bytes, std::int64_t layers, std::int64_t chunked,
                                       std::int64_t positions) {
  const std::int64_t width = (llm_mla(m) ? llm_latent_width(m) : 2 * llm_kv_width(m)) * kv_bytes;
  return width * llm_layers_held(layers, chunked, positions, m.attn_chunk);
}

// Multiply-accumulates of one decoded token's forward pass at position `pos` (it attends to
// pos + 1 positions, itself included): every projection and the LM head, plus the
// attention's Q.K^T and P.V. Two FLOPs each.
KB_HD inline std::int64_t llm_token_macs(const LlmShape& m, std::int64_t pos) {
  return llm_params(m).matmul + llm_pair_macs(m, true) * llm_layers_seen(m.layers, llm_chunked_layers(m), pos + 1, m.attn_chunk);
}

}  // namespace kb
