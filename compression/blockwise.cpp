// compression/blockwise.cpp: the blockwise codecs with one fp32 scale per block: int8, int4, fp4, sign.
// Payload: [ceil(n/block) x f32 scale][codes]; blocks are `block` consecutive elements (the last may
// be short), block a multiple of 8 so a block's codes never share a byte with the next block's.
// Error bounds per element x of a block with scale s (slack: 2^-15 relative, 2^-140 absolute):
//   int8  s = absmax/127, q = round(x/s) in [-127,127]:        |x - q s| <= s/2
//   int4  s = absmax/7,   q = round(x/s) in [-7,7]:            |x - q s| <= s/2
//   fp4   s = absmax/6,   x/s rounded to e2m1 {0,.5,1,1.5,2,3,4,6}: |e| <= max(s, |x|)/4
//   sign  s = mean|x| over the block, x -> sign(x) s (0 -> +s):   ||e_block||_2 <= ||x_block||_2
// Decoders clamp to +-FLT_MAX, so no valid-looking payload can produce inf or NaN.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "compression/detail.h"
#include "core/error.h"

namespace arch::compression::detail {
namespace {

constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: (v + M) - M rounds |v| < 2^22 to nearest even

inline float clamp_finite(float v) { return std::min(std::max(v, -FLT_MAX), FLT_MAX); }

// Calls f(b, first, len) for every block, in parallel on large inputs.
template <class F>
void for_blocks(std::uint64_t n, std::uint32_t block, F&& f) {
    const auto nb = static_cast<std::int64_t>(blocks_of(n, block));
#pragma omp parallel for schedule(static) if (n > 4 * kChunk)
    for (std::int64_t b = 0; b < nb; ++b) {
        const std::uint64_t first = static_cast<std::uint64_t>(b) * block;
        f(static_cast<std::uint64_t>(b), first, std::min<std::uint64_t>(block, n - first));
    }
}

// absmax of a block; returns false when the block holds inf or NaN.
inline bool block_absmax(const float* x, std::uint64_t len, float& absmax) {
    float m = 0.0f, z = 0.0f;
#pragma omp simd reduction(max : m) reduction(+ : z)
    for (std::uint64_t i = 0; i < len; ++i) {
        m = std::max(m, std::fabs(x[i]));
        z += x[i] * 0.0f;
    }
    absmax = m;
    return z == 0.0f;
}

// q = round(x/s) clamped to [-qmax, qmax], for s a scale >= 0. Fast path for normal scales; tiny
// (subnormal) scales divide in double so 1/s cannot overflow.
inline void quantize_uniform(const float* x, std::uint64_t len, float s, float qmax, std::int8_t* q) {
    if (s >= FLT_MIN) {
        const float inv = 1.0f / s;
#pragma omp simd
        for (std::uint64_t i = 0; i < len; ++i) {
            float v = x[i] * inv;
            v = (v + kRoundMagic) - kRoundMagic;
            q[i] = static_cast<std::int8_t>(std::min(std::max(v, -qmax), qmax));
        }
    } else {
        for (std::uint64_t i = 0; i < len; ++i) {
            const double v = s > 0.0f ? std::nearbyint(double(x[i]) / double(s)) : 0.0;
            q[i] = static_cast<std::int8_t>(std::min(std::max(v, double(-qmax)), double(qmax)));
        }
    }
}

// Validates the scales of a payload: finite and >= 0.
void check_scales(ByteSpan payload, std::uint64_t nb, std::string_view codec) {
    for (std::uint64_t b = 0; b < nb; ++b) {
        const float s = load_le<float>(payload.data() + 4 * b);
        if (!(std::isfinite(s) && s >= 0.0f)) {
            throw Error("corrupt payload: " + std::string(codec) + " block " + std::to_string(b) +
                        " has scale " + std::to_string(s) + " (expected finite and >= 0)");
        }
    }
}

// Blocks [b0, b1) of x: their scales at `scales` (4 bytes a block, from block 0), their codes from
// `codes` on (block b0's first). fn and decode place a block's codes from `first`, its offset from
// block b0's first value. False when a block holds inf or NaN.
template <class BlockFn, class DecodeFn>
bool encode_blocks(std::span<const float> x, std::uint32_t block, std::uint64_t b0, std::uint64_t b1, std::byte* scales,
                   std::byte* codes, float* subtract_from, BlockFn& fn, DecodeFn& decode) {
    const std::uint64_t n = x.size();
    const std::uint64_t start = b0 * block;
    int bad = 0;
    for_blocks(std::min<std::uint64_t>(n, b1 * block) - start, block, [&](std::uint64_t i, std::uint64_t from, std::uint64_t len) {
        const std::uint64_t first = start + from;
        float s = 0.0f;
        if (!fn(x.data() + first, len, from, codes, s)) {
#pragma omp atomic write
            bad = 1;
            return;
        }
        store_le(scales + 4 * (b0 + i), s);
        if (!subtract_from) return;
        // Error feedback: the block's decode, exactly as its decoder gives it, taken off while the
        // block is in cache (pieces of a multiple of 8 values start on a byte of every code layout).
        constexpr std::uint64_t kPiece = 256;
        float d[kPiece];
        for (std::uint64_t off = 0; off < len; off += kPiece) {
            const std::uint64_t m = std::min(kPiece, len - off);
            decode(codes, from + off, m, s, d);
            float* r = subtract_from + first + off;
#pragma omp simd
            for (std::uint64_t j = 0; j < m; ++j) r[j] = r[j] - d[j];
        }
    });
    return bad == 0;
}

// The payload's zstd stage, made a window of blocks at a time: each window's codes are encoded into a
// buffer of a few chunks, whole chunks compressed from there, and the rest carried to the next. The
// scales, and the codes that share a chunk with them, go last. The same bytes as the payload made whole
// and then compressed (zstd_compress), without the payload ever whole in memory.
template <class BlockFn, class DecodeFn>
Bytes encode_streamed(std::span<const float> x, std::uint32_t block, unsigned bits, std::string_view codec,
                      float* subtract_from, ZstdTarget& zstd, BlockFn& fn, DecodeFn& decode) {
    const std::uint64_t n = x.size(), nb = blocks_of(n, block);
    const std::uint64_t scale_bytes = 4 * nb, code_bytes = (n * bits + 7) / 8;
    const std::uint64_t block_bytes = std::uint64_t{block} * bits / 8;  // a block's codes (block: a multiple of 8)
    zstd.payload_bytes = scale_bytes + code_bytes;
    ZstdStageWriter stage(zstd.payload_bytes, zstd.level, zstd.prefix, std::move(zstd.into));
    const std::uint64_t chunk = ZstdStageWriter::chunk_bytes();
    // Chunks [0, shared) hold the scales and the first `head` code bytes; the rest only codes.
    const std::uint64_t shared = std::min<std::uint64_t>((scale_bytes + chunk - 1) / chunk, stage.chunks());
    const std::uint64_t head = std::min(shared * chunk - scale_bytes, code_bytes);
    Bytes front(scale_bytes + head);
    const std::uint64_t window_blocks =
        std::max<std::uint64_t>(1, std::max<std::uint64_t>(zstd.window_chunks, 1) * chunk / std::max<std::uint64_t>(block_bytes, 1));
    Bytes window(chunk + window_blocks * block_bytes + 1);
    std::uint64_t fill = 0, headed = 0;
    std::uint32_t next = static_cast<std::uint32_t>(shared);  // the next chunk to compress
    for (std::uint64_t b0 = 0; b0 < nb; b0 += window_blocks) {
        const std::uint64_t b1 = std::min(nb, b0 + window_blocks);
        if (!encode_blocks(x, block, b0, b1, front.data(), window.data() + fill, subtract_from, fn, decode))
            throw_non_finite(x, codec);
        fill += (std::min<std::uint64_t>(n, b1 * block) * bits + 7) / 8 - b0 * block_bytes;
        if (headed < head) {  // the first code bytes share a chunk with the scales
            const std::uint64_t take = std::min(head - headed, fill);
            std::memcpy(front.data() + scale_bytes + headed, window.data(), take);
            std::memmove(window.data(), window.data() + take, fill - take);
            headed += take;
            fill -= take;
        }
        const std::uint64_t whole = b1 == nb ? (fill + chunk - 1) / chunk : fill / chunk;
        stage.compress(next, next + static_cast<std::uint32_t>(whole),
                       [&, first = next](std::uint32_t c) { return window.data() + (c - first) * chunk; });
        next += static_cast<std::uint32_t>(whole);
        const std::uint64_t used = std::min(fill, whole * chunk);
        std::memmove(window.data(), window.data() + used, fill - used);
        fill -= used;
    }
    stage.compress(0, static_cast<std::uint32_t>(shared), [&](std::uint32_t c) { return front.data() + c * chunk; });
    return stage.finish();
}

// The payload of x ([scales][codes], `bits` bits of code a value), or with `zstd` its zstd stage
// (encode_streamed).
template <class BlockFn, class DecodeFn>
Bytes encode_with(std::span<const float> x, std::uint32_t block, unsigned bits, std::string_view codec,
                  float* subtract_from, Bytes* reuse, ZstdTarget* zstd, BlockFn&& fn, DecodeFn&& decode) {
    if (zstd) return encode_streamed(x, block, bits, codec, subtract_from, *zstd, fn, decode);
    const std::uint64_t nb = blocks_of(x.size(), block);
    Bytes out = payload_buffer(4 * nb + (x.size() * bits + 7) / 8, 0, reuse);
    if (!encode_blocks(x, block, 0, nb, out.data(), out.data() + 4 * nb, subtract_from, fn, decode))
        throw_non_finite(x, codec);
    return out;
}

// Each codec's decode of `len` values from position `first` (a multiple of 8), scale s: the one
// loop both its decoder and its encoder's error feedback run.
inline void int8_values(const std::byte* codes, std::uint64_t first, std::uint64_t len, float s, float* y) {
    const auto* q = reinterpret_cast<const std::int8_t*>(codes) + first;
#pragma omp simd
    for (std::uint64_t i = 0; i < len; ++i) y[i] = clamp_finite(float(q[i]) * s);
}

inline void int4_values(const std::byte* codes, std::uint64_t first, std::uint64_t len, float s, float* y) {
    const auto* cb = reinterpret_cast<const std::uint8_t*>(codes) + first / 2;
    for (std::uint64_t i = 0; i < len; ++i) {
        const int v = ((cb[i / 2] >> (4 * (i & 1))) & 15) - 8;
        y[i] = clamp_finite(float(v) * s);
    }
}

inline void sign_values(const std::byte* codes, std::uint64_t first, std::uint64_t len, float s, float* y) {
    const auto* cb = reinterpret_cast<const std::uint8_t*>(codes) + first / 8;
#pragma omp simd
    for (std::uint64_t i = 0; i < len; ++i) y[i] = ((cb[i / 8] >> (i & 7)) & 1) ? -s : s;
}

}  // namespace

void check_blockwise(CodecId id, ByteSpan payload, std::uint32_t block, std::uint64_t n) {
    // The codes start after the scales; a 4-bit codec's padding is in code byte n / 2, a sign codec's in n / 8.
    const std::uint64_t codes = 4 * blocks_of(n, block);
    const bool four_bit = id == CodecId::int4 || id == CodecId::fp4;
    const bool padded = (four_bit && (n & 1)) || (id == CodecId::sign && (n & 7));
    const std::byte last = padded ? payload[codes + (four_bit ? n / 2 : n / 8)] : std::byte{0};
    check_blockwise_parts(id, payload, last, block, n);
}

void check_blockwise_parts(CodecId id, ByteSpan scales, std::byte last, std::uint32_t block, std::uint64_t n) {
    const std::string_view codec = codec_name(id);
    check_scales(scales, blocks_of(n, block), codec);
    const auto padded = static_cast<std::uint8_t>(last);  // the codes' last byte, where they pad
    if ((id == CodecId::int4 || id == CodecId::fp4) && (n & 1) && (padded >> 4) != 0) {
        throw Error("corrupt payload: " + std::string(codec) + " padding nibble is not 0");
    }
    if (id == CodecId::sign && (n & 7) && (padded >> (n & 7)) != 0) {
        throw Error("corrupt payload: sign padding bits are not 0");
    }
}

// ---- int8 ---------------------------------------------------------------------------------------
Bytes encode_int8(std::span<const float> x, std::uint32_t block, float* subtract_from, Bytes* reuse, ZstdTarget* zstd) {
    return encode_with(x, block, 8, "int8", subtract_from, reuse, zstd,
                       [](const float* xb, std::uint64_t len, std::uint64_t first, std::byte* codes,
                          float& s) {
                           float absmax;
                           if (!block_absmax(xb, len, absmax)) return false;
                           s = absmax / 127.0f;
                           auto* q = reinterpret_cast<std::int8_t*>(codes + first);
                           quantize_uniform(xb, len, s, 127.0f, q);
                           return true;
                       },
                       int8_values);
}

void decode_int8(ByteSpan payload, std::uint32_t block, std::span<float> out) {
    const std::uint64_t n = out.size(), nb = blocks_of(n, block);
    check_blockwise(CodecId::int8, payload, block, n);
    for_blocks(n, block, [&](std::uint64_t b, std::uint64_t first, std::uint64_t len) {
        int8_values(payload.data() + 4 * nb, first, len, load_le<float>(payload.data() + 4 * b), out.data() + first);
    });
}

// ---- int4: codes q+8 in [1,15], element 2j in the low nibble of byte j -----------------------------
Bytes encode_int4(std::span<const float> x, std::uint32_t block, float* subtract_from, Bytes* reuse, ZstdTarget* zstd) {
    return encode_with(x, block, 4, "int4", subtract_from, reuse, zstd,
                       [](const float* xb, std::uint64_t len, std::uint64_t first, std::byte* codes,
                          float& s) {
                           float absmax;
                           if (!block_absmax(xb, len, absmax)) return false;
                           s = absmax / 7.0f;
                           auto* c = reinterpret_cast<std::uint8_t*>(codes + first / 2);
                           std::int8_t q[256];
                           for (std::uint64_t off = 0; off < len; off += 256) {
                               const std::uint64_t l = std::min<std::uint64_t>(256, len - off);
                               quantize_uniform(xb + off, l, s, 7.0f, q);
                               std::uint8_t* cb = c + off / 2;
                               for (std::uint64_t i = 0; i + 1 < l; i += 2) {
                                   cb[i / 2] = static_cast<std::uint8_t>((q[i] + 8) |
                                                                         ((q[i + 1] + 8) << 4));
                               }
                               if (l & 1) cb[l / 2] = static_cast<std::uint8_t>(q[l - 1] + 8);
                           }
                           return true;
                       },
                       int4_values);
}

void decode_int4(ByteSpan payload, std::uint32_t block, std::span<float> out) {
    const std::uint64_t n = out.size(), nb = blocks_of(n, block);
    check_blockwise(CodecId::int4, payload, block, n);
    for_blocks(n, block, [&](std::uint64_t b, std::uint64_t first, std::uint64_t len) {
        int4_values(payload.data() + 4 * nb, first, len, load_le<float>(payload.data() + 4 * b), out.data() + first);
    });
}

// ---- fp4 e2m1: code = sign bit 3 | magnitude index 0..7 -----------------------------------------
namespace {
constexpr float kE2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

inline std::uint8_t e2m1_code(float x, float inv) {
    const float v = std::fabs(x) * inv;
    const int m = (v > 0.25f) + (v > 0.75f) + (v > 1.25f) + (v > 1.75f) + (v > 2.5f) +
                  (v > 3.5f) + (v > 5.0f);
    return static_cast<std::uint8_t>(m | (x < 0.0f ? 8 : 0));
}

// Both values of every code byte, low nibble first: one 8-byte load decodes two values.
struct E2m1Pairs {
    float v[256][2];
    constexpr E2m1Pairs() : v{} {
        for (int b = 0; b < 256; ++b) {
            v[b][0] = kE2m1[b & 15];
            v[b][1] = kE2m1[b >> 4];
        }
    }
};
constexpr E2m1Pairs kE2m1Pairs;

inline void fp4_values(const std::byte* codes, std::uint64_t first, std::uint64_t len, float s, float* y) {
    const auto* cb = reinterpret_cast<const std::uint8_t*>(codes) + first / 2;
    // The values unscaled, two a byte through the pair table, then scaled in a loop the compiler vectorizes.
    const std::uint64_t pairs = len / 2;
    for (std::uint64_t j = 0; j < pairs; ++j) std::memcpy(y + 2 * j, kE2m1Pairs.v[cb[j]], sizeof(float) * 2);
    if (len & 1) y[len - 1] = kE2m1[cb[pairs] & 15];
#pragma omp simd
    for (std::uint64_t i = 0; i < len; ++i) y[i] = clamp_finite(y[i] * s);
}
}  // namespace

Bytes encode_fp4(std::span<const float> x, std::uint32_t block, float* subtract_from, Bytes* reuse, ZstdTarget* zstd) {
    return encode_with(
        x, block, 4, "fp4", subtract_from, reuse, zstd,
        [](const float* xb, std::uint64_t len, std::uint64_t first, std::byte* codes, float& s) {
            float absmax;
            if (!block_absmax(xb, len, absmax)) return false;
            s = absmax / 6.0f;
            auto* c = reinterpret_cast<std::uint8_t*>(codes + first / 2);
            if (s >= FLT_MIN) {
                // Codes a piece at a time into a small buffer (a loop the compiler vectorizes), then
                // packed two to a byte.
                const float inv = 1.0f / s;
                constexpr std::uint64_t kPiece = 512;  // even: only a block's last piece can be odd
                std::uint8_t q[kPiece];
                for (std::uint64_t p = 0; p < len; p += kPiece) {
                    const std::uint64_t m = std::min(kPiece, len - p);
#pragma omp simd
                    for (std::uint64_t i = 0; i < m; ++i) q[i] = e2m1_code(xb[p + i], inv);
                    std::uint8_t* cp = c + p / 2;
#pragma omp simd
                    for (std::uint64_t j = 0; j < m / 2; ++j)
                        cp[j] = static_cast<std::uint8_t>(q[2 * j] | (q[2 * j + 1] << 4));
                    if (m & 1) cp[m / 2] = q[m - 1];
                }
            } else {  // subnormal scale: scale the values up in double first
                std::fill(c, c + (len + 1) / 2, std::uint8_t{0});
                for (std::uint64_t i = 0; i < len; ++i) {
                    const double v = s > 0.0f ? double(xb[i]) / double(s) : 0.0;
                    const std::uint8_t code = e2m1_code(static_cast<float>(v), 1.0f);
                    c[i / 2] |= static_cast<std::uint8_t>(code << (4 * (i & 1)));
                }
            }
            return true;
        },
        fp4_values);
}

void decode_fp4(ByteSpan payload, std::uint32_t block, std::span<float> out) {
    const std::uint64_t n = out.size(), nb = blocks_of(n, block);
    check_blockwise(CodecId::fp4, payload, block, n);
    for_blocks(n, block, [&](std::uint64_t b, std::uint64_t first, std::uint64_t len) {
        fp4_values(payload.data() + 4 * nb, first, len, load_le<float>(payload.data() + 4 * b), out.data() + first);
    });
}

// ---- sign: bit i of a block set when x_i < 0, LSB first; scale = mean |x| -------------------------
Bytes encode_sign(std::span<const float> x, std::uint32_t block, float* subtract_from, Bytes* reuse, ZstdTarget* zstd) {
    return encode_with(
        x, block, 1, "sign", subtract_from, reuse, zstd,
        [](const float* xb, std::uint64_t len, std::uint64_t first, std::byte* codes, float& s) {
            double sum = 0.0;
            float z = 0.0f;
#pragma omp simd reduction(+ : sum, z)
            for (std::uint64_t i = 0; i < len; ++i) {
                sum += std::fabs(double(xb[i]));
                z += xb[i] * 0.0f;
            }
            if (z != 0.0f) return false;
            s = static_cast<float>(sum / double(len));
            auto* c = reinterpret_cast<std::uint8_t*>(codes + first / 8);
            for (std::uint64_t j = 0; j < (len + 7) / 8; ++j) {
                std::uint8_t byte = 0;
                const std::uint64_t e = std::min<std::uint64_t>(8, len - 8 * j);
                for (std::uint64_t k = 0; k < e; ++k) {
                    byte |= static_cast<std::uint8_t>((xb[8 * j + k] < 0.0f) << k);
                }
                c[j] = byte;
            }
            return true;
        },
        sign_values);
}

void decode_sign(ByteSpan payload, std::uint32_t block, std::span<float> out) {
    const std::uint64_t n = out.size(), nb = blocks_of(n, block);
    check_blockwise(CodecId::sign, payload, block, n);
    for_blocks(n, block, [&](std::uint64_t b, std::uint64_t first, std::uint64_t len) {
        sign_values(payload.data() + 4 * nb, first, len, load_le<float>(payload.data() + 4 * b), out.data() + first);
    });
}

}  // namespace arch::compression::detail
