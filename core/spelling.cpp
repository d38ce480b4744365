// core/spelling.cpp: the edit distance behind closest_spelling.
#include "core/spelling.h"

#include <algorithm>

namespace arch {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[n][m];
}

}  // namespace

std::optional<std::string> closest_spelling(std::string_view word, const std::vector<std::string>& known) {
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    for (const std::string& k : known) {
        const std::size_t dist = edit_distance(word, k);
        if (!best || dist < best_distance) {
            best = k;
            best_distance = dist;
        }
    }
    // A typo changes a few characters; beyond a third of the word it is another word.
    const std::size_t limit = std::max<std::size_t>(2, std::max(word.size(), best ? best->size() : 0) / 3);
    if (!best || best_distance == 0 || best_distance > limit) return std::nullopt;
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& known, std::string_view prefix) {
    const std::optional<std::string> k = closest_spelling(word, known);
    return k ? " (did you mean '" + std::string(prefix) + *k + "'?)" : "";
}

}  // namespace arch
