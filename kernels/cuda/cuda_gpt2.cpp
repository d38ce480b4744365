// kernels/cuda/cuda_gpt2.cpp: the bf16 GPT-2 on one GPU as a sequence of launches (llm.c's order):
// fused residual + layernorm, cuBLASLt matmuls with bias / GELU epilogues, attention (fused or
// unfused), the fused classifier, and AdamW on fp32 master weights that writes the bf16 weights by
// stochastic rounding. Parameters use ParamLayout's flat order in both precisions, so set/get and
// the Trainer's checkpoints see the same fp32 vector as on the CPU. Everything runs on one stream;
// the host waits only where it needs a number (the loss, the gradient norm).
#include "kernels/cuda/cuda_gpt2.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "core/error.h"
#include "core/gpt2.h"
#include "core/param_layout.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_codec.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

namespace {

// The seed of the stochastic rounding after AdamW step `step` over range `begin` (fixed function, so
// a resumed run can recompute the bf16 weights the uninterrupted run had).
uint64_t rounding_seed(uint64_t base, int step, std::size_t begin) {
    return base ^ (static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(begin) << 1);
}

class Gpt2OnGpu final : public CudaGPT2 {
public:
    Gpt2OnGpu(const ModelConfig& config, const CudaModelOptions& options);
    ~Gpt2OnGpu() override;

    const ModelConfig& config() const override { return config_; }
    std::size_t num_params() const override { return n_; }
    std::string device_name() const override { return name_; }
    std::size_t allocated_bytes() const override { return allocated_; }

    void init_weights(uint64_t seed) override { set_params(gpt2_init_params(config_, seed)); }
    void set_params(std::span<const float> host) override;
    void get_params(std::span<float> host) override;
    void get_grads(std::span<float> host) override;
    float forward(const int* inputs, const int* targets, int B, int T) override;
    void backward(float loss_scale) override;
    void zero_grad() override;
    std::vector<float> logits_at(int b, int t) const override;
    float adamw_step(float lr, const AdamWConfig& config) override;
    int adamw_steps() const override { return steps_; }
    void get_adamw_state(std::span<float> m, std::span<float> v) const override;
    void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) override;
    std::vector<std::byte> encode_delta(std::span<const float> theta, const std::string& spec) override;
    void all_reduce_grads(Collective& collective) override;
    DeviceMemory memory() const override;

private:
    struct Acts;
    void use_device() const { check(cudaSetDevice(device_), "cudaSetDevice"); }
    void* alloc(std::size_t bytes);
    void ensure_activations(int B, int T);
    void sync() const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
    void check_size(std::span<const float> host, const char* what) const;
    // The matmuls of a block: out (N,OC) = inp (N,C) @ w (OC,C)^T (+ bias).
    void matmul_forward(bf16* out, const bf16* inp, std::size_t w, std::size_t bias, int N, int C, int OC,
                        bf16* gelu_aux = nullptr);
    // dinp (N,C) = dout @ w; dw (fp32) += dout^T @ inp; dbias (fp32) += column sums of dout.
    void matmul_backward(bf16* dinp, std::size_t w, std::size_t bias, const bf16* dout, const bf16* inp, int N, int C,
                         int OC);

    ModelConfig config_;
    ParamLayout layout_;
    std::size_t n_;
    int device_;
    AttentionKind attention_;
    uint64_t rounding_base_;
    std::string name_;
    cudaStream_t stream_ = nullptr;
    std::unique_ptr<GemmContext> gemm_;
    std::vector<void*> owned_;  // every allocation, freed in the destructor
    std::vector<void*> act_owned_;
    std::size_t allocated_ = 0, act_allocated_ = 0;

    float* master_ = nullptr;  // fp32 master weights
    bf16* params_ = nullptr;   // bf16 copy the passes read
    float* grads_ = nullptr;
    float* m_ = nullptr;
    float* v_ = nullptr;
    double* norm_partials_ = nullptr;
    int steps_ = 0;
    std::vector<DecayRange> ranges_;  // AdamW's decay / no-decay runs

    Acts* acts_ = nullptr;
    std::vector<int> inputs_host_;
    int B_ = 0, T_ = 0;
    bool have_targets_ = false;
    bool logits_valid_ = false;
};

