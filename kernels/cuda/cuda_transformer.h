// kernels/cuda/cuda_transformer.h: what the bf16 GPT-2 and Llama on one GPU share, the CUDA side of
// core/transformer.h: the device, its stream and cuBLASLt context, the flat buffers in ParamLayout
// order (fp32 master weights, the bf16 copy the passes read, fp32 gradients, AdamW m and v; or one
// rank's ZeRO-3 shard of them: a CudaStorage, cuda_transformer_storage.h),
// activation memory, the lm_head matmul with the fused classifier, AdamW with stochastic rounding,
// set/get, DDP and the device-side pseudo-gradient. A family (cuda_gpt2.cpp, cuda_llama.cpp) adds
// only its activations and its blocks' forward and backward launches. Internal to kernels/cuda.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "core/adamw.h"
#include "core/param_layout.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/cuda_transformer_storage.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

class CudaTransformer : public CudaModel {
  public:
    CudaTransformer(const ModelConfig& config, const CudaModelOptions& options);
    ~CudaTransformer() override;
    CudaTransformer(const CudaTransformer&) = delete;
    CudaTransformer& operator=(const CudaTransformer&) = delete;

    const ModelConfig& config() const override { return config_; }
    std::size_t num_params() const override { return n_; }
    std::string device_name() const override { return name_; }
    std::size_t allocated_bytes() const override { return allocated_; }

