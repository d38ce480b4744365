// tests/core/test_model_family.cpp: the model-family registry (core/model_family.h). Every registered
// family's entries are called on each of its presets, so an entry that points at the wrong function
// fails here (one that points back at the registry recurses: this test hangs until ctest's timeout),
// and names and presets resolve to their family.
#include <catch2/catch.hpp>

#include <set>

#include "core/model_family.h"
#include "core/transformer.h"

using namespace arch;

TEST_CASE("every family's registration answers for each of its presets") {
    std::set<std::string> names;
    for (const ModelFamilySpec* f : model_families()) {
        INFO(f->name);
        CHECK(names.insert(f->name).second);
        CHECK(&family_spec(f->id) == f);
        CHECK(&family_spec(std::string(f->name)) == f);
        REQUIRE_FALSE(f->presets.empty());
        for (const ModelPreset& p : f->presets) {
            INFO(p.name);
            const ModelConfig c = model_preset(p.name);
            CHECK(c.family == f->id);
            validate(c);
            CHECK(describe(c).find(" V" + std::to_string(c.vocab_size)) != std::string::npos);
            CHECK(qkv_channels(c) >= 3 * head_size(c));
            CHECK(f->mlp_flops_per_token(c) > 0);
            const ParamLayout layout(c);
            CHECK(layout.wte() != kAbsent);
            CHECK(layout.lm_head() != kAbsent);
            CHECK(layout.lnfw() != kAbsent);
            PassBuffers cpu, cuda;
            const PassCommon k{c, 1, 8, 8, static_cast<std::size_t>(c.channels), static_cast<std::size_t>(c.num_heads), 4};
            PassCommon kc = k;
            kc.round = [](std::size_t bytes) { return bytes; };
            kc.h = 2;  // bf16 activations
            kc.nc = k.N * k.C * kc.h;
            kc.stat = k.N * k.f;
            f->cpu_buffers(k, cpu);
            f->cuda_buffers(kc, cuda);
            CHECK(cpu.layer > 0);
            CHECK(cuda.layer > 0);
        }
        ModelConfig bare;  // `plan` from bare sizes
        bare.family = f->id;
        if (f->plan_defaults) f->plan_defaults(bare);
        CHECK(bare.vocab_size > 0);
    }
    CHECK_THROWS_WITH(family_spec(std::string("gpt3")), "model family must be " + family_names() + ", got 'gpt3'");
}

TEST_CASE("a small model of each family inits its whole buffer, deterministically") {
    for (const ModelFamilySpec* f : model_families()) {
        INFO(f->name);
        ModelConfig c = model_preset(f->presets.front().name, 256);
        c.num_layers = 1;
        c.max_seq_len = 16;
        const std::vector<float> a = init_params(c, 7), b = init_params(c, 7);
        CHECK(a.size() == ParamLayout(c).num_params());
        CHECK(a == b);
    }
}
