// tests/outer_optimizer/test_aggregators.cpp: token-weighted mean, norm clipping, and one Byzantine
// peer of eight (x1000 and sign-flipped): median, trimmed mean and centered clipping stay within
// the stated bound of the honest mean, the plain mean does not. Also determinism over threads, and the
// mean against a loop over the peers for each value.
#include <catch2/catch.hpp>
#include <omp.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "outer_optimizer/aggregator.h"

using namespace arch::outer;

namespace {

std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

double dist(const std::vector<float>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(s);
}

// Eight peers: seven honest (g + 0.1 noise), peer 7 Byzantine.
struct Round {
    std::vector<std::vector<float>> deltas;
    std::vector<double> honest_mean;
    double honest_mean_norm = 0;
    std::vector<WeightedDelta> contributions() const {
        std::vector<WeightedDelta> c;
        for (const auto& d : deltas) c.push_back({d, 1000.0});
        return c;
    }
};

Round byzantine_round(std::size_t n, bool times_1000) {
    Round r;
    const auto g = random_vector(n, 1);
    for (int i = 0; i < 8; ++i) {
        auto noise = random_vector(n, 10 + i, 0.1f);
        std::vector<float> d(n);
        for (std::size_t j = 0; j < n; ++j) d[j] = g[j] + noise[j];
        r.deltas.push_back(d);
    }
    r.honest_mean.assign(n, 0.0);
    for (int i = 0; i < 7; ++i) {
        for (std::size_t j = 0; j < n; ++j) r.honest_mean[j] += r.deltas[i][j] / 7.0;
    }
    for (double v : r.honest_mean) r.honest_mean_norm += v * v;
    r.honest_mean_norm = std::sqrt(r.honest_mean_norm);
    for (float& v : r.deltas[7]) v = times_1000 ? v * 1000.0f : -v;
    return r;
}

}  // namespace

TEST_CASE("token-weighted mean weights each island by its tokens", "[aggregate]") {
    const std::vector<float> a = {1, 2, 3}, b = {4, 5, 6};
    std::vector<WeightedDelta> in = {{a, 1000}, {b, 3000}};
    std::vector<float> out(3);
    WeightedMean().aggregate(in, out);
    REQUIRE(out[0] == Approx(3.25));
    REQUIRE(out[2] == Approx(5.25));
    in[1].tokens = 0;
    REQUIRE_THROWS_WITH(WeightedMean().aggregate(in, out), Catch::Contains("token weight"));
    std::vector<float> short_out(2);
    in[1].tokens = 1;
    REQUIRE_THROWS_WITH(WeightedMean().aggregate(in, short_out), Catch::Contains("expected 2"));
    REQUIRE_THROWS_AS(WeightedMean().aggregate({}, out), arch::Error);
}

TEST_CASE("norm clipping bounds each contribution's norm", "[aggregate]") {
    const std::vector<float> a = {3, 4}, b = {0, 100};
    std::vector<WeightedDelta> in = {{a, 1}, {b, 1}};
    std::vector<float> out(2);
    NormClipping(5.0).aggregate(in, out);  // b clipped to (0, 5)
    REQUIRE(out[0] == Approx(1.5));
    REQUIRE(out[1] == Approx(4.5));
}