    void init_weights(
        uint64_t seed) override;  // core/transformer.h's init_params, rounded to nearest
    void set_params(std::span<const float> host) override;
    void get_params(std::span<float> host) override;
    void get_grads(std::span<float> host) override;
    // Uploads the batch, runs the family's blocks, then logits = lnf @ lm_head^T and the loss.
    float forward(const int* inputs, const int* targets, int B, int T) final;
    // dlogits in place of the logits, the lm_head's gradients, then the family's blocks backward.
    void backward(float loss_scale) final;
    void zero_grad() override;
    std::vector<float> logits_at(int b, int t) const override;
    float adamw_step(float lr, const AdamWConfig& config) override;
    int adamw_steps() const override { return storage_->steps(); }
    void get_adamw_state(std::span<float> m, std::span<float> v) const override;
    void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) override;
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override;
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override;
    std::vector<std::byte> encode_delta(std::span<const float> theta,
                                        const std::string& spec) override;
    ShardPayload encode_shard_delta(std::span<const float> theta, const std::string& spec) override;
    void reduce_grads(Collective& collective) override;
    bool sharded() const override { return storage_->sharded(); }
    void set_last_micro_batch(bool last) override { storage_->set_last_micro_batch(last); }
    int ddp_reduces_queued() const { return storage_->ddp_reduces_queued(); }
    DeviceMemory memory() const override;

  protected:
    // The family's activations for a batch of (B, T), through act_bf16 / act_f32 / act_bytes;
    // called when a batch outgrows the last capacity, after the previous activations were freed.
    virtual void allocate_activations(int B, int T) = 0;
    // From the uploaded ids (tokens()) through every block and the final norm: returns the (N,C)
    // normed activations the lm_head reads. They must stay valid until backward.
    virtual const bf16* forward_blocks(int B, int T) = 0;
    // From dlnf (N,C), the gradient of forward_blocks' result, through the final norm, the blocks
    // and the embeddings, accumulating into grad(). dlnf may be reused as (N,C) scratch once read.
    virtual void backward_blocks(bf16* dlnf, int B, int T) = 0;

    // The bf16 weight and the fp32 gradient at a flat ParamLayout offset. Under ZeRO-3 they live in
    // the gathered unit, so a family brackets each block's launches with enter_unit(l) / leave_unit(l)
    // (forward 0..L-1, backward L-1..0; the globals unit is entered around the passes here) and may
    // also read the next block's weights in forward.
    const bf16* weight(std::size_t offset) { return storage_->weights(offset); }
    float* grad(std::size_t offset) { return storage_->grads(offset); }
    void enter_unit(int unit) { storage_->enter(unit); }
    void leave_unit(int unit) { storage_->leave(unit); }

    // Persistent device memory (freed in the destructor), zero-filled.
    void* alloc(std::size_t bytes);
    // Activation memory, zero-filled, replaced when a larger batch comes.
    void* act_bytes(std::size_t bytes);
    bf16* act_bf16(std::size_t n) { return static_cast<bf16*>(act_bytes(n * sizeof(bf16))); }
    float* act_f32(std::size_t n) { return static_cast<float*>(act_bytes(n * sizeof(float))); }
    // The same, counted as workspace in memory(): shared by the layers, not kept for backward.
    void* scratch_bytes(std::size_t bytes);
    bf16* scratch_bf16(std::size_t n) { return static_cast<bf16*>(scratch_bytes(n * sizeof(bf16))); }
    float* scratch_f32(std::size_t n) { return static_cast<float*>(scratch_bytes(n * sizeof(float))); }

    // out (N,OC) = inp (N,C) @ w (OC,C)^T (+ bias); offsets into the flat buffers, bias kAbsent for
    // none. gelu_aux: GPT-2's fused GELU (out = gelu(aux), aux the pre-activation).
    void matmul_forward(bf16* out, const bf16* inp, std::size_t w, std::size_t bias, int N, int C,
                        int OC, bf16* gelu_aux = nullptr);
    // dinp (N,C) = dout @ w; dw (fp32) += dout^T @ inp; dbias (fp32) += column sums of dout,
    // through bias_scratch_ (which a family with biases sizes for its widest OC).
    void matmul_backward(bf16* dinp, std::size_t w, std::size_t bias, const bf16* dout,
                         const bf16* inp, int N, int C, int OC);

    // A per-layer activation buffer: L of them, or one that every layer shares when recompute drops
    // it (backward then rebuilds a layer's value just before that layer's backward).
    template <class T, class Make>
    static std::vector<T*> per_layer(int L, bool shared, Make make) {
        std::vector<T*> v;
        for (int l = 0; l < L; ++l) v.push_back(shared && l > 0 ? v.front() : static_cast<T*>(make()));
        return v;
    }

    const int* tokens() const { return tokens_; }                   // (N) on the device
    const int* tokens_host() const { return tokens_host_.data(); }  // the same ids on the host
    void sync() const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

    ModelConfig config_;
    ParamLayout layout_;
    AttentionKind attention_;
    Recompute recompute_;
    cudaStream_t stream_ = nullptr;
    std::unique_ptr<GemmContext> gemm_;
    float* bias_scratch_ = nullptr;

  private:
    void use_device() const { check(cudaSetDevice(device_), "cudaSetDevice"); }
    void ensure_activations(int B, int T);
    void free_activations();
    void check_size(std::span<const float> host, const char* what) const;

    std::size_t n_;
    int device_;
    std::string name_;
    std::vector<void*> owned_;      // persistent allocations
    std::vector<void*> act_owned_;  // activation allocations
    std::size_t allocated_ = 0, act_allocated_ = 0;
    std::size_t scratch_allocated_ = 0;  // the part of act_allocated_ that scratch_bytes took

    int globals_unit() const { return config_.num_layers; }

    std::unique_ptr<CudaStorage> storage_;  // a full replica (DDP, offload) or a ZeRO-3 shard

    int cap_B_ = 0, cap_T_ = 0;  // activation capacity
    int* tokens_ = nullptr;
    int* targets_ = nullptr;
    bf16* logits_ = nullptr;  // (N,Vp); dlogits once backward starts
    float* losses_ = nullptr;
    bf16* dlnf_ = nullptr;  // (N,C)
    const bf16* lnf_ = nullptr;
    std::vector<int> tokens_host_;
    int B_ = 0, T_ = 0;
    bool have_targets_ = false;
    bool logits_valid_ = false;
};

// The families (cuda_gpt2.cpp, cuda_llama.cpp); make_cuda_model picks one by config.family: the CUDA
// half of a family's registration (core/model_family.h), one case a family.
std::unique_ptr<CudaModel> make_cuda_gpt2(const ModelConfig& config,
                                          const CudaModelOptions& options);
std::unique_ptr<CudaModel> make_cuda_llama(const ModelConfig& config,
                                           const CudaModelOptions& options);

}  // namespace arch::cuda
