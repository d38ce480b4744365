// compression/held_payload.cpp: HeldPayload. Each codec's slice is the same decoder run on the part of
// the payload those positions use: blockwise codecs ([block scales][codes], blocks a multiple of 8
// elements, so a block's codes start on a byte) take the slice's scales and codes; fp32, fp16 and
// bf16 their values; uint8 its codebook and codes; topk walks its index list from the mark before the
// slice.
#include "compression/held_payload.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "compression/detail.h"
#include "core/bytes.h"
#include "core/error.h"

namespace arch::compression {
namespace {

// The bytes the codes of m values take in a blockwise payload ([scales][codes]).
std::uint64_t code_bytes(CodecId id, std::uint32_t block, std::uint64_t m) {
    return detail::payload_bytes_limit(id, block, m) - 4 * detail::blocks_of(m, block);
}

}  // namespace

std::uint64_t slice_length(std::uint64_t alignment) {
    constexpr std::uint64_t kSlice = std::uint64_t{1} << 20;
    return alignment >= kSlice ? alignment : alignment * (kSlice / alignment);
}

HeldPayload::HeldPayload(std::span<const std::byte> encoded, std::uint64_t count, Keep keep, std::vector<std::byte> reuse) {
    if (keep == Keep::frames) {
        const WireInfo info = inspect(encoded);
        if (info.zstd && detail::is_blockwise(info.codec)) {  // `reuse` is let go: no copy is made
            open_frames(encoded, info, count);
            return;
        }
        keep = Keep::borrow;
    }
    Payload p = open_payload(encoded, count, std::move(reuse));  // header, sizes, zstd frames, scales: all checked
    info_ = p.info;
    payload_ = std::move(p.decompressed);  // out of the zstd stage, or the memory given, unused so far
    if (!info_.zstd && keep == Keep::copy) payload_.assign(p.body.begin(), p.body.end());
    body_ = info_.zstd || keep == Keep::copy ? std::span<const std::byte>(payload_) : p.body;
    if (info_.codec == CodecId::topk) (void)detail::check_topk(body_, count, &topk_marks_);  // checked once more, marked
}

HeldPayload::HeldPayload(HeldPayload&&) noexcept = default;
HeldPayload& HeldPayload::operator=(HeldPayload&&) noexcept = default;
HeldPayload::~HeldPayload() = default;

void HeldPayload::open_frames(std::span<const std::byte> encoded, const WireInfo& info, std::uint64_t count) {
    info_ = info;
    detail::require_count(info_, count);
    body_ = encoded.subspan(kWireHeaderBytes);
    frames_ = std::make_unique<detail::ZstdChunks>(body_, info_.payload_bytes);
    // Every chunk once, as decode would: what does not decompress is refused before anything uses it.
    const std::uint64_t scale_bytes = 4 * detail::blocks_of(count, info_.block);
    if (scale_bytes > info_.payload_bytes) throw Error("corrupt payload: shorter than its scales");
    scales_.resize(scale_bytes);
    chunk_.resize(frames_->chunk_bytes() < info_.payload_bytes ? frames_->chunk_bytes() : info_.payload_bytes);
    std::byte last{0};
    for (std::uint32_t c = 0; c < frames_->count(); ++c) {
        const std::uint64_t from = std::uint64_t(c) * frames_->chunk_bytes(), len = frames_->raw_length(c);
        frames_->take(c, chunk_.data());
        if (from < scale_bytes) std::copy_n(chunk_.data(), std::min(len, scale_bytes - from), scales_.data() + from);
        last = chunk_[len - 1];
        chunk_at_ = c;
    }
    detail::check_blockwise_parts(info_.codec, scales_, last, info_.block, count);
}

void HeldPayload::decode_frames(std::uint64_t first, std::span<float> out) const {
    const std::uint64_t n = out.size(), block = info_.block;
    const std::uint64_t b0 = first / block, nb = detail::blocks_of(n, info_.block);
    slice_.assign(scales_.begin() + 4 * b0, scales_.begin() + 4 * (b0 + nb));
    // The slice's codes, out of the chunks they lie in: read in order, each chunk is taken out once.
    std::uint64_t at = 4 * detail::blocks_of(info_.count, info_.block) + code_bytes(info_.codec, info_.block, first);
    std::uint64_t left = code_bytes(info_.codec, info_.block, n);
    while (left > 0) {
        const auto c = static_cast<std::uint32_t>(at / frames_->chunk_bytes());
        if (chunk_at_ != c) {
            frames_->take(c, chunk_.data());
            chunk_at_ = c;
        }
        const std::uint64_t from = at - std::uint64_t(c) * frames_->chunk_bytes();
        const std::uint64_t len = std::min(left, frames_->raw_length(c) - from);
        slice_.insert(slice_.end(), chunk_.begin() + from, chunk_.begin() + from + len);
        at += len;
        left -= len;
    }
    detail::decode_payload(info_.codec, info_.block, slice_, out);
}

std::vector<std::byte> HeldPayload::release_buffer() {
    body_ = {};
    frames_.reset();
    topk_marks_ = {};
    return std::move(payload_);
}

std::uint64_t HeldPayload::alignment() const { return detail::slice_alignment(info_.codec, info_.block); }

float HeldPayload::magnitude_bound() const {
    const auto largest = [](const std::byte* floats, std::uint64_t n) {
        float most = 0.0f;
        for (std::uint64_t i = 0; i < n; ++i) most = std::max(most, std::fabs(load_le<float>(floats + 4 * i)));
        return most;
    };
    const std::uint64_t blocks = info_.block ? detail::blocks_of(info_.count, info_.block) : 0;
    const std::byte* scale = scales();
    // Each decoder gives code × scale, clamped to ±FLT_MAX: the largest code's magnitude per codec.
    switch (info_.codec) {
        case CodecId::int8: return 128.0f * largest(scale, blocks);
        case CodecId::int4: return 8.0f * largest(scale, blocks);
        case CodecId::fp4: return 6.0f * largest(scale, blocks);
        case CodecId::sign: return largest(scale, blocks);
        case CodecId::uint8_sigma: return largest(body_.data(), 256);  // the codebook's bin means
        case CodecId::topk: return largest(body_.data() + 8, load_le<std::uint64_t>(body_.data()));  // its kept values
        case CodecId::fp32:
        case CodecId::fp16:
        case CodecId::bf16: break;
    }
    return std::numeric_limits<float>::infinity();
}

void HeldPayload::decode(std::uint64_t first, std::span<float> out) const {
    if (frames_) {
        check_slice(first, out.size());
        if (!out.empty()) decode_frames(first, out);
        return;
    }
    decode(first, out, slice_);
}

void HeldPayload::decode(std::uint64_t first, std::span<float> out, std::vector<std::byte>& scratch) const {
    if (frames_) throw Error("a payload kept in its zstd frames is decoded one slice at a time, in order");
    check_slice(first, out.size());
    if (out.empty()) return;
    if (info_.codec == CodecId::topk) return detail::decode_topk_slice(body_, topk_marks_, first, out);
    detail::decode_payload_slice(info_.codec, info_.block, info_.count, body_, first, out, scratch);
}

void HeldPayload::check_slice(std::uint64_t first, std::uint64_t n) const {
    if (first > info_.count || n > info_.count - first)
        throw Error("a slice [" + std::to_string(first) + ", " + std::to_string(first + n) + ") of a buffer of " +
                    std::to_string(info_.count) + " values");
    if (first % alignment() != 0)
        throw Error("a slice at " + std::to_string(first) + " does not start on a block of " + std::to_string(alignment()));
}

namespace detail {

void decode_payload_slice(CodecId id, std::uint32_t block, std::uint64_t count, ByteSpan payload, std::uint64_t first,
                          std::span<float> out, Bytes& scratch) {
    const std::uint64_t n = out.size();
    const std::byte* p = payload.data();
    switch (id) {
        case CodecId::topk:
            throw Error("a topk payload cannot be decoded a slice at a time");
        case CodecId::fp32:
            return decode_payload(id, 0, std::span(p + 4 * first, 4 * n), out);
        case CodecId::fp16:
        case CodecId::bf16:
            return decode_payload(id, 0, std::span(p + 2 * first, 2 * n), out);
        case CodecId::uint8_sigma: {
            constexpr std::size_t kBook = 256 * 4;  // the codebook: 256 fp32 bin means
            scratch.assign(p, p + kBook);
            scratch.insert(scratch.end(), p + kBook + first, p + kBook + first + n);
            return decode_payload(id, 0, scratch, out);
        }
        default: {  // blockwise: [scales][codes], the codes of m values payload_bytes_limit less m's scales
            const std::uint64_t b0 = first / block, nb = blocks_of(n, block);
            const std::byte* codes = p + 4 * blocks_of(count, block) + code_bytes(id, block, first);
            scratch.assign(p + 4 * b0, p + 4 * (b0 + nb));
            scratch.insert(scratch.end(), codes, codes + code_bytes(id, block, n));
            return decode_payload(id, block, scratch, out);
        }
    }
}

}  // namespace detail

}  // namespace arch::compression
