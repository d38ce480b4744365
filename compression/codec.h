// compression/codec.h: pseudo-gradient codecs: a span of floats -> self-describing bytes -> floats.
// Pure functions on spans: no model, no file, no socket. decode() needs no spec: the wire header says
// which codec made the bytes, and every field is validated before the output span is touched.
// Specs, wire layout and every codec's error bound: docs/codecs.md (bounds repeated at each codec).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arch::compression {

// The codec that produced a payload; the numbers are on the wire and never change meaning.
enum class CodecId : std::uint8_t {
    fp32 = 1,         // identity; exact
    fp16 = 2,         // IEEE binary16, saturating; |e| <= 2^-11 |x| (normal range)
    bf16 = 3,         // bfloat16, round to nearest even; |e| <= 2^-8 |x|
    int8 = 4,         // blockwise absmax, q in [-127,127]; |e| <= scale/2, scale = absmax/127
    uint8_sigma = 5,  // 256 bins over mean +- 3 sigma, codebook of bin means; |e| <= 6 sigma/256 inside
    int4 = 6,         // blockwise absmax, q in [-7,7]; |e| <= scale/2, scale = absmax/7
    fp4 = 7,          // blockwise e2m1 with scale = absmax/6; |e| <= max(scale, |x|)/4
    topk = 8,         // k largest |x| kept exactly, the rest 0; |e| <= smallest kept |x|
    sign = 9,         // blockwise sign * mean|x|; ||e_block||_2 <= ||x_block||_2
};

// Every codec, in id order: a new codec is one more entry here and in codec_name().
constexpr CodecId kCodecIds[] = {CodecId::fp32, CodecId::fp16, CodecId::bf16, CodecId::int8, CodecId::uint8_sigma,
                                 CodecId::int4, CodecId::fp4, CodecId::topk, CodecId::sign};

std::string_view codec_name(CodecId id);

// A spec parsed (parse_codec_spec, grammar below), every default filled in. Programs read these
// fields, never the spec's text.
struct CodecSpec {
    CodecId codec = CodecId::fp32;
    std::uint32_t block = 0;      // blockwise codecs (int8, int4, fp4, sign); 0 otherwise
    double fraction = 0.0;        // topk: the share of values kept
    bool error_feedback = false;  // +ef
    bool zstd = false;            // +zstd[:level]
    int zstd_level = 1;
};

// The validated header of an encoded buffer (see docs/codecs.md, "Wire header").
struct WireInfo {
    CodecId codec;
    std::uint64_t count;          // number of floats encoded
    std::uint32_t block;          // block size for blockwise codecs, 0 otherwise
    bool zstd;                    // the payload went through the zstd stage
    std::uint64_t payload_bytes;  // codec payload size (after zstd decompression)
    std::uint64_t total_bytes;    // header + body: exactly the buffer's size
};

constexpr std::size_t kWireHeaderBytes = 40;

// Reads and validates the header; throws arch::Error on any inconsistency (never reads past bytes).
WireInfo inspect(std::span<const std::byte> bytes);

// Decodes bytes into out, which must hold exactly the encoded count. Validates everything first
// (header, sizes, zstd frames, scales, indices, non-finite values) and throws arch::Error with the
// reason; on error `out` is left untouched.
void decode(std::span<const std::byte> bytes, std::span<float> out);
// The same, decompressing the zstd stage into `scratch`: a caller that decodes at the same size
// every round keeps it, and no round clears fresh pages for the payload.
void decode(std::span<const std::byte> bytes, std::span<float> out, std::vector<std::byte>& scratch);

// Same, allocating; refuses headers announcing more than max_count floats.
std::vector<float> decode(std::span<const std::byte> bytes, std::uint64_t max_count);

// A configured codec pipeline: quantizer [+ error feedback] [+ zstd]. Made from a spec string.
// encode() rejects non-finite input (NaN/Inf) with arch::Error. Not thread-safe per instance
// (error feedback keeps state); encode and decode themselves use OpenMP inside.
class Codec {
public:
    virtual ~Codec() = default;

    // Canonical spec, e.g. "int8:block=256+zstd:1"; make_codec(spec()) gives the same codec.
    virtual std::string spec() const = 0;
    virtual const CodecSpec& settings() const = 0;  // the same, parsed

    // Encodes x. `stream` names the error-feedback residual to use (one per tensor range / peer);
    // codecs without error feedback ignore it.
    virtual std::vector<std::byte> encode(std::span<const float> x, std::uint64_t stream = 0) = 0;

