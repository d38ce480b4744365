// core/rng.h: a small, fully serialisable random generator (xoshiro256**, seeded by splitmix64).
// Used wherever results must repeat bit for bit across runs and machines: weight init, sampling,
// shuffled data order. Not for cryptography.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace arch {

class Rng {
public:
    explicit Rng(uint64_t seed = 0) { reseed(seed); }

    void reseed(uint64_t seed) {
        for (auto& s : state_) {
            seed += 0x9e3779b97f4a7c15ULL;
            uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            s = z ^ (z >> 31);
        }
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 24 random bits (exact in float).
    float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

    // Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32).
    uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64); }

    // Standard normal by Box-Muller (one value per call, two draws, deterministic).
    float normal() {
        const uint64_t a = next_u64();
        return box_muller(a, next_u64());
    }
    static float box_muller(uint64_t a, uint64_t b) {
        const double u1 = (static_cast<double>(a >> 11) + 1.0) * (1.0 / 9007199254740992.0);
        const double u2 = static_cast<double>(b >> 11) * (1.0 / 9007199254740992.0);
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }

    std::array<uint64_t, 4> state() const { return state_; }
    void set_state(const std::array<uint64_t, 4>& s) { state_ = s; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::array<uint64_t, 4> state_{};
};

// out[i] = scale * rng.normal() for every i: the same values as calling normal() in a loop. The draws
// are sequential; the transform (a log and a cosine each) runs on every OpenMP thread, so a model's
// init takes a fraction of the time (core/rng.cpp).
void fill_normal(Rng& rng, float* out, std::size_t count, float scale);

}  // namespace arch
