// tests/cuda/test_cuda_llama.cpp: the bf16 Llama on a GPU against the fp32 CPU Llama
// (core/llama.h): loss, logits and every parameter's gradient with both attention kinds, tied and
// untied lm_head, grouped KV heads, Llama 3's rope scaling in one config; a short AdamW trajectory
// and reruns giving the same bits; the device-side pseudo-gradient giving the CPU codec's bytes;
// the factory picking the family. Tolerances are the GPT-2 model test's (test_cuda_model.cpp): both
// models start from the same bf16-representable weights, so differences come from bf16 activations
// compounding over the layers. Loss 1% relative (2% along the trajectory); gradients per tensor:
// relative L2 error at most 5% and cosine at least 0.998; logits relative L2 at most 2%.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "core/llama.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_model.h"
#include "tests/cuda/model_compare.h"

using namespace arch;
using namespace cuda_test;

namespace {

// L2 C128 NH4 KV2 F96 (hs 32, groups of 2), V 1000 padded to 1024, T 64.
ModelConfig llama_test_model(bool tied, bool scaled) {
    ModelConfig c;
    c.family = ModelFamily::llama;
    c.max_seq_len = 64;
    c.vocab_size = 1000;  // padded columns are exercised
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    c.num_layers = 2;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.channels = 128;
    c.ffn_hidden = 96;
    c.rope_theta = 500000.0f;
    c.norm_eps = 1e-5f;
    c.tied_embeddings = tied;
    if (scaled) {  // wavelengths on both sides of the band, so all three branches are used
        c.rope_theta = 10000.0f;
        c.rope_scaling.factor = 8.0f;
        c.rope_scaling.original_max_position = 32;
    }
    validate(c);
    return c;
}

// The family's init rounded to bf16, with the qkv weights 6 times larger (std 0.12): at std 0.02 the
// scores are ~0.05, attention is nearly uniform and a wrong rotation or head mapping would hardly
// show in the loss or the gradients; at 0.12 they are ~2 and every position matters.
std::vector<float> sharp_init(const ModelConfig& c, uint64_t seed) {
    std::vector<float> p = bf16_init(c, seed);
    const ParamLayout layout(c);
    const std::size_t qkv = static_cast<std::size_t>(qkv_channels(c)) * c.channels;
    for (int l = 0; l < c.num_layers; ++l)
        for (std::size_t i = 0; i < qkv; ++i) {
            float& x = p[layout.block(l).qkvw + i];
            x = cuda::bf16_bits_to_float(cuda::float_to_bf16_bits(6.0f * x));
        }
    return p;
}

const char* kind_name(cuda::AttentionKind k) {
    return k == cuda::AttentionKind::fused ? "fused" : "unfused";
}

}  // namespace

TEST_CASE("GPU Llama loss, logits and every gradient match the CPU Llama", "[cuda][llama]") {
    const int B = 2, T = 64;
    for (const bool tied : {true, false}) {
        const ModelConfig c = llama_test_model(tied, !tied);
        INFO(describe(c) << (tied ? ", tied" : ", untied"));
        const std::vector<float> theta = sharp_init(c, 7);
        const std::vector<int> inputs = random_tokens(B * T, c.vocab_size, 1);
        const std::vector<int> targets = random_tokens(B * T, c.vocab_size, 2);

        Llama cpu(c, make_cpu_backend());
        cpu.set_params(theta);
        cpu.zero_grad();
        const float cpu_loss = cpu.forward(inputs.data(), targets.data(), B, T);
        cpu.backward();
        std::vector<float> cpu_grads(cpu.num_params());
        cpu.get_grads(cpu_grads);
        cpu.forward(inputs.data(), nullptr, B, T);
        const std::vector<float> cpu_logits = cpu.logits_at(1, 5);

        for (auto kind : {cuda::AttentionKind::unfused, cuda::AttentionKind::fused}) {
            CAPTURE(kind_name(kind));
            cuda::CudaModelOptions options;
            options.attention = kind;
            auto gpu = cuda::make_cuda_model(c, options);
            REQUIRE(gpu->num_params() == cpu.num_params());
            gpu->set_params(theta);
            gpu->zero_grad();
            const float gpu_loss = gpu->forward(inputs.data(), targets.data(), B, T);
            gpu->backward();
            INFO("loss: gpu " << gpu_loss << ", cpu " << cpu_loss);
            CHECK(std::abs(gpu_loss - cpu_loss) <= 0.01f * cpu_loss);
            std::vector<float> gpu_grads(gpu->num_params());
            gpu->get_grads(gpu_grads);
            double worst_l2 = 0, worst_cos = 1;
            for (const TensorView& t : cpu.layout().tensors()) {
                const Diff d =
                    compare(gpu_grads.data() + t.offset, cpu_grads.data() + t.offset, t.size);
                INFO(t.name << ": relative L2 error " << d.rel_l2 << ", cosine " << d.cosine);
                CHECK(d.rel_l2 <= 0.05);
                CHECK(d.cosine >= 0.998);
                worst_l2 = std::max(worst_l2, d.rel_l2);
                worst_cos = std::min(worst_cos, d.cosine);
            }
            gpu->forward(inputs.data(), nullptr, B, T);  // the sampling path
            const std::vector<float> gl = gpu->logits_at(1, 5);
            const Diff dl = compare(gl.data(), cpu_logits.data(), gl.size());
            CHECK(dl.rel_l2 <= 0.02);
            std::printf(
                "llama %s %s: loss gpu %.6f cpu %.6f; worst gradient rel L2 %.4f, cosine "
                "%.6f; logits rel L2 %.4f\n",
                tied ? "tied" : "untied+scaled", kind_name(kind), gpu_loss, cpu_loss, worst_l2,
                worst_cos, dl.rel_l2);
        }
    }
}

