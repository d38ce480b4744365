// kernels/cuda/cuda_transformer.cpp: the family-independent half of the bf16 models on one GPU:
// device setup, persistent and activation memory, the lm_head and classifier around the family's
// blocks. Parameter transfers, AdamW (fp32 master weights, stochastic rounding to bf16), DDP and the
// device-side pseudo-gradient go to the model's CudaStorage (cuda_transformer_storage.h): a full
// replica or a ZeRO-3 shard. Everything runs on one stream; the host waits only where it needs a
// number (the loss, the gradient norm).
#include "kernels/cuda/cuda_transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/transformer.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"

namespace arch::cuda {

namespace {

void* device_alloc(std::size_t bytes, cudaStream_t stream, std::vector<void*>& owner,
                   std::size_t& total) {
    void* p = nullptr;
    const std::size_t rounded = device_alloc_bytes(bytes);
    check(cudaMalloc(&p, rounded), ("cudaMalloc of " + std::to_string(rounded) + " bytes").c_str());
    owner.push_back(p);
    total += rounded;
    check(cudaMemsetAsync(p, 0, rounded, stream), "cudaMemset");
    return p;
}

}  // namespace

CudaTransformer::CudaTransformer(const ModelConfig& config, const CudaModelOptions& options)
    : config_(config),
      layout_((validate(config), config)),
      attention_(options.attention),
      recompute_(options.recompute),
      n_(layout_.num_params()),
      device_(options.device) {
    const std::string missing = no_device_reason();
    if (!missing.empty()) throw Error("cuda: " + missing + "; train on --device cpu instead");
    check_attention_heads(attention_, config.channels, config.num_heads);
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (device_ < 0 || device_ >= count)
        throw Error("cuda: device " + std::to_string(device_) + " does not exist (" +
                    std::to_string(count) + " visible)");
    use_device();
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    if (prop.major < 8)
        throw Error(std::string("cuda: ") + prop.name + " (sm_" +
                    std::to_string(prop.major * 10 + prop.minor) +
                    ") has no bf16 tensor cores; the CUDA backend needs sm_80 or newer");
    name_ = "cuda:" + std::to_string(device_) + " (" + prop.name + ")";
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    gemm_ = std::make_unique<GemmContext>(stream_);
    storage_ = make_cuda_storage(layout_, options, stream_, [this](std::size_t bytes) { return alloc(bytes); });
}

CudaTransformer::~CudaTransformer() {
    cudaSetDevice(device_);
    storage_.reset();
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    for (void* p : act_owned_) cudaFree(p);
    for (void* p : owned_) cudaFree(p);
    gemm_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void* CudaTransformer::alloc(std::size_t bytes) {
    return device_alloc(bytes, stream_, owned_, allocated_);
}

void* CudaTransformer::act_bytes(std::size_t bytes) {
    const std::size_t before = allocated_;
    void* p = device_alloc(bytes, stream_, act_owned_, allocated_);
    act_allocated_ += allocated_ - before;
    return p;
}

void* CudaTransformer::scratch_bytes(std::size_t bytes) {
    const std::size_t before = act_allocated_;
    void* p = act_bytes(bytes);
    scratch_allocated_ += act_allocated_ - before;
    return p;
}

void CudaTransformer::free_activations() {
    sync();
    for (void* p : act_owned_) cudaFree(p);
    act_owned_.clear();
    allocated_ -= act_allocated_;
    act_allocated_ = scratch_allocated_ = 0;
    cap_B_ = cap_T_ = 0;
}

void CudaTransformer::ensure_activations(int B, int T) {
    if (B <= cap_B_ && T <= cap_T_) return;
    free_activations();
    const std::size_t N = static_cast<std::size_t>(B) * T;
    tokens_ = static_cast<int*>(act_bytes(N * sizeof(int)));
    targets_ = static_cast<int*>(act_bytes(N * sizeof(int)));
    logits_ = act_bf16(N * config_.padded_vocab_size);
    losses_ = act_f32(N);
    dlnf_ = scratch_bf16(N * config_.channels);
    allocate_activations(B, T);
    cap_B_ = B;
    cap_T_ = T;
}

void CudaTransformer::check_size(std::span<const float> host, const char* what) const {
    if (host.size() != n_)
        throw Error(std::string(what) + ": expected " + std::to_string(n_) + " floats, got " +
                    std::to_string(host.size()));
}

void CudaTransformer::init_weights(uint64_t seed) {
    set_params(init_params(config_, seed));
}

void CudaTransformer::set_params(std::span<const float> host) {
    check_size(host, "set_params");
    use_device();
    storage_->set_params(host);
}

void CudaTransformer::get_params(std::span<float> host) {
    use_device();
    storage_->get_params(host);
}

void CudaTransformer::get_grads(std::span<float> host) {
    use_device();
    storage_->get_grads(host);
}

void CudaTransformer::zero_grad() {
    use_device();
    storage_->zero_grads();
}

void CudaTransformer::matmul_forward(bf16* out, const bf16* inp, std::size_t w, std::size_t bias,
                                     int N, int C, int OC, bf16* gelu_aux) {
    const bf16* wt = weight(w);
    if (bias == kAbsent) {
        gemm(*gemm_, out, false, inp, false, wt, true, N, OC, C);
        return;
    }
    const bf16* b = weight(bias);
    if (gelu_aux != nullptr && OC % 8 == 0) {
        gemm(*gemm_, out, false, inp, false, wt, true, N, OC, C, 1.0f, 0.0f, {},
             Epilogue::gelu_bias, b, gelu_aux);
    } else if (gelu_aux != nullptr) {  // cuBLASLt's GELU epilogue needs OC % 8 == 0
        gemm(*gemm_, gelu_aux, false, inp, false, wt, true, N, OC, C, 1.0f, 0.0f, {},
             Epilogue::bias, b);
        gelu_forward(out, gelu_aux, static_cast<std::size_t>(N) * OC, stream_);
    } else {
        gemm(*gemm_, out, false, inp, false, wt, true, N, OC, C, 1.0f, 0.0f, {}, Epilogue::bias,
             b);
    }
}

void CudaTransformer::matmul_backward(bf16* dinp, std::size_t w, std::size_t bias, const bf16* dout,
                                      const bf16* inp, int N, int C, int OC) {
    // dinp (N,C) = dout (N,OC) @ w (OC,C)
    gemm(*gemm_, dinp, false, dout, false, weight(w), false, N, C, OC);
    // dw (OC,C) += dout^T (OC,N) @ inp (N,C), in fp32
    gemm(*gemm_, grad(w), true, dout, true, inp, false, OC, C, N, 1.0f, 1.0f);
    if (bias != kAbsent) bias_backward(grad(bias), bias_scratch_, dout, N, OC, stream_);
}

float CudaTransformer::forward(const int* inputs, const int* targets, int B, int T) {
    check_batch(config_, inputs, targets, B, T);
    const int N = B * T, C = config_.channels, V = config_.vocab_size;
    const int Vp = config_.padded_vocab_size;
    use_device();
    ensure_activations(B, T);
    B_ = B;
    T_ = T;
    tokens_host_.assign(inputs, inputs + N);
    check(cudaMemcpyAsync(tokens_, inputs, N * sizeof(int), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (inputs)");
    if (targets != nullptr)
        check(cudaMemcpyAsync(targets_, targets, N * sizeof(int), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (targets)");
    storage_->begin_pass(false);
    enter_unit(globals_unit());
    lnf_ = forward_blocks(B, T);
    // logits (N,Vp) = lnf (N,C) @ lm_head (Vp,C)^T
    gemm(*gemm_, logits_, false, lnf_, false, weight(layout_.lm_head()), true, N, Vp, C);
    leave_unit(globals_unit());
    logits_valid_ = true;
    have_targets_ = targets != nullptr;
    if (!have_targets_) {
        sync();
        return 0.0f;
    }
    classifier_forward_backward(logits_, losses_, targets_, 0.0f, N, V, Vp, false, stream_);
    std::vector<float> losses(N);
    check(
        cudaMemcpyAsync(losses.data(), losses_, N * sizeof(float), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpy (losses)");
    sync();
    double sum = 0.0;
    for (float x : losses) sum += x;
    return static_cast<float>(sum / N);
}

void CudaTransformer::backward(float loss_scale) {
    if (!have_targets_ || !logits_valid_)
        throw Error("backward: needs a forward pass with targets first");
    use_device();
    const int B = B_, T = T_, N = B * T, C = config_.channels;
    const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
    classifier_forward_backward(logits_, losses_, targets_, loss_scale / N, N, V, Vp, true,
                                stream_);
    logits_valid_ = false;
    // dlnf (N,C) = dlogits (N,Vp) @ lm_head (Vp,C); dlm_head += dlogits^T @ lnf
    storage_->begin_pass(true);
    enter_unit(globals_unit());
    const std::size_t head = layout_.lm_head();
    gemm(*gemm_, dlnf_, false, logits_, false, weight(head), false, N, C, Vp);
    gemm(*gemm_, grad(head), true, logits_, true, lnf_, false, Vp, C, N, 1.0f, 1.0f);
    backward_blocks(dlnf_, B, T);
    leave_unit(globals_unit());
    have_targets_ = false;
    sync();  // surface any asynchronous error here, at the pass that caused it
}

std::vector<float> CudaTransformer::logits_at(int b, int t) const {
    if (!logits_valid_ || b < 0 || b >= B_ || t < 0 || t >= T_)
        throw Error("logits_at: no logits for that position");
    use_device();
    std::vector<uint16_t> row(config_.vocab_size);
    const std::size_t offset = (static_cast<std::size_t>(b) * T_ + t) * config_.padded_vocab_size;
    check(cudaMemcpyAsync(row.data(), logits_ + offset, row.size() * sizeof(bf16),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (logits)");
    sync();
    std::vector<float> out(row.size());
    for (std::size_t i = 0; i < row.size(); ++i) out[i] = bf16_bits_to_float(row[i]);
    return out;
}

float CudaTransformer::adamw_step(float lr, const AdamWConfig& c) {
    use_device();
    return storage_->adamw_step(lr, c);
}

void CudaTransformer::get_adamw_state(std::span<float> m, std::span<float> v) const {
    use_device();
    storage_->get_adamw_state(m, v);
}

void CudaTransformer::set_adamw_state(std::span<const float> m, std::span<const float> v,
                                      int steps) {
    if (m.size() != n_ || v.size() != n_)
        throw Error("AdamW state holds " + std::to_string(m.size()) + " values, the model has " +
                    std::to_string(n_));
    use_device();
    storage_->set_adamw_state(m, v, steps);
}

bool CudaTransformer::read_slice(StateVector which, std::size_t offset, std::span<float> out) {
    if (offset > n_ || out.size() > n_ - offset) throw Error("read_slice: the slice runs past the parameters");
    use_device();
    storage_->read_slice(which, offset, out);
    return true;
}

bool CudaTransformer::write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
    if (m.size() != v.size() || offset > n_ || m.size() > n_ - offset)
        throw Error("write_moments_slice: the slice runs past the parameters");
    use_device();
    storage_->write_moments_slice(offset, m, v);
    return true;
}

void CudaTransformer::reduce_grads(Collective& collective) {
    use_device();
    storage_->reduce_grads(collective);
}

DeviceMemory CudaTransformer::memory() const {
    DeviceMemory m;
    const std::size_t state = storage_->fill_memory(m);
    m.activations_bytes = act_allocated_ - scratch_allocated_;
    // Scratch, and what else was allocated beyond the storage's state buffers (the norm's partials, a
    // family's tables), plus cuBLASLt's workspace.
    m.workspace_bytes = scratch_allocated_ + (allocated_ - act_allocated_ - state) + gemm_->workspace_bytes();
    return m;
}

std::vector<std::byte> CudaTransformer::encode_delta(std::span<const float> theta,
                                                     const std::string& spec) {
    check_size(theta, "encode_delta");
    use_device();
    return storage_->encode_delta(theta, spec);
}

ShardPayload CudaTransformer::encode_shard_delta(std::span<const float> theta, const std::string& spec) {
    use_device();
    return storage_->encode_shard_delta(theta, spec);
}

std::unique_ptr<CudaModel> make_cuda_model(const ModelConfig& config,
                                           const CudaModelOptions& options) {
    switch (config.family) {
        case ModelFamily::gpt2:
            return make_cuda_gpt2(config, options);
        case ModelFamily::llama:
            return make_cuda_llama(config, options);
    }
    throw Error(std::string("the CUDA backend does not train the ") + family_name(config.family) +
                " family; use --device cpu");
}

}  // namespace arch::cuda
