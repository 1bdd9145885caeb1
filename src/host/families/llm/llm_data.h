// Data mode of a whole model (docs/model.md section 13.9): a step of a small model run on the
// reference engine with values. Each kernel of the layer program runs as the timing run runs
// it (its own launch, its family's reference program), in data mode; what it writes is
// carried, host side, to the kernels that read it. The logits are compared with a float64
// forward pass of the same model on the same weights, written independently of the kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../../device/models/llm/llm_model.h"

namespace kb {

struct LlmDataReport {
  std::int64_t sequences = 0, vocab = 0;
  std::vector<float> logits;     // [sequences, vocab]: the reference engine's (fp16)
  std::vector<double> expected;  // the same, from the float64 forward pass
  double max_abs_error = 0;      // max |logits - expected|
  double max_abs_logit = 0;      // max |expected|
  double rms_error = 0;          // sqrt(mean((logits - expected)^2))
  // The residual stream after the last layer, every token's row: max |error|, max |value|.
  double hidden_max_abs_error = 0, hidden_max_abs = 0;
  // Each layer's kernels, summed: a dense model's every layer alike; a MoE model's first MoE
  // layer (each one its own, with the routing its router's values gave: layers_ps), and its
  // first dense layer (dense_layer_ps, 0 without one). Every one is the timing run's time.
  ps_t layer_ps = 0, dense_layer_ps = 0;
  std::vector<ps_t> layers_ps;   // each layer's, the first micro-batch
  ps_t head_ps = 0;              // the final norm's and the LM head's
  std::int64_t kernels = 0;      // kernels run in data mode
  // A MoE model: rows whose experts the float64 pass chose otherwise (a near tie that the
  // fp16 router logits broke the other way; the row then takes the run's experts), and the
  // widest gap of choice scores among them.
  std::int64_t routing_flips = 0;
  double routing_flip_gap = 0;
};

// Why data mode cannot run `c` ("" when it can): it needs every layer run, and a step small
// enough to compute and hold on the host.
// RMSNorm's epsilon and RoPE's base are LLaMA-3.1's (1e-5, 500000), whatever the model file
// says: they change values, not work.
std::string llm_data_refusal(const LlmConfig& c);

// The step of `c` in data mode, with weights, embeddings and (decode) the earlier positions of
// the KV cache drawn from `seed`; InputError with llm_data_refusal's reason when it cannot run.
LlmDataReport llm_data_run(const LlmConfig& c, std::uint64_t seed);

}  // namespace kb
