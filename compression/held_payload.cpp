// compression/held_payload.cpp: HeldPayload. Each codec's slice is the same decoder run on the part of
// the payload those positions use: blockwise codecs ([block scales][codes], blocks a multiple of 8
// elements, so a block's codes start on a byte) take the slice's scales and codes; fp32, fp16 and
// bf16 their values; uint8 its codebook and codes.
#include "compression/held_payload.h"

#include <algorithm>
#include <string>

#include "compression/detail.h"
#include "core/error.h"

namespace arch::compression {

namespace {
// Bits of code per element of a blockwise codec.
std::uint64_t code_bits(CodecId id) {
    switch (id) {
        case CodecId::int8: return 8;
        case CodecId::int4:
        case CodecId::fp4: return 4;
        case CodecId::sign: return 1;
        default: return 0;
    }
}
}  // namespace

std::uint64_t slice_length(std::uint64_t alignment) {
    constexpr std::uint64_t kSlice = std::uint64_t{1} << 20;
    return alignment >= kSlice ? alignment : alignment * (kSlice / alignment);
}

HeldPayload::HeldPayload(std::span<const std::byte> encoded, std::uint64_t count) {
    Payload p = open_payload(encoded, count);  // header, sizes, zstd frames, scales: all checked
    info_ = p.info;
    if (info_.zstd) payload_ = std::move(p.decompressed);
    else payload_.assign(p.body.begin(), p.body.end());
    if (info_.codec == CodecId::topk) {
        whole_.resize(count);
        detail::decode_payload(info_.codec, info_.block, payload_, whole_);
        payload_ = {};
    }
}

std::uint64_t HeldPayload::alignment() const { return detail::is_blockwise(info_.codec) ? info_.block : 1; }

std::size_t HeldPayload::bytes_held() const { return payload_.size() + whole_.size() * sizeof(float); }

void HeldPayload::decode(std::uint64_t first, std::span<float> out) const {
    const std::uint64_t n = out.size();
    if (first > info_.count || n > info_.count - first)
        throw Error("a slice [" + std::to_string(first) + ", " + std::to_string(first + n) + ") of a buffer of " +
                    std::to_string(info_.count) + " values");
    if (first % alignment() != 0)
        throw Error("a slice at " + std::to_string(first) + " does not start on a block of " + std::to_string(alignment()));
    if (n == 0) return;
    const std::byte* p = payload_.data();
    switch (info_.codec) {
        case CodecId::topk:
            std::copy(whole_.begin() + static_cast<std::ptrdiff_t>(first),
                      whole_.begin() + static_cast<std::ptrdiff_t>(first + n), out.begin());
            return;
        case CodecId::fp32:
            return detail::decode_payload(info_.codec, 0, std::span(p + 4 * first, 4 * n), out);
        case CodecId::fp16:
        case CodecId::bf16:
            return detail::decode_payload(info_.codec, 0, std::span(p + 2 * first, 2 * n), out);
        case CodecId::uint8_sigma: {
            constexpr std::size_t kBook = 256 * 4;  // the codebook: 256 fp32 bin means
            slice_.assign(p, p + kBook);
            slice_.insert(slice_.end(), p + kBook + first, p + kBook + first + n);
            return detail::decode_payload(info_.codec, 0, slice_, out);
        }
        default: {  // blockwise
            const std::uint64_t block = info_.block, blocks = detail::blocks_of(info_.count, info_.block);
            const std::uint64_t b0 = first / block, nb = detail::blocks_of(n, info_.block);
            const std::uint64_t bits = code_bits(info_.codec);
            const std::byte* codes = p + 4 * blocks;
            slice_.assign(p + 4 * b0, p + 4 * (b0 + nb));
            slice_.insert(slice_.end(), codes + first * bits / 8, codes + (first * bits + n * bits + 7) / 8);
            return detail::decode_payload(info_.codec, info_.block, slice_, out);
        }
    }
}

}  // namespace arch::compression
