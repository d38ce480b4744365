// core/gpt2.h: GPT-2 (llm.c / Hugging Face definition) on a Backend: forward, backward, weight init.
// Learned positions, pre-LayerNorm blocks, GELU tanh, tied embeddings, vocab padded to Vp.
// Parameters, gradients and AdamW live in core/transformer.h's base; activations are sized for the
// largest (B, T) seen and reused for smaller ones.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/transformer.h"

namespace arch {

// GPT-2 init, drawn on the host: weights N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)),
// biases 0, norms 1, padded vocab rows 0. Deterministic in the seed; every device starts from it.
std::vector<float> gpt2_init_params(const ModelConfig& config, uint64_t seed);

class GPT2 final : public Transformer {
public:
    GPT2(const ModelConfig& config, Backend& backend, ParamStore* store = nullptr);
    GPT2(const ModelConfig& config, std::unique_ptr<Backend> backend);
    ~GPT2() override;

    // inputs, targets: host arrays of B*T token ids (targets may be null: logits only).
    // Returns the mean loss over B*T when targets are given, else 0. Throws on bad sizes or ids.
    float forward(const int* inputs, const int* targets, int B, int T) override;
    // Accumulates d(loss * loss_scale) into the store's gradients; needs the preceding forward with targets.
    void backward(float loss_scale = 1.0f) override;

private:
    struct Activations;
    void ensure_activations(int B, int T) override;
    // Block l from its first norm to its MLP's activation, reading weights through bp (the block's
    // unit, first float at b0): forward, and block recompute in backward.
    void block_forward(int l, const float* bp, std::size_t b0);
    // What recompute dropped of layer l, rebuilt before its backward.
    void recompute(int l, const float* bp, std::size_t b0);
    std::unique_ptr<Activations> acts_;
};

}  // namespace arch
