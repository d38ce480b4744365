// core/digest.cpp: XXH3-128 from xxHash's header, inlined here (core/digest.h).
#include "core/digest.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>
#include <new>

namespace arch {
namespace {

Digest canonical(XXH128_hash_t hash) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, hash);
    Digest d;
    std::memcpy(d.data(), c.digest, d.size());
    return d;
}

}  // namespace

Digest xxh3_digest(std::span<const std::byte> bytes) { return canonical(XXH3_128bits(bytes.data(), bytes.size())); }

DigestStream::DigestStream() : state_(XXH3_createState()) {
    if (!state_) throw std::bad_alloc();
    XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

DigestStream::~DigestStream() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void DigestStream::add(std::span<const std::byte> bytes) {
    XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

Digest DigestStream::digest() const { return canonical(XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_))); }

}  // namespace arch
