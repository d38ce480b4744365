// privacy/gaussian_mechanism.h: the two steps island-level DP applies to a pseudo-gradient, on flat
// spans: clip to an L2 bound, and add Gaussian noise. The noise comes from a generator seeded by the
// operating system's CSPRNG (libsodium's randombytes), never from the run's seed: noise that anyone
// could regenerate could be subtracted again. Norms are summed in double, in order.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace arch::privacy {

// Scales delta by min(1, bound / ||delta||_2) in place and returns the norm it had. bound > 0.
double clip_l2(std::span<float> delta, double bound);

// Standard normal draws: xoshiro256** and Box-Muller, seeded from the CSPRNG.
class NoiseSource {
public:
    NoiseSource();                        // a secret seed
    double normal();                      // N(0, 1)
    // values[i] += N(0, stddev^2), independently for every i.
    void add_noise(std::span<float> values, double stddev);

private:
    uint64_t next();
    std::array<uint64_t, 4> s_{};
    double spare_ = 0;
    bool has_spare_ = false;
};

}  // namespace arch::privacy
