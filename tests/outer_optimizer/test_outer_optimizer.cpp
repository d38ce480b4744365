// tests/outer_optimizer/test_outer_optimizer.cpp: Nesterov against torch.optim.SGD(nesterov=True)
// (fixture tests/fixtures/nesterov_sgd.txt from make_nesterov_fixture.py), plain averaging, Delayed
// Nesterov against the paper's equations, state save/load, and thread-count independence.
#include <catch2/catch.hpp>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "outer_optimizer/outer_optimizer.h"

using namespace arch::outer;

namespace {

std::vector<float> read_line(std::istream& in) {
    std::string line;
    std::getline(in, line);
    std::istringstream s(line);
    std::vector<float> v;
    float x;
    while (s >> x) v.push_back(x);
    return v;
}

std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

}  // namespace

TEST_CASE("Nesterov matches torch.optim.SGD(nesterov=True) to 1e-6 over 10 steps", "[outer]") {
    std::ifstream in("tests/fixtures/nesterov_sgd.txt");
    REQUIRE(in.good());
    std::size_t n = 0, steps = 0;
    float lr = 0, mu = 0;
    {
        std::string header;
        std::getline(in, header);
        std::istringstream(header) >> n >> steps >> lr >> mu;
    }
    REQUIRE(n == 64);
    REQUIRE(steps == 10);
    std::vector<float> theta = read_line(in);
    REQUIRE(theta.size() == n);
    Nesterov opt(n, {lr, mu});
    REQUIRE(opt.options().lr == 0.7f);
    REQUIRE(opt.options().momentum == 0.9f);
    for (std::size_t s = 0; s < steps; ++s) {
        const std::vector<float> g = read_line(in), want = read_line(in);
        REQUIRE(g.size() == n);
        REQUIRE(want.size() == n);
        opt.step(theta, g);
        for (std::size_t i = 0; i < n; ++i) {
            INFO("step " << s << " element " << i << ": " << double(theta[i]) << " vs torch "
                          << double(want[i]));
            REQUIRE(std::fabs(theta[i] - want[i]) <= 1e-6);
        }
    }
    REQUIRE(opt.steps() == 10);
}

TEST_CASE("defaults are DiLoCo's lr 0.7, momentum 0.9; averaging is lr 1, momentum 0", "[outer]") {
    REQUIRE(NesterovOptions{}.lr == 0.7f);
    REQUIRE(NesterovOptions{}.momentum == 0.9f);
    // Averaging: theta - mean_i(theta - theta_i) = mean_i(theta_i), every round, no memory.
    Nesterov avg = make_averaging(4);
    std::vector<float> theta = {1, 2, 3, 4};
    for (int round = 0; round < 3; ++round) {
        const std::vector<float> delta = {0.5f, -1.0f, 0.25f, 0.0f};
        avg.step(theta, delta);
    }
    REQUIRE(theta == std::vector<float>{1 - 1.5f, 2 + 3.0f, 3 - 0.75f, 4});
    std::vector<float> wrong(3);
    REQUIRE_THROWS_AS(avg.step(theta, wrong), arch::Error);
}

TEST_CASE("Delayed Nesterov follows the paper's equations", "[outer][delayed]") {
    const std::size_t n = 257;
    for (std::uint32_t period : {1u, 3u, 4u}) {
        for (float c : {0.0f, 0.1f}) {
            if (c > 1.0f / float(period)) continue;
            INFO("N=" << period << " c=" << c);
            const float lr = 0.7f, beta = 0.9f;
            DelayedNesterov opt(n, {lr, beta, period, c});
            std::vector<float> theta = random_vector(n, 1);
            // Reference: the paper's algorithm written out directly, in double.
            std::vector<double> th(theta.begin(), theta.end()), m(n, 0.0), buf(n, 0.0);
            for (int t = 0; t < 13; ++t) {
                const std::vector<float> g = random_vector(n, 100 + t, 0.1f);
                opt.step(theta, g);
                const bool mom = (t + 1) % period == 0;
                for (std::size_t i = 0; i < n; ++i) {
                    buf[i] += g[i];
                    if (mom) {
                        m[i] = beta * m[i] + buf[i] / period;
                        th[i] -= lr * ((1 - c * period + c) * beta * m[i] + g[i] / double(period));
                        buf[i] = 0;
                    } else {
                        th[i] -= lr * (c * beta * m[i] + g[i] / double(period));
                    }
                }
                for (std::size_t i = 0; i < n; ++i) REQUIRE(std::fabs(theta[i] - th[i]) <= 1e-5);
            }
        }
    }
}

