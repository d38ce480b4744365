// tests/compression/codec_test_data.h: inputs shared by the codec tests: seeded Gaussian data and
// the adversarial sets (zeros, huge, denormals, all equal, one outlier, odd sizes).
#pragma once

#include <cfloat>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace arch::compression::testing {

inline std::vector<float> gaussian(std::size_t n, std::uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, sigma);
    std::vector<float> x(n);
    for (float& v : x) v = d(rng);
    return x;
}

// Named inputs that stress a codec's edge cases.
inline std::vector<std::pair<std::string, std::vector<float>>> adversarial_inputs() {
    std::vector<std::pair<std::string, std::vector<float>>> sets;
    sets.emplace_back("empty", std::vector<float>{});
    sets.emplace_back("one", std::vector<float>{-0.3f});
    sets.emplace_back("zeros", std::vector<float>(1001, 0.0f));
    sets.emplace_back("all equal", std::vector<float>(777, 7.5f));
    sets.emplace_back("gaussian odd size", gaussian(4099, 7));
    std::vector<float> huge = gaussian(1000, 8);
    for (std::size_t i = 0; i < huge.size(); ++i) huge[i] *= (i % 3 == 0) ? 1e38f : 1e30f;
    huge[5] = FLT_MAX;
    huge[6] = -FLT_MAX;
    sets.emplace_back("huge", huge);
    std::vector<float> denormal = gaussian(1000, 9);
    for (float& v : denormal) v *= 1e-40f;  // subnormal floats
    denormal[3] = FLT_TRUE_MIN;
    sets.emplace_back("denormals", denormal);
    std::vector<float> outlier = gaussian(2048, 10, 1e-3f);
    outlier[1000] = 1e20f;
    sets.emplace_back("one outlier", outlier);
    std::vector<float> mixed = gaussian(3000, 11);
    for (std::size_t i = 0; i < mixed.size(); i += 7) mixed[i] = 0.0f;
    for (std::size_t i = 3; i < mixed.size(); i += 11) mixed[i] = -mixed[i] * 1e6f;
    sets.emplace_back("mixed scales", mixed);
    return sets;
}

inline double rel_l2(const std::vector<float>& x, const std::vector<float>& y) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        den += double(x[i]) * x[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace arch::compression::testing
