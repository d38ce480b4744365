// tests/cuda/test_cuda_model.cpp: the bf16 GPT-2 on a GPU against the fp32 CPU reference: loss and
// every parameter's gradient (both attention kinds), a short AdamW trajectory, save / reload / replay
// giving bit-identical losses, reruns giving identical bits, the device-side pseudo-gradient encoding
// giving the CPU codec's exact bytes, and bad input refused without a change.
// Tolerances: both models start from the same bf16-representable weights, so the differences come
// from bf16 activations (8 mantissa bits: eps 2^-8 = 0.0039 per rounding) compounding over the layers.
// Loss: 1% relative. Gradients per tensor: relative L2 error <= 5% and cosine >= 0.998 (a wrong
// kernel, transposed operand or missing term gives errors of order 100%).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "core/gpt2.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "core/trainer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_model.h"
#include "tests/core/temp_dir.h"
#include "tests/cuda/model_compare.h"

using namespace arch;
using namespace cuda_test;

namespace {

ModelConfig test_model() {
    ModelConfig c;
    c.max_seq_len = 64;
    c.vocab_size = 1000;  // padded to a multiple of 128: padded columns are exercised
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    c.num_layers = 3;
    c.num_heads = 4;
    c.channels = 128;  // hs = 32
    return c;
}

void write_random_shard(const std::string& path, std::size_t n, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint16_t> tokens(n);
    for (std::size_t i = 0; i < n; ++i)  // learnable: a repeating pattern with noise
        tokens[i] = static_cast<uint16_t>(rng.uniform() < 0.2f ? rng.below(static_cast<uint64_t>(vocab))
                                                                  : (i * 13 + i / 7) % static_cast<std::size_t>(vocab));
    write_token_shard(path, tokens);
}

}  // namespace

TEST_CASE("GPU loss and every gradient match the CPU reference", "[cuda][model]") {
    const ModelConfig c = test_model();
    const std::vector<float> theta = bf16_init(c, 7);
    const int B = 4, T = 64;
    const std::vector<int> inputs = random_tokens(B * T, c.vocab_size, 1), targets = random_tokens(B * T, c.vocab_size, 2);

    GPT2 cpu(c, make_cpu_backend());
    cpu.set_params(theta);
    cpu.zero_grad();
    const float cpu_loss = cpu.forward(inputs.data(), targets.data(), B, T);
    cpu.backward();
    std::vector<float> cpu_grads(cpu.num_params());
    cpu.get_grads(cpu_grads);

    for (auto kind : {cuda::AttentionKind::unfused, cuda::AttentionKind::fused}) {
        const char* kind_name = kind == cuda::AttentionKind::fused ? "fused" : "unfused";
        CAPTURE(kind_name);
        cuda::CudaModelOptions options;
        options.attention = kind;
        auto gpu = cuda::make_cuda_model(c, options);
        gpu->set_params(theta);
        gpu->zero_grad();
        const float gpu_loss = gpu->forward(inputs.data(), targets.data(), B, T);
        gpu->backward();
        CHECK(std::abs(gpu_loss - cpu_loss) <= 0.01f * cpu_loss);
        std::vector<float> gpu_grads(gpu->num_params());
        gpu->get_grads(gpu_grads);
        const ParamLayout layout(c);
        for (const TensorView& t : layout.tensors()) {
            const Diff d = compare(gpu_grads.data() + t.offset, cpu_grads.data() + t.offset, t.size);
            INFO(t.name << ": relative L2 error " << d.rel_l2 << ", cosine " << d.cosine);
            CHECK(d.rel_l2 <= 0.05);
            CHECK(d.cosine >= 0.998);
        }
        // Logits without targets (the sampling path) match too.
        gpu->forward(inputs.data(), nullptr, B, T);
        cpu.forward(inputs.data(), nullptr, B, T);
        const std::vector<float> gl = gpu->logits_at(1, 5), cl = cpu.logits_at(1, 5);
        const Diff dl = compare(gl.data(), cl.data(), gl.size());
        CHECK(dl.rel_l2 <= 0.02);
    }
}

TEST_CASE("GPU AdamW trajectory follows the CPU's and reruns give the same bits", "[cuda][model]") {
    const ModelConfig c = test_model();
    const std::vector<float> theta = bf16_init(c, 11);
    const int B = 4, T = 32;
    AdamWConfig ac;
    GPT2 cpu(c, make_cpu_backend());
    cpu.set_params(theta);
    auto run_gpu = [&](std::vector<float>& losses) {
        auto gpu = cuda::make_cuda_model(c);
        gpu->set_params(theta);
        for (int s = 0; s < 10; ++s) {
            const std::vector<int> x = random_tokens(B * T, 50, 100 + s), y = random_tokens(B * T, 50, 200 + s);
            gpu->zero_grad();
            losses.push_back(gpu->forward(x.data(), y.data(), B, T));
            gpu->backward();
            gpu->adamw_step(1e-3f, ac);
        }
    };
    std::vector<float> gpu_losses, gpu_again, cpu_losses;
    run_gpu(gpu_losses);
    run_gpu(gpu_again);
    for (int s = 0; s < 10; ++s) {
        const std::vector<int> x = random_tokens(B * T, 50, 100 + s), y = random_tokens(B * T, 50, 200 + s);
        cpu.zero_grad();
        cpu_losses.push_back(cpu.forward(x.data(), y.data(), B, T));
        cpu.backward();
        cpu.adamw_step(1e-3f, ac);
    }
    for (int s = 0; s < 10; ++s) {
        INFO("step " << s << ": gpu " << gpu_losses[s] << " cpu " << cpu_losses[s]);
        CHECK(std::abs(gpu_losses[s] - cpu_losses[s]) <= 0.02f * cpu_losses[s]);
        CHECK(std::memcmp(&gpu_losses[s], &gpu_again[s], sizeof(float)) == 0);
    }
    CHECK(gpu_losses.back() < gpu_losses.front());  // tokens < 50 of 1000: learnable fast
}

