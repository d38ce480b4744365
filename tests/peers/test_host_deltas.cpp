// tests/peers/test_host_deltas.cpp: the host's per-value bound on a pseudo-gradient (peers/host_deltas.h,
// issue 30 class 4) as a unit: a Δ held encoded carries the bound to the aggregation, whose pass counts
// its values past it and takes its norm; judging logs and emits the clamp, and says when a clip or a
// rejection means the aggregate must be taken again; an uplink whose error
// feedback carries values over rounds (topk or sign with +ef), outer.screen = off and a bound that
// follows the largest |θ| as the formula says.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "outer_optimizer/aggregator.h"
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
        if (c.held) c.beyond = seen({c}).front().beyond;
        return c;
    }
    // What the aggregation pass sees of held Δs (GlobalModel::aggregate_held), as the host takes it.
    std::vector<diloco::GlobalModel::Seen> seen(const std::vector<rounds::Contribution>& all) {
        std::vector<diloco::GlobalModel::HeldDelta> held;
        for (const rounds::Contribution& c : all) held.push_back({c.held.get(), c.tokens, c.scale, c.limit});
        std::vector<diloco::GlobalModel::Seen> s(held.size());
        std::vector<float> aggregate(n);
        global.aggregate_held(held, 0, aggregate, s);
        return s;
    }
    // Held Δs judged as Host::aggregate_held judges them.
    bool judge(std::vector<rounds::Contribution>& all, uint64_t round) {
        CHECK(deltas.vet(all, round).empty());  // held: nothing screened before the pass
        const std::vector<diloco::GlobalModel::Seen> s = seen(all);
        return deltas.judge_held(all, s, round);
    }
};

std::string wire(const std::string& codec) { return "[wire]\ncodec = \"" + codec + "\"\n"; }

}  // namespace

TEST_CASE("a held Δ's values past the per-value bound are counted in the aggregation pass, and the clamp is logged") {
    Host host(wire("fp4+ef+zstd"), 0.5f);
    const rounds::Contribution c = host.arrive(16, static_cast<float>(10 * host.bound(0.5f)));
    REQUIRE(c.held);
    CHECK(c.limit == Approx(host.bound(0.5f)).epsilon(1e-3));
    CHECK(c.beyond == 16);
    Host larger(wire("fp4+ef+zstd"), 5.0f);  // weight decay's pull follows the largest |θ|
    CHECK(larger.arrive(1, 1.0f).limit == Approx(larger.bound(5.0f)).epsilon(1e-3));
    std::vector<rounds::Contribution> all{c};
    CHECK_FALSE(host.judge(all, 7));  // clamped, not clipped: the aggregate stands
    REQUIRE(all.size() == 1);
    CHECK(all[0].beyond == 16);
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
    CHECK_FALSE(calm.judge(one, 0));
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

TEST_CASE("held Δs judged on the aggregation pass give the verdicts and the aggregate of Δs decoded whole") {
    // Three honest Δs and one 20 times longer, which the screen clips (or, with reject, leaves out):
    // the held path's one pass, then its second for what the screen changed, against the decoded
    // path's screen and a mean of the decoded Δs, bit for bit.
    for (const std::string action : {"clip", "reject"}) {
        INFO(action);
        const std::string toml = wire("fp4+ef+zstd") + "[outer]\nscreen = \"" + action + "\"\n";
        Host held(toml, 0.5f), decoded(toml + "[run]\nmode = \"async\"\n", 0.5f);
        std::vector<rounds::Contribution> a, b;
        for (uint32_t i = 0; i < 4; ++i) {
            std::vector<float> delta(held.n);
            for (std::size_t k = 0; k < delta.size(); ++k)
                delta[k] = 1e-4f * std::sin(0.37f * static_cast<float>(k) + static_cast<float>(i)) * (i == 3 ? 20.0f : 1.0f);
            const std::vector<std::byte> payload = compression::make_codec(held.config.codec)->encode(delta);
            for (auto* into : {&a, &b}) {
                rounds::Contribution c;
                c.island = i;
                c.name = "island" + std::to_string(i);
                c.tokens = 1 + i;
                (into == &a ? held : decoded).deltas.take_in(payload, held.n, c);
                into->push_back(std::move(c));
            }
        }
        REQUIRE(a.front().held);
        REQUIRE_FALSE(b.front().held);
        CHECK(held.judge(a, 3));  // the long one was clipped or rejected: aggregate again
        CHECK(decoded.deltas.vet(b, 3).empty());
        REQUIRE(a.size() == (action == "clip" ? 4u : 3u));
        REQUIRE(b.size() == a.size());
        REQUIRE(held.events.size() == decoded.events.size());
        CHECK(held.events.back().type == (action == "clip" ? "clipped" : "rejected"));
        CHECK(held.lines == decoded.lines);  // the same norms and verdicts, word for word

        std::vector<diloco::GlobalModel::HeldDelta> h;
        for (const rounds::Contribution& c : a) h.push_back({c.held.get(), c.tokens, c.scale, c.limit});
        std::vector<float> from_held(held.n, 1e3f), from_decoded(held.n);  // the second pass overwrites the first's
        held.global.aggregate_held(h, 0, from_held);
        std::vector<outer::WeightedDelta> w;
        for (const rounds::Contribution& c : b) w.push_back({c.delta, c.tokens});
        outer::make_aggregator("mean")->aggregate(w, from_decoded);
        CHECK(from_held == from_decoded);
    }
}
