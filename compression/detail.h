// compression/detail.h: internal to compression/: the payload kernels of each codec and byte helpers.
// A payload is what a quantizer writes after the wire header (and before the optional zstd stage).
// Every decode_* validates its payload completely before writing the first float of `out`.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/bytes.h"

namespace arch::compression::detail {

using Bytes = std::vector<std::byte>;
using ByteSpan = std::span<const std::byte>;

using arch::load_le;  // core/bytes.h: the byte order of every field
using arch::store_le;

// Throws arch::Error "<codec>: input element i is NaN/inf ..." if x holds a non-finite value.
void require_finite(std::span<const float> x, std::string_view codec);
[[noreturn]] void throw_non_finite(std::span<const float> x, std::string_view codec);
// Same for a float array inside a payload (scales, codebooks, values): "corrupt payload" wording.
void require_finite_payload(const std::byte* p, std::size_t n, std::string_view what);

// A payload of `bytes` with capacity for the wire header (+ `extra`), so wrap() can prepend the
// header in place instead of copying the payload into a fresh buffer, and for a message's own header
// in front of that (kMessageHeadroom: the host puts its update's there, in place too).
constexpr std::size_t kMessageHeadroom = 256;
// `reuse`: a buffer whose memory to take when it is large enough (its pages mapped already: the
// kernel need not clear fresh ones), resized without zeroing what it holds up to its old size.
inline Bytes payload_buffer(std::size_t bytes, std::size_t extra = 0, Bytes* reuse = nullptr) {
    const std::size_t room = kWireHeaderBytes + kMessageHeadroom + bytes + extra;
    Bytes b;
    if (reuse != nullptr && reuse->capacity() >= room) b = std::move(*reuse);
    b.reserve(room);
    b.resize(bytes);
    return b;
}

// Elements per OpenMP work item; also the fixed reduction chunk that keeps sums deterministic.
constexpr std::size_t kChunk = std::size_t{1} << 16;

// ---- payload sizes ------------------------------------------------------------------------------
inline std::uint64_t blocks_of(std::uint64_t count, std::uint32_t block) {
    return block == 0 ? 0 : (count + block - 1) / block;
}
// Exact payload size for fixed-size codecs; for topk the largest size a valid payload can have.
std::uint64_t payload_bytes_limit(CodecId id, std::uint32_t block, std::uint64_t count);
bool payload_size_is_exact(CodecId id);
bool is_blockwise(CodecId id);
// Where a slice of a payload may start (detail::decode_payload_slice): a blockwise codec's block, else 1.
std::uint64_t slice_alignment(CodecId id, std::uint32_t block);

// ---- fp32, fp16, bf16 (float_formats.cpp) -------------------------------------------------------
Bytes encode_fp32(std::span<const float> x);
Bytes encode_fp16(std::span<const float> x);
Bytes encode_bf16(std::span<const float> x);
void decode_fp32(ByteSpan payload, std::span<float> out);
void decode_fp16(ByteSpan payload, std::span<float> out);
void decode_bf16(ByteSpan payload, std::span<float> out);
std::uint16_t float_to_half(float f);  // round to nearest even, saturating at +-65504
float half_to_float(std::uint16_t h);  // h must not be inf/NaN

// ---- blockwise absmax codecs: int8, int4, fp4, sign (blockwise.cpp) -----------------------------
// subtract_from (error feedback, the same buffer as x): each block's decode is taken off it as the
// block is encoded, the same floats decode() gives, with no pass of its own.
// zstd: the payload's zstd stage instead, made without the payload ever whole in memory (the same bytes
// zstd_compress gives for it), after zstd->prefix bytes, in zstd->into's memory; its payload's size is
// put in zstd->payload_bytes.
struct ZstdTarget {
    int level = 1;
    std::size_t prefix = 0;
    Bytes into;
    std::uint64_t payload_bytes = 0;
    std::uint64_t window_chunks = 8;  // codes encoded at a time, in 1 MiB chunks (a test makes it small)
};
Bytes encode_int8(std::span<const float> x, std::uint32_t block, float* subtract_from = nullptr, Bytes* reuse = nullptr,
                  ZstdTarget* zstd = nullptr);
Bytes encode_int4(std::span<const float> x, std::uint32_t block, float* subtract_from = nullptr, Bytes* reuse = nullptr,
                  ZstdTarget* zstd = nullptr);
Bytes encode_fp4(std::span<const float> x, std::uint32_t block, float* subtract_from = nullptr, Bytes* reuse = nullptr,
                 ZstdTarget* zstd = nullptr);
Bytes encode_sign(std::span<const float> x, std::uint32_t block, float* subtract_from = nullptr, Bytes* reuse = nullptr,
                  ZstdTarget* zstd = nullptr);
void decode_int8(ByteSpan payload, std::uint32_t block, std::span<float> out);
void decode_int4(ByteSpan payload, std::uint32_t block, std::span<float> out);
void decode_fp4(ByteSpan payload, std::uint32_t block, std::span<float> out);
void decode_sign(ByteSpan payload, std::uint32_t block, std::span<float> out);
// The checks decode_<id> makes before writing (scales finite and >= 0, padding bits 0), alone.
void check_blockwise(CodecId id, ByteSpan payload, std::uint32_t block, std::uint64_t count);
// The same from its parts: the scales (the payload's front, at least 4 bytes a block) and the
// payload's last byte (a 4-bit or sign codec's padding), for a payload held in zstd frames.
void check_blockwise_parts(CodecId id, ByteSpan scales, std::byte last, std::uint32_t block, std::uint64_t count);

// ---- uint8 over mean +- 3 sigma with a codebook (sigma_codebook.cpp) ----------------------------
Bytes encode_uint8_sigma(std::span<const float> x);
void decode_uint8_sigma(ByteSpan payload, std::span<float> out);

// ---- top-k (topk.cpp) ---------------------------------------------------------------------------
std::uint64_t topk_count(std::uint64_t n, double fraction);
// subtract_from (error feedback, the same buffer as x): each kept value is taken off it as it is
// written, which leaves 0 there, the rest as it was.
Bytes encode_topk(std::span<const float> x, double fraction, float* subtract_from = nullptr);
void decode_topk(ByteSpan payload, std::span<float> out);
// Where to pick up the index list: the element `entry`'s gap starts at byte `pos`, and its index is at
// least `next` (the index before it plus one). One every kTopkMarkEvery elements.
struct TopkMark {
    std::uint64_t entry = 0;
    std::size_t pos = 0;
    std::uint64_t next = 0;
};
constexpr std::uint64_t kTopkMarkEvery = 4096;
// The checks decode_topk makes before writing (k <= n, sizes, finite values, every index in range, no
// trailing bytes), alone; returns k, and the marks where `marks` is given.
std::uint64_t check_topk(ByteSpan payload, std::uint64_t n, std::vector<TopkMark>* marks);
// Floats [first, first + out.size()) of a payload check_topk passed, from the marks it made: the same
// floats decode_topk gives there, walking at most kTopkMarkEvery elements before the slice's.
void decode_topk_slice(ByteSpan payload, std::span<const TopkMark> marks, std::uint64_t first, std::span<float> out);

// ---- zstd stage (zstd_stage.cpp) ----------------------------------------------------------------
// Body = [u32 chunk_bytes][u32 chunks][u32 stored size per chunk; top bit: stored raw][chunks...]
// The zstd stage's body, after `prefix` bytes left for the caller (the wire header): one buffer, no copy.
// `into`: a buffer whose memory to write it in (its capacity kept; nothing zeroed up to its old size).
Bytes zstd_compress(ByteSpan payload, int level, std::size_t prefix = 0, Bytes into = {});
// A zstd stage made a chunk at a time from wherever each chunk's raw bytes lie, so the payload need
// never be whole in memory (a blockwise codec's, encoded a window of chunks at a time). The body goes
// after `prefix` bytes, in `into`'s memory; each compress() runs its chunks on the OpenMP threads,
// with zstd contexts kept from call to call.
class ZstdStageWriter {
public:
    ZstdStageWriter(std::uint64_t payload_bytes, int level, std::size_t prefix, Bytes into);
    ~ZstdStageWriter();
    ZstdStageWriter(const ZstdStageWriter&) = delete;
    ZstdStageWriter& operator=(const ZstdStageWriter&) = delete;
    static std::uint32_t chunk_bytes();  // each chunk's raw length but the last's
    std::uint32_t chunks() const;
    std::uint64_t raw_length(std::uint32_t c) const;
    // Chunks [first, last), chunk c's raw_length(c) bytes read from raw(c) (called on any thread).
    void compress(std::uint32_t first, std::uint32_t last, const std::function<const std::byte*(std::uint32_t)>& raw);
    Bytes finish();  // every chunk compressed: the prefix, then the body

private:
    std::uint64_t payload_bytes_;
    int level_;
    std::size_t prefix_;
    Bytes out_;
    std::vector<std::uint64_t> slot_;   // where each chunk is compressed to, and the end
    std::vector<std::uint32_t> sizes_;  // each chunk's stored size; the top bit: stored raw
    std::vector<void*> contexts_;       // a ZSTD_CCtx per OpenMP thread
};
// The most zstd_compress adds to a payload of this size: its chunk table (a chunk zstd cannot shrink
// is stored raw).
std::uint64_t zstd_stage_overhead(std::uint64_t payload_bytes);
// The payload, into `out` (resized to payload_bytes; a buffer kept from call to call is reused).
void zstd_decompress(ByteSpan body, std::uint64_t payload_bytes, Bytes& out);
// A zstd stage's chunks one at a time, for a reader that never holds the whole payload
// (HeldPayload::Keep::frames). Made, it has checked the table and every frame's header (its declared
// size, exactly one frame, no trailing bytes), as zstd_decompress does first; a frame that does not
// decompress shows when it is taken. `body` must outlive it.
class ZstdChunks {
public:
    ZstdChunks(ByteSpan body, std::uint64_t payload_bytes);  // throws arch::Error naming the fault
    std::uint32_t count() const { return static_cast<std::uint32_t>(offset_.size() - 1); }
    std::uint32_t chunk_bytes() const { return chunk_; }       // each chunk's raw length but the last's
    std::uint64_t raw_length(std::uint32_t c) const;
    // Chunk c, out of the stage, into dst (raw_length(c) bytes); throws arch::Error if it does not decompress.
    void take(std::uint32_t c, std::byte* dst) const;
    // The same with a ZSTD_DCtx of the caller's (a thread's own); false if it does not decompress.
    bool take(std::uint32_t c, std::byte* dst, void* zstd_context) const;

private:
    bool raw(std::uint32_t c) const;
    ByteSpan body_;
    std::uint64_t payload_bytes_ = 0;
    std::uint32_t chunk_ = 0;
    std::vector<std::uint64_t> offset_;  // of each chunk in body_, and the end
};

// ---- slices (held_payload.cpp) -------------------------------------------------------------------
// Floats [first, first + out.size()) of a validated payload of `count` floats: the codec's own decoder
// on that slice's part of the payload, so the same floats decode_payload gives there. `first` a
// multiple of a blockwise codec's block; topk (positions delta-coded from the start) throws.
void decode_payload_slice(CodecId id, std::uint32_t block, std::uint64_t count, ByteSpan payload, std::uint64_t first,
                          std::span<float> out, Bytes& scratch);

// ---- dispatch (wire.cpp) ------------------------------------------------------------------------
struct Format {
    CodecId id = CodecId::fp32;
    std::uint32_t block = 0;  // blockwise codecs
    double fraction = 0.0;    // topk
};
// reuse: a buffer whose memory a blockwise codec's payload may take (payload_buffer).
Bytes encode_payload(const Format& f, std::span<const float> x, Bytes* reuse = nullptr);
// The payload of y, and y minus its decode (error feedback's residual) in the same pass where the codec
// is blockwise or topk; nullopt for the others (the caller decodes and subtracts).
std::optional<Bytes> encode_payload_subtracting(const Format& f, std::span<float> y, Bytes* reuse = nullptr);
void decode_payload(CodecId id, std::uint32_t block, ByteSpan payload, std::span<float> out);
// A blockwise codec's blob with its zstd stage, the payload never whole in memory (encode_int8's
// `zstd`): zstd.prefix bytes (kWireHeaderBytes, for write_wire_header), then the stage, in zstd.into's
// memory. subtract_from as encode_payload_subtracting's (x finite, checked by the caller). nullopt for
// the codecs that are not blockwise.
std::optional<Bytes> encode_zstd_stage(const Format& f, std::span<const float> x, float* subtract_from, ZstdTarget& zstd);
// The wire header at out's front, for a body of out.size() - kWireHeaderBytes bytes.
void write_wire_header(const Format& f, std::uint64_t count, bool zstd, std::uint64_t payload_bytes, Bytes& out);
// Throws arch::Error unless the buffer holds `count` floats (the destination's).
void require_count(const WireInfo& info, std::uint64_t count);
// Validates a payload exactly as decode_payload does, without writing any output.
void check_payload(CodecId id, std::uint32_t block, ByteSpan payload, std::uint64_t count);
// Prepends the header to the payload (in place when not compressing: the payload is moved from) or
// to its zstd body, written in `into`'s memory (zstd_compress; the payload is then left as it was).
Bytes wrap(const Format& f, std::uint64_t count, Bytes& payload, bool zstd, int level, Bytes into = {});

}  // namespace arch::compression::detail
