// tests/fuzz/fuzz_outer_state.cpp: libFuzzer target for OuterOptimizer::load_state (Nesterov and
// Delayed Nesterov): bytes either load or throw arch::Error; a loaded optimizer steps finitely.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "outer_optimizer/outer_optimizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    if (size) std::memcpy(bytes.data(), data, size);
    std::uint64_t n = 16;  // the optimizer size the header claims, when it is small
    if (size >= 24) {
        std::memcpy(&n, data + 16, 8);
        if (n > 4096) n = 16;
    }
    arch::outer::Nesterov nesterov(n);
    arch::outer::DelayedNesterov delayed(n, {0.7f, 0.9f, 4, 0.0f});
    for (arch::outer::OuterOptimizer* opt : {static_cast<arch::outer::OuterOptimizer*>(&nesterov),
                                             static_cast<arch::outer::OuterOptimizer*>(&delayed)}) {
        try {
            opt->load_state(bytes);
            std::vector<float> p(n, 1.0f), g(n, 0.5f);
            opt->step(p, g);
            for (float v : p) {
                if (!std::isfinite(v)) std::abort();
            }
        } catch (const arch::Error&) {
        }
    }
    return 0;
}
