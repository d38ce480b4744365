// compression/held_payload.h: an encoded buffer kept encoded and decoded a slice at a time. A host
// holds each island's pseudo-gradient this way until the round's update and aggregates them slice by
// slice (outer::Aggregator on slices of every Δ), so it never holds N decoded fp32 Δs at once. A
// slice decodes to exactly the floats decode() gives for those positions (the same decoders run on
// the slice's part of the payload). topk, whose positions are delta-coded from the start, keeps marks
// into its index list (one every 4096 kept values) to start a slice's walk from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compression/codec.h"
#include "compression/detail.h"

namespace arch::compression {

// A slice length for slices that start on every block of codecs of `alignment` (the lcm of their
// alignments): about a million values.
std::uint64_t slice_length(std::uint64_t alignment);

class HeldPayload {
public:
    // Validates `encoded` exactly as decode(encoded, out) with out.size() == count does (throws
    // arch::Error naming the fault) and keeps its payload, out of the zstd stage. borrow: a payload
    // without a zstd stage is read where it lies, so `encoded` must outlive this object.
    // reuse: memory for the kept payload (release_buffer() of an earlier one): its pages are already
    // the process's, so no fresh ones are cleared for a payload made again and again at one size.
    // frames: borrow, and a blockwise codec's zstd stage stays as it came: every chunk is taken out
    // once here (a frame that does not decompress is refused now), the scales are kept, and each
    // slice takes its codes out of the chunks again (one chunk kept between slices read in order).
    // No copy of the payload is held: an update applied as it lies (peers' and host's GlobalModel).
    // Other codecs, or no zstd stage: as borrow.
    enum class Keep { copy, borrow, frames };
    HeldPayload(std::span<const std::byte> encoded, std::uint64_t count, Keep keep = Keep::copy,
                std::vector<std::byte> reuse = {});

    std::uint64_t count() const { return info_.count; }
    // A slice must start at a multiple of this: a blockwise codec's block, else 1.
    std::uint64_t alignment() const;
    // At least the largest magnitude any decoded value has, read from the payload's scales (a
    // blockwise codec: its largest scale times its largest code; uint8: its codebook; topk: its
    // values) without decoding it; infinity for the codecs that have no scales (fp32, fp16, bf16).
    float magnitude_bound() const;
    // Floats [first, first + out.size()) of the decoded buffer. Throws arch::Error for a slice that is
    // not aligned or runs past count(). Not thread-safe (a per-object scratch).
    void decode(std::uint64_t first, std::span<float> out) const;
    // The same with the caller's scratch: slices of one payload may then be decoded on several threads
    // at once. Only for a payload held out of its zstd stage (not Keep::frames: frames() is false).
    void decode(std::uint64_t first, std::span<float> out, std::vector<std::byte>& scratch) const;
    bool frames() const { return frames_ != nullptr; }
    // The kept payload's memory, for the next one; this object holds nothing after it.
    std::vector<std::byte> release_buffer();
    HeldPayload(HeldPayload&&) noexcept;
    HeldPayload& operator=(HeldPayload&&) noexcept;
    ~HeldPayload();

private:
    void open_frames(std::span<const std::byte> encoded, const WireInfo& info, std::uint64_t count);  // info: inspect(encoded)
    void decode_frames(std::uint64_t first, std::span<float> out) const;  // a blockwise slice, held in frames
    const std::byte* scales() const { return frames_ ? scales_.data() : body_.data(); }

    WireInfo info_{};
    std::vector<std::byte> payload_;         // kept: a copy, or out of the zstd stage
    std::span<const std::byte> body_;         // the payload: payload_, or borrowed
    std::vector<detail::TopkMark> topk_marks_;  // topk: where to pick up its index list
    void check_slice(std::uint64_t first, std::uint64_t n) const;  // aligned, and within count()
    mutable std::vector<std::byte> slice_;    // a slice's part of the payload, put together
    // Keep::frames: the zstd stage's chunks, the scales out of them, and the last chunk taken out.
    std::unique_ptr<detail::ZstdChunks> frames_;
    std::vector<std::byte> scales_;
    mutable std::vector<std::byte> chunk_;
    mutable std::int64_t chunk_at_ = -1;
};

}  // namespace arch::compression
