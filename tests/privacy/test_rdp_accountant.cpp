// tests/privacy/test_rdp_accountant.cpp: privacy/rdp_accountant against Google's dp-accounting: the ε
// of the Poisson-subsampled Gaussian over a grid of (σ, sampling rate, rounds, δ) within 1% relative
// (tests/fixtures/dp_epsilon_grid.txt, written by make_dp_epsilon_grid.py beside it); the closed form
// at sampling rate 1; the σ found for a budget spends it; bad settings are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "privacy/rdp_accountant.h"

using namespace arch::privacy;
using Catch::Matchers::Contains;

TEST_CASE("epsilon equals dp-accounting's within 1% over a grid of noise, sampling rate, rounds and delta") {
    std::ifstream in("tests/fixtures/dp_epsilon_grid.txt");
    REQUIRE(in);
    int points = 0;
    double worst = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream f(line);
        double sigma, q, delta, theirs;
        uint64_t rounds;
        REQUIRE(f >> sigma >> q >> rounds >> delta >> theirs);
        INFO(line);
        const double ours = epsilon_spent(q, sigma, rounds, delta).epsilon;
        if (theirs == 0) {
            CHECK(ours == 0);
        } else {
            CHECK(std::abs(ours - theirs) <= 0.01 * theirs);
            worst = std::max(worst, std::abs(ours - theirs) / theirs);
        }
        ++points;
    }
    CHECK(points == 240);
    WARN("largest relative difference: " << worst);
}

TEST_CASE("at sampling rate 1 the Gaussian mechanism's closed form; nothing spent at rate 0") {
    for (double order : {1.5, 2.0, 32.0}) CHECK(rdp_per_round(1.0, 2.0, order) == Approx(order / 8));
    CHECK(epsilon_spent(0.0, 1.0, 1000, 1e-5).epsilon == 0);
    CHECK(std::isinf(rdp_per_round(0.5, 0.0, 2.0)));
    // More rounds, more spent; more noise, less.
    CHECK(epsilon_spent(0.5, 1.0, 100, 1e-5).epsilon > epsilon_spent(0.5, 1.0, 10, 1e-5).epsilon);
    CHECK(epsilon_spent(0.5, 2.0, 100, 1e-5).epsilon < epsilon_spent(0.5, 1.0, 100, 1e-5).epsilon);
}

TEST_CASE("the noise multiplier found for a budget spends it, and a smaller one would exceed it") {
    for (double q : {0.1, 1.0})
        for (double eps : {2.0, 8.0}) {
            INFO("q " << q << " epsilon " << eps);
            const double sigma = noise_for_epsilon(q, 40, eps, 1e-5);
            CHECK(epsilon_spent(q, sigma, 40, 1e-5).epsilon <= eps);
            CHECK(epsilon_spent(q, sigma * 0.999, 40, 1e-5).epsilon > eps * 0.99);
        }
}

TEST_CASE("impossible settings are refused with the setting named") {
    CHECK_THROWS_WITH(epsilon_spent(1.5, 1.0, 10, 1e-5), Contains("sampling rate"));
    CHECK_THROWS_WITH(epsilon_spent(0.5, -1.0, 10, 1e-5), Contains("noise multiplier"));
    CHECK_THROWS_WITH(epsilon_spent(0.5, 1.0, 10, 0.0), Contains("delta"));
    CHECK_THROWS_WITH(noise_for_epsilon(0.5, 10, 0.0, 1e-5), Contains("epsilon"));
}
