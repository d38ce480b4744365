// core/sampling.cpp: generate(): one forward over the window per new token (no KV cache: the CPU
// reference favours simplicity; windows are at most max T long).
#include "core/sampling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"

namespace arch {

namespace {
int pick(std::vector<float> logits, const SamplingConfig& c, Rng& rng) {
    const int V = static_cast<int>(logits.size());
    if (c.temperature <= 0.0f) return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    std::vector<int> order(V);
    for (int i = 0; i < V; ++i) order[i] = i;
    const int k = (c.top_k > 0 && c.top_k < V) ? c.top_k : V;
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    const float maxval = logits[order[0]];
    std::vector<double> probs(k);
    double sum = 0.0;
    for (int i = 0; i < k; ++i) sum += probs[i] = std::exp((logits[order[i]] - maxval) / c.temperature);
    double u = rng.uniform() * sum;
    for (int i = 0; i < k; ++i) {
        u -= probs[i];
        if (u <= 0.0) return order[i];
    }
    return order[k - 1];
}
}  // namespace

std::vector<int> generate(Model& model, std::vector<int> prompt, const SamplingConfig& c,
                          const std::function<void(int)>& on_token) {
    if (prompt.empty()) throw Error("generate: the prompt needs at least one token");
    Rng rng(c.seed);
    const int max_T = model.config().max_seq_len;
    std::vector<int> out;
    for (int n = 0; n < c.max_new_tokens; ++n) {
        const int T = std::min<int>(static_cast<int>(prompt.size()), max_T);
        const int* window = prompt.data() + prompt.size() - T;
        model.forward(window, nullptr, 1, T);
        const int token = pick(model.logits_at(0, T - 1), c, rng);
        prompt.push_back(token);
        out.push_back(token);
        if (on_token) on_token(token);
        if (token == c.stop_token) break;
    }
    return out;
}

}  // namespace arch
