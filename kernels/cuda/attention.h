// kernels/cuda/attention.h: causal self-attention in bf16 with grouped KV heads, two implementations
// of one contract.
//  - unfused: permute qkv to (B,NH,T,hs), S = q k^T / sqrt(hs) and O = P v as batched cuBLASLt GEMMs,
//    a causal softmax kernel between them; P (B,NH,T,T) bf16 is saved for backward.
//  - fused (flash-style): online softmax over keys, never materialising the T x T matrix; saves
//    only the log-sum-exp per row (B,NH,T) fp32; backward recomputes the probabilities.
// inp (B,T,(NH+2KV)hs) holds the NH q heads, then the KV k heads, then the KV v heads of each token;
// query head h reads KV head h / (NH/KV) (HF's repeat_kv). KV = NH is llm.c's (B,T,3C) layout and
// runs exactly GPT-2's launches. out (B,T,C). Backward writes dinp (overwrites; the model's dqkv has
// no other contribution); dk, dv sum their group's query heads in a fixed order. Deterministic: no
// atomics.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cuda/gemm.h"

namespace arch::cuda {

enum class AttentionKind { unfused, fused };

// What forward saves for backward and the scratch both need, in bytes, for one layer / call; the
// same for every KV.
struct AttentionSizes {
    std::size_t saved_bytes;    // kept per layer from forward to backward (P, or the log-sum-exp)
    std::size_t scratch_bytes;  // shared by all layers (permuted q/k/v, their gradients, dS ...)
};
AttentionSizes attention_sizes(AttentionKind kind, int B, int T, int C, int NH);
// Throws, naming the shape, when `kind` cannot run NH heads of C channels (a model checks this when
// it is built, not at its first step).
void check_attention_heads(AttentionKind kind, int C, int NH);

void attention_forward(AttentionKind kind, GemmContext& ctx, __nv_bfloat16* out, void* saved, void* scratch,
                       const __nv_bfloat16* inp, int B, int T, int C, int NH, int KV);
// dout (B,T,C) -> dinp (B,T,(NH+2KV)hs); needs forward's inp, out and saved of the same call.
void attention_backward(AttentionKind kind, GemmContext& ctx, __nv_bfloat16* dinp, void* scratch,
                        const __nv_bfloat16* dout, const __nv_bfloat16* inp, const __nv_bfloat16* out,
                        const void* saved, int B, int T, int C, int NH, int KV);

}  // namespace arch::cuda
