// tests/peers/test_host_deltas.cpp: the host's per-value bound on a pseudo-gradient (peers/host_deltas.h,
// issue 30 class 4) as a unit: a Δ held encoded counts its values past the bound as it arrives and
// carries the bound to the aggregation; vetting logs and emits the clamp; an uplink whose error
// feedback carries values over rounds (topk or sign with +ef), outer.screen = off and a bound that
// follows the largest |θ| as the formula says.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "peers/host_deltas.h"
#include "peers/run_config.h"

using namespace arch;

namespace {

struct Host {
    RunConfig config;
    ModelConfig model = model_preset("tiny");
    std::size_t n = ParamLayout(model).num_params();
    diloco::GlobalModel global;
    std::vector<std::string> lines;
    std::vector<RunEvent> events;
    HostDeltas deltas;
    Host(const std::string& toml, float theta)
        : config(parse_run_config(toml, "run.toml")),
          global(std::vector<float>(n, theta), config.outer),
          deltas(config, model, global, nullptr, [this](const std::string& line) { lines.push_back(line); },
                 [this](const RunEvent& e) { events.push_back(e); }) {}
    // 2 H lr (S1 + wd (max |θ| + H lr S1)) for AdamW's S1 = 1.165 and this θ (all `theta`).
    double bound(float theta) const {
        const double H = config.steps_per_round, lr = config.lr, move = H * lr * 1.16496;
        return 2 * (move + H * lr * config.weight_decay * (theta + move));
    }
    // A Δ of zeros but for `spikes` values of `value`, encoded as the run's uplink sends it, taken in.
    rounds::Contribution arrive(int spikes, float value) {
        std::vector<float> delta(n, 0.0f);
        for (int k = 0; k < spikes; ++k) delta[static_cast<std::size_t>(1000 + 97 * k)] = value;
        rounds::Contribution c;
        c.island = 1;
        c.name = "liar";
        c.tokens = 1;
        deltas.take_in(compression::make_codec(config.codec)->encode(delta), n, c);
        return c;
    }
};

std::string wire(const std::string& codec) { return "[wire]\ncodec = \"" + codec + "\"\n"; }

}  // namespace

TEST_CASE("a held Δ's values past the per-value bound are counted as it arrives, and the clamp is logged") {
    Host host(wire("fp4+ef+zstd"), 0.5f);
    const rounds::Contribution c = host.arrive(16, static_cast<float>(10 * host.bound(0.5f)));
    REQUIRE(c.held);
    CHECK(c.limit == Approx(host.bound(0.5f)).epsilon(1e-3));
    CHECK(c.beyond == 16);
    Host larger(wire("fp4+ef+zstd"), 5.0f);  // weight decay's pull follows the largest |θ|
    CHECK(larger.arrive(1, 1.0f).limit == Approx(larger.bound(5.0f)).epsilon(1e-3));
    std::vector<rounds::Contribution> all{c};
    CHECK(host.deltas.vet(all, 7).empty());
    REQUIRE(host.events.size() == 1);
    CHECK(host.events[0].type == "clamped");
    CHECK(host.events[0].round == 7);
    REQUIRE(host.lines.size() == 1);
    CHECK_THAT(host.lines[0], Catch::Contains("16 values beyond"));
    // Within the bound: nothing counted, nothing said.
    Host calm(wire("fp4+ef+zstd"), 0.5f);
    const rounds::Contribution honest = calm.arrive(16, 0.5f * static_cast<float>(c.limit));
    CHECK(honest.beyond == 0);
    std::vector<rounds::Contribution> one{honest};
    CHECK(calm.deltas.vet(one, 0).empty());
    CHECK(calm.events.empty());
}

TEST_CASE("no per-value bound where error feedback carries values over rounds, or the screen is off") {
    for (const std::string& toml : {wire("topk:frac=0.01+ef"), wire("sign+ef"), std::string("[outer]\nscreen = \"off\"\n")}) {
        INFO(toml);
        Host host(toml, 0.5f);
        const rounds::Contribution c = host.arrive(16, static_cast<float>(10 * host.bound(0.5f)));
        CHECK(c.limit == 0.0f);
        CHECK(c.beyond == 0);
    }
    // Without +ef, topk sends values as they are: one round's bound holds.
    Host plain(wire("topk:frac=0.01"), 0.5f);
    CHECK(plain.arrive(16, static_cast<float>(10 * plain.bound(0.5f))).beyond == 16);
}