struct Gpt2OnGpu::Acts {
    int B = 0, T = 0;  // capacity
    int* inputs = nullptr;
    int* targets = nullptr;
    bf16* encoded = nullptr;  // (N,C)
    std::vector<bf16*> ln1, qkv, atty, residual2, ln2, fch, fch_gelu, residual3;
    std::vector<float*> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
    std::vector<void*> att_saved;  // per layer: P or the log-sum-exp
    bf16* lnf = nullptr;
    float* lnf_mean = nullptr;
    float* lnf_rstd = nullptr;
    bf16* logits = nullptr;  // (N,Vp); dlogits after backward starts
    float* losses = nullptr;
    bf16* proj = nullptr;  // (N,C) output of a projection before its residual add
    // backward
    bf16* dresidual = nullptr;  // (N,C)
    bf16* dln = nullptr;        // (N,C)
    bf16* dqkv = nullptr;       // (N,3C)
    bf16* dfch = nullptr;       // (N,4C)
    void* att_scratch = nullptr;
    float* ln_scratch = nullptr;
    float* bias_scratch = nullptr;
    int* enc_scratch = nullptr;
};

Gpt2OnGpu::Gpt2OnGpu(const ModelConfig& config, const CudaModelOptions& options)
    : config_(config),
      layout_((validate(config), config)),
      n_(layout_.num_params()),
      device_(options.device),
      attention_(options.attention),
      rounding_base_(options.rounding_seed) {
    const std::string missing = no_device_reason();
    if (!missing.empty()) throw Error("cuda: " + missing + "; train on --device cpu instead");
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (device_ < 0 || device_ >= count)
        throw Error("cuda: device " + std::to_string(device_) + " does not exist (" + std::to_string(count) +
                    " visible)");
    use_device();
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    if (prop.major < 8)
        throw Error(std::string("cuda: ") + prop.name + " (sm_" + std::to_string(prop.major * 10 + prop.minor) +
                    ") has no bf16 tensor cores; the CUDA backend needs sm_80 or newer");
    name_ = "cuda:" + std::to_string(device_) + " (" + prop.name + ")";
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    gemm_ = std::make_unique<GemmContext>(stream_);
    master_ = static_cast<float*>(alloc(n_ * sizeof(float)));
    params_ = static_cast<bf16*>(alloc(n_ * sizeof(bf16)));
    grads_ = static_cast<float*>(alloc(n_ * sizeof(float)));
    m_ = static_cast<float*>(alloc(n_ * sizeof(float)));
    v_ = static_cast<float*>(alloc(n_ * sizeof(float)));
    norm_partials_ = static_cast<double*>(alloc(kSumSquaresPartials * sizeof(double)));
    ranges_ = decay_ranges(layout_);
}