TEST_CASE("one Byzantine peer of eight: robust aggregators stay bounded, the mean does not",
          "[aggregate][byzantine]") {
    const std::size_t n = 5000;
    for (bool times_1000 : {true, false}) {
        const Round r = byzantine_round(n, times_1000);
        const auto in = r.contributions();
        INFO((times_1000 ? "x1000 attack" : "sign-flip attack"));
        auto relative_error = [&](Aggregator&& agg) {
            std::vector<float> out(n);
            agg.aggregate(in, out);
            return dist(out, r.honest_mean) / r.honest_mean_norm;
        };
        // Stated bound: within 10% of the honest peers' mean (relative L2). Honest spread is 0.1.
        const double bound = 0.10;
        const double mean = relative_error(WeightedMean());
        const double median = relative_error(CoordinateMedian());
        const double trimmed = relative_error(TrimmedMean(1));
        const double cc = relative_error(CenteredClipping());
        const double cc_tau = relative_error(CenteredClipping(5.0, 3));
        const double clip = relative_error(NormClipping());
        INFO("mean " << mean << " median " << median << " trimmed " << trimmed << " cc " << cc
                     << " cc(tau=5) " << cc_tau << " clip " << clip);
        REQUIRE(mean > bound);  // the plain mean is dragged away...
        if (times_1000) REQUIRE(mean > 100);
        REQUIRE(median <= bound);  // ...the robust ones are not
        REQUIRE(trimmed <= bound);
        REQUIRE(cc <= bound);
        REQUIRE(cc_tau <= bound);
        if (times_1000) REQUIRE(clip <= bound);  // clipping bounds magnitude, not direction

        // Median and trimmed mean (trim >= #Byzantine) stay inside the honest range per coordinate.
        std::vector<float> med(n), trim(n);
        CoordinateMedian().aggregate(in, med);
        TrimmedMean(1).aggregate(in, trim);
        for (std::size_t j = 0; j < n; ++j) {
            float lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < 7; ++i) {
                lo = std::min(lo, r.deltas[i][j]);
                hi = std::max(hi, r.deltas[i][j]);
            }
            REQUIRE(med[j] >= lo);
            REQUIRE(med[j] <= hi);
            REQUIRE(trim[j] >= lo - 1e-6f);
            REQUIRE(trim[j] <= hi + 1e-6f);
        }
    }
}

TEST_CASE("centered clipping with history starts from the previous aggregate", "[aggregate]") {
    const Round r = byzantine_round(1000, true);
    const auto in = r.contributions();
    CenteredClipping cc(0.0, 1, true);
    std::vector<float> first(1000), second(1000);
    cc.aggregate(in, first);
    cc.aggregate(in, second);
    REQUIRE(dist(second, r.honest_mean) / r.honest_mean_norm <= 0.1);
}

TEST_CASE("aggregator specs", "[aggregate]") {
    REQUIRE(make_aggregator("mean")->name() == "mean");
    REQUIRE(make_aggregator("median")->name() == "median");
    REQUIRE(make_aggregator("trimmed:trim=2")->name() == "trimmed:trim=2");
    REQUIRE(make_aggregator("clip:tau=3")->name() == "clip:tau=3");
    REQUIRE(make_aggregator("centered_clip:tau=2,iters=5,history=1")->name() ==
            "centered_clip:tau=2,iters=5,history=1");
    for (const char* bad : {"avg", "trimmed:trim=-1", "trimmed:tau=1", "clip:tau=x", "centered_clip:iters=0",
                            "median:trim=1", "clip:tau"}) {
        INFO(bad);
        REQUIRE_THROWS_AS(make_aggregator(bad), arch::Error);
    }
    const std::vector<float> a = {1}, b = {2};
    std::vector<WeightedDelta> two = {{a, 1}, {b, 1}};
    std::vector<float> out(1);
    REQUIRE_THROWS_WITH(TrimmedMean(1).aggregate(two, out), Catch::Contains("at least 3"));
}

TEST_CASE("aggregates are bit-identical on 1 and 2 threads", "[aggregate]") {
    const std::size_t n = (1 << 17) + 3;
    const Round r = byzantine_round(n, true);
    const auto in = r.contributions();
    std::vector<std::vector<float>> results[2];
    for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        for (const char* spec : {"mean", "clip", "median", "trimmed:trim=1", "centered_clip"}) {
            std::vector<float> out(n);
            make_aggregator(spec)->aggregate(in, out);
            results[threads - 1].push_back(out);
        }
    }
    omp_set_num_threads(2);
    REQUIRE(results[0] == results[1]);
}

TEST_CASE("the mean is each value's sum over the peers in order, in double, bit for bit", "[aggregate]") {
    const std::size_t n = (1 << 17) + 3;  // threads, and a last tile that is not whole
    const Round r = byzantine_round(n, true);
    std::vector<WeightedDelta> in;
    const double tokens[8] = {1000, 3000, 7, 250, 1000, 999, 12345, 1};
    for (int i = 0; i < 8; ++i) in.push_back({r.deltas[i], tokens[i]});
    double total = 0;
    for (double t : tokens) total += t;
    std::vector<float> out(n);
    WeightedMean().aggregate(in, out);
    std::size_t differ = 0;
    for (std::size_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int i = 0; i < 8; ++i) s += tokens[i] / total * double(r.deltas[i][j]);
        differ += static_cast<float>(s) != out[j];
    }
    CHECK(differ == 0);
}
