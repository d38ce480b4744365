// tests/test_bytes.h: byte buffers for tests, as the code takes them (std::byte): from small
// integers, one value repeated, random, or a string's characters.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/bytes.h"

namespace arch::test {

inline std::vector<std::byte> bytes_of(std::initializer_list<unsigned> values) {
    std::vector<std::byte> out;
    for (const unsigned v : values) out.push_back(static_cast<std::byte>(v));
    return out;
}
inline std::vector<std::byte> filled(std::size_t n, unsigned value) { return std::vector<std::byte>(n, static_cast<std::byte>(value)); }
inline std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> out(n);
    for (std::byte& b : out) b = static_cast<std::byte>(rng());
    return out;
}
inline std::vector<std::byte> text_bytes(const std::string& text) {
    const std::span<const std::byte> b = byte_view(text);
    return {b.begin(), b.end()};
}

inline std::string text_of(std::span<const std::byte> bytes) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace arch::test
