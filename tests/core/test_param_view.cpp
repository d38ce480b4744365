// tests/core/test_param_view.cpp: ViewParamStore, the forward-only store a host evaluates its global θ
// with, in place: for GPT-2 and Llama, the loss and logits match, bit for bit, those of the same
// model holding its own copy of the parameters; a view of the wrong size, a forward before any view
// and a backward pass are each refused with an error.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/param_store.h"
#include "core/rng.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"

using namespace arch;

namespace {

ModelConfig small(ModelFamily family) {
    ModelConfig c;
    c.family = family;
    c.max_seq_len = 16;
    c.vocab_size = 120;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    c.num_layers = 2;
    c.num_heads = 2;
    c.channels = 32;
    if (family == ModelFamily::llama) {
        c.num_kv_heads = 1;
        c.ffn_hidden = 48;
    }
    return c;
}

std::vector<int> tokens(std::size_t n, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<int> t(n);
    for (int& x : t) x = static_cast<int>(rng.below(static_cast<uint64_t>(vocab)));
    return t;
}

}  // namespace

TEST_CASE("a model viewing θ in place computes what a model holding a copy computes, and only forward") {
    for (const ModelFamily family : {ModelFamily::gpt2, ModelFamily::llama}) {
        const ModelConfig c = small(family);
        INFO(describe(c));
        const std::vector<float> theta = init_params(c, 7);
        const int B = 2, T = 16;
        const std::vector<int> in = tokens(B * T, c.vocab_size, 1), tg = tokens(B * T, c.vocab_size, 2);

        auto owner = make_transformer(c, make_cpu_backend());
        owner->set_params(theta);
        const float want = owner->forward(in.data(), tg.data(), B, T);
        const std::vector<float> want_logits = owner->logits_at(1, T - 1);

        auto backend = make_cpu_backend();
        ViewParamStore view{ParamLayout(c)};
        auto viewer = make_transformer(c, *backend, &view);
        CHECK_THROWS_AS(viewer->forward(in.data(), tg.data(), B, T), Error);  // nothing viewed yet
        CHECK_THROWS_AS(view.view(std::span<const float>(theta).first(theta.size() - 1)), Error);
        view.view(theta);
        const float got = viewer->forward(in.data(), tg.data(), B, T);
        CHECK(std::memcmp(&got, &want, sizeof(float)) == 0);
        const std::vector<float> logits = viewer->logits_at(1, T - 1);
        REQUIRE(logits.size() == want_logits.size());
        CHECK(std::memcmp(logits.data(), want_logits.data(), logits.size() * sizeof(float)) == 0);
        CHECK_THROWS_AS(viewer->backward(), Error);  // no gradients to write into
    }
}
