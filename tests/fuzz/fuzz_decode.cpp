// tests/fuzz/fuzz_decode.cpp: libFuzzer target for one codec's decoder, chosen at compile time by
// FUZZ_CODEC_ID: the input's codec byte is forced to it, so every target drives its own decoder.
// Contract checked: decode either throws arch::Error or fills the output with finite floats; a buffer
// decode takes, held (HeldPayload, copied and in its zstd frames) and decoded a slice at a time, gives
// the same floats bit for bit; a buffer decode refuses, held in its frames, is refused too.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "core/error.h"

namespace {

using arch::compression::HeldPayload;

// Every slice of `held` against `whole`; `pick` sets the slice's length in blocks.
void check_slices(const HeldPayload& held, const std::vector<float>& whole, std::uint8_t pick) {
    const std::uint64_t count = whole.size();
    const std::uint64_t slice = std::min<std::uint64_t>(held.alignment() * (1 + static_cast<std::uint64_t>(pick)), count);
    std::vector<float> part(slice);
    for (std::uint64_t first = 0; slice > 0 && first < count; first += slice) {
        const std::uint64_t len = std::min<std::uint64_t>(slice, count - first);
        held.decode(first, std::span(part).first(len));
        if (std::memcmp(part.data(), whole.data() + first, len * sizeof(float)) != 0) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> bytes(size);
    if (size) std::memcpy(bytes.data(), data, size);
    if (size > 5) bytes[5] = static_cast<std::byte>(FUZZ_CODEC_ID);
    std::uint64_t count = 0;
    std::vector<float> out;
    bool decoded = false;
    try {
        const arch::compression::WireInfo info = arch::compression::inspect(bytes);
        if (info.count > (1u << 22)) return 0;  // keep memory bounded; sizes are checked already
        count = info.count;
        out.resize(count);
        arch::compression::decode(bytes, out);
        for (float v : out) {
            if (!std::isfinite(v)) std::abort();
        }
        decoded = true;
        check_slices(HeldPayload(bytes, count), out, data[size - 1]);
    } catch (const arch::Error&) {
        if (decoded) std::abort();  // decode took it: held whole, it must be taken too
    }
    if (count == 0 && !decoded) return 0;  // no header: nothing to hold
    bool framed = false;
    try {
        const HeldPayload frames(bytes, count, HeldPayload::Keep::frames);
        framed = true;
        if (decoded) check_slices(frames, out, data[size - 1]);
    } catch (const arch::Error&) {
        if (decoded && framed) std::abort();  // a slice of a buffer decode took failed
    }
    if (framed != decoded) std::abort();  // held in its frames, a buffer is taken exactly when decode takes it
    return 0;
}
