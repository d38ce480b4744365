// outer_optimizer/state_bytes.cpp: packs and validates saved optimizer state (layout: state_bytes.h).
#include "outer_optimizer/state_bytes.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/bytes.h"
#include "core/error.h"

namespace arch::outer::detail {
namespace {

constexpr char kMagic[4] = {'A', 'O', 'S', 'T'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeader = 32;

}  // namespace

std::size_t state_size(std::size_t arrays, std::size_t n) { return kHeader + arrays * n * 4; }

void write_state(StateKind kind, std::uint64_t steps, std::span<const std::span<const float>> arrays,
                 const std::function<void(std::span<const std::byte>)>& put) {
    const std::uint64_t n = arrays.empty() ? 0 : arrays[0].size();
    std::byte header[kHeader];
    std::memcpy(header, kMagic, 4);
    store_le<std::uint32_t>(header + 4, kVersion);
    store_le<std::uint32_t>(header + 8, static_cast<std::uint32_t>(kind));
    store_le<std::uint32_t>(header + 12, static_cast<std::uint32_t>(arrays.size()));
    store_le<std::uint64_t>(header + 16, n);
    store_le<std::uint64_t>(header + 24, steps);
    put(header);
    for (std::span<const float> a : arrays) {
        if (a.size() != n) throw Error("optimizer state arrays of different lengths");
        put(std::as_bytes(a));
    }
}

std::vector<std::vector<float>> unpack_state(std::span<const std::byte> bytes, StateKind kind,
                                             std::size_t n, std::size_t arrays,
                                             std::uint64_t& steps, std::string_view who) {
    const std::string name(who);
    if (bytes.size() < kHeader) {
        throw Error(name + " state of " + std::to_string(bytes.size()) +
                    " bytes is shorter than its 32-byte header");
    }
    const std::byte* p = bytes.data();
    if (std::memcmp(p, kMagic, 4) != 0) throw Error(name + " state has a bad magic (expected 'AOST')");
    if (load_le<std::uint32_t>(p + 4) != kVersion) {
        throw Error(name + " state has version " + std::to_string(load_le<std::uint32_t>(p + 4)) +
                    ", expected " + std::to_string(kVersion));
    }
    if (load_le<std::uint32_t>(p + 8) != static_cast<std::uint32_t>(kind)) {
        throw Error(name + " state was saved by another optimizer kind (" +
                    std::to_string(load_le<std::uint32_t>(p + 8)) + ")");
    }
    if (load_le<std::uint32_t>(p + 12) != arrays) {
        throw Error(name + " state holds " + std::to_string(load_le<std::uint32_t>(p + 12)) +
                    " buffers, expected " + std::to_string(arrays));
    }
    if (load_le<std::uint64_t>(p + 16) != n) {
        throw Error(name + " state is for " + std::to_string(load_le<std::uint64_t>(p + 16)) +
                    " parameters, this optimizer has " + std::to_string(n));
    }
    if (bytes.size() != kHeader + arrays * n * 4) {
        throw Error(name + " state is " + std::to_string(bytes.size()) + " bytes, expected " +
                    std::to_string(kHeader + arrays * n * 4));
    }
    std::vector<std::vector<float>> out(arrays, std::vector<float>(n));
    for (std::size_t a = 0; a < arrays; ++a) {
        if (n) std::memcpy(out[a].data(), p + kHeader + a * n * 4, n * 4);
        for (std::size_t i = 0; i < n; ++i) {
            if (!std::isfinite(out[a][i])) {
                throw Error(name + " state buffer " + std::to_string(a) + " element " +
                            std::to_string(i) + " is not finite");
            }
        }
    }
    steps = load_le<std::uint64_t>(p + 24);
    return out;
}

}  // namespace arch::outer::detail
