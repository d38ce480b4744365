// tests/fuzz/fuzz_spec.cpp: libFuzzer target for the codec and aggregator spec parsers: any string
// either makes a codec/aggregator or throws arch::Error; a made codec encodes a small vector.
#include <string_view>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "outer_optimizer/aggregator.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view spec(reinterpret_cast<const char*>(data), size);
    try {
        auto codec = arch::compression::make_codec(spec);
        const std::vector<float> x = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f, -0.25f, 8.0f, 1e-3f, 7.0f};
        std::vector<float> y(x.size());
        arch::compression::decode(codec->encode(x), y);
    } catch (const arch::Error&) {
    }
    try {
        arch::outer::make_aggregator(spec);
    } catch (const arch::Error&) {
    }
    return 0;
}
