// privacy/gaussian_mechanism.cpp: clip_l2 and NoiseSource (gaussian_mechanism.h).
#include "privacy/gaussian_mechanism.h"

#include <sodium.h>

#include <array>
#include <cmath>
#include <string>

#include "core/error.h"

namespace arch::privacy {

double clip_l2(std::span<float> delta, double bound) {
    if (!(bound > 0)) throw Error("privacy: the clip bound must be above 0, got " + std::to_string(bound));
    double sum = 0;
    for (float x : delta) sum += static_cast<double>(x) * x;
    const double norm = std::sqrt(sum);
    if (!std::isfinite(norm)) throw Error("privacy: a pseudo-gradient with a non-finite norm cannot be clipped");
    if (norm > bound) {
        const auto scale = static_cast<float>(bound / norm);
        for (float& x : delta) x *= scale;
    }
    return norm;
}

NoiseSource::NoiseSource() {
    if (sodium_init() < 0) throw Error("privacy: libsodium failed to initialise");
    std::array<uint64_t, 4> state{};
    do randombytes_buf(state.data(), sizeof(state));
    while (state == std::array<uint64_t, 4>{});  // xoshiro's one state that never leaves zero
    rng_.set_state(state);
}

double NoiseSource::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    // Box-Muller on u1 in (0, 1] and u2 in [0, 1): 53-bit uniforms.
    const double u1 = (static_cast<double>(rng_.next_u64() >> 11) + 1.0) * 0x1.0p-53;
    const double u2 = static_cast<double>(rng_.next_u64() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2 * M_PI * u2);
}

void NoiseSource::add_noise(std::span<float> values, double stddev) {
    if (!(stddev >= 0) || !std::isfinite(stddev))
        throw Error("privacy: a noise standard deviation of " + std::to_string(stddev));
    for (float& x : values) x += static_cast<float>(stddev * normal());
}

void add_island_share(std::span<float> delta, double clip, double sigma, int honest, NoiseSource& noise) {
    if (honest < 1) throw Error("privacy: the noise is shared by at least 1 honest island, got " + std::to_string(honest));
    clip_l2(delta, clip);
    noise.add_noise(delta, sigma * clip / std::sqrt(static_cast<double>(honest)));
}

void add_central_noise(std::span<float> first, double clip, double sigma, NoiseSource& noise) {
    noise.add_noise(first, sigma * clip);
}

}  // namespace arch::privacy