TEST_CASE("GPU save, reload and replay give bit-identical losses", "[cuda][model]") {
    const ModelConfig c = test_model();
    TempDir dir;
    write_random_shard(dir.file("train_000000.bin"), 20000, c.vocab_size, 3);
    TrainConfig t;
    t.B = 4;
    t.T = 32;
    t.grad_accum = 2;
    t.steps = 12;
    t.schedule.max_lr = 1e-3f;
    t.schedule.warmup_steps = 2;
    t.schedule.total_steps = 12;
    t.train_pattern = dir.file("train_*.bin");

    std::vector<float> straight;
    {
        auto gpu = cuda::make_cuda_model(c);
        gpu->init_weights(5);
        Trainer trainer(*gpu, t);
        for (int s = 0; s < 12; ++s) straight.push_back(trainer.step().loss);
    }
    std::vector<float> replay;
    const std::string ckpt = dir.file("model.bin");
    {
        auto gpu = cuda::make_cuda_model(c);
        gpu->init_weights(5);
        Trainer trainer(*gpu, t);
        for (int s = 0; s < 6; ++s) replay.push_back(trainer.step().loss);
        trainer.save(ckpt);
    }
    {
        auto gpu = cuda::make_cuda_model(c);
        Trainer trainer(*gpu, t);
        trainer.resume(ckpt);
        REQUIRE(trainer.steps_done() == 6);
        for (int s = 6; s < 12; ++s) replay.push_back(trainer.step().loss);
    }
    for (int s = 0; s < 12; ++s) {
        INFO("step " << s + 1 << ": straight " << straight[s] << " replay " << replay[s]);
        CHECK(std::memcmp(&straight[s], &replay[s], sizeof(float)) == 0);
    }
}

TEST_CASE("The pseudo-gradient encoded on the GPU is the CPU codec's exact bytes", "[cuda][model]") {
    const ModelConfig c = test_model();
    const std::vector<float> theta = bf16_init(c, 13);
    auto gpu = cuda::make_cuda_model(c);
    gpu->set_params(theta);
    const int B = 2, T = 32;
    for (int s = 0; s < 3; ++s) {
        const std::vector<int> x = random_tokens(B * T, c.vocab_size, 300 + s), y = random_tokens(B * T, c.vocab_size, 400 + s);
        gpu->zero_grad();
        gpu->forward(x.data(), y.data(), B, T);
        gpu->backward();
        gpu->adamw_step(1e-3f, AdamWConfig{});
    }
    std::vector<float> theta_i(gpu->num_params()), delta(gpu->num_params());
    gpu->get_params(theta_i);
    for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = theta[i] - theta_i[i];
    for (const char* spec : {"int8+zstd", "int4", "fp4+zstd:3"}) {
        CAPTURE(spec);
        const std::vector<std::byte> on_gpu = gpu->encode_delta(theta, spec);
        const std::vector<std::byte> on_cpu = compression::make_codec(spec)->encode(delta);
        CHECK(on_gpu == on_cpu);
    }
    CHECK_THROWS_AS(gpu->encode_delta(theta, "int8+ef"), Error);
}

TEST_CASE("Bad input to the GPU model is refused and changes nothing", "[cuda][model]") {
    const ModelConfig c = test_model();
    auto gpu = cuda::make_cuda_model(c);
    gpu->init_weights(1);
    std::vector<float> before(gpu->num_params()), after(gpu->num_params());
    gpu->get_params(before);
    std::vector<int> x(64, 1), y(64, 2);
    y[10] = c.vocab_size;  // out of range
    CHECK_THROWS_AS(gpu->forward(x.data(), y.data(), 2, 32), Error);
    CHECK_THROWS_AS(gpu->forward(x.data(), x.data(), 1, c.max_seq_len + 1), Error);
    CHECK_THROWS_AS(gpu->backward(), Error);  // no forward with targets
    CHECK_THROWS_AS(gpu->set_params(std::vector<float>(3)), Error);
    cuda::CudaModelOptions far;
    far.device = 1000;
    CHECK_THROWS_AS(cuda::make_cuda_model(c, far), Error);
    gpu->get_params(after);
    CHECK(before == after);
}
