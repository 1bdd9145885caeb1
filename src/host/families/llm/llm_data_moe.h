// Data mode of a mixture-of-experts layer (docs/model.md section 13.9): the router's scores
// and choice from its own logits, the routed experts run on the ranks that hold their copies
// (the kernels of the timing run, at its shapes), the shared expert split over the ranks,
// and the float64 pass of the same block. Host only, values only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm_data_detail.h"

namespace kb {
namespace llm_data {

// A MoE layer's weights (B of each GEMM is [in, out]).
struct MoeWeights {
  Values router;                       // [H, E]
  Values bias;                         // [E]: the sigmoid router's correction bias (to choose by, not to weigh)
  std::vector<Values> gate_up, down;   // per routed expert: [H, 2 Im] (gate, then up), [Im, H]
  Values shared_gate_up, shared_down;  // [H, 2 Sh], [Sh, H] (empty without a shared expert)
};

// Draws a MoE layer's weights from `seed`, the ids after *id (each weight its own).
MoeWeights draw_moe_weights(const Dims& a, std::uint64_t seed, std::uint64_t* id);

// Which routed experts each row takes, and with what weight.
struct Routing {
  std::vector<std::int64_t> expert;  // [rows, K]: each row's experts, best first
  std::vector<double> weight;        // [rows, K]: their scores, renormalized over the row's K
  std::vector<std::int64_t> tokens;  // [E]: the rows routed to each expert
};

// The router's rule on logits [rows, E]. Scores: softmax over the E experts, or (a.sigmoid)
// each logit's sigmoid. A row chooses by its scores, plus the correction bias under sigmoid
// scores. Group-limited (a.groups > 1): the experts in equal groups, a group valued by its
// best choice (softmax) or its two best together (sigmoid, DeepSeek-V3's), and the row's
// experts from its a.topk_groups best groups. The K of largest choice (the lower expert on a
// tie), weighted by their scores over the K's sum.
Routing route_rows(const Dims& a, const std::vector<double>& logits, std::int64_t rows, const Values& bias);

// A MoE layer's kernels on every expert-parallel rank, with values. The routed experts'
// copies are placed as the timing run places them (place_experts, over the tp ranks); a copy
// runs its rows through the timed kernels (expert_gate_up, expert_silu_mul, expert_down, each
// of the timed ⌈T/g⌉ rows: a copy's rows in runs of that many, the last padded with zeros),
// and moe_sum adds each row's routed outputs by their weights, and the rank's share of the
// shared expert, into the rank's part of the layer's output (on the host: the timed add's
// time, its values formed here).
class MoeLayerData {
 public:
  MoeLayerData(const Dims& a, const MoeWeights& w) : a_(a), w_(w) {}
  // The router GEMM on the normalized activations h [M, H] (every rank alike: run once), the
  // routing of its logits, and the copies' rows; returns the kernel's time.
  ps_t router(const GemmConfig& g, const Values& h);
  const Routing& routing() const { return route_; }
  // Whether kernel `name` is one of the MoE block's after the router.
  static bool handles(const std::string& name);
  ps_t gemm(const GemmConfig& g, const std::string& name);
  ps_t vector(const LlmVecConfig& x, const std::string& name);
  // After moe_sum: each rank's part of the layer's output, [M, H] (fp16).
  const std::vector<Values>& parts() const { return parts_; }

 private:
  struct Run {  // up to `each` rows of one copy of an expert
    std::int64_t expert, rank;
    std::vector<std::int64_t> pairs;  // row * K + slot of each of its rows
    Values v;                         // its rows' current values
  };
  void place();
  const Dims& a_;
  const MoeWeights& w_;
  Values h_;
  Routing route_;
  std::vector<std::vector<std::int64_t>> copies_;  // per copy: its rank, expert, then its pairs
  std::vector<Run> runs_;
  std::vector<Values> shared_;  // per rank: the shared expert's current values
  std::vector<Values> parts_;
};

// The float64 MoE block on h [rows, H] (the normalized activations): its own router logits
// and routing; where its experts for a row differ from `data`'s (a near tie that fp16 logits
// broke the other way), the row takes data's, counted in *flips with the widest such gap of
// choice scores in *gap.
Dense moe_f64(const Dims& a, const MoeWeights& w, const Dense& h, std::int64_t rows, const Routing& data, std::int64_t* flips,
              double* gap);

}  // namespace llm_data
}  // namespace kb