TEST_CASE("Delayed Nesterov with N = 1 is Nesterov, bit for bit", "[outer][delayed]") {
    const std::size_t n = 1000;
    DelayedNesterov dn(n, {0.7f, 0.9f, 1, 0.0f});
    Nesterov nes(n);
    std::vector<float> a = random_vector(n, 2), b = a;
    for (int t = 0; t < 10; ++t) {
        const auto g = random_vector(n, 200 + t);
        dn.step(a, g);
        nes.step(b, g);
    }
    REQUIRE(a == b);
}

TEST_CASE("Delayed Nesterov moves momentum only every N steps", "[outer][delayed]") {
    DelayedNesterov dn(3, {0.5f, 0.9f, 3, 0.0f});
    std::vector<float> theta = {0, 0, 0};
    const std::vector<float> g = {1, 2, 3};
    dn.step(theta, g);
    dn.step(theta, g);
    for (float v : dn.momentum()) REQUIRE(v == 0.0f);
    REQUIRE(dn.buffer()[2] == 6.0f);
    dn.step(theta, g);
    REQUIRE(dn.momentum()[1] == Approx(2.0f));  // beta*0 + (2+2+2)/3
    REQUIRE(dn.buffer()[1] == 0.0f);
    REQUIRE_THROWS_AS(DelayedNesterov(3, {0.5f, 0.9f, 0, 0.0f}), arch::Error);
    REQUIRE_THROWS_AS(DelayedNesterov(3, {0.5f, 0.9f, 4, 0.5f}), arch::Error);
}

TEST_CASE("optimizer state saves, loads and continues bit-identically", "[outer][state]") {
    const std::size_t n = 300;
    Nesterov a(n);
    DelayedNesterov da(n, {0.7f, 0.9f, 3, 0.0f});
    std::vector<float> pa = random_vector(n, 3), pd = pa;
    for (int t = 0; t < 4; ++t) {
        a.step(pa, random_vector(n, 300 + t));
        da.step(pd, random_vector(n, 300 + t));
    }
    Nesterov b(n);
    b.load_state(a.save_state());
    DelayedNesterov db(n, {0.7f, 0.9f, 3, 0.0f});
    db.load_state(da.save_state());
    REQUIRE(b.steps() == 4);
    REQUIRE(db.steps() == 4);
    std::vector<float> pb = pa, pdb = pd;
    for (int t = 4; t < 9; ++t) {
        const auto g = random_vector(n, 300 + t);
        a.step(pa, g);
        b.step(pb, g);
        da.step(pd, g);
        db.step(pdb, g);
    }
    REQUIRE(pa == pb);
    REQUIRE(pd == pdb);
}

TEST_CASE("bad optimizer state is rejected and leaves the optimizer unchanged", "[outer][state]") {
    Nesterov a(10);
    std::vector<float> p(10, 1.0f);
    a.step(p, std::vector<float>(10, 0.5f));
    const auto good = a.save_state();
    Nesterov b(10);
    auto expect_reject = [&](std::vector<std::byte> bytes, const char* says) {
        INFO(says);
        REQUIRE_THROWS_WITH(b.load_state(bytes), Catch::Contains(says));
        REQUIRE(b.steps() == 0);
        for (float v : b.momentum()) REQUIRE(v == 0.0f);
    };
    expect_reject({good.begin(), good.begin() + 20}, "shorter");
    expect_reject({good.begin(), good.end() - 1}, "bytes, expected");
    auto bad = good;
    bad.push_back(std::byte{0});
    expect_reject(bad, "bytes, expected");
    bad = good;
    bad[0] = std::byte{'x'};
    expect_reject(bad, "magic");
    bad = good;
    bad[4] = std::byte{9};
    expect_reject(bad, "version");
    bad = good;
    bad[8] = std::byte{2};
    expect_reject(bad, "another optimizer kind");
    bad = good;
    bad[16] = std::byte{11};
    expect_reject(bad, "for 11 parameters");
    bad = good;
    const float nan = NAN;
    std::memcpy(bad.data() + 32 + 4 * 3, &nan, 4);
    expect_reject(bad, "element 3 is not finite");
    DelayedNesterov d(10, {0.7f, 0.9f, 2, 0.0f});
    REQUIRE_THROWS_WITH(d.load_state(good), Catch::Contains("another optimizer kind"));
}

TEST_CASE("outer steps are bit-identical on 1 and 2 threads", "[outer]") {
    const std::size_t n = (1 << 19) + 5;  // above the OpenMP threshold
    std::vector<float> results[2];
    for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        Nesterov opt(n);
        DelayedNesterov dn(n, {0.7f, 0.9f, 2, 0.0f});
        std::vector<float> p = random_vector(n, 4);
        for (int t = 0; t < 3; ++t) {
            const auto g = random_vector(n, 400 + t);
            opt.step(p, g);
            dn.step(p, g);
        }
        results[threads - 1] = p;
    }
    omp_set_num_threads(2);
    REQUIRE(results[0] == results[1]);
}
