// core/digest.h: XXH3-128 of bytes, whole or a piece at a time: a transfer's chunk and blob checksums
// (net/transfer_wire.h) and θ's hash (diloco::Checksum). xxHash's code is compiled in from its header
// (XXH_INLINE_ALL), so it runs at the build's CPU level (docs/build.md, "The CPU level"): the shared
// library Debian ships is built for the baseline x86-64.
#pragma once

#include <array>
#include <cstddef>
#include <span>

namespace arch {

using Digest = std::array<std::byte, 16>;  // XXH3-128, canonical (big-endian) bytes

Digest xxh3_digest(std::span<const std::byte> bytes);

// The digest of bytes given a piece at a time, in order: the same as xxh3_digest() of them joined.
class DigestStream {
public:
    DigestStream();
    ~DigestStream();
    DigestStream(const DigestStream&) = delete;
    DigestStream& operator=(const DigestStream&) = delete;
    void add(std::span<const std::byte> bytes);
    Digest digest() const;

private:
    void* state_;  // an XXH3_state_t
};

}  // namespace arch
