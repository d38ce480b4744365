// core/llama.h: the Llama family (Llama 2/3, SmolLM, Qwen-shaped models without biases) on a Backend:
// forward, backward, weight init. Pre-RMSNorm blocks, rotary positions (rope_theta, Llama 3's
// frequency scaling), grouped-query attention, SwiGLU MLP, no biases, tied or untied lm_head, vocab
// padded to Vp. The same flat layer-major buffers as GPT-2 (core/param_layout.h), so DDP, ZeRO-3,
// codecs, the outer loop and run states work unchanged. Matches HF transformers' LlamaForCausalLM.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/transformer.h"

namespace arch {

// HF's init, drawn on the host: matmul weights and embeddings N(0, 0.02), norms 1, padded vocab rows
// 0. Deterministic in the seed.
std::vector<float> llama_init_params(const ModelConfig& config, uint64_t seed);

// The rotary tables (maxT, hs/2) each: cos and sin of t · inv_freq[i], inv_freq[i] = θ^(−2i/hs),
// with Llama 3's scaling of the long wavelengths when the config has it (HF's "llama3" rope type).
struct RopeTables {
    std::vector<float> cos, sin;
};
RopeTables rope_tables(const ModelConfig& config);

class Llama final : public Transformer {
public:
    Llama(const ModelConfig& config, Backend& backend, ParamStore* store = nullptr);
    Llama(const ModelConfig& config, std::unique_ptr<Backend> backend);
    ~Llama() override;

    // As GPT2's: host ids (targets may be null: logits only); the mean loss over B*T with targets.
    float forward(const int* inputs, const int* targets, int B, int T) override;
    void backward(float loss_scale = 1.0f) override;

private:
    struct Activations;
    void ensure_activations(int B, int T) override;
    // Block l from its first norm to its MLP's activation, reading weights through bp (the block's
    // unit, first float at b0): forward, and block recompute in backward.
    void block_forward(int l, const float* bp, std::size_t b0);
    // What recompute dropped of layer l, rebuilt before its backward.
    void recompute(int l, const float* bp, std::size_t b0);
    void upload_rope_tables();
    std::unique_ptr<Activations> acts_;
    float* rope_cos_ = nullptr;  // (maxT, hs/2) on the backend
    float* rope_sin_ = nullptr;
};

}  // namespace arch
