// Reference programs of a whole model: a step as its layer program run kernel by kernel on
// the reference engine (docs/model.md section 13.5), and the layer's vector kernels on one
// tensor-parallel rank (RMSNorm, RoPE, SiLU x up, residual add, KV append) as explicit loads,
// vector-engine passes and stores per PE (section 13.4).
#pragma once

#include <string>

#include "../../../device/models/llm/llm_attention.h"
#include "../../../device/models/llm/llm_model.h"
#include "../../../device/models/llm/llm_vector.h"
#include "../../runtime/context.h"
#include "../../kernels/kernel_values.h"

namespace kb {

// The kernel on the reference engine: its figures as an LlmVecResult. With `data`, it runs in
// data mode on data->in (x, then y for residual and silu_mul, a norm's weights [cols] or
// RoPE's cos/sin table [rows, head_dim]) and leaves what it wrote in data->out.
LlmVecResult llm_vec_reference(const LlmVecConfig& c, const std::string* trace_path = nullptr, KernelValues* data = nullptr);
// The ops it builds, at most.
std::int64_t llm_vec_reference_ops(const LlmVecConfig& c);
// The kernel built into `ctx`, a context of c's machine that holds other kernels too: its
// tensors (the weights or RoPE's table resident) and its launch, not run.
void llm_vec_compose(RuntimeContext& ctx, const LlmVecConfig& c);

// The causal prefill attention kernel on the reference engine (docs/model.md section 13.6):
// each PE's items as explicit loads, matmuls, vector ops and stores. With `data`, in data mode
// on data->in (q [KV, T, G, d], K [KV, d, T], V [KV, T, d], KV = batch x kv_heads, G query heads
// of a KV head), the answer o [KV, T, G, d] left in data->out.
LlmAttnResult llm_attn_reference(const LlmAttnConfig& c, const std::string* trace_path = nullptr,
                                 KernelValues* data = nullptr);
std::int64_t llm_attn_reference_ops(const LlmAttnConfig& c);
void llm_attn_compose(RuntimeContext& ctx, const LlmAttnConfig& c);

// The activation transfer between pipeline stages (docs/model.md section 13.8): one
// HBM-to-HBM copy to each rank of the next stage in turn.
LlmSendResult llm_send_reference(const LlmSendConfig& c, const std::string* trace_path = nullptr);

// The family's reference: each kernel of the layer program on the reference engine with its
// family's reference program (GEMM, decode attention, allreduce) or the vector kernel's, one
// launch each from the end of the one before, for layers_run layers (every layer when 0)
// and the head. A trace is of the first layer: each kernel's launch where it ran in the
// step, and a track of the kernels.
LlmResult llm_reference(const LlmConfig& c, const std::string* trace_path = nullptr);
// The most ops one of its launches builds.
std::int64_t llm_reference_ops(const LlmConfig& c);
// One line naming what is wrong with a mapping llm_place_check refuses (bad_tp, bad_pp,
// too_large, hbm_overflow), for model place and eval llm alike.
std::string llm_place_message(std::int32_t status, const HwConfig& h, const LlmShape& m, const LlmRun& r);
// One line naming what is wrong with a config llm_check refuses.
std::string llm_status_message(std::int32_t status, const LlmConfig& c);
// `--pp-layers` (flag) text, e.g. "21,20,20,19": each pipeline stage's layers, 1..1024 each,
// 1..64 stages, into `out` (the rest zeroed); returns the stage count. InputError naming
// the flag otherwise. Whether they fit a model is llm_place_check's (bad_pp).
std::int64_t llm_parse_stage_layers(const std::string& flag, const std::string& text, std::int16_t out[kLlmMaxStages]);
// The layers of each stage of r, as "21,20,20,19".
std::string llm_stage_layers_text(const LlmShape& m, const LlmRun& r);

}  // namespace kb
