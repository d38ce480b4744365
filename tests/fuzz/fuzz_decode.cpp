// tests/fuzz/fuzz_decode.cpp: libFuzzer target for one codec's decoder, chosen at compile time by
// FUZZ_CODEC_ID: the input's codec byte is forced to it, so every target drives its own decoder.
// Contract checked: decode either throws arch::Error or fills the output with finite floats; a buffer
// decode takes, held (HeldPayload) and decoded a slice at a time, gives the same floats bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    if (size) std::memcpy(bytes.data(), data, size);
    if (size > 5) bytes[5] = static_cast<std::byte>(FUZZ_CODEC_ID);
    try {
        const arch::compression::WireInfo info = arch::compression::inspect(bytes);
        if (info.count > (1u << 22)) return 0;  // keep memory bounded; sizes are checked already
        std::vector<float> out(info.count);
        arch::compression::decode(bytes, out);
        for (float v : out) {
            if (!std::isfinite(v)) std::abort();
        }
        const arch::compression::HeldPayload held(bytes, info.count);
        // The last byte picks the slice: a number of blocks, at most the buffer (a block can be longer).
        const std::uint64_t slice = std::min<std::uint64_t>(held.alignment() * (1 + static_cast<std::uint64_t>(data[size - 1])), info.count);
        std::vector<float> part(slice);
        for (std::uint64_t first = 0; slice > 0 && first < info.count; first += slice) {
            const std::uint64_t len = std::min<std::uint64_t>(slice, info.count - first);
            held.decode(first, std::span(part).first(len));
            if (std::memcmp(part.data(), out.data() + first, len * sizeof(float)) != 0) std::abort();
        }
    } catch (const arch::Error&) {
    }
    return 0;
}
