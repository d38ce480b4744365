// core/gpt2.h: GPT-2 (llm.c / Hugging Face definition) on a Backend: forward, backward, weight init.
// Learned positions, pre-LayerNorm blocks, GELU tanh, tied embeddings, vocab padded to Vp.
// Parameters and gradients each live in one flat buffer laid out by ParamLayout (layer-major);
// activations are sized for the largest (B, T) seen and reused for smaller ones. As a Model it also
// owns the AdamW state of its whole flat buffers (made on first use; FlatParamStore only).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/adamw.h"
#include "core/backend.h"
#include "core/model.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/param_store.h"

namespace arch {

// GPT-2 init, drawn on the host: weights N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)),
// biases 0, norms 1, padded vocab rows 0. Deterministic in the seed; every device starts from it.
std::vector<float> gpt2_init_params(const ModelConfig& config, uint64_t seed);

// Throws arch::Error, naming the problem, for a batch a forward pass cannot take: B or T not
// positive, T above the model's max T, a token id outside [0, V). Every Model checks through it.
void check_batch(const ModelConfig& config, const int* inputs, const int* targets, int B, int T);

class GPT2 final : public Model {
public:
    // store: where parameters and gradients live; null = whole flat buffers owned by this model.
    GPT2(const ModelConfig& config, Backend& backend, ParamStore* store = nullptr);
    // The same, owning its backend.
    GPT2(const ModelConfig& config, std::unique_ptr<Backend> backend);
    ~GPT2() override;
    GPT2(const GPT2&) = delete;
    GPT2& operator=(const GPT2&) = delete;

    const ModelConfig& config() const override { return config_; }
    const ParamLayout& layout() const { return layout_; }
    Backend& backend() { return backend_; }
    std::size_t num_params() const override { return layout_.num_params(); }
    std::string device_name() const override { return backend_.name(); }

    // The whole flat buffers (backend memory); only for a model whose store is a FlatParamStore.
    float* params();
    float* grads();
    ParamStore& store() { return *store_; }

    // gpt2_init_params(config, seed).
    void init_weights(uint64_t seed) override;
    void set_params(std::span<const float> host) override;  // size num_params(); FlatParamStore only
    void get_params(std::span<float> host) override;
    void get_grads(std::span<float> host) override;

    // inputs, targets: host arrays of B*T token ids (targets may be null: logits only).
    // Returns the mean loss over B*T when targets are given, else 0. Throws on bad sizes or ids.
    float forward(const int* inputs, const int* targets, int B, int T) override;
    // Accumulates d(loss * loss_scale) into the store's gradients; needs the preceding forward with targets.
    void backward(float loss_scale = 1.0f) override;
    void zero_grad() override { store_->zero_grads(); }

    // Logits (V values, padding dropped) of row (b, t) from the last forward without backward.
    std::vector<float> logits_at(int b, int t) const override;

    // AdamW over the whole flat buffers (FlatParamStore only; ZeRO-3 islands run their own).
    float adamw_step(float lr, const AdamWConfig& config) override;
    int adamw_steps() const override { return adamw_ ? adamw_->steps_taken() : 0; }
    void get_adamw_state(std::span<float> m, std::span<float> v) const override;
    void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) override;
    DeviceMemory memory() const override;  // fp32 parameters, gradients, m and v of the whole model

private:
    struct Activations;
    void ensure_activations(int B, int T);
    float* alloc_floats(std::size_t n);

    AdamW& adamw();

    ModelConfig config_;
    ParamLayout layout_;
    std::unique_ptr<Backend> own_backend_;
    Backend& backend_;
    std::unique_ptr<AdamW> adamw_;
    std::unique_ptr<FlatParamStore> own_store_;
    ParamStore* store_ = nullptr;
    Activations* acts_ = nullptr;
    std::vector<void*> owned_;  // every backend allocation, freed in the destructor
    int B_ = 0, T_ = 0;           // current batch shape
    bool have_targets_ = false;
    bool logits_valid_ = false;
};

}  // namespace arch
