// tests/peers/test_global_model.cpp: an outer step that would make θ non-finite (a finite update whose
// step overflows fp32) is refused with θ, the momentum and the hash unchanged, and the next good
// update applies exactly as if the bad one had never come.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "peers/diloco/global_model.h"

using arch::diloco::GlobalModel;
using arch::diloco::OuterConfig;

TEST_CASE("an outer step that overflows θ is discarded; θ and the optimizer stay as they were") {
    OuterConfig config;  // nesterov, lr 0.7, momentum 0.9, fp32 down codec
    GlobalModel model(std::vector<float>(64, 1.0f), config);
    GlobalModel twin(std::vector<float>(64, 1.0f), config);
    const auto codec = arch::compression::make_codec("fp32");
    const std::vector<float> good(64, 0.01f);
    model.apply_update(codec->encode(good, 0));
    twin.apply_update(codec->encode(good, 0));
    const std::string before = model.hash();
    const uint64_t steps = model.updates_applied();

    std::vector<float> huge(64, 0.0f);
    huge[3] = -3.0e38f;  // finite, but θ - lr·(Δ + μ·m) leaves fp32
    CHECK_THROWS_WITH(model.apply_update(codec->encode(huge, 0)), Catch::Contains("non-finite"));
    CHECK(model.hash() == before);
    CHECK(model.updates_applied() == steps);
    for (float x : model.theta()) REQUIRE(std::isfinite(x));

    model.apply_update(codec->encode(good, 0));
    twin.apply_update(codec->encode(good, 0));
    CHECK(model.hash() == twin.hash());  // momentum untouched by the refused step
}

TEST_CASE("the check before the step holds for every outer optimizer and for a fragment of θ") {
    const auto codec = arch::compression::make_codec("fp32");
    for (const char* optimizer : {"nesterov", "delayed-nesterov", "average"}) {
        for (int fragments : {1, 2}) {
            CAPTURE(optimizer, fragments);
            OuterConfig config;
            config.optimizer = optimizer;
            config.period = 2;
            GlobalModel model(std::vector<float>(64, 3.0e38f), config, arch::diloco::make_fragments(4, 16, 64, fragments));
            GlobalModel twin(std::vector<float>(64, 3.0e38f), config, arch::diloco::make_fragments(4, 16, 64, fragments));
            const std::size_t n = model.fragment(fragments - 1).size;
            const std::vector<float> good(n, 0.01f);
            std::vector<float> huge(n, 0.0f);
            huge[5] = -3.4e38f;  // from θ = 3e38 every optimizer steps past FLT_MAX
            for (int round = 0; round < 3; ++round) {  // delayed-nesterov: a plain step, then a momentum step
                const std::vector<std::byte> state = model.save_state();
                CHECK_THROWS_WITH(model.apply_update(codec->encode(huge, 0), fragments - 1), Catch::Contains("non-finite"));
                CHECK(model.save_state() == state);
                model.apply_update(codec->encode(good, 0), fragments - 1);
                twin.apply_update(codec->encode(good, 0), fragments - 1);
                CHECK(model.hash() == twin.hash());
                CHECK(model.save_state() == twin.save_state());
            }
            CHECK(model.state_bytes() == model.save_state().size());
        }
    }
}
