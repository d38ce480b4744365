// core/sampling.h: autoregressive generation from a Model: temperature and top-k sampling with a
// seeded Rng (so a sample repeats), over a sliding window of at most max T tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/model.h"

namespace arch {

struct SamplingConfig {
    int max_new_tokens = 200;
    float temperature = 0.8f;  // <= 0: greedy
    int top_k = 40;            // <= 0: the whole vocabulary
    uint64_t seed = 1;
    int stop_token = -1;       // stop after emitting this token (e.g. end of text); -1: never
};

// Returns the new tokens; on_token (if set) sees each as it is produced.
std::vector<int> generate(Model& model, std::vector<int> prompt, const SamplingConfig& config,
                          const std::function<void(int)>& on_token = {});

}  // namespace arch
