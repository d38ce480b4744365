// tests/peers/test_privacy_run.cpp: island-level differential privacy in a real run (a Host and Peers
// in one process, tests/peers/local_cluster.h). In both trust modes every update the host sends is (with
// plain averaging, minus) the mean of the islands' clipped Δs plus Gaussian noise of σ·C/k per coordinate (k islands), measured
// over the model's coordinates; each round's row carries the ε the accountant gives for the updates
// so far, and a budget that covers 3 of 4 planned updates ends the run after 3, saying why.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "compression/codec.h"
#include "core/param_layout.h"
#include "privacy/rdp_accountant.h"
#include "tests/peers/local_cluster.h"

using namespace arch;
using namespace arch::test;

namespace {

constexpr double kClip = 1e-3, kSigma = 20, kDelta = 1e-5;

// [privacy] for a run whose budget lies between what 3 and 4 updates spend at σ = 20.
std::string privacy_section(const std::string& mode) {
    const double budget = (privacy::epsilon_spent(1, kSigma, 3, kDelta).epsilon + privacy::epsilon_spent(1, kSigma, 4, kDelta).epsilon) / 2;
    char text[256];
    // Plain averaging: the update, the change of θ (protocol 9), is then minus the noised mean, exactly.
    std::snprintf(text, sizeof(text),
                  "\n[privacy]\nmode = \"%s\"\nclip = %g\nnoise_multiplier = %g\nepsilon = %.17g\n%s[outer]\noptimizer = \"average\"\n",
                  mode.c_str(), kClip, kSigma, budget, mode == "distributed" ? "honest = 2\n" : "");
    return text;
}

// The updates the host sent, decoded (the run's down codec is fp32), one per update: minus the aggregates.
std::vector<std::vector<float>> aggregates(Cluster& c, std::size_t n) {
    std::vector<std::vector<float>> out;
    uint64_t last = UINT64_MAX;
    for (const LocalNet::Sent& s : c.net().sent_by_host()) {
        if (s.type != protocol::Type::update) continue;
        ByteReader r(s.payload, "update");
        const protocol::UpdateMeta m = protocol::decode_update(r.bytes(4096));
        const std::vector<std::byte> update = r.bytes(s.payload.size());
        if (m.round == last) continue;
        last = m.round;
        out.push_back(compression::decode(update, n));
    }
    return out;
}

void check_run(const std::string& mode) {
    Cluster c(2, 4, "mode = \"sync\"" + privacy_section(mode), "fp32", 30);
    c.add_peer("peer-1");
    c.add_peer("peer-2");
    if (!c.run(120)) FAIL(c.all_logs());
    INFO(c.all_logs());
    const std::string host = c.log("host");
    CHECK(host.find("privacy: " + mode + ", every pseudo-gradient clipped to 0.001, noise multiplier 20") != std::string::npos);
    CHECK(host.find("privacy: the budget covers 3 of the run's 4 updates") != std::string::npos);
    CHECK(host.find("privacy: update 4 would spend epsilon") != std::string::npos);
    CHECK(c.count("host", {.kind = "finished", .round = 3}) == 1);  // what the budget affords
    CHECK(c.log("peer-1").find("privacy: " + mode) != std::string::npos);

    const std::vector<RoundRow> rows = c.rows();
    REQUIRE(rows.size() == 3);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(rows[i].epsilon == Approx(privacy::epsilon_spent(1, kSigma, i + 1, kDelta).epsilon).epsilon(1e-12));
        // Distributed: the islands keep their loss from the host.
        if (mode == "distributed") CHECK(rows[i].mean_inner_loss == 0);
        else CHECK(rows[i].mean_inner_loss > 0);
    }
    const std::size_t d = ParamLayout(run_model_config(c.config(), 0)).num_params();
    const std::vector<std::vector<float>> updates = aggregates(c, d);
    REQUIRE(updates.size() == 3);
    for (const std::vector<float>& u : updates) {
        REQUIRE(u.size() == d);
        double sum = 0, squares = 0;
        for (const float x : u) sum += x;
        const double mean = sum / static_cast<double>(d);
        for (const float x : u) squares += (x - mean) * (x - mean);
        const double stddev = std::sqrt(squares / static_cast<double>(d - 1));
        // The mean of 2 clipped Δs (norm at most C, so at most C/√d a coordinate in RMS) plus
        // N(0, (σC/2)^2): the empirical σ within 5 standard errors, 1/√(2d) relative, plus the signal.
        const double want = kSigma * kClip / 2;
        INFO("d " << d << ", mean " << mean << ", stddev " << stddev << ", want " << want);
        CHECK(std::abs(stddev / want - 1) < 5 / std::sqrt(2.0 * static_cast<double>(d)) + kClip / (want * std::sqrt(d)));
        CHECK(std::abs(mean) < 5 * want / std::sqrt(static_cast<double>(d)) + kClip / std::sqrt(d));
    }
    check_in_sync(c, 2);
}

}  // namespace

TEST_CASE("central privacy: the host clips, adds σC to the sum, counts ε per round and stops at the budget") { check_run("central"); }

TEST_CASE("distributed privacy: each island adds its share before encoding; the update carries the same σC/k") {
    check_run("distributed");
}
