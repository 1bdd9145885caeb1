// Whole models from Hugging Face config.json files: the shipped LLaMA-3.1 models give the
// published parameter counts, a user's file is read as written, and every way a file can
// be wrong is one line naming the field and where it is, exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

json show(const std::string& args) {
  const Result r = run("model show " + args + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out);
}

// Meta's published sizes: 8,030,261,248, 70,553,706,496 and 405,853,388,800 parameters
// (the checkpoints' parameter counts), with 8 KV heads of 128 values in every layer.
TEST(Models, ShippedLlamasHaveThePublishedSizes) {
  struct Want {
    std::string name;
    std::int64_t params, layers;
  };
  for (const Want& w : {Want{"llama-3.1-8b", INT64_C(8030261248), 32}, Want{"llama-3.1-70b", INT64_C(70553706496), 80},
                        Want{"llama-3.1-405b", INT64_C(405853388800), 126}}) {
    const json j = show(w.name);
    EXPECT_EQ(j["params"]["total"], w.params) << w.name;
    EXPECT_EQ(j["weight_bytes"], 2 * w.params) << w.name;
    EXPECT_EQ(j["kv_bytes_per_token"], 2 * w.layers * 8 * 128 * 2) << w.name;
    EXPECT_EQ(j["shape"]["head_dim"], 128) << w.name;
    EXPECT_EQ(show(w.name + " --weight-bytes 1 --kv-bytes 1")["weight_bytes"], w.params) << w.name;
  }
  const Result list = run("model list");
  EXPECT_EQ(list.code, 0) << list.err;
  for (const char* n : {"llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"}) EXPECT_NE(list.out.find(n), std::string::npos);
}

// A small model of the data-mode size, counted by hand: tied embedding, head_dim given.
TEST(Models, AUsersFileIsReadAsWritten) {
  const std::string d = fresh_dir("kb_models_tiny");
  fs::create_directories(d);
  std::ofstream(d + "/tiny.json") << R"({"hidden_size": 64, "intermediate_size": 160, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 24, "num_hidden_layers": 2, "vocab_size": 256,
    "tie_word_embeddings": true, "rms_norm_eps": 1e-6, "model_type": "llama"})";
  const json j = show("'" + d + "/tiny.json' --context 10");
  // attention: q 64x96, k and v 64x48 each, o 96x64; mlp 3 x 64x160; norms 2 x 64.
  const std::int64_t attention = 64 * 96 + 2 * 64 * 48 + 96 * 64, mlp = 3 * 64 * 160, layer = attention + mlp + 128;
  EXPECT_EQ(j["params"]["per_layer"]["total"], layer);
  EXPECT_EQ(j["params"]["lm_head"], 0);
  EXPECT_EQ(j["params"]["total"], 256 * 64 + 2 * layer + 64);
  EXPECT_EQ(j["kv_bytes_per_token"], 2 * 2 * 48 * 2);
  EXPECT_EQ(j["kv_bytes_per_sequence"], 10 * 2 * 2 * 48 * 2);
  // a token at context 10: every projection and the LM head, and Q.K^T and P.V over 10 positions
  EXPECT_EQ(j["decode_flops_per_token"], 2 * (2 * (attention + mlp) + 256 * 64 + 2 * 2 * 96 * 10));
  EXPECT_EQ(j["model"], "tiny");
}

// The shipped mixture-of-experts models against their authors' published sizes, total and
// active a token, within the rounding of the figures published: Mixtral-8x7B 46.7 B and
// 12.9 B, Mixtral-8x22B 141 B and 39 B (Mistral AI); Qwen3-30B-A3B 30.5 B (29.9 B without the
// embedding and LM head) and 3.3 B, Qwen3-235B-A22B 235 B and 22 B (Qwen). Qwen3-30B-A3B's
// active count, embedding and LM head included, is 3.35 B: the card's 3.3 is held to 0.06.
TEST(Models, ShippedMixturesOfExpertsHaveThePublishedSizes) {
  struct Want {
    std::string name;
    double total, total_tol, active, active_tol;
    std::int64_t experts, top_k, layers;
  };
  for (const Want& w : {Want{"mixtral-8x7b", 46.7, 0.05, 12.9, 0.05, 8, 2, 32}, Want{"mixtral-8x22b", 141, 0.5, 39, 0.5, 8, 2, 56},
                        Want{"qwen3-30b-a3b", 30.5, 0.05, 3.3, 0.06, 128, 8, 48},
                        Want{"qwen3-235b-a22b", 235, 0.5, 22, 0.5, 128, 8, 94}}) {
    const json j = show(w.name);
    EXPECT_NEAR(j["params"]["total"].get<double>() / 1e9, w.total, w.total_tol) << w.name;
    EXPECT_NEAR(j["params"]["active"].get<double>() / 1e9, w.active, w.active_tol) << w.name;
    EXPECT_EQ(j["experts"]["routed"], w.experts) << w.name;
    EXPECT_EQ(j["experts"]["per_token"], w.top_k) << w.name;
    EXPECT_EQ(j["experts"]["moe_layers"], w.layers) << w.name;
    EXPECT_EQ(j["weight_bytes"], 2 * j["params"]["total"].get<std::int64_t>()) << w.name;
  }
  const json q = show("qwen3-30b-a3b");
  const std::int64_t outside = q["params"]["embedding"].get<std::int64_t>() + q["params"]["lm_head"].get<std::int64_t>();
  EXPECT_NEAR(static_cast<double>(q["params"]["total"].get<std::int64_t>() - outside) / 1e9, 29.9, 0.05);
  EXPECT_EQ(q["experts"]["qk_norm"], true);
  EXPECT_EQ(q["kv_bytes_per_token"], 2 * 48 * 4 * 128 * 2);
  const Result list = run("model list");
  EXPECT_NE(list.out.find("8 experts, 2 a token (12.9 B active)"), std::string::npos) << list.out;
  // model place places dense models only: one line naming the model, exit 2.
  expect_input_error(run("model place mixtral-8x7b"), "model mixtral-8x7b: a mixture-of-experts model");
}

