// core/spelling.h: "did you mean ...?" for a misspelled name (a run.toml key, a command-line flag):
// the known name closest by edit distance (Damerau-Levenshtein, adjacent swaps count once), if it is
// close enough to be a typo rather than another word.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arch {

std::optional<std::string> closest_spelling(std::string_view word, const std::vector<std::string>& known);

// " (did you mean 'X'?)" naming quote + X + quote, or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& known, std::string_view prefix = "");

}  // namespace arch
