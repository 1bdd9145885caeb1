// DeepSeek-V3 from its published config.json: multi-head latent attention (docs/model.md
// section 13.12), DeepSeekMoE's shared and group-routed experts, its first dense layers and
// its fp8 weights, on both engines; its bad fields are one line each.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

const std::string kDeepSeek = kRoot + "/models/deepseek-v3.json";

// DeepSeek's published sizes: 671 B parameters in the main model (685 B with the multi-token
// prediction module, which plain decoding does not run), 37 B of them active a token. By
// hand: a layer's attention is q_a 7168 x 1536, q_b 1536 x 128 x 192, kv_a 7168 x 576, kv_b
// 512 x 128 x (128 + 128) and O 128 x 128 x 7168 = 187,105,280; its cache 512 + 64 values a
// token and layer, 61 x 576 x 2 = 70,272 bytes a token at fp16.
TEST(ModelsMla, DeepSeekV3HasThePublishedSizes) {
  const Result r = run("model show deepseek-v3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["shape"]["kv_lora_rank"], 512);
  EXPECT_EQ(j["shape"]["q_lora_rank"], 1536);
  EXPECT_EQ(j["shape"]["head_dim"], 192);
  EXPECT_EQ(j["params"]["per_layer"]["attention"], 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168);
  EXPECT_EQ(j["kv_bytes_per_token"], 61 * 576 * 2);
  EXPECT_NEAR(j["params"]["total"].get<double>() / 1e9, 671.0, 0.5);
  EXPECT_NEAR(j["params"]["active"].get<double>() / 1e9, 37.5, 0.6);
  EXPECT_EQ(j["experts"]["shared_intermediate_size"], 2048);
  EXPECT_EQ(j["experts"]["groups"], 8);
  EXPECT_EQ(j["experts"]["topk_groups"], 4);
  EXPECT_EQ(j["experts"]["scoring"], "sigmoid");
  EXPECT_EQ(j["experts"]["moe_layers"], 58);
  EXPECT_EQ(j["weight_bytes_per_param"], 1);  // its quantization_config: fp8 e4m3
  const Result h = run("model show deepseek-v3 --weight-bytes 2 --json");
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_EQ(json::parse(h.out)["weight_bytes"].get<std::int64_t>(), 2 * j["weight_bytes"].get<std::int64_t>());
}

// A decode step runs absorbed (the latent cache shared by every head), a prefill expanded.
TEST(ModelsMla, DeepSeekV3StepsRunOnBothEngines) {
  const std::string step = "eval llm --model deepseek-v3 --topology '" + kTopo + "/ring8.yaml' --ep 8 --ep-level sip --pp 1 ";
  const Result r = run(step + "--batch 16 --context 2048 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["weight_bytes"], 1);
  EXPECT_EQ(j["dense_layers"], 3);
  EXPECT_EQ(j["expert_groups"], 8);
  // Each rank caches its 2 sequences' latents: 61 layers x 576 values x 2048 positions x 2
  // bytes, spread over the SIP's 8 cubes.
  EXPECT_EQ(j["cube_kv_bytes"].get<std::int64_t>() * 8, 2LL * 61 * 576 * 2048 * 2);
  std::vector<std::string> names;
  for (const json& k : j["kernels"])
    if (k["part"] == "layer") names.push_back(k["name"]);
  const std::vector<std::string> want = {"q_kv_a", "q_b", "q_absorb", "attention", "v_absorb", "o_proj"};
  for (const std::string& w : want) EXPECT_NE(std::find(names.begin(), names.end(), w), names.end()) << w;
  for (const json& k : j["kernels"])
    if (k["name"] == "q_absorb") EXPECT_EQ(k["repeat"], 128);  // one GEMM a head
  const Result p = run(step + "--batch 8 --phase prefill --prompt 256 --json");
  ASSERT_EQ(p.code, 0) << p.err;
  const json q = json::parse(p.out);
  EXPECT_EQ(q["parity"], true);
  bool kv_b = false;
  for (const json& k : q["kernels"]) kv_b |= k["name"] == "kv_b";
  EXPECT_TRUE(kv_b) << q["kernels"];
  expect_input_error(run(step + "--batch 16 --context 2048 --data"), "leave --data out to time it");
  // A dense model given latent attention by flags times on both engines, and runs it with values.
  const std::string tiny = "eval llm --model llama-tiny-random --kv-heads 4 --q-lora 24 --v-head 12 "
                           "--batch 2 --context 64 --tp 2 --tp-level cube --pp 1 ";
  const Result t = run(tiny + "--kv-lora 32 --rope-dim 8 --json");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_EQ(json::parse(t.out)["parity"], true);
  const Result data = run(tiny + "--kv-lora 32 --rope-dim 8 --data --json");
  ASSERT_EQ(data.code, 0) << data.err;
  const json dj = json::parse(data.out);
  EXPECT_LE(dj["data"]["relative_error"].get<double>(), 1.0 / 512) << dj["data"];
  EXPECT_EQ(dj["data"]["layer_ps"], dj["layer_ps"]);
  expect_input_error(run(tiny + "--kv-lora 32 --rope-dim 16"), "a latent-attention field is out of range");
  expect_input_error(run(tiny + "--kv-lora 32 --rope-dim 8 --qk-norm yes"), "a latent-attention field is out of range");
  expect_input_error(run(tiny + "--kv-lora 1020 --rope-dim 8"), "kv_lora + rope_dim at most 1024");
}

// Data mode of the shipped tiny random MoE models (docs/model.md section 13.9): Mixtral's
// softmax router, and DeepSeek-V3's latent attention, sigmoid group-limited router, shared
// expert and first dense layer, in decode and prefill, on one rank and on expert-parallel
// ranks with redundant copies: logits within fp16 of float64, the head and the dense layer as
// timed, each layer's time reported; what data mode cannot run is one line.
TEST(ModelsMla, TinyMixtureOfExpertsModelsRunWithValues) {
  for (const std::string model : {"mixtral-tiny-random", "deepseek-v3-tiny-random"})
    for (const std::string mapping : {"--tp 1 --pp 1", "--tp 2 --tp-level cube --tp-algo ring --redundant-experts 2 --pp 1"})
      for (const std::string phase : {"--phase decode --context 24", "--phase prefill --prompt 12"}) {
        const std::string args = "eval llm --model " + model + " " + mapping + " " + phase + " --batch 4 --data --seed 5 --json";
        const Result r = run(args);
        ASSERT_EQ(r.code, 0) << args << r.err;
        const json j = json::parse(r.out);
        EXPECT_EQ(j["parity"], true) << args;
        const json& d = j["data"];
        EXPECT_GT(d["max_abs_logit"].get<double>(), 0.1) << args;
        EXPECT_LE(d["relative_error"].get<double>(), 1.0 / 512) << args << d;
        EXPECT_LE(d["hidden_max_abs_error"].get<double>(), d["hidden_max_abs"].get<double>() / 512) << args << d;
        EXPECT_EQ(d["head_ps"], j["head_ps"]) << args;
        EXPECT_EQ(d["layers_ps"].size(), model[0] == 'm' ? 2u : 3u) << args;
        EXPECT_LE(d["routing_flip_gap"].get<double>(), 2e-3) << args;
        if (model[0] == 'd') {
          EXPECT_EQ(d["dense_layer_ps"], j["dense_layer_ps"]) << args;
        }
      }
  const Result text = run("eval llm --model deepseek-v3-tiny-random --tp 1 --pp 1 --data");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("each layer with its router's routing, the first MoE layer "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("row(s) routed otherwise by the float64 pass"), std::string::npos) << text.out;
  // The model's router by default, or --router's: the values differ, the timing does not need them.
  const json sig = json::parse(run("eval llm --model mixtral-tiny-random --tp 1 --pp 1 --data --router sigmoid --json").out);
  const json soft = json::parse(run("eval llm --model mixtral-tiny-random --tp 1 --pp 1 --data --json").out);
  EXPECT_NE(sig["data"]["max_abs_error"], soft["data"]["max_abs_error"]);
  expect_input_error(run("eval llm --model mixtral-tiny-random --tp 1 --pp 1 --data --router tanh"), "--router tanh: softmax or sigmoid");
  expect_input_error(run("eval llm --model llama-tiny-random --tp 1 --pp 1 --router sigmoid"), "--router sigmoid: the model is dense");
  expect_input_error(run("eval llm --model mixtral-tiny-random --ep 2 --ep-level cube --pp 1 --batch 4 --data"),
                     "--data runs a mixture-of-experts model's attention tensor-parallel only");
}

TEST(ModelsMla, BadDeepSeekFieldsAreOneLine) {
  const std::string d = std::filesystem::temp_directory_path().string() + "/kb_models_mla";
  std::filesystem::create_directories(d);
  expect_model_edits_refused(kDeepSeek, d, {
      {"group", "\"n_group\": 8", "\"n_group\": 7", "n_group: 7 does not divide the 256 routed experts"},
      {"topk", "\"topk_group\": 4", "\"topk_group\": 9", "topk_group: must be <= 8"},
      {"method", "\"topk_method\": \"noaux_tc\"", "\"topk_method\": \"beam\"", "topk_method: 'beam' is not modelled"},
      {"score", "\"scoring_func\": \"sigmoid\"", "\"scoring_func\": \"tanh\"", "scoring_func: 'tanh' is not modelled"},
      {"quant", "\"quant_method\": \"fp8\"", "\"quant_method\": \"awq\"", "quantization_config: only fp8 weights"},
      {"rope", "\"qk_rope_head_dim\": 64", "\"qk_rope_head_dim\": 63", "qk_rope_head_dim: 63 values: RoPE rotates"},
      {"kvh", "\"num_key_value_heads\": 128", "\"num_key_value_heads\": 16", "num_key_value_heads: 16: latent attention"},
      {"extra", "\"use_cache\": true", "\"use_cache\": true, \"sliding_window\": 4096", "sliding_window: not modelled"},
      {"nolora", "\"kv_lora_rank\": 512,", "", "kv_lora_rank: required field is missing"},
      {"biglora", "\"kv_lora_rank\": 512", "\"kv_lora_rank\": 1000", "kv_lora_rank: 1000 with qk_rope_head_dim 64: a cached latent of 1064"},
  });
}

}  // namespace