Gpt2OnGpu::~Gpt2OnGpu() {
    cudaSetDevice(device_);
    if (stream_ != nullptr) cudaStreamSynchronize(stream_);
    delete acts_;
    for (void* p : act_owned_) cudaFree(p);
    for (void* p : owned_) cudaFree(p);
    gemm_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void* Gpt2OnGpu::alloc(std::size_t bytes) {
    void* p = nullptr;
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;  // 256-byte aligned slices
    check(cudaMalloc(&p, rounded), ("cudaMalloc of " + std::to_string(rounded) + " bytes").c_str());
    check(cudaMemsetAsync(p, 0, rounded, stream_), "cudaMemset");
    owned_.push_back(p);
    allocated_ += rounded;
    return p;
}

void Gpt2OnGpu::check_size(std::span<const float> host, const char* what) const {
    if (host.size() != n_)
        throw Error(std::string(what) + ": expected " + std::to_string(n_) + " floats, got " +
                    std::to_string(host.size()));
}

void Gpt2OnGpu::set_params(std::span<const float> host) {
    check_size(host, "set_params");
    use_device();
    check(cudaMemcpyAsync(master_, host.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (parameters)");
    to_bf16(params_, master_, n_, stream_);
    sync();
}

void Gpt2OnGpu::get_params(std::span<float> host) {
    if (host.size() != n_) throw Error("get_params: wrong buffer size");
    use_device();
    check(cudaMemcpyAsync(host.data(), master_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (parameters)");
    sync();
}

void Gpt2OnGpu::get_grads(std::span<float> host) {
    if (host.size() != n_) throw Error("get_grads: wrong buffer size");
    use_device();
    check(cudaMemcpyAsync(host.data(), grads_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (gradients)");
    sync();
}

void Gpt2OnGpu::zero_grad() {
    use_device();
    check(cudaMemsetAsync(grads_, 0, n_ * sizeof(float), stream_), "cudaMemset (gradients)");
}

void Gpt2OnGpu::ensure_activations(int B, int T) {
    if (acts_ != nullptr && B <= acts_->B && T <= acts_->T) return;
    sync();
    delete acts_;
    acts_ = nullptr;
    for (void* p : act_owned_) cudaFree(p);
    act_owned_.clear();
    allocated_ -= act_allocated_;
    act_allocated_ = 0;
    const std::size_t before = owned_.size(), bytes_before = allocated_;
    auto* a = new Acts();
    acts_ = a;
    a->B = B;
    a->T = T;
    const std::size_t N = static_cast<std::size_t>(B) * T, C = config_.channels, L = config_.num_layers;
    const std::size_t Vp = config_.padded_vocab_size;
    auto bf = [&](std::size_t n) { return static_cast<bf16*>(alloc(n * sizeof(bf16))); };
    auto f32 = [&](std::size_t n) { return static_cast<float*>(alloc(n * sizeof(float))); };
    a->inputs = static_cast<int*>(alloc(N * sizeof(int)));
    a->targets = static_cast<int*>(alloc(N * sizeof(int)));
    a->encoded = bf(N * C);
    const AttentionSizes att = attention_sizes(attention_, B, T, static_cast<int>(C), config_.num_heads);
    for (std::size_t l = 0; l < L; ++l) {
        a->ln1.push_back(bf(N * C));
        a->ln1_mean.push_back(f32(N));
        a->ln1_rstd.push_back(f32(N));
        a->qkv.push_back(bf(N * 3 * C));
        a->atty.push_back(bf(N * C));
        a->att_saved.push_back(alloc(att.saved_bytes));
        a->residual2.push_back(bf(N * C));
        a->ln2.push_back(bf(N * C));
        a->ln2_mean.push_back(f32(N));
        a->ln2_rstd.push_back(f32(N));
        a->fch.push_back(bf(N * 4 * C));
        a->fch_gelu.push_back(bf(N * 4 * C));
        a->residual3.push_back(bf(N * C));
    }
    a->lnf = bf(N * C);
    a->lnf_mean = f32(N);
    a->lnf_rstd = f32(N);
    a->logits = bf(N * Vp);
    a->losses = f32(N);
    a->proj = bf(N * C);
    a->dresidual = bf(N * C);
    a->dln = bf(N * C);
    a->dqkv = bf(N * 3 * C);
    a->dfch = bf(N * 4 * C);
    a->att_scratch = alloc(att.scratch_bytes);
    a->ln_scratch = f32(layernorm_backward_scratch_floats(static_cast<int>(N), static_cast<int>(C)));
    a->bias_scratch = f32(bias_backward_scratch_floats(static_cast<int>(N), static_cast<int>(4 * C)));
    a->enc_scratch = static_cast<int*>(alloc(encoder_backward_scratch_ints(B, T) * sizeof(int)));
    // Activations are owned separately so a larger batch can replace them.
    act_owned_.assign(owned_.begin() + static_cast<std::ptrdiff_t>(before), owned_.end());
    owned_.resize(before);
    act_allocated_ = allocated_ - bytes_before;
}

void Gpt2OnGpu::matmul_forward(bf16* out, const bf16* inp, std::size_t w, std::size_t bias, int N, int C, int OC,
                               bf16* gelu_aux) {
    const bf16* weight = params_ + w;
    const bf16* b = params_ + bias;
    if (gelu_aux != nullptr && OC % 8 == 0) {
        gemm(*gemm_, out, false, inp, false, weight, true, N, OC, C, 1.0f, 0.0f, {}, Epilogue::gelu_bias, b, gelu_aux);
    } else if (gelu_aux != nullptr) {  // cuBLASLt's GELU epilogue needs OC % 8 == 0
        gemm(*gemm_, gelu_aux, false, inp, false, weight, true, N, OC, C, 1.0f, 0.0f, {}, Epilogue::bias, b);
        gelu_forward(out, gelu_aux, static_cast<std::size_t>(N) * OC, stream_);
    } else {
        gemm(*gemm_, out, false, inp, false, weight, true, N, OC, C, 1.0f, 0.0f, {}, Epilogue::bias, b);
    }
}

void Gpt2OnGpu::matmul_backward(bf16* dinp, std::size_t w, std::size_t bias, const bf16* dout, const bf16* inp,
                                int N, int C, int OC) {
    // dinp (N,C) = dout (N,OC) @ w (OC,C)
    gemm(*gemm_, dinp, false, dout, false, params_ + w, false, N, C, OC);
    // dw (OC,C) += dout^T (OC,N) @ inp (N,C), in fp32
    gemm(*gemm_, grads_ + w, true, dout, true, inp, false, OC, C, N, 1.0f, 1.0f);
    bias_backward(grads_ + bias, acts_->bias_scratch, dout, N, OC, stream_);
}

float Gpt2OnGpu::forward(const int* inputs, const int* targets, int B, int T) {
    check_batch(config_, inputs, targets, B, T);
    const int N = B * T, V = config_.vocab_size;
    use_device();
    ensure_activations(B, T);
    B_ = B;
    T_ = T;
    Acts& a = *acts_;
    const int C = config_.channels, NH = config_.num_heads, L = config_.num_layers, Vp = config_.padded_vocab_size;
    inputs_host_.assign(inputs, inputs + N);
    check(cudaMemcpyAsync(a.inputs, inputs, N * sizeof(int), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (inputs)");
    if (targets != nullptr)
        check(cudaMemcpyAsync(a.targets, targets, N * sizeof(int), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (targets)");

    encoder_forward(a.encoded, a.inputs, params_ + layout_.wte(), params_ + layout_.wpe(), B, T, C, stream_);
    layernorm_forward(a.ln1[0], a.ln1_mean[0], a.ln1_rstd[0], a.encoded, params_ + layout_.block(0).ln1w,
                      params_ + layout_.block(0).ln1b, N, C, stream_);
    for (int l = 0; l < L; ++l) {
        const BlockOffsets& o = layout_.block(l);
        const bf16* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        matmul_forward(a.qkv[l], a.ln1[l], o.qkvw, o.qkvb, N, C, 3 * C);
        attention_forward(attention_, *gemm_, a.atty[l], a.att_saved[l], a.att_scratch, a.qkv[l], B, T, C, NH);
        matmul_forward(a.proj, a.atty[l], o.attprojw, o.attprojb, N, C, C);
        residual_layernorm_forward(a.residual2[l], a.ln2[l], a.ln2_mean[l], a.ln2_rstd[l], residual, a.proj,
                                   params_ + o.ln2w, params_ + o.ln2b, N, C, stream_);
        matmul_forward(a.fch_gelu[l], a.ln2[l], o.fcw, o.fcb, N, C, 4 * C, a.fch[l]);
        matmul_forward(a.proj, a.fch_gelu[l], o.fcprojw, o.fcprojb, N, 4 * C, C);
        // The next layernorm (the next block's ln1, or ln_f) with this block's second residual add.
        const bool last = l == L - 1;
        bf16* next_ln = last ? a.lnf : a.ln1[l + 1];
        float* next_mean = last ? a.lnf_mean : a.ln1_mean[l + 1];
        float* next_rstd = last ? a.lnf_rstd : a.ln1_rstd[l + 1];
        const std::size_t w = last ? layout_.lnfw() : layout_.block(l + 1).ln1w;
        const std::size_t b = last ? layout_.lnfb() : layout_.block(l + 1).ln1b;
        residual_layernorm_forward(a.residual3[l], next_ln, next_mean, next_rstd, a.residual2[l], a.proj,
                                   params_ + w, params_ + b, N, C, stream_);
    }
    // logits (N,Vp) = lnf (N,C) @ wte (Vp,C)^T
    gemm(*gemm_, a.logits, false, a.lnf, false, params_ + layout_.wte(), true, N, Vp, C);
    logits_valid_ = true;
    have_targets_ = targets != nullptr;
    if (!have_targets_) {
        sync();
        return 0.0f;
    }
    classifier_forward_backward(a.logits, a.losses, a.targets, 0.0f, N, V, Vp, false, stream_);
    std::vector<float> losses(N);
    check(cudaMemcpyAsync(losses.data(), a.losses, N * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (losses)");
    sync();
    double sum = 0.0;
    for (float x : losses) sum += x;
    return static_cast<float>(sum / N);
}

void Gpt2OnGpu::backward(float loss_scale) {
    if (!have_targets_ || !logits_valid_) throw Error("backward: needs a forward pass with targets first");
    use_device();
    Acts& a = *acts_;
    const int B = B_, T = T_, N = B * T;
    const int C = config_.channels, NH = config_.num_heads, L = config_.num_layers;
    const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
    const std::size_t NC = static_cast<std::size_t>(N) * C;

    classifier_forward_backward(a.logits, a.losses, a.targets, loss_scale / N, N, V, Vp, true, stream_);
    logits_valid_ = false;
    // dlnf (N,C) = dlogits (N,Vp) @ wte (Vp,C); dwte += dlogits^T @ lnf
    gemm(*gemm_, a.dln, false, a.logits, false, params_ + layout_.wte(), false, N, C, Vp);
    gemm(*gemm_, grads_ + layout_.wte(), true, a.logits, true, a.lnf, false, Vp, C, N, 1.0f, 1.0f);
    check(cudaMemsetAsync(a.dresidual, 0, NC * sizeof(bf16), stream_), "cudaMemset");
    layernorm_backward(a.dresidual, grads_ + layout_.lnfw(), grads_ + layout_.lnfb(), a.ln_scratch, a.dln,
                       a.residual3[L - 1], params_ + layout_.lnfw(), a.lnf_mean, a.lnf_rstd, N, C, stream_);
    for (int l = L - 1; l >= 0; --l) {
        const BlockOffsets& o = layout_.block(l);
        const bf16* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))); dresidual flows through unchanged.
        matmul_backward(a.dfch, o.fcprojw, o.fcprojb, a.dresidual, a.fch_gelu[l], N, 4 * C, C);
        gelu_backward(a.dfch, a.fch[l], a.dfch, NC * 4, stream_);
        matmul_backward(a.dln, o.fcw, o.fcb, a.dfch, a.ln2[l], N, C, 4 * C);
        layernorm_backward(a.dresidual, grads_ + o.ln2w, grads_ + o.ln2b, a.ln_scratch, a.dln, a.residual2[l],
                           params_ + o.ln2w, a.ln2_mean[l], a.ln2_rstd[l], N, C, stream_);
        // residual2 = residual + attproj(attention(qkv(ln1(residual)))).
        matmul_backward(a.dln, o.attprojw, o.attprojb, a.dresidual, a.atty[l], N, C, C);  // dln = d(atty)
        attention_backward(attention_, *gemm_, a.dqkv, a.att_scratch, a.dln, a.qkv[l], a.atty[l], a.att_saved[l], B,
                           T, C, NH);
        matmul_backward(a.dln, o.qkvw, o.qkvb, a.dqkv, a.ln1[l], N, C, 3 * C);  // dln = d(ln1)
        layernorm_backward(a.dresidual, grads_ + o.ln1w, grads_ + o.ln1b, a.ln_scratch, a.dln, residual,
                           params_ + o.ln1w, a.ln1_mean[l], a.ln1_rstd[l], N, C, stream_);
    }
    encoder_backward(grads_ + layout_.wte(), grads_ + layout_.wpe(), a.enc_scratch, a.dresidual, inputs_host_.data(),
                     B, T, C, stream_);
    have_targets_ = false;
    sync();  // surface any asynchronous error here, at the pass that caused it
}

std::vector<float> Gpt2OnGpu::logits_at(int b, int t) const {
    if (!logits_valid_ || b < 0 || b >= B_ || t < 0 || t >= T_) throw Error("logits_at: no logits for that position");
    use_device();
    std::vector<bf16> row(config_.vocab_size);
    const std::size_t offset = (static_cast<std::size_t>(b) * T_ + t) * config_.padded_vocab_size;
    check(cudaMemcpyAsync(row.data(), acts_->logits + offset, row.size() * sizeof(bf16), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpy (logits)");
    sync();
    std::vector<float> out(row.size());
    for (std::size_t i = 0; i < row.size(); ++i) {
        uint16_t bits;
        std::memcpy(&bits, &row[i], sizeof(bits));
        out[i] = bf16_bits_to_float(bits);
    }
    return out;
}

float Gpt2OnGpu::adamw_step(float lr, const AdamWConfig& c) {
    use_device();
    const float norm = static_cast<float>(std::sqrt(sum_squares(grads_, n_, norm_partials_, stream_)));
    const float scale = clip_scale(norm, c);  // throws on NaN/Inf before anything changes
    ++steps_;
    for (const DecayRange& r : ranges_)
        adamw_update(master_ + r.begin, params_ + r.begin, grads_ + r.begin, m_ + r.begin, v_ + r.begin, r.size, lr,
                     c.beta1, c.beta2, c.eps, r.decay ? c.weight_decay : 0.0f, scale, steps_,
                     rounding_seed(rounding_base_, steps_, r.begin), stream_);
    return norm;
}

void Gpt2OnGpu::get_adamw_state(std::span<float> m, std::span<float> v) const {
    if (m.size() != n_ || v.size() != n_) throw Error("get_adamw_state: wrong buffer size");
    use_device();
    check(cudaMemcpyAsync(m.data(), m_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_), "cudaMemcpy (m)");
    check(cudaMemcpyAsync(v.data(), v_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_), "cudaMemcpy (v)");
    sync();
}

void Gpt2OnGpu::set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) {
    if (m.size() != n_ || v.size() != n_)
        throw Error("AdamW state holds " + std::to_string(m.size()) + " values, the model has " + std::to_string(n_));
    use_device();
    check(cudaMemcpyAsync(m_, m.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (m)");
    check(cudaMemcpyAsync(v_, v.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (v)");
    steps_ = steps;
    // The bf16 weights the last update wrote (stochastic rounding is a pure function of the master
    // value, the step and the index), so a resumed run continues bit for bit.
    if (steps_ > 0)
        for (const DecayRange& r : ranges_)
            stochastic_round_bf16(params_ + r.begin, master_ + r.begin, r.size,
                                  rounding_seed(rounding_base_, steps_, r.begin), stream_);
    sync();
}

void Gpt2OnGpu::all_reduce_grads(Collective& collective) {
    use_device();
    sync();  // backward's last launches have written the gradients
    collective.all_reduce_sum(grads_, n_);
}

DeviceMemory Gpt2OnGpu::memory() const {
    DeviceMemory m;
    m.params_bytes = n_ * (sizeof(float) + sizeof(bf16));  // fp32 master + bf16 working copy
    m.grads_bytes = n_ * sizeof(float);
    m.optimizer_bytes = 2 * n_ * sizeof(float);
    return m;
}

std::vector<std::byte> Gpt2OnGpu::encode_delta(std::span<const float> theta, const std::string& spec) {
    check_size(theta, "encode_delta");
    if (!device_codec_supports(spec)) throw Error("encode_delta: '" + spec + "' has no device codec");
    use_device();
    // Δ = θ - θ_i in a transient device buffer: only the encoded bytes leave the GPU.
    DeviceBuffer delta(n_ * sizeof(float));
    check(cudaMemcpyAsync(delta.get(), theta.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (theta)");
    subtract(delta.as<float>(), master_, n_, stream_);
    return encode_on_device(spec, delta.as<float>(), n_, stream_);
}

}  // namespace

std::unique_ptr<CudaGPT2> make_cuda_gpt2(const ModelConfig& config, const CudaModelOptions& options) {
    return std::make_unique<Gpt2OnGpu>(config, options);
}

}  // namespace arch::cuda