    // Error feedback whose residual the caller keeps: encodes y (a Δ plus that residual) as a codec
    // without +ef would, and leaves in y the new residual y - decode(encode(y)), bit for bit what the
    // codec's own error feedback computes. Throws arch::Error for a non-finite y, which it leaves as it was.
    // known_finite: the caller has seen every value of y finite (in the pass that made y), and y is
    // not read once more to check it.
    virtual std::vector<std::byte> encode_feedback(std::span<float> y, bool known_finite = false) = 0;

    void decode(std::span<const std::byte> bytes, std::span<float> out) const {
        compression::decode(bytes, out);
    }

    // Error feedback residual of a stream (empty if none or no error feedback); reset drops it.
    virtual std::span<const float> residual(std::uint64_t stream) const { return {}; }
    virtual void reset(std::uint64_t stream) {}
    // Puts back a residual saved from residual(stream) (a copy taken before an encode whose message
    // was never applied): the next encode is then as if that one had never happened. An empty span
    // is reset(stream). Codecs without error feedback ignore it.
    virtual void set_residual(std::uint64_t stream, std::span<const float> r) {}

    // Where a blob this codec encoded gives its memory back once nothing reads it (peers/blob.h), for
    // the next encode to write into pages already mapped rather than fresh ones the kernel must clear
    // (a round's buffers are allocated once). Callable from any thread, and after the codec is gone;
    // empty where the codec keeps none.
    virtual std::function<void(std::vector<std::byte>&&)> recycler() { return {}; }
};

// Parses a spec (grammar in docs/codecs.md):
//   spec   := codec [ "+ef" ] [ "+zstd" [ ":" level | ":level=" level ] ]
//   codec  := name [ ":" key "=" value { "," key "=" value } ]
//   names  := fp32 | fp16 | bf16 | int8 | uint8 | int4 | fp4 | topk | sign
//   keys   := block (int8, int4, fp4, sign) | frac (topk)
// e.g. "int8:block=256+zstd:1", "fp4+ef+zstd", "topk:frac=0.01+ef". Throws arch::Error naming the
// offending part of a bad spec.
CodecSpec parse_codec_spec(std::string_view spec);
std::string canonical_spec(const CodecSpec& s);  // parse_codec_spec(canonical_spec(s)) == s
std::unique_ptr<Codec> make_codec(std::string_view spec);
// The most bytes the codec of `spec` takes for `count` floats, out of any zstd stage (what a receiver
// holds at worst; topk: for the k its fraction keeps). Throws arch::Error for a bad spec.
std::uint64_t payload_bytes_limit(std::string_view spec, std::uint64_t count);
// The most bytes a buffer encoded with `spec` takes for `count` floats, as sent: its header, the
// payload and the zstd stage's chunk table (what a receiver may be asked to take in). Throws
// arch::Error for a bad spec.
std::uint64_t wire_bytes_limit(std::string_view spec, std::uint64_t count);

// ---- for quantizers that run elsewhere (kernels/cuda/device_codec): same bytes, same checks -----

// Wraps `payload` in the wire header and, if the spec says so, the zstd stage. When payload is
// what make_codec(spec)'s quantizer makes for `count` floats x, the result is
// make_codec(spec)->encode(x).
// Throws arch::Error for a bad spec, a spec with +ef (the residual belongs to whoever quantized),
// or a payload whose size is not the codec's for `count` floats.
std::vector<std::byte> wrap_payload(std::string_view spec, std::uint64_t count,
                                    std::vector<std::byte> payload);

// The codec payload inside a buffer, validated exactly as decode(bytes, out) with out.size() ==
// count validates it (header, sizes, zstd frames, then scales, padding, ...), zstd stage undone,
// not decoded.
struct Payload {
    WireInfo info{};
    std::span<const std::byte> body;      // the buffer's body: borrowed from the bytes given
    std::vector<std::byte> decompressed;  // the payload when info.zstd, else empty
    std::span<const std::byte> bytes() const {
        return info.zstd ? std::span<const std::byte>(decompressed) : body;
    }
};
// reuse: memory the zstd stage's payload is put in (its capacity kept: a caller that opens one
// payload a round and hands the last one's buffer back clears no fresh pages for it).
Payload open_payload(std::span<const std::byte> bytes, std::uint64_t count, std::vector<std::byte> reuse = {});

}  // namespace arch::compression
