// kernels/cuda/device_codec.cpp: the host side of the device codecs: spec checks (compression's own
// parser), the non-finite check's message, transfers, and the wire header + zstd stage +
// validation, all done by compression/ itself (wrap_payload, open_payload) so the bytes cannot
// drift from the CPU's. Only the packed payload crosses PCIe; kernels are in device_codec.cu.
#include "kernels/cuda/device_codec.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <optional>
#include <string>

#include "compression/codec.h"
#include "core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace arch::cuda {
namespace {

using codec_math::Quant;
using compression::CodecId;

struct DeviceSpec {
    CodecId id;
    Quant quant;
    std::uint32_t block;
};

std::optional<Quant> quant_of(CodecId id) {
    switch (id) {
        case CodecId::int8:
            return Quant::int8;
        case CodecId::int4:
            return Quant::int4;
        case CodecId::fp4:
            return Quant::fp4;
        default:
            return std::nullopt;
    }
}

// The spec as compression reads it, if the GPU handles it. Throws compression's arch::Error for a
// malformed spec; returns nothing for a well-formed one the GPU does not handle.
std::optional<DeviceSpec> read_spec(std::string_view spec) {
    const compression::CodecSpec s = compression::parse_codec_spec(spec);
    if (s.error_feedback) return std::nullopt;  // the residual is the host codec's
    const std::optional<Quant> q = quant_of(s.codec);
    if (!q) return std::nullopt;
    return DeviceSpec{s.codec, *q, s.block};
}

DeviceSpec require_spec(std::string_view spec) {
    const std::optional<DeviceSpec> s = read_spec(spec);
    if (!s) {
        throw Error(
            "encode_on_device: codec spec '" + std::string(spec) +
            "' has no GPU encoder (expected int8, int4 or fp4 with optional :block=N and "
            "+zstd[:level], without +ef); encode it on the CPU with compression::make_codec");
    }
    return *s;
}

// DeviceBuffer zero-fills with cudaMemset on the legacy default stream: `stream` (maybe a
// non-blocking one) must not start on the buffers before that fill is done.
void wait_for_fill(cudaStream_t stream) {
    cudaEvent_t done;
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    cudaError_t e = cudaEventRecord(done, cudaStreamLegacy);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(stream, done, 0);
    cudaEventDestroy(done);
    check(e, "ordering the codec buffers' fill before the codec stream");
}

// The CPU codec's message for x[i] not finite (compression/float_formats.cpp, throw_non_finite).
[[noreturn]] void throw_non_finite(CodecId id, const float* x, std::uint64_t i,
                                   cudaStream_t stream) {
    float v = 0.0f;
    check(cudaMemcpyAsync(&v, x + i, sizeof v, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (non-finite value)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (non-finite value)");
    throw Error(std::string(compression::codec_name(id)) + ": input element " + std::to_string(i) +
                " is " + (std::isnan(v) ? "NaN" : "infinite") +
                "; refusing to encode a non-finite pseudo-gradient");
}

// Quantizes x (n > 0 floats, device) into payload (its size already payload_bytes) on the GPU;
// returns the first non-finite index, or ~0.
std::uint64_t quantize_to_host(const DeviceSpec& s, const float* x, std::size_t n, std::vector<std::byte>& payload,
                               cudaStream_t stream) {
    DeviceBuffer d_payload(payload.size()), d_bad(sizeof(unsigned long long));
    wait_for_fill(stream);
    device_codec_detail::launch_quantize(s.quant, x, n, s.block, d_payload.as<std::byte>(),
                                         d_bad.as<unsigned long long>(), stream);
    unsigned long long bad = 0;
    check(cudaMemcpyAsync(&bad, d_bad.get(), sizeof bad, cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (codec flag)");
    check(cudaMemcpyAsync(payload.data(), d_payload.get(), payload.size(), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync (codec payload)");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (device codec)");
    return bad;
}

}  // namespace

bool device_codec_supports(std::string_view spec) {
    try {
        return read_spec(spec).has_value();
    } catch (const Error&) {
        return false;
    }
}

std::vector<std::byte> encode_on_device(std::string_view spec, const float* x, std::size_t n,
                                        cudaStream_t stream) {
    const DeviceSpec s = require_spec(spec);
    const std::uint64_t bytes = codec_math::payload_bytes(s.quant, n, s.block);
    std::vector<std::byte> payload;
    payload.reserve(compression::kWireHeaderBytes + bytes);  // the header goes in front in place
    payload.resize(bytes);
    if (n > 0) {
        if (x == nullptr) {
            throw Error("encode_on_device: x is null for " + std::to_string(n) + " elements");
        }
        const std::uint64_t bad = quantize_to_host(s, x, n, payload, stream);
        if (bad != ~0ull) throw_non_finite(s.id, x, bad, stream);
    }
    return compression::wrap_payload(spec, n, std::move(payload));
}

std::uint32_t device_codec_block(std::string_view spec) { return require_spec(spec).block; }

void quantize_shard(std::string_view spec, const float* x, std::size_t n, ShardPayload& part,
                    cudaStream_t stream) {
    const DeviceSpec s = require_spec(spec);
    part.payload.assign(codec_math::payload_bytes(s.quant, n, s.block), std::byte{0});
    part.first_bad = ~0ull;
    if (n == 0) return;
    const std::uint64_t bad = quantize_to_host(s, x, n, part.payload, stream);
    if (bad == ~0ull) return;
    check(cudaMemcpy(&part.bad_value, x + bad, sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy (non-finite value)");
    std::uint64_t at = 0;  // x index -> flat index through the runs
    for (const BlockRun& r : part.runs) {
        const std::uint64_t len = r.blocks * s.block;
        if (bad < at + len) {
            part.first_bad = r.first_block * s.block + (bad - at);
            return;
        }
        at += len;
    }
    part.first_bad = bad;  // past the runs: cannot happen for a well-formed part
}

std::vector<std::byte> join_shard_payloads(std::string_view spec, std::size_t n,
                                           const std::vector<ShardPayload>& parts) {
    const DeviceSpec s = require_spec(spec);
    const std::uint64_t blocks = codec_math::blocks_of(n, s.block);
    const std::uint64_t per_byte = s.quant == Quant::int8 ? 1 : 2;
    const std::uint64_t block_code_bytes = s.block / per_byte;  // block is a multiple of 8
    std::uint64_t first_bad = ~0ull;
    float bad_value = 0.0f;
    for (const ShardPayload& p : parts)
        if (p.first_bad < first_bad) first_bad = p.first_bad, bad_value = p.bad_value;
    if (first_bad != ~0ull)
        throw Error(std::string(compression::codec_name(s.id)) + ": input element " +
                    std::to_string(first_bad) + " is " + (std::isnan(bad_value) ? "NaN" : "infinite") +
                    "; refusing to encode a non-finite pseudo-gradient");
    std::vector<std::byte> payload;
    payload.reserve(compression::kWireHeaderBytes + codec_math::payload_bytes(s.quant, n, s.block));
    payload.resize(codec_math::payload_bytes(s.quant, n, s.block));
    std::vector<bool> covered(blocks, false);
    const std::uint64_t codes_at = 4 * blocks;
    for (const ShardPayload& p : parts) {
        std::uint64_t count = 0, elements = 0;
        for (const BlockRun& r : p.runs) {
            count += r.blocks;
            elements += r.blocks * s.block;
        }
        if (count > 0 && p.runs.back().first_block + p.runs.back().blocks == blocks)
            elements -= blocks * s.block - n;  // the vector's last block may be short
        if (p.payload.size() != codec_math::payload_bytes(s.quant, elements, s.block))
            throw Error("join_shard_payloads: a part's payload does not match its runs");
        std::uint64_t k = 0;  // blocks of this part so far
        for (const BlockRun& r : p.runs) {
            if (r.first_block + r.blocks > blocks)
                throw Error("join_shard_payloads: a run lies past the vector's last block");
            for (std::uint64_t b = r.first_block; b < r.first_block + r.blocks; ++b) {
                if (covered[b]) throw Error("join_shard_payloads: block " + std::to_string(b) + " twice");
                covered[b] = true;
            }
            std::memcpy(payload.data() + 4 * r.first_block, p.payload.data() + 4 * k, 4 * r.blocks);
            const std::uint64_t code_begin = r.first_block * block_code_bytes;
            const std::uint64_t code_end =
                std::min(codec_math::code_bytes(s.quant, n), (r.first_block + r.blocks) * block_code_bytes);
            std::memcpy(payload.data() + codes_at + code_begin, p.payload.data() + 4 * count + k * block_code_bytes,
                        code_end - code_begin);
            k += r.blocks;
        }
    }
    for (std::uint64_t b = 0; b < blocks; ++b)
        if (!covered[b]) throw Error("join_shard_payloads: block " + std::to_string(b) + " is in no part");
    return compression::wrap_payload(spec, n, std::move(payload));
}

void decode_on_device(std::span<const std::byte> bytes, float* out, std::size_t n,
                      cudaStream_t stream) {
    const compression::WireInfo info = compression::inspect(bytes);
    const std::optional<Quant> q = quant_of(info.codec);
    if (!q) {
        throw Error("decode_on_device: " + std::string(compression::codec_name(info.codec)) +
                    " buffers have no GPU decoder (int8, int4 and fp4 have); decode them with "
                    "compression::decode");
    }
    const compression::Payload p = compression::open_payload(bytes, n);  // every check of decode()
    if (n == 0) return;
    if (out == nullptr) {
        throw Error("decode_on_device: out is null for " + std::to_string(n) + " elements");
    }
    const std::span<const std::byte> payload = p.bytes();
    DeviceBuffer d_payload(payload.size());
    wait_for_fill(stream);
    check(cudaMemcpyAsync(d_payload.get(), payload.data(), payload.size(), cudaMemcpyHostToDevice,
                          stream),
          "cudaMemcpyAsync (codec payload)");
    device_codec_detail::launch_dequantize(*q, d_payload.as<std::byte>(), n, info.block, out,
                                           stream);
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize (decode_on_device)");
}

}  // namespace arch::cuda