TEST_CASE("GPU Llama AdamW follows the CPU's, reruns give the same bits, Δ encodes on the GPU",
          "[cuda][llama]") {
    const ModelConfig c = llama_test_model(false, false);
    const std::vector<float> theta = sharp_init(c, 11);
    const int B = 2, T = 32, steps = 5;
    AdamWConfig ac;
    auto batch = [&](int s, int which) { return random_tokens(B * T, 50, 100 * which + s); };
    auto run_gpu = [&](std::vector<float>& losses) {
        auto gpu = cuda::make_cuda_model(c);
        gpu->set_params(theta);
        for (int s = 0; s < steps; ++s) {
            const std::vector<int> x = batch(s, 1), y = batch(s, 2);
            gpu->zero_grad();
            losses.push_back(gpu->forward(x.data(), y.data(), B, T));
            gpu->backward();
            gpu->adamw_step(1e-3f, ac);
        }
        return gpu;
    };
    std::vector<float> gpu_losses, gpu_again, cpu_losses;
    auto gpu = run_gpu(gpu_losses);
    run_gpu(gpu_again);
    Llama cpu(c, make_cpu_backend());
    cpu.set_params(theta);
    for (int s = 0; s < steps; ++s) {
        const std::vector<int> x = batch(s, 1), y = batch(s, 2);
        cpu.zero_grad();
        cpu_losses.push_back(cpu.forward(x.data(), y.data(), B, T));
        cpu.backward();
        cpu.adamw_step(1e-3f, ac);
    }
    for (int s = 0; s < steps; ++s) {
        INFO("step " << s << ": gpu " << gpu_losses[s] << " cpu " << cpu_losses[s]);
        CHECK(std::abs(gpu_losses[s] - cpu_losses[s]) <= 0.02f * cpu_losses[s]);
        CHECK(std::memcmp(&gpu_losses[s], &gpu_again[s], sizeof(float)) == 0);
    }
    CHECK(gpu_losses.back() < gpu_losses.front());  // tokens < 50 of 1000: learnable fast
    std::vector<float> gpu_params(gpu->num_params()), cpu_params(cpu.num_params());
    gpu->get_params(gpu_params);
    cpu.get_params(cpu_params);
    std::printf("llama AdamW, %d steps: last loss gpu %.6f cpu %.6f; parameters rel L2 %.2e\n",
                steps, gpu_losses.back(), cpu_losses.back(),
                compare(gpu_params.data(), cpu_params.data(), gpu_params.size()).rel_l2);

    // The pseudo-gradient Δ = θ - θ_i, encoded on the device: the CPU codec's exact bytes.
    std::vector<float> delta(gpu_params.size());
    for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = theta[i] - gpu_params[i];
    for (const char* spec : {"int8+zstd", "fp4"}) {
        CAPTURE(spec);
        CHECK(gpu->encode_delta(theta, spec) == compression::make_codec(spec)->encode(delta));
    }
}

TEST_CASE("make_cuda_model builds the config's family", "[cuda][llama]") {
    const ModelConfig c = llama_test_model(true, false);
    auto gpu = cuda::make_cuda_model(c);
    CHECK(gpu->num_params() == ParamLayout(c).num_params());
    CHECK(gpu->config() == c);
    ModelConfig bad = c;
    bad.num_kv_heads = 3;  // does not divide NH
    CHECK_THROWS_AS(cuda::make_cuda_model(bad), Error);
}
