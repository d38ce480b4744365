// tests/core/test_recompute.cpp: activation recomputation in the CPU engine (Transformer::
// set_recompute): with attention or block recompute, losses, every gradient and the AdamW step that
// follows are bit for bit those without it, for GPT-2 and Llama, on one device and on a ZeRO-3 island
// of two; and the activation memory the engine reports falls as `archipelago plan` says, within 10%.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/island.h"
#include "core/memory_plan.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_collective.h"
#include "tests/core/temp_dir.h"

using namespace arch;

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

std::vector<int> tokens(std::size_t n, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<int> t(n);
    for (int& x : t) x = static_cast<int>(rng.below(static_cast<uint64_t>(vocab)));
    return t;
}

struct Run {
    std::vector<float> losses, grads, params;
};

// Two accumulated micro-batches, their gradients, one AdamW step, and the next loss.
Run train(const ModelConfig& c, Recompute recompute) {
    auto m = make_transformer(c, make_cpu_backend());
    m->set_recompute(recompute);
    m->init_weights(3);
    const int B = 2, T = 32;
    Run r;
    m->zero_grad();
    for (uint64_t k = 0; k < 2; ++k) {
        const auto in = tokens(B * T, c.vocab_size, 10 + k), tg = tokens(B * T, c.vocab_size, 20 + k);
        r.losses.push_back(m->forward(in.data(), tg.data(), B, T));
        m->backward(0.5f);
    }
    r.grads.resize(m->num_params());
    m->get_grads(r.grads);
    m->adamw_step(1e-3f, AdamWConfig{});
    const auto in = tokens(B * T, c.vocab_size, 30);
    r.losses.push_back(m->forward(in.data(), in.data(), B, T));
    r.params.resize(m->num_params());
    m->get_params(r.params);
    return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("CPU recompute gives the same losses, gradients and step bit for bit", "[recompute]") {
    const ModelConfig c = GENERATE(small_gpt2(), small_llama());
    INFO(describe(c));
    const Run plain = train(c, Recompute::none);
    for (Recompute r : {Recompute::attention, Recompute::block}) {
        INFO("recompute " << recompute_name(r));
        const Run again = train(c, r);
        CHECK(same_bits(again.losses, plain.losses));
        CHECK(same_bits(again.grads, plain.grads));
        CHECK(same_bits(again.params, plain.params));
    }
}

TEST_CASE("a ZeRO-3 island with block recompute trains bit for bit as without", "[recompute][island]") {
    const ModelConfig c = GENERATE(small_gpt2(), small_llama());
    INFO(describe(c));
    TempDir dir;
    {
        Rng rng(3);
        std::vector<uint16_t> ids(8000);
        for (auto& x : ids) x = static_cast<uint16_t>(rng.below(200));
        write_token_shard(dir.file("train_000000.bin"), ids);
    }
    TrainConfig t;
    t.B = 2;
    t.T = 32;
    t.steps = 3;
    t.train_pattern = dir.file("train_*.bin");
    std::vector<float> losses[2];
    for (int k = 0; k < 2; ++k) {
        std::vector<std::unique_ptr<Backend>> backends;
        for (int r = 0; r < 2; ++r) backends.push_back(make_cpu_backend());
        Island island(c, t, Parallel::zero3, std::move(backends), make_cpu_collectives(2),
                      k == 0 ? Recompute::none : Recompute::block);
        island.init_weights(5);
        for (int s = 0; s < 3; ++s) losses[k].push_back(island.step().loss);
    }
    CHECK(same_bits(losses[1], losses[0]));
}

TEST_CASE("CPU recompute's activation memory falls as the plan says", "[recompute][plan]") {
    const int B = 4, T = 128;
    for (const char* preset : {"tiny", "llama-tiny"}) {
        const ModelConfig c = model_preset(preset);
        std::size_t none = 0;
        for (Recompute r : {Recompute::none, Recompute::attention, Recompute::block}) {
            auto m = make_transformer(c, make_cpu_backend());
            m->set_recompute(r);
            const auto in = tokens(B * T, c.vocab_size, 1);
            m->forward(in.data(), in.data(), B, T);
            PlanRequest q;
            q.model = c;
            q.device = PlanDevice::cpu;
            q.B = B;
            q.T = T;
            q.recompute = r;
            const std::size_t planned = plan_memory(q).device.activations, measured = m->memory().activations_bytes;
            if (r == Recompute::none) none = measured;
            std::printf("%-10s cpu recompute %-9s activations: plan %s, engine %s (%.3f), %.2f of none\n", preset,
                        recompute_name(r), format_bytes(planned).c_str(), format_bytes(measured).c_str(),
                        static_cast<double>(planned) / static_cast<double>(measured),
                        static_cast<double>(measured) / static_cast<double>(none));
            INFO(preset << " recompute " << recompute_name(r) << ": plan " << planned << ", engine " << measured);
            CHECK(std::abs(static_cast<double>(planned) / static_cast<double>(measured) - 1.0) <= 0.10);
            if (r != Recompute::none) CHECK(measured < none);
        }
    }
}
