// tests/peers/tiny_island.h: a tiny model (2 layers, C32, vocabulary 256) and an island's shard of
// random tokens, for tests that drive an IslandWorker directly, with no host or link; and the
// bit-for-bit comparison they make.
#pragma once

#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "core/param_layout.h"
#include "core/token_shard.h"
#include "peers/run_config.h"
#include "tests/core/temp_dir.h"

namespace arch::test {

inline std::vector<float> noise(std::size_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

struct TinyIsland {
    TempDir dir;
    ModelConfig model;
    TrainConfig train;
    TinyIsland() {
        std::mt19937 rng(5);
        std::vector<uint16_t> tokens(20'000);
        for (uint16_t& t : tokens) t = static_cast<uint16_t>(rng() % 256);
        write_token_shard(dir.file("island.bin"), tokens);
        const RunConfig c = parse_run_config(
            "[run]\nrounds = 4\n[model]\nlayers = 2\nchannels = 32\nheads = 2\nmax_seq_len = 16\nvocab = 256\n"
            "[inner]\nsteps_per_round = 4\nbatch = 2\nseq_len = 16\nwarmup = 2\n",
            "tiny.toml");
        model = run_model_config(c, 256);
        train = run_train_config(c, dir.file("island.bin"), "", 11);
    }
    std::vector<float> theta() const {  // a start the islands share
        return noise(ParamLayout(model).num_params(), 3, 0.02f);
    }
};

}  // namespace arch::test