// A MoE model on both engines (docs/model.md section 13.11): expert-parallel over SIPs with
// data-parallel attention and skewed routing, every figure identical; what the routing and the
// placement give, and what the MoE columns say; a dense model's output has none of them.
TEST(Models, AMixtureOfExpertsStepRunsOnBothEngines) {
  const std::string ring = "--topology '" + kTopo + "/ring8.yaml' ";
  const Result r = run("eval llm --model mixtral-8x7b " + ring +
                       "--batch 16 --context 2048 --ep 8 --ep-level sip --routing zipf:1.2 --routing-seed 3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true) << r.out;
  EXPECT_EQ(j["attention"], "dp");
  EXPECT_EQ(j["tp"], 8);
  EXPECT_EQ(j["routing"], "zipf:1.2");
  EXPECT_EQ(j["routing_seed"], 3);
  // 16 tokens x top-2: 32 pairs over 8 ranks of one expert each; the busiest's share of them.
  const std::int64_t rank = j["rank_tokens"];
  EXPECT_NEAR(j["load_imbalance"].get<double>(), static_cast<double>(rank) * 8 / 32, 1e-12);
  EXPECT_GT(j["load_imbalance"].get<double>(), 1.0);
  EXPECT_LE(j["experts_touched"].get<std::int64_t>(), 8);
  EXPECT_GT(j["dispatch_ps"].get<std::int64_t>(), 0);
  EXPECT_GT(j["combine_ps"].get<std::int64_t>(), 0);
  EXPECT_GT(j["expert_ps"].get<std::int64_t>(), 0);
  EXPECT_GT(j["dispatch_link_bytes_sip"].get<std::int64_t>(), 0);
  EXPECT_EQ(j["dispatch_link_bytes_cube"], 0);
  // fp8 dispatch moves half the bytes; the combine stays fp16.
  const Result h = run("eval llm --model mixtral-8x7b " + ring +
                       "--batch 16 --context 2048 --ep 8 --ep-level sip --routing zipf:1.2 --routing-seed 3 --dispatch-bytes 1 "
                       "--engine batched --json");
  ASSERT_EQ(h.code, 0) << h.err;
  const json k = json::parse(h.out);
  EXPECT_EQ(k["dispatch_link_bytes_sip"].get<std::int64_t>() * 2, j["dispatch_link_bytes_sip"].get<std::int64_t>());
  EXPECT_EQ(k["combine_link_bytes_sip"], j["combine_link_bytes_sip"]);
  // Balanced routing of the same step is even, and no slower.
  const Result b = run("eval llm --model mixtral-8x7b " + ring + "--batch 16 --context 2048 --ep 8 --ep-level sip --engine batched --json");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(json::parse(b.out)["load_imbalance"], 1.0);
  // Group-limited routing (4 groups of 2 experts, a token's from its best one): both engines.
  const Result g = run("eval llm --model mixtral-8x7b " + ring +
                       "--batch 1 --context 2048 --tp 8 --tp-level sip --routing uniform --expert-groups 4 --topk-groups 1 --json");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(json::parse(g.out)["parity"], true);
  EXPECT_EQ(json::parse(g.out)["expert_groups"], 4);
  EXPECT_EQ(json::parse(g.out)["experts_touched"], 2);
  EXPECT_LE(json::parse(b.out)["step_ps"].get<std::int64_t>(), j["step_ps"].get<std::int64_t>());
  // A sweep over the mapping, the step's axes grouped (as by default): the same step for the same point.
  const Result s = run("sweep llm --model mixtral-8x7b " + ring +
                       "--batch 16 --context 2048 --tp 8 --tp-level sip --attention dp --attention-case 3 --tp-algo ring --pp 1 "
                       "--redundant-experts 0,8 --routing zipf:1.2 --routing-seed 3 --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const json sw = json::parse(s.out);
  EXPECT_EQ(sw["valid"], 2) << s.out;
  const Result e = run("eval llm --model mixtral-8x7b " + ring +
                       "--batch 16 --context 2048 --ep 8 --ep-level sip --attention-case 3 --tp-algo ring --pp 1 "
                       "--routing zipf:1.2 --routing-seed 3 --engine batched --json");
  ASSERT_EQ(e.code, 0) << e.err;
  bool found = false;
  for (const json& row : sw["top"]) found |= row["redundant_experts"] == 0 && row["step_ps"] == json::parse(e.out)["step_ps"];
  EXPECT_TRUE(found) << s.out;
  // A dense model's output has no MoE column.
  const Result d = run("eval llm --model llama-3.1-8b --batch 1 --tp 1 --pp 1 --engine batched --json");
  ASSERT_EQ(d.code, 0) << d.err;
  for (const char* col : {"experts", "attention", "expert_ps", "load_imbalance", "routing"})
    EXPECT_FALSE(json::parse(d.out).contains(col)) << col;
}

// A MoE sweep over the axes the routing reads (batch, phase, prompt) and over --routing and
// --routing-seed lists (docs/model.md section 13.11): each combination routed on its own, every
// point the step eval gives for it; an axis that changes no routing (the prompt of a decode
// step) stays an axis of its own.
TEST(Models, AMixtureOfExpertsSweepRoutesEachCombination) {
  const std::string common = "--model mixtral-8x7b --topology '" + kTopo +
                             "/ring8.yaml' --context 2048 --ep 8 --ep-level sip --pp 1 --tp-algo ring --attention-case 3 ";
  const Result s = run("sweep llm " + common +
                       "--batch 8,16 --phase decode,prefill --prompt 64 --routing balanced,zipf:1.2 --routing-seed 1,2 "
                       "--redundant-experts 0,8 --top 64 --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const json sw = json::parse(s.out);
  EXPECT_EQ(sw["evaluated"], 32) << s.out;
  EXPECT_EQ(sw["valid"], 32) << s.out;
  EXPECT_EQ(sw["recheck"]["ok"], true);
  std::set<std::string> seen;
  std::set<std::int64_t> steps;
  int compared = 0;
  for (const json& row : sw["top"]) {
    const std::string point = "--batch " + row["batch"].dump() + " --phase " + row["phase"].get<std::string>() + " --prompt 64 --routing " +
                              row["routing"].get<std::string>() + " --routing-seed " + row["routing_seed"].dump() +
                              " --redundant-experts " + row["redundant_experts"].dump();
    seen.insert(point);
    steps.insert(row["step_ps"].get<std::int64_t>());
    if (row["index"].get<std::int64_t>() % 3 != 0) continue;  // a third of them on the step's own eval
    const Result e = run("eval llm " + common + point + " --engine batched --json");
    ASSERT_EQ(e.code, 0) << e.err;
    const json j = json::parse(e.out);
    EXPECT_EQ(j["step_ps"], row["step_ps"]) << point;
    EXPECT_EQ(j["load_imbalance"], row["load_imbalance"]) << point;
    EXPECT_EQ(j["experts_touched"], row["experts_touched"]) << point;
    ++compared;
  }
  EXPECT_EQ(seen.size(), 32u);
  EXPECT_GT(steps.size(), 12u);  // the routings differ
  EXPECT_GE(compared, 8);
  // The routing's axis holds the combinations; the prompt of decode steps routes nothing new.
  const Result d = run("sweep llm " + common + "--batch 16 --phase decode --prompt 64,128 --routing-seed 1:3 --json");
  ASSERT_EQ(d.code, 0) << d.err;
  const json dj = json::parse(d.out);
  bool prompt_alone = false, seeds = false;
  for (const json& ax : dj["space"]["axes"]) {
    prompt_alone |= ax["name"] == "prompt" && ax["values"] == json::array({64, 128});
    seeds |= ax["name"] == "routing_seed" && ax["values"] == json::array({1, 2, 3});
  }
  EXPECT_TRUE(prompt_alone) << dj["space"];
  EXPECT_TRUE(seeds) << dj["space"];
  // --ep and --ep-level take lists: the tp and tp-level lists they stand for.
  const Result ep = run("sweep llm --model mixtral-8x7b --topology '" + kTopo +
                        "/ring8.yaml' --batch 16 --context 2048 --ep 4,8 --ep-level cube,sip --pp 1 --json");
  ASSERT_EQ(ep.code, 0) << ep.err;
  const json ej = json::parse(ep.out);
  bool tp = false, level = false;
  for (const json& ax : ej["space"]["axes"]) {
    tp |= ax["name"] == "tp" && ax["values"] == json::array({4, 8});
    level |= ax["name"] == "tp_level" && ax["values"] == json::array({"cube", "sip"});
  }
  EXPECT_TRUE(tp && level) << ej["space"]["axes"].dump();
  // Two names of one routing: two points, routed alike.
  const Result alike = run("sweep llm " + common + "--batch 16 --routing zipf:1,zipf:1.0 --top 2 --json");
  ASSERT_EQ(alike.code, 0) << alike.err;
  const json aj = json::parse(alike.out);
  ASSERT_EQ(aj["evaluated"], 2);
  EXPECT_EQ(aj["top"][0]["step_ps"], aj["top"][1]["step_ps"]);
}

// A MoE model's first dense layers (Qwen3-MoE's mlp_only_layers at the front; DeepSeek-V3's
// first_k_dense_replace): timed as dense layers, the step their count of one and the MoE
// layers' of the other; dense layers after MoE ones are refused by name.
TEST(Models, AMixtureOfExpertsModelsFirstDenseLayersRunDense) {
  const std::string d = fresh_dir("kb_models_moe_dense");
  fs::create_directories(d);
  const std::string qwen = kRoot + "/models/qwen3-30b-a3b.json";
  copy_edited(qwen, d + "/front.json", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 1]");
  copy_edited(qwen, d + "/back.json", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 47]");
  const std::string step = "--topology '" + kTopo + "/ring8.yaml' --batch 8 --context 1024 --ep 8 --ep-level sip --pp 1 ";
  const Result r = run("eval llm --model '" + d + "/front.json' " + step + "--json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["dense_layers"], 2);
  EXPECT_EQ(j["step_ps"].get<std::int64_t>(), 2 * j["dense_layer_ps"].get<std::int64_t>() + 46 * j["layer_ps"].get<std::int64_t>() +
                                                  j["head_ps"].get<std::int64_t>());
  bool dense_kernel = false;
  for (const json& k : j["kernels"]) dense_kernel |= k["part"] == "dense_layer" && k["name"] == "gate_up";
  EXPECT_TRUE(dense_kernel) << j["kernels"];
  expect_input_error(run("eval llm --model '" + d + "/back.json' " + step), "layer 47 is dense after MoE layers");
}

// Bad MoE input: one line, exit 2.
TEST(Models, BadMixtureOfExpertsInputIsOneLine) {
  const std::string m = "eval llm --model mixtral-8x7b --topology '" + kTopo + "/ring8.yaml' --batch 16 --context 2048 ";
  expect_input_error(run(m + "--routing skewed"), "--routing: 'skewed': not balanced, uniform or zipf:ALPHA");
  expect_input_error(run(m + "--routing zipf:17"), "--routing: 'zipf:17': zipf's ALPHA is a number from 0 to 16");
  expect_input_error(run(m + "--ep 3 --ep-level sip --redundant-experts 2"), "do not split evenly over 3 ranks");
  expect_input_error(run(m + "--ep 3 --ep-level sip"), "16 sequences do not split evenly over 3 ranks");
  expect_input_error(run(m + "--ep 2 --ep-level sip --redundant-experts 9"), "--redundant-experts 9: at most one copy of an expert a rank");
  expect_input_error(run(m + "--ep 8 --ep-level sip --routing-seed -1"), "--routing-seed -1:");
  expect_input_error(run(m + "--ep 8 --ep-level sip --expert-groups 3"), "--expert-groups 3: does not divide the 8 routed experts");
  expect_input_error(run(m + "--ep 8 --ep-level sip --expert-groups 8 --topk-groups 1"),
                     "--topk-groups 1: 1 of 8 groups of 1 experts do not hold the 2 experts a token takes (--top-k)");
  expect_input_error(run("eval llm --model llama-3.1-8b --batch 1 --routing uniform"),
                     "--routing uniform: the model is dense (no --experts): nothing to route");
  const std::string sw = "sweep llm --model mixtral-8x7b --topology '" + kTopo + "/ring8.yaml' --context 2048 --ep 8 --ep-level sip --pp 1 ";
  expect_input_error(run(sw + "--routing balanced,skewed"), "--routing: 'skewed': not balanced, uniform or zipf:ALPHA");
  expect_input_error(run(sw + "--routing-seed 1,x"), "--routing-seed 1,x: item 'x': expected a non-negative integer");
  expect_input_error(run(sw + "--batch 8:64:+8 --routing-seed 1:1000"),
                     "--batch 8:64:+8, --routing-seed 1:1000: the prepare step (a MoE step's routing) runs for each combination "
                     "of these values; at most 4096 combinations");
  expect_input_error(run(sw + "--zip batch,prompt=a:8/64,b:16/64"), "a zip of named cases cannot hold values the prepare step reads");
  expect_input_error(run("sweep llm --model llama-3.1-8b --batch 1 --routing balanced,uniform"),
                     "--routing balanced: the model is dense (no --experts): nothing to route");
  expect_input_error(run("eval llm --model mixtral-8x7b --batch 1 --tp 1 --pp 1 --data"), "--data computes every value on the host");
}

// Qwen3-MoE's dense layers (mlp_only_layers, decoder_sparse_step) are read as dense layers of
// intermediate_size; a sliding window is refused by name.
TEST(Models, AMixtureOfExpertsFileIsReadAsWritten) {
  const std::string d = fresh_dir("kb_models_moe");
  fs::create_directories(d);
  const std::string qwen = kRoot + "/models/qwen3-30b-a3b.json";
  const json base = show("'" + qwen + "'");
  copy_edited(qwen, d + "/dense2.json", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 47]");
  const json two = show("'" + d + "/dense2.json'");
  EXPECT_EQ(two["experts"]["moe_layers"], 46);
  const std::int64_t moe_mlp = 2048 * 128 + 128 * 3 * 2048 * 768, dense_mlp = 3 * 2048 * 6144;
  EXPECT_EQ(two["params"]["total"].get<std::int64_t>(), base["params"]["total"].get<std::int64_t>() - 2 * (moe_mlp - dense_mlp));
  copy_edited(qwen, d + "/sparse2.json", "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
  EXPECT_EQ(show("'" + d + "/sparse2.json'")["experts"]["moe_layers"], 24);  // layers 1, 3, ..., 47
  copy_edited(qwen, d + "/window.json", "\"use_sliding_window\": false", "\"use_sliding_window\": true");
  const Result w = run("model show '" + d + "/window.json'");
  expect_input_error(w, d + "/window.json:");
  EXPECT_NE(w.err.find("use_sliding_window: true is not modelled"), std::string::npos) << w.err;
  copy_edited(qwen, d + "/bad_layer.json", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [48]");
  expect_input_error(run("model show '" + d + "/bad_layer.json'"), "mlp_only_layers: expected layer indices from 0 to 47");
  const std::string mixtral = kRoot + "/models/mixtral-8x7b.json";
  copy_edited(mixtral, d + "/swa.json", "\"sliding_window\": null", "\"sliding_window\": 4096");
  expect_input_error(run("model show '" + d + "/swa.json'"), "sliding_window: not null: sliding-window attention is not modelled");
  copy_edited(mixtral, d + "/topk.json", "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9");
  expect_input_error(run("model show '" + d + "/topk.json'"), "num_experts_per_tok: must be <= 8");
}

TEST(Models, EveryBadFileIsOneLineNamingTheFieldAndWhere) {
  const std::string d = fresh_dir("kb_models_bad");
  fs::create_directories(d);
  const std::string good = kRoot + "/models/llama-3.1-8b.json";
  expect_model_edits_refused(good, d, {
      {"moe", "\"use_cache\": true", "\"use_cache\": true,\n  \"num_local_experts\": 8", ":37:3: num_local_experts: not modelled"},
      {"kv5", "\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5", ":22:26: num_key_value_heads: 5 does not divide"},
      {"missing", "\"hidden_size\": 4096,", "", ":1:1: hidden_size: required field is missing"},
      {"string", "\"hidden_size\": 4096", "\"hidden_size\": \"4096\"", ":14:18: hidden_size: expected a number"},
      {"fraction", "\"hidden_size\": 4096", "\"hidden_size\": 4096.5", ":14:18: hidden_size: expected an integer"},
      {"zero", "\"num_hidden_layers\": 32", "\"num_hidden_layers\": 0", "num_hidden_layers: must be > 0"},
      {"huge", "\"vocab_size\": 128256", "\"vocab_size\": 99999999999", "vocab_size: must be <="},
      {"bias", "\"attention_bias\": false", "\"attention_bias\": true", ":5:21: attention_bias: true is not modelled"},
      {"mlpbias", "\"mlp_bias\": false", "\"mlp_bias\": 1", "mlp_bias: expected true or false"},
      {"act", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "hidden_act: 'gelu' is not modelled"},
      {"type", "\"model_type\": \"llama\"", "\"model_type\": \"mixtral\"", "model_type: 'mixtral' is not modelled"},
      {"arch", "\"LlamaForCausalLM\"", "\"GptOssForCausalLM\"", "architectures: expected a list holding"},
      {"mixtral", "\"LlamaForCausalLM\"", "\"MixtralForCausalLM\"", "model_type: 'llama' is not modelled"},
      {"headsize", "\"hidden_size\": 4096", "\"hidden_size\": 4100", "hidden_size: 4100 is not num_attention_heads (32)"},
      {"twice", "\"use_cache\": true", "\"use_cache\": true,\n  \"vocab_size\": 5", "vocab_size: given twice"},
      {"nested", "\"num_hidden_layers\": 32", "\"num_hidden_layers\": [32]", "num_hidden_layers: expected a single value"},
      {"comma", "\"use_cache\": true", "\"use_cache\": true,", ":36:21: (document): expected a field name"},
      {"broken", "\"use_cache\": true", "\"use_cache\": [true", "(document): not valid JSON"},
  });
  std::ofstream(d + "/list.json") << "[1, 2]";
  expect_input_error(run("model show '" + d + "/list.json'"), "(document): expected a JSON object");
  std::ofstream(d + "/empty.json") << "";
  expect_input_error(run("model show '" + d + "/empty.json'"), "empty file");
  expect_input_error(run("model show '" + d + "/absent.json'"), "cannot open file");
  expect_input_error(run("model show llama-9"), "model llama-9: no such model (shipped: deepseek-v3, deepseek-v3-tiny-random, llama-3.1-405b, llama-3.1-70b");
  expect_input_error(run("model show llama-3.1-8b --weight-bytes 4"), "--weight-bytes 4: must be <= 2");
  expect_input_error(run("model show llama-3.1-8b --kv-bytes 0"), "--kv-bytes 0: must be > 0");
  expect_input_error(run("model show llama-3.1-8b --context 0"), "--context 0: must be > 0");
}

json place(const std::string& args) {
  const Result r = run("model place " + args + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(r.out) : json();
}

// LLaMA-3.1-70B in fp16 (141 GB) fits no mapping of one SIP of the default topology (eight
// 16 GiB cubes): each is hbm_overflow with the fullest cube's bytes against its capacity.
TEST(Models, SeventyBInFp16DoesNotFitOneSip) {
  for (const std::string mapping : {"--tp 1", "--tp 8", "--tp 8 --tp-level pe", "--tp 64 --tp-level hier"}) {
    const Result r = run("model place llama-3.1-70b " + mapping);
    expect_input_error(r, "llama-3.1-70b on default: hbm_overflow: the fullest cube (stage 0) needs ");
    EXPECT_NE(r.err.find("against its HBM's 17179869184 bytes"), std::string::npos) << mapping << r.err;
  }
  // In 8-bit weights it fits eight cubes: 80 layers of (8192 x (1024 + 2 x 128) + 1024 x 8192
  // + 3 x 8192 x 3584 + 2 x 8192) weights and the vocabulary's eighth twice.
  const json j = place("llama-3.1-70b --tp 8 --weight-bytes 1");
  const std::int64_t layer = 8192 * (1024 + 256) + 1024 * 8192 + 3 * 8192 * 3584 + 2 * 8192;
  EXPECT_EQ(j["stages"][0]["rank_weight_bytes"], 80 * layer + 2 * 16032 * 8192 + 8192);
  EXPECT_EQ(j["fullest_cube"]["kv_bytes"], 80 * 2 * 128 * 4096 * 2);
}

// The bounds by hand: 70B decoding one token at context 4096 on ring8's 64 cubes reads every
// multiplied weight, the norms, one embedding row and 4095 positions of KV cache.
TEST(Models, BoundsAreTheWorkOverThePeaks) {
  const json j = place("llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --tp 8 --tp-level sip");
  const std::int64_t matmul = INT64_C(80) * (150994944 + 704643072) + INT64_C(128256) * 8192;
  const std::int64_t read = (matmul + 80 * 16384 + 8192) * 2 + 8192 * 2 + INT64_C(4095) * 327680;
  EXPECT_EQ(j["bounds"]["read_bytes"], read);
  EXPECT_EQ(j["bounds"]["memory_ps"], (read * 1000 + 64 * 819 - 1) / (64 * 819));
  const std::int64_t macs = matmul + INT64_C(80) * 2 * 8192 * 4096;
  EXPECT_EQ(j["bounds"]["macs"], macs);
  const std::int64_t cycles = (macs + 512 * 1024 - 1) / (512 * 1024);  // 512 PEs of 32 x 32 MACs
  EXPECT_EQ(j["bounds"]["compute_ps"], (cycles * 1000000 + 1499) / 1500);
  EXPECT_EQ(j["bounds"]["bound"], "memory");
  EXPECT_EQ(j["mapping"]["cubes_used"], 64);
  // Eight ranks of PEs share cube 0: it holds all eight shards.
  const json pe = place("llama-3.1-8b --tp 8 --tp-level pe");
  EXPECT_EQ(pe["fullest_cube"]["weight_bytes"], 8 * pe["stages"][0]["rank_weight_bytes"].get<std::int64_t>());
  // Pipeline stages: 80 layers over 8 stages of one SIP, 10 each; the last holds the LM head.
  const json pp = place("llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --tp 8 --pp 8 --phase prefill --prompt 512");
  ASSERT_EQ(pp["stages"].size(), 8u);
  for (const auto& st : pp["stages"]) EXPECT_EQ(st["layers"], 10);
  EXPECT_GT(pp["stages"][7]["rank_weight_bytes"], pp["stages"][3]["rank_weight_bytes"]);
}

// The bounds are the rank program's sums: its MACs over every rank, layer and the head, and
// the weights its GEMMs and norms read are the rank's weights less the embedding.
TEST(Models, TheRankProgramAddsUpToTheBounds) {
  for (const std::string& args : std::vector<std::string>{"llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --tp 8 --tp-level sip --batch 16",
                                 std::string("llama-3.1-8b --tp 4 --batch 3 --context 77"),
                                 std::string("llama-3.1-8b --tp 2 --phase prefill --prompt 300 --batch 2"),
                                 "llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --tp 8 --pp 8 --phase prefill --prompt 64"}) {
    const json j = place(args);
    const std::int64_t tp = j["mapping"]["tp"], pp = j["mapping"]["pp"];
    std::int64_t layers = 0;
    for (const auto& st : j["stages"]) layers += st["layers"].get<std::int64_t>();
    std::int64_t layer_macs = 0, head_macs = 0, layer_weights = 0, head_weights = 0;
    for (const auto& k : j["rank_program"]) {
      const bool head = k["in"] == "head";
      (head ? head_macs : layer_macs) += k["macs"].get<std::int64_t>();
      if (k["kind"] == "gemm") (head ? head_weights : layer_weights) += k["k"].get<std::int64_t>() * k["n"].get<std::int64_t>() * 2;
      if (k["kind"] == "norm") (head ? head_weights : layer_weights) += k["cols"].get<std::int64_t>() * 2;
    }
    EXPECT_EQ(tp * (layers * layer_macs + head_macs), j["bounds"]["macs"].get<std::int64_t>()) << args;
    // Stage 0 holds the embedding's share, the last stage the head's.
    std::int64_t held = 0;
    for (const auto& st : j["stages"]) held += st["rank_weight_bytes"].get<std::int64_t>();
    const std::int64_t embedding = head_weights - 2 * j["rank_program"].back()["k"].get<std::int64_t>();  // the head GEMM's
    EXPECT_EQ(held, layers * layer_weights + head_weights + embedding) << args;
    EXPECT_EQ(pp, static_cast<std::int64_t>(j["stages"].size()));
  }
}

// `eval llm ARGS --json` on both engines: exit 0 and identical figures.
json eval_both(const std::string& args) {
  const Result r = run("eval llm " + args + " --json");
  EXPECT_EQ(r.code, 0) << args << r.err;
  if (r.code != 0) return json();
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true) << args;
  return j;
}

// 8-bit weights and KV cache, timed on both engines: against fp16, HBM reads drop by exactly
// one byte per weight multiplied (every projection and the LM head, once each at batch 1)
// and per KV value attended to, less what a tiling chosen for the other width reads again,
// KV appends write half, and the step is no slower.
TEST(Models, EightBitWeightsAndKvCacheReadHalfTheBytes) {
  auto eval = [&](const std::string& bytes) {
    return eval_both("--model llama-3.1-8b --tp 8 --tp-level cube --tp-algo ring --attention-case 1 --batch 2 --context 4096 "
                     "--layers 1 --kernel-tuning auto " + bytes);
  };
  const json fp16 = eval(""), w8 = eval("--weight-bytes 1"), kv8 = eval("--kv-bytes 1");
  auto get = [](const json& j, const char* k) { return j[k].get<std::int64_t>(); };
  const std::int64_t matmul = std::int64_t{32} * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + std::int64_t{128256} * 4096;
  // And the norms' weights (two a layer and the final one), loaded by each PE with a row:
  // 2 of each of the 8 ranks' cubes.
  const std::int64_t norms = std::int64_t{2 * 32 + 1} * 8 * 2 * 4096;
  // A GEMM reads A (2 bytes a value) once per tile column and B once per tile row (at batch
  // 2, one); the 8-bit weights' tiling may differ, and each kernel runs on the 8 ranks.
  std::int64_t again = 0;
  ASSERT_EQ(fp16["kernels"].size(), w8["kernels"].size());
  for (std::size_t i = 0; i < fp16["kernels"].size(); ++i) {
    const json &a = fp16["kernels"][i], &b = w8["kernels"][i];
    if (a["kind"] != "gemm") continue;
    const std::int64_t m = a["m"], n = a["n"], k = a["k"], times = 8 * (a["part"] == "layer" ? 32 : 1);
    auto tiles = [](std::int64_t d, const json& t) { return (d + t.get<std::int64_t>() - 1) / t.get<std::int64_t>(); };
    again += times * (2 * m * k * (tiles(n, b["tile_n"]) - tiles(n, a["tile_n"])) + n * k * (tiles(m, b["tile_m"]) - 1) -
                      2 * n * k * (tiles(m, a["tile_m"]) - 1));
  }
  EXPECT_EQ(get(fp16, "hbm_read_bytes") - get(w8, "hbm_read_bytes"), matmul + norms - again);
  EXPECT_EQ(get(fp16, "hbm_write_bytes"), get(w8, "hbm_write_bytes"));
  EXPECT_EQ(get(fp16, "hbm_read_bytes") - get(kv8, "hbm_read_bytes"), std::int64_t{32} * 2 * 1024 * 4096 * 2);
  EXPECT_EQ(get(fp16, "hbm_write_bytes") - get(kv8, "hbm_write_bytes"), std::int64_t{32} * 2 * 1024 * 2);
  EXPECT_LT(get(w8, "tpot_ps"), get(fp16, "tpot_ps"));
  EXPECT_LE(get(kv8, "attention_ps"), get(fp16, "attention_ps"));
  EXPECT_LT(get(w8, "memory_bound_ps"), get(fp16, "memory_bound_ps"));
  EXPECT_EQ(get(w8, "cube_weight_bytes") * 2, get(fp16, "cube_weight_bytes"));
}

// --pp-layers: each stage's layers, placed (model place), timed on both engines and echoed;
// with one micro-batch the stages run in turn, so the step is every layer, each transfer and
// the head whatever the split; splits that do not fit the mapping or the model are exit 2.
TEST(Models, PipelineStagesTakeTheLayersGiven) {
  const std::string ring = " --topology '" + kTopo + "/ring8.yaml'";
  const json p = place("llama-3.1-8b" + ring + " --pp-layers 20,12");
  ASSERT_EQ(p["stages"].size(), 2u);
  EXPECT_EQ(p["stages"][0]["layers"], 20);
  EXPECT_EQ(p["stages"][1]["layers"], 12);
  EXPECT_EQ(p["mapping"]["pp"], 2);
  auto eval = [&](const std::string& more) {
    return eval_both("--model llama-3.1-8b" + ring + " --tp 2 --tp-level sip --tp-algo ring --attention-case 1 --batch 4 "
                     "--layers 1 " + more);
  };
  const json split = eval("--pp-layers 20,12"), even = eval("--pp 2"), four = eval("--pp-layers 5,9,9,9 --microbatches 4");
  EXPECT_EQ(split["stage_layers"], "20,12");
  EXPECT_EQ(even["stage_layers"], "16,16");
  EXPECT_EQ(four["stage_layers"], "5,9,9,9");
  EXPECT_EQ(four["pp"], 4);
  for (const json* j : {&split, &even}) {
    const std::int64_t step = (*j)["step_ps"], layer = (*j)["layer_ps"], head = (*j)["head_ps"], xfer = (*j)["transfer_ps"];
    EXPECT_EQ(step, 32 * layer + xfer + head);
  }
  EXPECT_EQ(split["step_ps"], even["step_ps"]);  // one micro-batch: the split does not matter
  EXPECT_GT(split["cube_weight_bytes"].get<std::int64_t>(), even["cube_weight_bytes"].get<std::int64_t>());  // 20 layers, not 16
  // Four micro-batches through 5,9,9,9: the busiest stage (9 layers, or the last's 9 and the
  // head) paces them, so the step beats the stages in turn.
  const std::int64_t layer = four["layer_ps"], head = four["head_ps"];
  EXPECT_LT(four["step_ps"].get<std::int64_t>(), 4 * (32 * layer + head));
  EXPECT_GE(four["step_ps"].get<std::int64_t>(), 4 * 9 * layer + head);
  expect_input_error(run("eval llm" + ring + " --pp-layers 10,10 --tp 1 --tp-level sip"),
                     "--pp-layers 10,10: 2 stages of 20 layers in all; the mapping has 2 stages (--pp) and the model 32 layers");
  expect_input_error(run("eval llm" + ring + " --pp 4 --pp-layers 16,16 --tp 1 --tp-level sip"),
                     "--pp-layers 16,16: 2 stages of 32 layers in all; the mapping has 4 stages (--pp)");
  expect_input_error(run("eval llm --pp-layers 10,x"), "--pp-layers 10,x: expected each pipeline stage's layers");
  expect_input_error(run("eval llm --pp-layers 0,32"), "--pp-layers 0,32: expected each pipeline stage's layers");
  expect_input_error(run("model place llama-3.1-8b" + ring + " --pp-layers 30,1,1,0"), "--pp-layers 30,1,1,0: expected");
  expect_input_error(run("model place llama-3.1-8b" + ring + " --pp-layers ''"), "--pp-layers '': an empty value");
  expect_input_error(run("model place llama-3.1-8b --pp 65"), "--pp 65: must be <= 64");
  expect_input_error(run("model place llama-3.1-8b" + ring + " --pp 3 --pp-layers 30,2"),
                     "--pp-layers 30,2: 2 stages of 32 layers in all; the mapping has 3 stages");
  // A sweep takes one split for every point; its rows echo it.
  const Result s = run("sweep llm" + ring + " --pp-layers 20,12 --tp 1,2 --tp-level sip --tp-algo ring --attention-case 1 "
                       "--json");
  ASSERT_EQ(s.code, 0) << s.err;
  const json sj = json::parse(s.out);
  ASSERT_FALSE(sj["top"].empty());
  for (const json& row : sj["top"]) EXPECT_EQ(row["stage_layers"], "20,12");
}

// eval llm: a model by name, its dimensions overridable, both engines equal, and the step
// adding up: layers x layer + head, its kinds summing to it, the MACs the bounds count.
TEST(Models, EvalLlmAddsUpAndAgrees) {
  const Result r = run("eval llm --model llama-3.1-8b --tp 8 --tp-level cube --tp-algo root --attention-case 4 --batch 4 "
                       "--context 1000 --layers 1 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["hidden"], 4096);
  EXPECT_EQ(j["layers"], 32);
  EXPECT_EQ(j["layers_run"], 1);
  const std::int64_t tpot = j["tpot_ps"], layer = j["layer_ps"], head = j["head_ps"];
  EXPECT_EQ(tpot, j["step_ps"].get<std::int64_t>());
  EXPECT_TRUE(j["ttft_ps"].is_null());
  EXPECT_EQ(tpot, 32 * layer + head);
  EXPECT_EQ(j["latency_ps"].get<std::int64_t>(), layer + head);
  EXPECT_EQ(j["gemm_ps"].get<std::int64_t>() + j["attention_ps"].get<std::int64_t>() + j["vector_ps"].get<std::int64_t>() +
                j["allreduce_ps"].get<std::int64_t>(),
            tpot);
  EXPECT_NEAR(j["tokens_per_s"].get<double>(), 4e12 / static_cast<double>(tpot), 1e-6);
  EXPECT_GT(j["allreduce_ps"].get<std::int64_t>(), 0);
  EXPECT_GE(tpot, j["memory_bound_ps"].get<std::int64_t>());
  EXPECT_GE(tpot, j["compute_bound_ps"].get<std::int64_t>());
  const json placed = place("llama-3.1-8b --tp 8 --batch 4 --context 1000");
  EXPECT_EQ(j["macs"], placed["bounds"]["macs"]);
  EXPECT_EQ(j["cube_weight_bytes"], placed["fullest_cube"]["weight_bytes"]);
  // A dimension's own flag overrides the model's.
  const Result two = run("eval llm --model llama-3.1-8b --num-layers 2 --tp 8 --engine batched --json");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(json::parse(two.out)["layers"], 2);
}

// A mapping not given is the best one: eval's pick is the sweep's best of the same space
// (a separate reduction, on the device side), the figures of the picked mapping given
// explicitly, and no worse than any mapping given in part.
TEST(Models, EvalLlmPicksTheBestMapping) {
  const std::string model = "--model llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --batch 8 --context 2000 ";
  const Result r = run("eval llm " + model + "--engine batched --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["picked"]["by"], "step_ps");
  EXPECT_EQ(j["picked"]["candidates"], 64 * 2 * 5 * 4 * 4);
  const json& p = j["picked"]["axes"];
  ASSERT_EQ(p.size(), 5u);
  const Result s = run("sweep llm " + model + "--group none --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const json best = json::parse(s.out)["best_per_group"][0]["best"];
  EXPECT_EQ(j["latency_ps"], best["latency_ps"]);
  EXPECT_EQ(j["picked"]["valid"], json::parse(s.out)["valid"]);
  const Result given = run("eval llm " + model + "--tp " + p["tp"].dump() + " --tp-level " + p["tp_level"].get<std::string>() +
                           " --tp-algo " + p["tp_algo"].get<std::string>() + " --attention-case " + p["attention_case"].dump() +
                           " --pp " + p["pp"].dump() + " --engine batched --json");
  ASSERT_EQ(given.code, 0) << given.err;
  EXPECT_EQ(json::parse(given.out)["latency_ps"], j["latency_ps"]);
  EXPECT_EQ(json::parse(given.out).count("picked"), 0u);
  // The pick is the whole model's, whatever the engines run.
  const Result one = run("eval llm " + model + "--layers 1 --engine batched --json");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out)["picked"]["axes"], p);
  for (const std::string fixed : {"--tp 2 --tp-level sip", "--tp 4 --tp-level sip", "--tp-algo root", "--attention-case 1",
                                  "--pp 2 --tp 8 --tp-level cube"}) {
    const Result part = run("eval llm " + model + fixed + " --engine batched --json");
    ASSERT_EQ(part.code, 0) << fixed << ": " << part.err;
    EXPECT_LE(j["latency_ps"].get<std::int64_t>(), json::parse(part.out)["latency_ps"].get<std::int64_t>()) << fixed;
    EXPECT_LT(json::parse(part.out)["picked"]["candidates"].get<int>(), 64 * 2 * 5 * 4 * 4) << fixed;
  }
}

// A prefill: the time to first token is the step, both engines equal, the prompt's tokens
// a second, and causal attention's MACs the causal pairs' (the bounds' count).
TEST(Models, EvalLlmPrefill) {
  const Result r = run("eval llm --model llama-3.1-8b --phase prefill --prompt 300 --batch 2 --tp 4 --tp-level cube "
                       "--tp-algo ring --layers 1 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["parity"], true);
  EXPECT_TRUE(j["tpot_ps"].is_null());
  const std::int64_t ttft = j["ttft_ps"];
  EXPECT_EQ(ttft, j["step_ps"].get<std::int64_t>());
  EXPECT_EQ(ttft, 32 * j["layer_ps"].get<std::int64_t>() + j["head_ps"].get<std::int64_t>());
  EXPECT_NEAR(j["tokens_per_s"].get<double>(), 600e12 / static_cast<double>(ttft), 1e-3);
  EXPECT_GT(j["attention_ps"].get<std::int64_t>(), 0);
  EXPECT_GE(ttft, j["compute_bound_ps"].get<std::int64_t>());
  const json placed = place("llama-3.1-8b --phase prefill --prompt 300 --batch 2 --tp 4");
  EXPECT_EQ(j["macs"], placed["bounds"]["macs"]);
  // Longer prompts take longer, and attention's share grows with the prompt (T^2 against T).
  const Result longer = run("eval llm --model llama-3.1-8b --phase prefill --prompt 3000 --batch 2 --tp 4 --tp-level cube "
                            "--tp-algo ring --engine batched --json");
  ASSERT_EQ(longer.code, 0) << longer.err;
  const json l = json::parse(longer.out);
  EXPECT_GT(l["ttft_ps"].get<std::int64_t>(), 9 * ttft);
  EXPECT_GT(l["attention_share"].get<double>(), j["attention_share"].get<double>());
}

// --trace: the first layer, each kernel's launch where it ran in the step, its kernels on a
// track of their own, in program order, each starting where the one before ended.
TEST(Models, EvalLlmTracesOneLayer) {
  const std::string path = fresh_dir("kb_llm_trace") + ".json";
  const Result r = run("eval llm --model llama-3.1-8b --tp 4 --tp-level cube --tp-algo ring --batch 2 --layers 2 --json "
                       "--trace '" + path + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const json t = load(path);
  std::vector<std::string> names;
  double end = 0, last_op = 0;
  for (const json& e : t["traceEvents"]) {
    if (e.value("cat", "") == "layer") {
      EXPECT_NEAR(e["ts"].get<double>(), end, 1e-6) << e;
      end = e["ts"].get<double>() + e["dur"].get<double>();
      names.push_back(e["name"]);
    } else if (e["ph"] == "X") {
      last_op = std::max(last_op, e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"attn_norm", "qkv", "rope", "kv_append", "attention", "o_proj", "attn_allreduce",
                                             "attn_residual", "mlp_norm", "gate_up", "silu_mul", "down", "mlp_allreduce",
                                             "mlp_residual"}));
  EXPECT_NEAR(end, static_cast<double>(j["layer_ps"].get<std::int64_t>()) / 1e6, 1e-6);
  EXPECT_LE(last_op, end + 1e-6);
  EXPECT_GT(last_op, 0.5 * end);
}

// Ranks of one PE (pe, hier) are timed on both engines; eight of them in one cube share its
// HBM and compute their shards on one PE each, so they are slower than eight cube ranks.
TEST(Models, RanksOfOnePeAreTimed) {
  std::int64_t step[3];
  int i = 0;
  for (const char* mapping : {"--tp 8 --tp-level pe", "--tp 16 --tp-level hier", "--tp 8 --tp-level cube"}) {
    const json j = eval_both(std::string("--model llama-3.1-8b --weight-bytes 1 --tp-algo ring --attention-case 1 --batch 2 "
                                         "--layers 1 ") + mapping);
    ASSERT_FALSE(j.is_null()) << mapping;
    step[i++] = j["step_ps"];
  }
  EXPECT_GT(step[0], step[2]);
  EXPECT_GT(step[1], step[2]);
}

TEST(Models, EvalLlmRefusesWhatItCannotTime) {
  expect_input_error(run("eval llm --model llama-3.1-70b --tp 1 --tp-level cube"),
                     "hbm_overflow: the fullest cube (stage 0) needs 142450014720 bytes");
  // Every mapping refused: the one that got furthest with the most ranks says why.
  expect_input_error(run("eval llm --model llama-3.1-70b"),
                     "--tp best --tp-level best --pp best --tp-algo best --attention-case best: none of 10240 candidates is "
                     "valid; the last that got furthest: hbm_overflow: the fullest cube (stage 0) needs 17808574272 bytes");
  expect_input_error(run("eval llm --batch 6 --microbatches 4"), "a field is out of range");
  expect_input_error(run("eval llm --model nosuch"), "--model nosuch: no such model");
  expect_input_error(run("sweep llm --model llama-3.1-8b,llama-3.1-70b --tp 8"), "--model llama-3.1-8b,llama-3.1-70b: one value a sweep");
  expect_input_error(run("eval llm --tp 8 --layers 40"), "a field is out of range");
}

// Each GEMM kernel tuned (--kernel-tuning best, the default) or on the automatic tiling
// (auto): the JSON lists every GEMM with its tiling, auto's is the gemm family's own, the
// tuned step's GEMMs are no slower, and a GEMM no tiling of the space fits is one line naming
// its shape.
TEST(Models, KernelTuningIsRecordedAndAutoIsTheGemmFamilysAutomaticTiling) {
  const std::string mapping = "eval llm --model llama-3.1-8b --tp 8 --tp-level cube --pp 1 --tp-algo ring --attention-case 4 "
                              "--batch 32 --json";
  const Result best = run(mapping), automatic = run(mapping + " --kernel-tuning auto");
  ASSERT_EQ(best.code, 0) << best.err;
  ASSERT_EQ(automatic.code, 0) << automatic.err;
  const json b = json::parse(best.out), a = json::parse(automatic.out);
  EXPECT_EQ(b["config"]["kernel_tuning"], "best");
  EXPECT_EQ(a["config"]["kernel_tuning"], "auto");
  EXPECT_EQ(b["parity"], true);
  EXPECT_EQ(a["parity"], true);
  // qkv, o_proj, gate_up, down; the LM head; and the decode attention's waves, with their chunk
  auto gemms = [](const json& j) {
    json g = json::array();
    for (const json& k : j["kernels"])
      if (k["kind"] == "gemm") g.push_back(k);
    return g;
  };
  const json bg = gemms(b), ag = gemms(a);
  ASSERT_EQ(bg.size(), 5u);
  ASSERT_EQ(ag.size(), 5u);
  for (const json* j : {&b, &a}) {
    ASSERT_EQ((*j)["kernels"].size(), 6u);
    const json& w = (*j)["kernels"][1];  // after qkv
    EXPECT_EQ(w["kind"], "attention");
    EXPECT_GE(w["chunk"].get<std::int64_t>(), 16);
    EXPECT_EQ(w["batch"].get<std::int64_t>() * w["waves"].get<std::int64_t>(), 32);
  }
  // Tuned, the wave is no slower than on the automatic chunk.
  EXPECT_LE(b["kernels"][1]["latency_ps"].get<std::int64_t>(), a["kernels"][1]["latency_ps"].get<std::int64_t>());
  std::int64_t sum_best = 0, sum_auto = 0;
  for (std::size_t i = 0; i < 5; ++i) {
    const json &kb = bg[i], &ka = ag[i];
    EXPECT_EQ(kb["kind"], "gemm");
    EXPECT_EQ(kb["name"], ka["name"]);
    for (const char* d : {"m", "n", "k"}) EXPECT_EQ(kb[d], ka[d]);
    // auto: what eval gemm chooses for the shape on the rank's machine (one cube of 8 PEs)
    const Result g = run("eval gemm --engine batched --json --m " + ka["m"].dump() + " --n " + ka["n"].dump() + " --k " +
                         ka["k"].dump() + " --pes 8 --cubes 1");
    ASSERT_EQ(g.code, 0) << g.err;
    const json gj = json::parse(g.out);
    for (const char* f : {"tile_m", "tile_n", "tile_k", "split"}) EXPECT_EQ(ka[f], gj["config"][f]) << f;
    EXPECT_EQ(ka["latency_ps"], gj["latency_ps"]);
    EXPECT_LE(kb["latency_ps"].get<std::int64_t>(), ka["latency_ps"].get<std::int64_t>()) << kb["name"];
    const std::int64_t layers = kb["part"] == "layer" ? 32 : 1;
    sum_best += layers * kb["latency_ps"].get<std::int64_t>(), sum_auto += layers * ka["latency_ps"].get<std::int64_t>();
  }
  EXPECT_EQ(b["gemm_ps"].get<std::int64_t>(), sum_best);  // the step's GEMMs are these kernels
  EXPECT_EQ(a["gemm_ps"].get<std::int64_t>(), sum_auto);
  EXPECT_LE(sum_best, sum_auto);
  EXPECT_LE(b["attention_ps"].get<std::int64_t>(), a["attention_ps"].get<std::int64_t>());
  const Result terminal = run("eval llm --model llama-3.1-8b --tp 8 --tp-level cube --tp-algo ring --attention-case 4 --batch 32");
  EXPECT_NE(terminal.out.find("  kernel qkv: buffers="), std::string::npos) << terminal.out;
  const std::string tiny = "eval llm --hidden 64 --intermediate 128 --heads 1 --kv-heads 1 --head-dim 64 --vocab 64 "
                           "--num-layers 1 --tp 1 --tp-level cube --pp 1 --tp-algo ring --attention-case 1 --set pe.sram_kib=1";
  expect_input_error(run(tiny), "kernel qkv (gemm): 1x192x64 GEMM: no tiling of the gemm family's space is valid on the "
                                "rank's machine; the automatic one: tiles: 2 buffer set(s)");
  expect_input_error(run(tiny + " --kernel-tuning auto"), "kernel qkv (gemm): 1x192x64 GEMM: tiles: 2 buffer set(s)");
  expect_input_error(run(tiny + " --kernel-tuning fastest"), "--kernel-tuning fastest");
}

// Data mode from the command line (docs/model.md section 13.9): the shipped tiny random
// model's logits against a float64 forward pass, in decode and prefill; the figures as timed;
// what it cannot run is one line and exit 2, before any output.
TEST(Models, EvalLlmDataModeReportsTheLogitsError) {
  for (const char* phase : {"--phase decode --context 24", "--phase prefill --prompt 20"}) {
    const json j = eval_both(std::string("--model llama-tiny-random --tp 1 --pp 1 --batch 2 --data --seed 3 ") + phase);
    ASSERT_TRUE(j.contains("data")) << phase;
    const json& d = j["data"];
    EXPECT_EQ(d["seed"], 3);
    EXPECT_EQ(d["sequences"], 2);
    EXPECT_EQ(d["vocab"], 256);
    EXPECT_GT(d["max_abs_logit"].get<double>(), 0.1);
    EXPECT_LE(d["relative_error"].get<double>(), 1.0 / 512) << d;  // fp16 accuracy
    EXPECT_LE(d["hidden_max_abs_error"].get<double>(), d["hidden_max_abs"].get<double>() / 512) << d;
    EXPECT_GT(d["max_abs_error"].get<double>(), 0.0);  // fp16 is not float64
    EXPECT_EQ(d["layer_ps"], j["layer_ps"]);
    EXPECT_EQ(d["head_ps"], j["head_ps"]);
  }
  const Result text = run("eval llm --model llama-tiny-random --tp 1 --pp 1 --data");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("  data: logits of 1 sequence(s) x 256 against a float64 forward pass (seed 1): max |error| "),
            std::string::npos)
      << text.out;
  // Two ranks over cubes and two pipeline stages: each rank's share, summed by the allreduce.
  const json two = eval_both("--model llama-tiny-random --tp 2 --tp-level cube --tp-algo ring --pp 2 --microbatches 1 "
                             "--attention-case 1 --topology '" + kTopo + "/ring8.yaml' --batch 2 --data");
  // And four ranks of one PE each: more ranks than KV heads, each KV head on two.
  const json four = eval_both("--model llama-tiny-random --tp 4 --tp-level pe --tp-algo ring --pp 1 --attention-case 1 "
                              "--batch 2 --data");
  for (const json* j : {&two, &four}) {
    const json& d = (*j)["data"];
    EXPECT_LE(d["relative_error"].get<double>(), 1.0 / 512) << d;
    EXPECT_LE(d["hidden_max_abs_error"].get<double>(), d["hidden_max_abs"].get<double>() / 512) << d;
    EXPECT_EQ(d["layer_ps"], (*j)["layer_ps"]);
    EXPECT_EQ(d["head_ps"], (*j)["head_ps"]);
  }
  const json micro = eval_both("--model llama-tiny-random --tp 1 --tp-level cube --pp 2 --topology '" + kTopo +
                               "/ring8.yaml' --batch 4 --microbatches 2 --attention-case 1 --data");
  EXPECT_LE(micro["data"]["relative_error"].get<double>(), 1.0 / 512) << micro["data"];
  EXPECT_LE(micro["data"]["hidden_max_abs_error"].get<double>(), micro["data"]["hidden_max_abs"].get<double>() / 512);
  EXPECT_EQ(micro["data"]["head_ps"], micro["head_ps"]);
  expect_input_error(run("eval llm --model llama-tiny-random --tp 1 --pp 1 --layers 1 --data"), "--data runs every layer");
  expect_input_error(run("eval llm --model llama-tiny-random --tp 1 --pp 1 --data --seed x"), "--seed x");
  expect_input_error(run("eval llm --model llama-3.1-8b --tp 8 --tp-level cube --tp-algo ring --attention-case 1 --data"),
                     "--data computes every value on the host");
  expect_input_error(run("eval llm --model llama-3.1-8b --tp 1 --tp-level sip --pp 1 --tp-algo ring --attention-case 1 --data"),
                     "--data computes every value on the host");
  const Result gemm = run("eval gemm --m 64 --n 64 --k 64 --data");
  EXPECT_EQ(gemm.code, 2);  // a family without a data mode has no --data
}

TEST(Models, BadMappingsAreOneLine) {
  expect_input_error(run("model place llama-3.1-70b --tp 3"), "--tp 3: a mapping needs 1..8 ranks at level cube");
  expect_input_error(run("model place llama-3.1-70b --tp 16"), "--tp 16: a mapping needs 1..8 ranks");
  expect_input_error(run("model place llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --tp 8 --tp-level sip --pp 2"),
                     "--pp 2: 2 stages of 8 SIP(s) each need more SIPs than the topology's 8");
  expect_input_error(run("model place llama-3.1-8b --phase train"), "--phase train: expected decode or prefill");
  expect_input_error(run("model place llama-3.1-8b --tp-level rack"), "--tp-level rack: expected pe, cube, sip or hier");
  // hier ranks are part of a cube, whole cubes or whole SIPs: 4 on cubes of 3 PEs is none.
  expect_input_error(run("model place llama-tiny-random --tp 4 --tp-level hier --set cube.pe_rows=1 --set cube.pe_cols=3"),
                     "--tp 4: a mapping needs 1..24 ranks at level hier (part of one cube's 3 PEs, whole cubes of one SIP, "
                     "or whole SIPs)");
  expect_input_error(run("eval llm --model llama-tiny-random --tp 4 --tp-level hier --set cube.pe_rows=1 --set cube.pe_cols=3"),
                     "--tp 4: a mapping needs 1..24 ranks at level hier");
  expect_input_error(run("model place llama-3.1-8b --batch 0"), "--batch 0: must be > 0");
  expect_input_error(run("model place llama-3.1-8b --set cube.hbm.capacity_mib=abc"), "cube.hbm.capacity_mib");
  expect_input_error(run("model place llama-3.1-405b --topology '" + kTopo + "/ring8.yaml' --tp 8 --tp-level sip --phase prefill "
                         "--batch 4096 --prompt 1048576"),
                     "the step's FLOPs, bytes or time pass int64");
}

// milestone-llm-inference: both engines on every point, the numbers the committed results
// hold, each point's step within its bounds and its mapping eval's pick, the trace of one
// layer, and the figures drawn, re-drawn and re-rendered.
TEST(Models, LlmMilestoneGivesTheCommittedNumbers) {
  const std::string out = fresh_dir("kb_llm_milestone");
  const Result r = run("run --bench milestone-llm-inference --backend omp --out '" + out + "'");
  const bool plots = have_matplotlib();
  if (plots) {
    ASSERT_EQ(r.code, 0) << r.err;
  }
  EXPECT_NE(r.out.find("parity: 47/47 points identical"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 64: tp 8 over sips"), std::string::npos) << r.out;
  const json doc = load(out + "/llm_inference.json");
  EXPECT_EQ(doc["schema"], "kernbench-gpu/llm-inference");
  EXPECT_EQ(doc["topology"]["name"], "ring8");
  EXPECT_EQ(doc["parity"]["ok"], true);
  ASSERT_EQ(doc["decode"].size(), 18u);
  ASSERT_EQ(doc["prefill"].size(), 7u);
  ASSERT_EQ(doc["mappings"].size(), 32u);
  ASSERT_EQ(doc["design"].size(), 12u);
  ASSERT_EQ(doc["breakdown"].size(), 2u);
  std::map<std::int64_t, std::int64_t> last_step;
  for (const json& p : doc["decode"]) {
    if (p["status"] != "valid") {
      EXPECT_TRUE(p["why"].is_string());
      continue;
    }
    const std::int64_t step = p["step_ps"], b = p["batch"], ctx = p["context"];
    EXPECT_GE(step, p["memory_bound_ps"].get<std::int64_t>()) << p;
    EXPECT_GE(step, p["compute_bound_ps"].get<std::int64_t>()) << p;
    EXPECT_NEAR(p["tokens_per_s"].get<double>(), static_cast<double>(b) * 1e12 / static_cast<double>(step), 1e-6);
    EXPECT_GE(step, last_step[ctx]) << "a larger batch is never faster";
    last_step[ctx] = step;
  }
  std::int64_t last_ttft = 0;
  for (const json& p : doc["prefill"]) {
    ASSERT_EQ(p["status"], "valid") << p;
    EXPECT_GT(p["step_ps"].get<std::int64_t>(), last_ttft);
    EXPECT_GE(p["step_ps"].get<std::int64_t>(), p["compute_bound_ps"].get<std::int64_t>());
    last_ttft = p["step_ps"];
  }
  // The bench's pick is eval's (which tries every tp 1..64 too).
  const json& first = doc["decode"][0];
  const Result e = run("eval llm --model llama-3.1-70b --topology '" + kTopo + "/ring8.yaml' --batch 1 --context 4096 "
                       "--engine batched --json");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(json::parse(e.out)["step_ps"], first["step_ps"]);
  // One decode layer's trace: its 14 kernels on a track of their own.
  const json trace = load(out + "/trace_decode_layer.json");
  int kernels = 0;
  for (const json& ev : trace["traceEvents"]) kernels += ev.value("cat", "") == "layer";
  EXPECT_EQ(kernels, 14);
  const json want = load(kRoot + "/docs/diagrams/llm_inference/llm_inference.json");
  for (const char* part : {"decode", "prefill", "mappings", "design", "breakdown", "best"}) EXPECT_EQ(doc[part], want[part]) << part;
  if (!plots) GTEST_SKIP() << "figures not checked: no Python with matplotlib here (tools/setup.sh installs it)";
  for (const char* f : {"llm_decode.png", "llm_prefill.png", "llm_breakdown.png", "llm_mappings.png", "llm_design.png"})
    EXPECT_GT(fs::file_size(fs::path(out) / f), 1000u) << f;
  const std::string again = fresh_dir("kb_llm_replot");
  const Result p = run("plot --bench milestone-llm-inference --in '" + out + "' --out '" + again + "'");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(fs::exists(fs::path(again) / "llm_mappings.png"));
  const std::string fast = fresh_dir("kb_llm_fast");
  const Result f = run("run --bench milestone-llm-inference --fast --out '" + fast + "'");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(fs::exists(fs::path(fast) / "llm_design.png"));
}

}  // namespace
