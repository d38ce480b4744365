// privacy/gaussian_mechanism.h: the two steps island-level DP applies to a pseudo-gradient, on flat
// spans: clip to an L2 bound, and add Gaussian noise. The noise comes from a generator seeded by the
// operating system's CSPRNG (libsodium's randombytes), never from the run's seed: noise that anyone
// could regenerate could be subtracted again. Norms are summed in double, in order.
#pragma once

#include <cstdint>
#include <span>

#include "core/rng.h"

namespace arch::privacy {

// Scales delta by min(1, bound / ||delta||_2) in place and returns the norm it had. bound > 0.
double clip_l2(std::span<float> delta, double bound);

// Standard normal draws: core/rng.h's xoshiro256** (its state drawn from the CSPRNG) and Box-Muller,
// both values of each pair used.
class NoiseSource {
public:
    NoiseSource();                        // a secret seed
    double normal();                      // N(0, 1)
    // values[i] += N(0, stddev^2), independently for every i.
    void add_noise(std::span<float> values, double stddev);

private:
    Rng rng_;
    double spare_ = 0;
    bool has_spare_ = false;
};

// The two trust modes of DP-FedAvg on one round. Either way the sum of the round's clipped
// pseudo-gradients carries N(0, (sigma * clip)^2) noise per coordinate, so the mean over k islands
// carries sigma * clip / k:
// - distributed: each island clips its own Δ and adds its share, N(0, (sigma * clip)^2 / honest), before
//   it encodes it; the shares of `honest` islands make up the whole noise;
// - central: the host clips each Δ it received and adds the whole noise to the sum (here: to `first`,
//   one of the round's clipped pseudo-gradients, which an unweighted mean then divides by k).
void add_island_share(std::span<float> delta, double clip, double sigma, int honest, NoiseSource& noise);
void add_central_noise(std::span<float> first, double clip, double sigma, NoiseSource& noise);

}  // namespace arch::privacy
