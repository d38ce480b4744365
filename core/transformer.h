// core/transformer.h: what GPT-2 and the Llama family share as Models on a Backend (fp32): the flat
// parameter and gradient buffers of a ParamStore, AdamW over them, logits and the loss. Each family
// (core/gpt2.h, core/llama.h) adds only its activations and its forward and backward passes.
// make_transformer() picks the family from the config, so islands, hosts and benches need not.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/adamw.h"
#include "core/backend.h"
#include "core/memory_modes.h"
#include "core/model.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "core/param_store.h"

namespace arch {

// The family's init (gpt2_init_params or llama_init_params), drawn on the host: the same values on
// every device for a seed.
std::vector<float> init_params(const ModelConfig& config, uint64_t seed);

// Throws arch::Error, naming the problem, for a batch a forward pass cannot take: B or T not
// positive, T above the model's max T, a token id outside [0, V). Every Model checks through it.
void check_batch(const ModelConfig& config, const int* inputs, const int* targets, int B, int T);

class Transformer : public Model {
public:
    // store: where parameters and gradients live; null = whole flat buffers owned by this model.
    Transformer(const ModelConfig& config, Backend& backend, ParamStore* store);
    // The same, owning its backend.
    Transformer(const ModelConfig& config, std::unique_ptr<Backend> backend);
    ~Transformer() override;
    Transformer(const Transformer&) = delete;
    Transformer& operator=(const Transformer&) = delete;

    const ModelConfig& config() const override { return config_; }
    const ParamLayout& layout() const { return layout_; }
    Backend& backend() { return backend_; }
    std::size_t num_params() const override { return layout_.num_params(); }
    std::string device_name() const override { return backend_.name(); }

    // The whole flat buffers (backend memory); only for a model whose store is a FlatParamStore.
    float* params();
    float* grads();
    ParamStore& store() { return *store_; }

    void init_weights(uint64_t seed) override;  // init_params(config, seed)
    void set_params(std::span<const float> host) override;  // size num_params(); FlatParamStore only
    void get_params(std::span<float> host) override;
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override;
    void get_grads(std::span<float> host) override;
    void zero_grad() override { store_->zero_grads(); }

    // Logits (V values, padding dropped) of row (b, t) from the last forward without backward.
    std::vector<float> logits_at(int b, int t) const override;

    // AdamW over the whole flat buffers (FlatParamStore only; ZeRO-3 islands run their own).
    float adamw_step(float lr, const AdamWConfig& config) override;
    int adamw_steps() const override { return adamw_ ? adamw_->steps_taken() : 0; }
    void get_adamw_state(std::span<float> m, std::span<float> v) const override;
    void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) override;
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override;
    // fp32 parameters, gradients, m and v of the whole model; activations and workspace as allocated.
    DeviceMemory memory() const override;

    // Activation recomputation (core/memory_modes.h): what forward does not keep per layer, backward
    // rebuilds with the same kernels just before that layer's backward, so losses and gradients do
    // not change. Takes effect at the next batch.
    void set_recompute(Recompute recompute);

protected:
    // Activation memory: every allocation goes through these and is freed by free_activations().
    float* alloc_floats(std::size_t n);
    float* alloc_scratch(std::size_t n);  // the same, counted as workspace (shared by the layers, not kept)
    // L buffers of n floats, or one that every layer shares (what recompute drops).
    std::vector<float*> alloc_per_layer(std::size_t n, bool shared = false);
    void alloc_io(std::size_t N);  // inputs_, targets_, logits_ and losses_ for N = B*T rows
    void free_activations();
    // Sizes the family's activations for (B, T) when they are smaller, setting the buffers below.
    virtual void ensure_activations(int B, int T) = 0;
    // Checks the batch, makes room for it, records its shape and uploads the ids (targets may be null).
    void begin_forward(const int* inputs, const int* targets, int B, int T);
    // After the logits are in logits_: their mean loss (0 without targets).
    float finish_forward();
    // Before backward: checks a forward with targets came first, and turns logits_ into dlogits.
    void begin_backward(float loss_scale);

    ModelConfig config_;
    ParamLayout layout_;
    std::unique_ptr<Backend> own_backend_;
    Backend& backend_;
    std::unique_ptr<AdamW> adamw_;
    std::unique_ptr<FlatParamStore> own_store_;
    ParamStore* store_ = nullptr;
    std::vector<void*> owned_;  // every activation allocation, freed in the destructor
    std::size_t activation_bytes_ = 0, workspace_bytes_ = 0;  // what owned_ holds, by kind
    Recompute recompute_ = Recompute::none;
    int* inputs_ = nullptr;     // (N) token ids on the backend
    int* targets_ = nullptr;    // (N)
    float* logits_ = nullptr;   // (N,Vp) of the last forward, dlogits after begin_backward
    float* losses_ = nullptr;   // (N)
    int B_ = 0, T_ = 0;         // current batch shape
    bool have_targets_ = false;
    bool logits_valid_ = false;

private:
    AdamW& adamw();
};

// GPT2 or Llama for the config's family.
std::unique_ptr<Transformer> make_transformer(const ModelConfig& config, Backend& backend, ParamStore* store = nullptr);
std::unique_ptr<Transformer> make_transformer(const ModelConfig& config, std::unique_ptr<Backend> backend);

}  // namespace arch
