// compression/wire.cpp: the wire header, and dispatch from a codec id to its payload kernels.
// Header (40 bytes, little-endian): "APGC" magic, u8 version (1), u8 codec id, u8 flags (bit 0: zstd
// stage), u8 0, u64 count, u32 block, u32 0, u64 payload bytes, u64 body bytes; then the body.
// decode() validates header -> sizes -> zstd frames -> payload fields, and only then writes `out`.
#include <algorithm>
#include <cmath>

#include "compression/detail.h"
#include "core/error.h"

namespace arch::compression {

using detail::load_le;
using detail::store_le;

namespace {

constexpr char kMagic[4] = {'A', 'P', 'G', 'C'};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kFlagZstd = 1;
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 40;
constexpr std::uint32_t kMaxBlock = 1u << 24;

bool known_codec(std::uint8_t id) {
    return std::ranges::any_of(kCodecIds, [id](CodecId c) { return static_cast<std::uint8_t>(c) == id; });
}

}  // namespace

std::string_view codec_name(CodecId id) {
    switch (id) {
        case CodecId::fp32: return "fp32";
        case CodecId::fp16: return "fp16";
        case CodecId::bf16: return "bf16";
        case CodecId::int8: return "int8";
        case CodecId::uint8_sigma: return "uint8";
        case CodecId::int4: return "int4";
        case CodecId::fp4: return "fp4";
        case CodecId::topk: return "topk";
        case CodecId::sign: return "sign";
    }
    return "unknown";
}

namespace detail {

bool is_blockwise(CodecId id) {
    return id == CodecId::int8 || id == CodecId::int4 || id == CodecId::fp4 || id == CodecId::sign;
}

std::uint64_t slice_alignment(CodecId id, std::uint32_t block) { return is_blockwise(id) ? block : 1; }

bool payload_size_is_exact(CodecId id) { return id != CodecId::topk; }

std::uint64_t payload_bytes_limit(CodecId id, std::uint32_t block, std::uint64_t n) {
    const std::uint64_t scales = 4 * blocks_of(n, block);
    switch (id) {
        case CodecId::fp32: return 4 * n;
        case CodecId::fp16:
        case CodecId::bf16: return 2 * n;
        case CodecId::int8: return scales + n;
        case CodecId::uint8_sigma: return 1024 + n;
        case CodecId::int4:
        case CodecId::fp4: return scales + (n + 1) / 2;
        case CodecId::sign: return scales + (n + 7) / 8;
        case CodecId::topk: return 8 + 4 * n + 10 * n;  // k <= n values, varints <= 10 bytes
    }
    return 0;
}

namespace {

// The blockwise codecs' encoders, chosen in one place; nullopt for the other codecs.
std::optional<Bytes> encode_blockwise(const Format& f, std::span<const float> x, float* subtract_from, Bytes* reuse,
                                      ZstdTarget* zstd) {
    switch (f.id) {
        case CodecId::int8: return encode_int8(x, f.block, subtract_from, reuse, zstd);
        case CodecId::int4: return encode_int4(x, f.block, subtract_from, reuse, zstd);
        case CodecId::fp4: return encode_fp4(x, f.block, subtract_from, reuse, zstd);
        case CodecId::sign: return encode_sign(x, f.block, subtract_from, reuse, zstd);
        default: return std::nullopt;
    }
}

}  // namespace

Bytes encode_payload(const Format& f, std::span<const float> x, Bytes* reuse) {
    if (std::optional<Bytes> b = encode_blockwise(f, x, nullptr, reuse, nullptr)) return std::move(*b);
    switch (f.id) {
        case CodecId::fp32: return encode_fp32(x);
        case CodecId::fp16: return encode_fp16(x);
        case CodecId::bf16: return encode_bf16(x);
        case CodecId::uint8_sigma: return encode_uint8_sigma(x);
        case CodecId::topk: return encode_topk(x, f.fraction);
        default: break;
    }
    throw Error("encode: unknown codec id " + std::to_string(int(f.id)));
}

std::optional<Bytes> encode_payload_subtracting(const Format& f, std::span<float> y, Bytes* reuse) {
    if (f.id == CodecId::topk) return encode_topk(y, f.fraction, y.data());
    return encode_blockwise(f, y, y.data(), reuse, nullptr);
}

std::optional<Bytes> encode_zstd_stage(const Format& f, std::span<const float> x, float* subtract_from, ZstdTarget& zstd) {
    return encode_blockwise(f, x, subtract_from, nullptr, &zstd);
}

void check_payload(CodecId id, std::uint32_t block, ByteSpan payload, std::uint64_t count) {
    if (is_blockwise(id)) return check_blockwise(id, payload, block, count);
    if (id == CodecId::topk) {
        (void)check_topk(payload, count, nullptr);
        return;
    }
    std::vector<float> scratch(count);  // the other decoders validate everything before writing
    decode_payload(id, block, payload, scratch);
}

void decode_payload(CodecId id, std::uint32_t block, ByteSpan payload, std::span<float> out) {
    switch (id) {
        case CodecId::fp32: return decode_fp32(payload, out);
        case CodecId::fp16: return decode_fp16(payload, out);
        case CodecId::bf16: return decode_bf16(payload, out);
        case CodecId::int8: return decode_int8(payload, block, out);
        case CodecId::uint8_sigma: return decode_uint8_sigma(payload, out);
        case CodecId::int4: return decode_int4(payload, block, out);
        case CodecId::fp4: return decode_fp4(payload, block, out);
        case CodecId::topk: return decode_topk(payload, out);
        case CodecId::sign: return decode_sign(payload, block, out);
    }
    throw Error("decode: unknown codec id " + std::to_string(int(id)));
}

void write_wire_header(const Format& f, std::uint64_t count, bool zstd, std::uint64_t payload_bytes, Bytes& out) {
    std::byte* h = out.data();
    std::memcpy(h, kMagic, 4);
    store_le<std::uint8_t>(h + 4, kVersion);
    store_le<std::uint8_t>(h + 5, static_cast<std::uint8_t>(f.id));
    store_le<std::uint8_t>(h + 6, zstd ? kFlagZstd : 0);
    store_le<std::uint8_t>(h + 7, 0);
    store_le<std::uint64_t>(h + 8, count);
    store_le<std::uint32_t>(h + 16, is_blockwise(f.id) ? f.block : 0);
    store_le<std::uint32_t>(h + 20, 0);
    store_le<std::uint64_t>(h + 24, payload_bytes);
    store_le<std::uint64_t>(h + 32, out.size() - kWireHeaderBytes);
}

Bytes wrap(const Format& f, std::uint64_t count, Bytes& payload, bool zstd, int level, Bytes into) {
    const std::uint64_t payload_bytes = payload.size();
    Bytes out;
    if (zstd) {
        out = zstd_compress(payload, level, kWireHeaderBytes, std::move(into));
    } else {
        out = std::move(payload);
        out.insert(out.begin(), kWireHeaderBytes, std::byte{0});  // in place: capacity reserved
    }
    write_wire_header(f, count, zstd, payload_bytes, out);
    return out;
}

}  // namespace detail

WireInfo inspect(std::span<const std::byte> bytes) {
    if (bytes.size() < kWireHeaderBytes) {
        throw Error("codec buffer of " + std::to_string(bytes.size()) +
                    " bytes is shorter than the 40-byte header");
    }
    const std::byte* h = bytes.data();
    if (std::memcmp(h, kMagic, 4) != 0) throw Error("codec buffer has a bad magic (expected 'APGC')");
    const auto version = load_le<std::uint8_t>(h + 4);
    if (version != kVersion) {
        throw Error("codec buffer has version " + std::to_string(version) + ", this build reads " +
                    std::to_string(kVersion));
    }
    const auto id = load_le<std::uint8_t>(h + 5);
    if (!known_codec(id)) throw Error("codec buffer names unknown codec id " + std::to_string(id));
    const auto flags = load_le<std::uint8_t>(h + 6);
    if ((flags & ~kFlagZstd) != 0 || load_le<std::uint8_t>(h + 7) != 0 ||
        load_le<std::uint32_t>(h + 20) != 0) {
        throw Error("codec buffer has unknown flags or non-zero reserved fields");
    }
    WireInfo info{};
    info.codec = static_cast<CodecId>(id);
    info.count = load_le<std::uint64_t>(h + 8);
    info.block = load_le<std::uint32_t>(h + 16);
    info.zstd = flags & kFlagZstd;
    info.payload_bytes = load_le<std::uint64_t>(h + 24);
    const auto body = load_le<std::uint64_t>(h + 32);
    const std::string name(codec_name(info.codec));
    if (info.count > kMaxCount) {
        throw Error(name + " buffer announces " + std::to_string(info.count) +
                    " elements, more than the limit 2^40");
    }
    if (detail::is_blockwise(info.codec)) {
        if (info.block < 8 || info.block > kMaxBlock || info.block % 8 != 0) {
            throw Error(name + " buffer has block size " + std::to_string(info.block) +
                        " (expected a multiple of 8 in [8, 2^24])");
        }
    } else if (info.block != 0) {
        throw Error(name + " buffer has block size " + std::to_string(info.block) + ", expected 0");
    }
    const std::uint64_t limit = detail::payload_bytes_limit(info.codec, info.block, info.count);
    if (detail::payload_size_is_exact(info.codec) ? info.payload_bytes != limit
                                                  : info.payload_bytes > limit) {
        throw Error(name + " buffer declares a " + std::to_string(info.payload_bytes) +
                    "-byte payload for " + std::to_string(info.count) + " elements, expected " +
                    (detail::payload_size_is_exact(info.codec) ? "" : "at most ") +
                    std::to_string(limit));
    }
    if (!info.zstd && body != info.payload_bytes) {
        throw Error(name + " buffer body of " + std::to_string(body) +
                    " bytes differs from its payload size " + std::to_string(info.payload_bytes));
    }
    if (body != bytes.size() - kWireHeaderBytes) {
        throw Error(name + " buffer header says " + std::to_string(body) + " body bytes, buffer holds " +
                    std::to_string(bytes.size() - kWireHeaderBytes));
    }
    info.total_bytes = bytes.size();
    return info;
}

void detail::require_count(const WireInfo& info, std::uint64_t count) {
    if (info.count != count) {
        throw Error(std::string(codec_name(info.codec)) + " buffer holds " +
                    std::to_string(info.count) + " elements, the destination expects " +
                    std::to_string(count));
    }
}

void decode(std::span<const std::byte> bytes, std::span<float> out) {
    std::vector<std::byte> scratch;
    decode(bytes, out, scratch);
}

void decode(std::span<const std::byte> bytes, std::span<float> out, std::vector<std::byte>& scratch) {
    const WireInfo info = inspect(bytes);
    detail::require_count(info, out.size());
    const std::span<const std::byte> body = bytes.subspan(kWireHeaderBytes);
    if (info.zstd) {
        detail::zstd_decompress(body, info.payload_bytes, scratch);
        detail::decode_payload(info.codec, info.block, scratch, out);
    } else {
        detail::decode_payload(info.codec, info.block, body, out);
    }
}

Payload open_payload(std::span<const std::byte> bytes, std::uint64_t count, std::vector<std::byte> reuse) {
    Payload p;
    p.info = inspect(bytes);
    detail::require_count(p.info, count);
    p.body = bytes.subspan(kWireHeaderBytes);
    p.decompressed = std::move(reuse);
    if (p.info.zstd) detail::zstd_decompress(p.body, p.info.payload_bytes, p.decompressed);
    detail::check_payload(p.info.codec, p.info.block, p.bytes(), count);
    return p;
}

std::vector<float> decode(std::span<const std::byte> bytes, std::uint64_t max_count) {
    const WireInfo info = inspect(bytes);
    if (info.count > max_count) {
        throw Error(std::string(codec_name(info.codec)) + " buffer holds " +
                    std::to_string(info.count) + " elements, more than the " +
                    std::to_string(max_count) + " allowed");
    }
    std::vector<float> out(info.count);
    decode(bytes, out);
    return out;
}

}  // namespace arch::compression
