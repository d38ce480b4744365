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
