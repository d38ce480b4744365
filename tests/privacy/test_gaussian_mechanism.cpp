// tests/privacy/test_gaussian_mechanism.cpp: clip_l2 leaves a pseudo-gradient at most at the bound (and
// one below it untouched); the noise has the stated scale: over 4M coordinates the empirical mean and
// standard deviation are within 5 standard errors of 0 and σ, its fourth moment is a normal's, and two
// sources (secret seeds) never draw the same values. In both trust modes the mean of a round's
// privatised pseudo-gradients carries noise of sigma * clip / k, within sampling error.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "privacy/gaussian_mechanism.h"

using namespace arch::privacy;

namespace {

double norm(const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += static_cast<double>(x) * x;
    return std::sqrt(s);
}

}  // namespace

TEST_CASE("clip_l2 scales a pseudo-gradient down to the bound, and leaves a smaller one as it is") {
    std::vector<float> big(1000, 0.5f), small(1000, 0.001f);
    CHECK(clip_l2(big, 2.0) == Approx(0.5 * std::sqrt(1000.0)));
    CHECK(norm(big) == Approx(2.0).epsilon(1e-6));
    const std::vector<float> before = small;
    CHECK(clip_l2(small, 2.0) == Approx(0.001 * std::sqrt(1000.0)));
    CHECK(small == before);
    CHECK_THROWS_AS(clip_l2(small, 0.0), arch::Error);
    std::vector<float> bad = {1.0f, NAN};
    CHECK_THROWS_AS(clip_l2(bad, 1.0), arch::Error);
}

TEST_CASE("the added noise has the stated standard deviation, mean zero and a normal's tails") {
    const std::size_t n = 1 << 22;
    const double sigma = 0.37;
    std::vector<float> v(n, 1.0f);
    NoiseSource noise;
    noise.add_noise(v, sigma);
    double sum = 0, sum2 = 0, sum4 = 0;
    for (float x : v) {
        const double e = x - 1.0;
        sum += e;
        sum2 += e * e;
        sum4 += e * e * e * e;
    }
    const double mean = sum / n, var = sum2 / n - mean * mean;
    // Standard errors: of the mean sigma/sqrt(n); of the sample standard deviation about sigma/sqrt(2n).
    CHECK(std::abs(mean) < 5 * sigma / std::sqrt(static_cast<double>(n)));
    CHECK(std::abs(std::sqrt(var) - sigma) < 5 * sigma / std::sqrt(2.0 * n));
    CHECK(sum4 / n / (var * var) == Approx(3.0).epsilon(0.02));  // a normal's kurtosis

    NoiseSource other;
    std::vector<float> a(64, 0.0f), b(64, 0.0f);
    noise.add_noise(a, 1.0);
    other.add_noise(b, 1.0);
    CHECK(a != b);
}

TEST_CASE("both trust modes put sigma * clip / k of noise on the mean of k pseudo-gradients") {
    const int k = 4;
    const std::size_t n = 1 << 20;
    const double clip = 0.5, sigma = 3.0;
    NoiseSource noise;
    for (const bool central : {true, false}) {
        INFO((central ? "central" : "distributed"));
        // Each island's Δ: a vector of norm 2, clipped to 0.5 first; the clean mean is known.
        std::vector<std::vector<float>> deltas(k, std::vector<float>(n, static_cast<float>(2.0 / std::sqrt(double(n)))));
        for (auto& d : deltas) {
            if (central) clip_l2(d, clip);
            else add_island_share(d, clip, sigma, k, noise);
        }
        if (central) add_central_noise(deltas[0], clip, sigma, noise);
        const double clean = 0.5 / std::sqrt(double(n));  // each coordinate after the clip
        double sum2 = 0;
        for (std::size_t i = 0; i < n; ++i) {
            double mean = 0;
            for (const auto& d : deltas) mean += d[i] / k;
            sum2 += (mean - clean) * (mean - clean);
        }
        const double want = sigma * clip / k, got = std::sqrt(sum2 / n);
        CHECK(std::abs(got - want) < 5 * want / std::sqrt(2.0 * n));
    }
    std::vector<float> d(8, 1.0f);
    CHECK_THROWS_AS(add_island_share(d, clip, sigma, 0, noise), arch::Error);
}
