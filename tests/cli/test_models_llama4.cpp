// Llama-4-Scout from its published config.json (a text_config inside): MoE in every layer
// with a shared expert, layers without RoPE every fourth, chunked attention on the others and
// the L2 q/k norm (docs/model.md section 13.14), on both engines; its bad fields are one
// line each.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

const std::string kScout = kRoot + "/models/llama-4-scout-17b-16e.json";

// Meta publishes 17 B active and 109 B total parameters (the vision encoder, which text-only
// serving does not run, included). By hand: a layer's attention is Q and O 5120 x 5120 and K
// and V 5120 x 1024 = 62,914,560; its norms 2 x 5120 (the q/k norm has no weights); its
// router 5120 x 16 and 17 experts of 3 x 5120 x 8192 (16 routed and the shared one); the
// embedding and the LM head 202,048 x 5120 each, and the final norm.
TEST(ModelsLlama4, ScoutHasThePublishedSizes) {
  const Result r = run("model show llama-4-scout-17b-16e --context 32768 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const std::int64_t attention = 2LL * 5120 * 5120 + 2LL * 5120 * 1024, expert = 3LL * 5120 * 8192, outside = 2LL * 202048 * 5120 + 5120;
  EXPECT_EQ(j["params"]["per_layer"]["attention"], attention);
  EXPECT_EQ(j["params"]["total"], outside + 48 * (attention + 2 * 5120 + 5120 * 16 + 17 * expert));
  EXPECT_EQ(j["params"]["active"], outside + 48 * (attention + 2 * 5120 + 5120 * 16 + 2 * expert));
  EXPECT_NEAR(j["params"]["active"].get<double>() / 1e9, 17.0, 0.25);
  EXPECT_EQ(j["experts"]["moe_layers"], 48);
  EXPECT_EQ(j["experts"]["shared_intermediate_size"], 8192);
  EXPECT_EQ(j["experts"]["scoring"], "sigmoid");
  EXPECT_EQ(j["experts"]["qk_norm_l2"], true);
  EXPECT_EQ(j["shape"]["nope_layers"], 12);
  EXPECT_EQ(j["shape"]["chunked_layers"], 36);
  EXPECT_EQ(j["shape"]["attention_chunk_size"], 8192);
  // 32,768 positions: 12 layers hold them all, 36 a chunk of 8,192 (K and V of 8 heads of 128).
  EXPECT_EQ(j["kv_bytes_per_sequence"], (12LL * 32768 + 36LL * 8192) * 2 * 8 * 128 * 2);
  // The layers without RoPE given as a list, in the same pattern, are the same model.
  const std::string d = std::filesystem::temp_directory_path().string() + "/kb_models_llama4";
  std::filesystem::create_directories(d);
  std::string list;
  for (int i = 0; i < 48; ++i) list += std::string(i ? "," : "") + ((i + 1) % 4 == 0 ? "0" : "1");
  copy_edited(kScout, d + "/listed.json", "\"use_qk_norm\": true,", "\"use_qk_norm\": true, \"no_rope_layers\": [" + list + "],");
  const Result l = run("model show '" + d + "/listed.json' --context 32768 --json");
  ASSERT_EQ(l.code, 0) << l.err;
  json a = json::parse(l.out), b = j;
  a.erase("model"), a.erase("path"), b.erase("model"), b.erase("path");
  EXPECT_EQ(a, b);
}

// Decode and a prefill longer than a chunk on both engines; the step is 36 layers with RoPE,
// 12 without and the head.
TEST(ModelsLlama4, ScoutStepsRunOnBothEngines) {
  const std::string step = "eval llm --model llama-4-scout-17b-16e --topology '" + kTopo + "/ring8.yaml' --ep-level sip --pp 1 ";
  const Result r = run(step + "--ep 8 --batch 16 --context 16384 --routing zipf:1.0 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["nope_every"], 4);
  EXPECT_EQ(j["attn_chunk"], 8192);
  EXPECT_EQ(j["qk_norm"], "l2");
  EXPECT_EQ(j["latency_ps"].get<std::int64_t>(),
            36 * j["layer_ps"].get<std::int64_t>() + 12 * j["nope_layer_ps"].get<std::int64_t>() + j["head_ps"].get<std::int64_t>());
  EXPECT_GT(j["nope_layer_ps"].get<std::int64_t>(), j["layer_ps"].get<std::int64_t>());  // 16,384 positions against 8,192
  EXPECT_FALSE(j.contains("dense_layer_ps"));
  // A prompt of 20,000: each chunked layer runs two whole chunks and one of 3,616.
  const Result p = run(step + "--ep 2 --batch 2 --phase prefill --prompt 20000 --layers 4 --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const json q = json::parse(p.out);
  EXPECT_EQ(q["parity"], true);
  int chunked = 0, global = 0;
  for (const json& k : q["kernels"])
    if (k["kind"] == "attention") (k["part"] == "nope_layer" ? global : chunked) += 1;
  EXPECT_EQ(chunked, 2);
  EXPECT_EQ(global, 1);
  expect_input_error(run(step + "--ep 8 --batch 16 --context 2048 --data"), "leave --data out to time it");
}

// The same layers given to a dense model by flags, on both engines; what they cannot be with.
TEST(ModelsLlama4, FlagsGiveAnyModelTheLayers) {
  const std::string tiny = "eval llm --model llama-tiny-random --batch 2 --context 64 --tp 2 --tp-level cube --pp 1 ";
  const Result t = run(tiny + "--nope-every 2 --attn-chunk 16 --json");
  ASSERT_EQ(t.code, 0) << t.err;
  const json j = json::parse(t.out);
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["latency_ps"].get<std::int64_t>(), j["layer_ps"].get<std::int64_t>() + j["nope_layer_ps"].get<std::int64_t>() +
                                                           j["head_ps"].get<std::int64_t>());
  const Result d = run(tiny + "--json");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_FALSE(json::parse(d.out).contains("nope_every"));  // a model without them: no such columns
  EXPECT_FALSE(json::parse(d.out).contains("nope_layer_ps"));
  expect_input_error(run(tiny + "--nope-every 2 --qk-norm yes"), "a layer without RoPE has no q/k norm");
  expect_input_error(run(tiny + "--nope-every 3"), "layers without RoPE every 0..layers (2)");
  expect_input_error(run(tiny + "--attn-chunk 16 --kv-lora 32 --rope-dim 8 --v-head 12 --kv-heads 4"), "neither with latent attention");
  expect_input_error(run(tiny + "--attn-chunk 16 --data"), "leave --data out to time them");
}

TEST(ModelsLlama4, BadScoutFieldsAreOneLine) {
  const std::string d = std::filesystem::temp_directory_path().string() + "/kb_models_llama4";
  std::filesystem::create_directories(d);
  std::string broken = "1,1,0,1,1,0";
  for (int i = 6; i < 48; ++i) broken += ",1";
  expect_model_edits_refused(kScout, d, {
      {"pattern", "\"use_qk_norm\": true,", "\"use_qk_norm\": true, \"no_rope_layers\": [" + broken + "],",
       "no_rope_layers: layer 8 breaks the pattern"},
      {"short", "\"use_qk_norm\": true,", "\"use_qk_norm\": true, \"no_rope_layers\": [1, 0],", "no_rope_layers: expected a list of num_hidden_layers (48)"},
      {"outer", "\"torch_dtype\": \"bfloat16\",\n  \"transformers", "\"torch_dtype\": \"bfloat16\", \"audio_config\": {},\n  \"transformers",
       "audio_config: not modelled beside Llama 4's text_config"},
      {"inner", "\"use_cache\": true,", "\"use_cache\": true, \"sliding_window\": 4096,", "sliding_window: not modelled for Llama4ForConditionalGeneration"},
      {"notext", "\"text_config\": {", "\"text_configs\": {", "text_configs: not modelled beside Llama 4's text_config"},
      {"chunk", "\"attention_chunk_size\": 8192", "\"attention_chunk_size\": 0", "attention_chunk_size: must be > 0"},
      {"act", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act: 'gelu' is not modelled"},
      {"qk", "\"use_qk_norm\": true", "\"use_qk_norm\": 3", "use_qk_norm: expected true or false"},
  });
  // MoE layers interleaved with dense ones (Llama-4-Maverick's interleave_moe_layer_step 2).
  copy_edited(kScout, d + "/maverick.json", "\"interleave_moe_layer_step\": 1", "\"interleave_moe_layer_step\": 2");
  expect_input_error(run("eval llm --model '" + d + "/maverick.json' --topology '" + kTopo + "/ring8.yaml' --batch 8 --context 1024"),
                     "layer 2 is dense after MoE layers");
}

}  // namespace
